"""Corpus-scale per-head metrics: the batch reduction against a float64 loop, padding masked (a padded batch
gives the sums of its texts run one by one), bad corpora, and 2 processes under a real ``torchrun`` giving
the numbers of 1 within 1e-6."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import transformers

import attnlab as al
from attnlab.analysis import CORPUS_METRICS as METRICS
from attnlab.analysis import corpus_metrics, head_sums

TEXTS = [
    "The cat sat on the mat.",
    "A dog.",
    "Attention is all you need, or so the title says.",
    "Heads specialise: some look back one token, others at [SEP].",
    "short",
    "Seven texts, odd on purpose, so that batches and ranks split unevenly.",
    "The last line has no newline",
]


def _reference(w: torch.Tensor, n: int, special: list[bool], causal: bool) -> dict[str, torch.Tensor]:
    """The metrics of one text's weights (H, S, S) over its first n rows, by explicit loops in float64."""
    w = w.double()
    h = w.shape[0]
    out = {m: torch.zeros(h, dtype=torch.float64) for m in METRICS}
    for head in range(h):
        for i in range(n):
            row = w[head, i]
            out["entropy"][head] += -sum(float(p) * math.log(float(p)) for p in row if p > 0)
            out["uniform_entropy"][head] += math.log(min(i + 1, n) if causal else n)
            out["special"][head] += sum(float(row[j]) for j in range(n) if special[j])
            out["self"][head] += float(row[i])
            out["previous"][head] += float(row[i - 1]) if i > 0 else 0.0
            out["next"][head] += float(row[i + 1]) if i + 1 < w.shape[-1] else 0.0
            out["distance"][head] += sum(float(row[j]) * abs(i - j) for j in range(w.shape[-1]))
    return out


@pytest.mark.parametrize("causal", [False, True])
def test_head_sums_equal_float64_loops_with_padding(causal: bool) -> None:
    b, h, s = 3, 2, 7
    lengths = [7, 4, 1]
    real = torch.arange(s)[None, :] < torch.tensor(lengths)[:, None]  # (B, S) right padding
    special = torch.zeros(b, s, dtype=torch.bool)
    special[:, 0] = True
    special[0, 6] = special[1, 3] = True
    keep = real[:, None, None, :] & (torch.ones(s, s, dtype=torch.bool).tril() if causal else True)
    scores = torch.randn(b, h, s, s).masked_fill(~keep, float("-inf"))
    w = scores.softmax(-1)  # (B, H, S, S)
    got = head_sums(w, real, special, causal=causal)
    for m in METRICS:
        ref = sum(_reference(w[i], lengths[i], special[i].tolist(), causal)[m] for i in range(b))
        torch.testing.assert_close(got[m], ref, rtol=1e-6, atol=1e-6, msg=lambda e, m=m: f"{m}: {e}")


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A tiny random BERT (saved as safetensors, so a second process loads the same weights), the bundled
    MiniLM tokenizer's folder, and a corpus file with a blank line."""
    folder = tmp_path_factory.mktemp("tiny-bert")
    tokenizer = transformers.AutoTokenizer.from_pretrained(al.locate("minilm").path, local_files_only=True)
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=24, num_attention_heads=3,
                                  num_hidden_layers=2, intermediate_size=29, max_position_embeddings=64)
    transformers.BertModel(cfg).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join([*TEXTS[:3], "   ", *TEXTS[3:]]), encoding="utf-8")
    return folder, corpus


def _load(folder: Path) -> tuple[transformers.PreTrainedModel, transformers.PreTrainedTokenizerBase]:
    model = transformers.AutoModel.from_pretrained(folder, local_files_only=True).eval()
    return model, transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)


def test_corpus_sums_equal_texts_run_one_by_one(
    tiny_bert: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, corpus = tiny_bert
    model, tokenizer = _load(folder)
    got = corpus_metrics(model, tokenizer, corpus, batch_size=3)
    assert "corpus metrics" in capsys.readouterr().err  # the progress bar
    assert got.texts == len(TEXTS)
    assert got.names == ("encoder.layer.0.attention.self", "encoder.layer.1.attention.self")
    expected = {m: torch.zeros(2, 3, dtype=torch.float64) for m in METRICS}
    rows = 0
    for text in TEXTS:  # one at a time: no padding at all
        enc = tokenizer(text, return_tensors="pt", return_special_tokens_mask=True)
        with torch.no_grad(), al.capture(model) as trace:
            model(input_ids=enc["input_ids"])
        n = enc["input_ids"].shape[1]
        rows += n
        for layer, rec in enumerate(trace.records):
            ref = _reference(rec.weights[0], n, enc["special_tokens_mask"][0].bool().tolist(), False)
            for m in METRICS:
                expected[m][layer] += ref[m]
    torch.testing.assert_close(got.rows, torch.full((2,), float(rows), dtype=torch.float64))
    for m in METRICS:
        torch.testing.assert_close(got.sums[m], expected[m], rtol=1e-5, atol=1e-5, msg=lambda e, m=m: f"{m}: {e}")
    means = got.means()
    assert (means["special"] > 0).all() and (means["entropy"] <= means["uniform_entropy"] + 1e-6).all()


def test_bad_corpora_are_refused(tiny_bert: tuple[Path, Path], tmp_path: Path) -> None:
    folder, _ = tiny_bert
    model, tokenizer = _load(folder)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n\n", encoding="utf-8")
    with pytest.raises(al.errors.InputError, match="is empty"):
        corpus_metrics(model, tokenizer, empty)
    with pytest.raises(al.errors.InputError, match="does not exist"):
        corpus_metrics(model, tokenizer, tmp_path / "missing.txt")
    with pytest.raises(al.errors.InputError, match="batch_size"):
        corpus_metrics(model, tokenizer, empty, batch_size=0)


SCRIPT = """
    import json, sys
    import transformers
    from attnlab.analysis import corpus_metrics
    folder, corpus, out = sys.argv[1:]
    model = transformers.AutoModel.from_pretrained(folder, local_files_only=True).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
    result = corpus_metrics(model, tokenizer, corpus, batch_size=2, progress=False)
    rank = int(__import__("os").environ.get("RANK", "0"))
    if rank == 0:
        json.dump({"means": {m: v.tolist() for m, v in result.means().items()}, "rows": result.rows.tolist(),
                   "texts": result.texts, "processes": result.processes}, open(out, "w"))
"""


def test_two_ranks_under_torchrun_give_the_numbers_of_one(tiny_bert: tuple[Path, Path], tmp_path: Path) -> None:
    folder, corpus = tiny_bert
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(SCRIPT), encoding="utf-8")
    out = tmp_path / "two.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(script),
           str(folder), str(corpus), str(out)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    two = json.loads(out.read_text())
    model, tokenizer = _load(folder)
    one = corpus_metrics(model, tokenizer, corpus, batch_size=2, progress=False)
    assert two["processes"] == 2 and one.processes == 1
    assert two["texts"] == one.texts == len(TEXTS)
    assert two["rows"] == one.rows.tolist()
    for m, v in one.means().items():
        diff = (torch.tensor(two["means"][m], dtype=torch.float64) - v).abs().max()
        assert diff <= 1e-6, f"{m}: 2 ranks differ from 1 by {diff:.2e}"
