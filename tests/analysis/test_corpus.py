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

import numpy as np
import pytest
import torch
import transformers

import attnlab as al
from attnlab.analysis import CORPUS_METRICS as METRICS
from attnlab.analysis import corpus_metrics, head_metrics, head_sums

TEXTS = [
    "The cat sat on the mat.",
    "A dog.",
    "Attention is all you need, or so the title says.",
    "Heads specialise: some look back one token, others at [SEP].",
    "short",
    "Seven texts, odd on purpose, so that batches and ranks split unevenly.",
    "The last line has no newline",
]


def _reference(w: torch.Tensor, tokens: list[str], n: int, causal: bool) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The metrics of one text's weights (H, S, S) over its first n rows (its real tokens), by explicit loops in
    float64: metric -> (total (H,), count (H,)), a query where the metric is undefined counted in neither."""
    w = w.double()
    h = w.shape[0]
    out = {m: (np.zeros(h), np.zeros(h)) for m in METRICS}

    def put(m: str, head: int, value: float | None) -> None:
        if value is not None:
            out[m][0][head] += value
            out[m][1][head] += 1

    for head in range(h):
        for i in range(n):
            row = [float(p) for p in w[head, i, :n]]
            ent = -sum(p * math.log(p) for p in row if p > 0)
            allowed = i + 1 if causal else n
            put("entropy", head, ent)
            put("entropy_ratio", head, ent / math.log(allowed) if allowed > 1 else None)
            put("cls", head, sum(p for p, t in zip(row, tokens, strict=False) if t == "[CLS]"))
            put("sep", head, sum(p for p, t in zip(row, tokens, strict=False) if t == "[SEP]"))
            put("punct", head, sum(p for p, t in zip(row, tokens, strict=False) if t in PUNCT))
            put("self", head, row[i])
            put("previous", head, row[i - 1] if i > 0 else None)  # the first token has none: left out
            put("next", head, row[i + 1] if i + 1 < n else None)  # nor has the last real token
            put("distance", head, sum(p * abs(i - j) for j, p in enumerate(row)))
            put("band", head, sum(p for j, p in enumerate(row) if abs(i - j) <= 2))
            put("first", head, row[0] if i > 0 or not causal else None)  # a causal first query sees only itself
    return out


PUNCT = {".", ",", ":", "!", "?", "[", "]", "(", ")", ";", "'", '"', "-"}


@pytest.mark.parametrize("causal", [False, True])
def test_head_sums_equal_float64_loops_with_padding(causal: bool) -> None:
    b, h, s = 3, 2, 7
    lengths = [7, 4, 1]
    tokens = [["[CLS]", "a", ",", "b", "[SEP]", "c", "[SEP]"], ["[CLS]", "x", ".", "[SEP]", "[PAD]", "[PAD]", "[PAD]"],
              ["[CLS]", *["[PAD]"] * 6]]
    real = torch.arange(s)[None, :] < torch.tensor(lengths)[:, None]  # (B, S) right padding
    keep = real[:, None, None, :] & (torch.ones(s, s, dtype=torch.bool).tril() if causal else True)
    scores = torch.randn(b, h, s, s).masked_fill(~keep, float("-inf"))
    w = scores.softmax(-1)  # (B, H, S, S)
    got = head_sums(w, real, tokens, causal=causal)
    for m in METRICS:
        refs = [_reference(w[i], tokens[i], lengths[i], causal)[m] for i in range(b)]
        np.testing.assert_allclose(got.total[m][0], sum(r[0] for r in refs), rtol=1e-6, atol=1e-6, err_msg=m)
        np.testing.assert_array_equal(got.count[m][0], sum(r[1] for r in refs), err_msg=m)
    assert got.count["previous"][0, 0] == 6 + 3 + 0 and got.count["next"][0, 0] == 6 + 3 + 0


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
    expected = {m: (np.zeros((2, 3)), np.zeros((2, 3))) for m in METRICS}
    rows = 0
    for text in TEXTS:  # one at a time: no padding at all
        enc = tokenizer(text, return_tensors="pt")
        with torch.no_grad(), al.capture(model) as trace:
            model(input_ids=enc["input_ids"])
        n = enc["input_ids"].shape[1]
        tokens = tokenizer.convert_ids_to_tokens(enc["input_ids"][0].tolist())
        rows += n
        for layer, rec in enumerate(trace.records):
            for m, (total, count) in _reference(rec.weights[0], tokens, n, False).items():
                expected[m][0][layer] += total
                expected[m][1][layer] += count
    np.testing.assert_array_equal(got.rows, np.full(2, float(rows)))
    for m in METRICS:
        np.testing.assert_allclose(got.sums.total[m], expected[m][0], rtol=1e-5, atol=1e-5, err_msg=m)
        np.testing.assert_array_equal(got.sums.count[m], expected[m][1], err_msg=m)
    means = got.means()
    assert (means["cls"] > 0).all() and (means["sep"] > 0).all() and (means["entropy_ratio"] <= 1 + 1e-6).all()


def test_a_one_line_corpus_gives_the_single_text_metrics(tiny_bert: tuple[Path, Path], tmp_path: Path) -> None:
    """The corpus reduction and the single-text analysis are one definition: on a one-line corpus every metric of
    every head equals head_metrics of that text's captured weights (what attnlab analyze TEXT reports)."""
    folder, _ = tiny_bert
    model, tokenizer = _load(folder)
    text = TEXTS[3]  # punctuation, brackets and a [SEP] inside the text
    corpus = tmp_path / "one.txt"
    corpus.write_text(text + "\n", encoding="utf-8")
    got = corpus_metrics(model, tokenizer, corpus, progress=False).means()
    enc = tokenizer(text, return_tensors="pt")
    with torch.no_grad(), al.capture(model) as trace:
        model(input_ids=enc["input_ids"])
    tokens = tokenizer.convert_ids_to_tokens(enc["input_ids"][0].tolist())
    single = head_metrics(trace.stack("self"), tokens)
    assert set(got) == set(single) == set(al.analysis.METRICS)
    for m in single:
        np.testing.assert_allclose(got[m], single[m], rtol=1e-5, atol=1e-6, err_msg=m)
    assert np.isfinite(single["previous"]).all()  # the first token is left out, not counted as 0


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


@pytest.mark.slow
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
        diff = np.abs(np.array(two["means"][m]) - v).max()
        assert diff <= 1e-6, f"{m}: 2 ranks differ from 1 by {diff:.2e}"
