"""`attnlab analyze --attribution`: norm-based attention, value zeroing, ALTI and (classifiers) gradient x input, drawn
like rollout and written into the JSON; it needs the model, so a saved --trace is refused (one line, exit 2)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from attnlab.cli import main


def test_attribution_on_a_classifier(tmp_path, capsys) -> None:
    out = tmp_path / "out"
    assert main(["analyze", "这本书很好", "--model", "zh-sentiment", "--attribution", "--out", str(out)]) == 0
    doc = json.loads((out / "analysis.json").read_text(encoding="utf-8"))["attribution"]
    n = len("这本书很好") + 1  # [CLS] and one token per character
    assert np.asarray(doc["norm_rollout"]).shape == (n, n)
    assert np.asarray(doc["value_zeroing_per_layer"]).shape == (2, n, n)
    np.testing.assert_allclose(np.asarray(doc["value_zeroing_rollout"]).sum(-1), 1.0)
    assert len(doc["grad_x_input"]) == n and doc["label"] in ("pos", "neg")
    alti = np.asarray(doc["alti_rollout"])
    assert np.asarray(doc["alti_per_layer"]).shape == (2, n, n) and np.all(alti >= 0)
    np.testing.assert_allclose(alti.sum(-1), 1.0)
    # zh-sentiment pools mean+max: the prediction's row is the pooling's reader times each map (not row 0), carried
    # through the bigram embeddings (position p holds characters p and p+1) to the characters
    reader, mixing = np.asarray(doc["reader"]), np.asarray(doc["embedding_mixing"])
    assert reader.shape == (n,) and reader.sum() == pytest.approx(1.0) and np.all(reader > 0)
    assert mixing.shape == (n, n) and np.all(np.tril(mixing, -1) == 0) and np.all(np.triu(mixing, 2) == 0)
    for name in ("norm", "value_zeroing", "alti"):
        want = reader @ np.asarray(doc[f"{name}_rollout"]) @ mixing
        np.testing.assert_allclose(doc["prediction"][name], want)
        assert 0.9 < sum(doc["prediction"][name]) <= 1.0 + 1e-9  # a zero row of the mixing may drop a little
    # ALTI-Logit (zh-sentiment is pre-norm): the signed share of the predicted logit, as the library computes it
    from attnlab.analysis import alti_logit
    from attnlab.training import load_trained

    clf = load_trained("zh-sentiment")
    ids = torch.tensor([clf.encode(["这本书很好"])[0][0]])
    want = alti_logit(clf.model.eval(), ids).tokens
    np.testing.assert_allclose(doc["alti_logit"], want, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(doc["prediction"]["alti_logit"], want @ mixing, rtol=1e-9, atol=1e-12)
    for name in ("norm.png", "value-zeroing.png", "alti.png", "grad-x-input.png", "alti-logit.png"):
        assert (out / name).stat().st_size > 0
    # it prints what `attnlab predict` says of the text, then one line per token with each method's part in it
    printed = capsys.readouterr().out.splitlines()
    label, probability = clf.predict(["这本书很好"])[0]
    assert doc["predicted"] == {"label": label, "probability": pytest.approx(probability, abs=1e-12)}
    assert f"prediction: {label} {probability:.4f} (calibrated, as attnlab predict says)" in printed
    header = next(i for i, line in enumerate(printed) if line.split()[:1] == ["token"])
    assert printed[header].split() == ["token", "norm", "v-zero", "ALTI", "ALTI-logit", "grad", "x", "in"]
    rows = [line.split() for line in printed[header + 1: header + 1 + n]]
    tokens = json.loads((out / "analysis.json").read_text(encoding="utf-8"))["tokens"]
    assert [r[0] for r in rows] == tokens
    columns = [doc["prediction"]["norm"], doc["prediction"]["value_zeroing"], doc["prediction"]["alti"],
               doc["prediction"]["alti_logit"], doc["grad_x_input"]]
    for i, row in enumerate(rows):
        assert [float(x) for x in row[1:]] == [pytest.approx(c[i], abs=5e-5) for c in columns]


def test_attribution_on_minilm_and_not_from_a_trace(tmp_path, capsys) -> None:
    out = tmp_path / "out"
    assert main(["analyze", "The cat sat.", "--attribution", "--out", str(out)]) == 0
    doc = json.loads((out / "analysis.json").read_text(encoding="utf-8"))["attribution"]
    assert "grad_x_input" not in doc and not (out / "grad-x-input.png").exists()  # an encoder has no class to explain
    assert "alti_logit" not in doc and not (out / "alti-logit.png").exists()
    assert "prediction" not in doc and "predicted" not in doc  # nor a pooling to read its rows, nor a prediction
    assert "an encoder without a head has no prediction to attribute" in capsys.readouterr().out
    assert (out / "value-zeroing.png").exists() and (out / "alti.png").exists()
    np.testing.assert_allclose(np.asarray(doc["alti_rollout"]).sum(-1), 1.0)
    capsys.readouterr()
    assert main(["analyze", "--trace", str(out / "trace.attn"), "--attribution", "--out", str(tmp_path / "o2")]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "--attribution runs the model again" in err
    assert not (tmp_path / "o2").exists()
    assert main(["analyze", "中国", "--model", "zh-lm", "--attribution", "--out", str(tmp_path / "o3")]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "not a language model" in err  # refused before the analysis runs
    assert not (tmp_path / "o3").exists()
