"""`attnlab analyze`: the files it writes, the table it prints, the labels in the trace, and bad input
(one line on stderr, exit 2, nothing written)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import attnlab as al
from attnlab.cli import main

CAT = """\
# sent_id = cat
# text = The cat sat on the mat.
1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_
2\tcat\tcat\tNOUN\tNN\t_\t3\tnsubj\t_\t_
3\tsat\tsit\tVERB\tVBD\t_\t0\troot\t_\t_
4\ton\ton\tADP\tIN\t_\t6\tcase\t_\t_
5\tthe\tthe\tDET\tDT\t_\t6\tdet\t_\t_
6\tmat\tmat\tNOUN\tNN\t_\t3\tobl\t_\t_
7\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_
"""
FILES = {"analysis.json", "trace.attn", "viewer.html", *(f"{f}.png" for f in ("labels", "metrics", "mds", "rollout",
                                                                                "flow"))}


def one_error_line(capsys: Any) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("attnlab analyze: error: "), err
    return err[0]


@pytest.fixture(scope="module")
def minilm_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One run of the bundled MiniLM on a two-sentence treebank (no TEXT: the treebank's text is the input)."""
    tmp = tmp_path_factory.mktemp("analyze")
    bank = tmp / "cat.conllu"
    bank.write_text(CAT + "\n" + CAT.replace("cat", "dog"), encoding="utf-8")
    out = tmp / "out"
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(["analyze", "--treebank", str(bank), "--out", str(out)]) == 0
    return out, buffer.getvalue()


@pytest.mark.slow
def test_analyze_minilm_with_a_treebank(minilm_run: tuple[Path, str]) -> None:
    out, printed = minilm_run
    assert {p.name for p in out.iterdir()} == FILES
    lines = printed.splitlines()
    assert lines[0].split()[:3] == ["L", "H", "label"] and len([x for x in lines if x[:5].strip()]) > 72
    assert "nsubj" in printed and "baseline" in printed
    report = json.loads((out / "analysis.json").read_text(encoding="utf-8"))
    assert report["tokens"][0] == "[CLS]" and len(report["labels"]["primary"]) == 6
    assert report["tokens"].count("mat") == 2 and "dog" in report["tokens"]
    # what the bundled MiniLM does (docs/analysis.md): layer 0 head 2 attends to the previous token
    assert report["labels"]["primary"][0][2] == "previous token"
    assert report["metrics"]["previous"][0][2] > 0.9
    assert {r["relation"]: r["count"] for r in report["syntax"]} == {"det": 4, "nsubj": 2, "case": 2, "obl": 2}
    n = len(report["tokens"])
    assert len(report["flow"]["values"]) == n and len(report["rollout"]) == n
    trace = al.AttentionTrace.load(out / "trace.attn")
    heads = trace.meta["heads"]
    assert heads["kind"] == "self" and heads["labels"] == report["labels"]["primary"]
    assert heads["metrics"]["cls"] == report["metrics"]["cls"]
    # the sink columns: [CLS] is the first token, and what its value writes is measured from the same run
    assert lines[0].split()[-3:] == ["first", "v0", "ratio"]
    sinks = report["sinks"]
    assert sinks["first"] == report["metrics"]["cls"] and sinks["value_norm_missing"] is None
    ratio = np.asarray(sinks["value_norm_ratio"])
    assert ratio.shape == (6, 12) and heads["metrics"]["value_norm_ratio"] == sinks["value_norm_ratio"]
    first = np.asarray(sinks["first"])
    assert np.median(ratio[first > 0.5]) < 0.1  # the [CLS] sinks write little (docs/analysis.md)
    assert (out / "labels.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.slow
def test_a_saved_trace(minilm_run: tuple[Path, str], tmp_path: Path, capsys: Any) -> None:
    out, _ = minilm_run
    args = ["analyze", "--trace", str(out / "trace.attn"), "--out", str(tmp_path / "b"), "--flow-target", "0"]
    assert main(args) == 0
    first = json.loads((out / "analysis.json").read_text())
    again = json.loads((tmp_path / "b" / "analysis.json").read_text())
    assert again["flow"]["targets"] == [0] and again["syntax"] is None
    assert again["flow"]["values"][0] == first["flow"]["values"][0]
    assert again["labels"]["primary"] == first["labels"]["primary"]  # no syntax labels lead on MiniLM
    capsys.readouterr()


@pytest.mark.slow
def test_a_causal_model_gets_the_detectors(tmp_path: Path, capsys: Any) -> None:
    import transformers

    from attnlab.capturing import load_model

    _, tokenizer, _ = load_model("minilm")
    cfg = transformers.GPT2Config(vocab_size=tokenizer.vocab_size, n_embd=24, n_head=2, n_layer=2, n_positions=64)
    transformers.GPT2Model(cfg).save_pretrained(tmp_path / "gpt")
    tokenizer.save_pretrained(tmp_path / "gpt")
    assert main(["analyze", "a tiny causal model", "--model", str(tmp_path / "gpt"), "--out", str(tmp_path / "o")]) == 0
    report = json.loads((tmp_path / "o" / "analysis.json").read_text())
    assert report["kind"] == "causal" and set(report["causal"]) == {"previous token", "duplicate token", "induction"}
    assert len(report["causal"]["induction"]) == 2
    assert np.asarray(report["sinks"]["value_norm_ratio"]).shape == (2, 2)  # circuits read a Hugging Face GPT-2
    capsys.readouterr()


def test_a_model_circuits_cannot_read_has_an_empty_value_column(tmp_path: Path, capsys: Any) -> None:
    """A Hugging Face encoder circuits have no hook points for (a tiny DistilBERT): the first token's share from
    the attention, the v0 ratio column empty, and why said once."""
    import transformers

    from attnlab.capturing import load_model

    _, tokenizer, _ = load_model("minilm")
    cfg = transformers.DistilBertConfig(vocab_size=tokenizer.vocab_size, dim=16, n_heads=2, n_layers=1,
                                        hidden_dim=32, max_position_embeddings=64)
    transformers.DistilBertModel(cfg).save_pretrained(tmp_path / "distil")
    tokenizer.save_pretrained(tmp_path / "distil")
    capsys.readouterr()
    assert main(["analyze", "a b c", "--model", str(tmp_path / "distil"), "--out", str(tmp_path / "o")]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].split()[-3:] == ["first", "v0", "ratio"]
    assert all(line.split()[-1] == "-" for line in printed[1:3])
    said = [line for line in printed if "DistilBertModel" in line]
    assert len(said) == 1 and said[0].startswith("v0 ratio is empty: what a value writes needs"), said
    report = json.loads((tmp_path / "o" / "analysis.json").read_text(encoding="utf-8"))
    assert report["sinks"]["value_norm_ratio"] is None and "DistilBertModel" in report["sinks"]["value_norm_missing"]
    assert np.isfinite(np.asarray(report["sinks"]["first"], dtype=float)).all()


def test_bad_input(tmp_path: Path, capsys: Any) -> None:
    bank = tmp_path / "cat.conllu"
    bank.write_text(CAT, encoding="utf-8")
    out = tmp_path / "out"
    assert main(["analyze", "The dog sat on the mat.", "--treebank", str(bank), "--out", str(out)]) == 2
    line = one_error_line(capsys)
    assert "treebank sentence 1 (cat): word 2 'cat' does not match" in line and not out.exists()

    empty = al.AttentionTrace([al.AttentionRecord("l0", "self", 0, torch.full((1, 2, 3, 3), 1 / 3))])
    path = empty.save(tmp_path / "no-tokens.attn")
    assert main(["analyze", "--trace", str(path), "--out", str(out)]) == 2
    assert "has no tokens" in one_error_line(capsys) and not out.exists()

    for args, message in ((["analyze"], "nothing to analyse"),
                          (["analyze", "x", "--treebank", str(bank), "--parse", "spacy"], "not both"),
                          (["analyze", "--trace", str(path), "x"], "give no TEXT")):
        assert main([*args, "--out", str(out)]) == 2
        assert message in one_error_line(capsys) and not out.exists()


def test_a_model_without_attention(tmp_path: Path, capsys: Any) -> None:
    """A Hugging Face model with no attention layer (a tiny Mamba) records nothing: one line, exit 2."""
    import transformers

    from attnlab.capturing import load_model

    _, tokenizer, _ = load_model("minilm")
    cfg = transformers.MambaConfig(vocab_size=tokenizer.vocab_size, hidden_size=8, state_size=2, num_hidden_layers=1)
    transformers.MambaModel(cfg).save_pretrained(tmp_path / "mamba")
    tokenizer.save_pretrained(tmp_path / "mamba")
    capsys.readouterr()
    code = main(["analyze", "a b", "--model", str(tmp_path / "mamba"), "--out", str(tmp_path / "o")])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    ours = [e for e in err if e.startswith("attnlab analyze")]
    assert len(ours) == 1 and "recorded no attention" in ours[0] and not (tmp_path / "o").exists()



@pytest.mark.slow
def test_a_language_model_shows_its_own_columns(tmp_path: Path, capsys: Any) -> None:
    """zh-lm on its default text (a sentence said twice): dup-tok and induct in place of cls, sep and next, which
    are 0 by construction on a character LM; the detectors on random tokens are printed, not only stored."""
    assert main(["analyze", "--model", "zh-lm", "--out", str(tmp_path / "o")]) == 0
    printed = capsys.readouterr().out.splitlines()
    header = printed[0].split()
    assert header[:3] == ["L", "H", "label"] and header[-5:] == ["dup-tok", "induct", "first", "v0", "ratio"]
    assert not {"cls", "sep", "next"} & set(header)
    assert any(line.startswith("on random tokens said twice") for line in printed)
    report = json.loads((tmp_path / "o" / "analysis.json").read_text(encoding="utf-8"))
    induction = np.asarray(report["detectors_on_text"]["induction"], dtype=float)
    assert induction.shape == (4, 4) and np.isfinite(induction).all()  # the text repeats: measurable
    first = printed[1].split()  # L0 H0: its induct cell is the JSON's, to the printed two decimals
    assert float(first[-3]) == pytest.approx(induction[0, 0], abs=0.005)
    # the sink columns: the first character's share, and what its value writes (attention_sinks' ratio)
    from attnlab.circuits import attention_sinks, load_text_model

    tm = load_text_model("zh-lm")
    ids, _ = tm.encode("".join(report["tokens"]), "given")
    rows = attention_sinks(tm.model, ids)
    np.testing.assert_allclose(np.ravel(report["sinks"]["first"]), [r.first_share for r in rows], rtol=1e-5)
    np.testing.assert_allclose(np.ravel(report["sinks"]["value_norm_ratio"]), [r.value_norm_ratio for r in rows],
                               rtol=1e-9)
    assert float(first[-1]) == pytest.approx(rows[0].value_norm_ratio, abs=0.005)
