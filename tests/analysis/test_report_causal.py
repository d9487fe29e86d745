"""What `attnlab analyze` shows for a causal stack: its own columns (the duplicate-token and induction scores of
TransformerLens' detector on the text itself) instead of the start, end and next-token columns that are 0 by
construction; and a trained induction head labelled as one on a string said twice."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers.analysis_models import train_induction

from attnlab.analysis import analyze_trace, text_detector_scores
from attnlab.analysis.figures import metric_heatmaps
from attnlab.analysis.labels import DETECT
from attnlab.capturing import attach_tokens, capture
from attnlab.errors import ShapeError
from attnlab.functional.detectors import detection_patterns
from attnlab.trace import AttentionRecord, AttentionTrace


def causal_trace(weights: np.ndarray, tokens: list[str]) -> AttentionTrace:
    """A trace of ``(L, H, n, n)`` causal weights on ``tokens``."""
    records = [AttentionRecord(name=f"blocks.{i}", kind="causal", layer=i, weights=torch.tensor(w[None]),
                               query_tokens=list(tokens), key_tokens=list(tokens)) for i, w in enumerate(weights)]
    return AttentionTrace(records)


def uniform_causal(n_layers: int, n_heads: int, n: int) -> np.ndarray:
    rows = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]  # (n, n): uniform over the keys seen
    return np.broadcast_to(rows, (n_layers, n_heads, n, n)).copy()


def test_text_detector_matches_the_definition_on_a_loop() -> None:
    """sum(A * P) / sum(A) per head with P the 0/1 pattern of the tokens, computed with explicit loops."""
    tokens = list("abcXabcY")  # odd repeats: a, b, c twice
    rng = np.random.default_rng(3)
    w = np.tril(rng.random((2, 3, 8, 8)))
    w /= w.sum(-1, keepdims=True)
    got = text_detector_scores(w, tokens)
    for name, scores in got.items():
        for layer in range(2):
            for head in range(3):
                num = den = 0.0
                for i in range(8):
                    for j in range(8):
                        hit = {"previous token": j == i - 1,
                               "duplicate token": j < i and tokens[j] == tokens[i],
                               "induction": 0 < j <= i and tokens[j - 1] == tokens[i]}[name]
                        num += w[layer, head, i, j] * hit
                        den += w[layer, head, i, j]
                assert abs(scores[layer, head] - num / den) < 1e-12, (name, layer, head)
    with pytest.raises(ShapeError):
        text_detector_scores(w, tokens[:-1])


def test_a_text_without_repeats_has_no_duplicate_or_induction_score() -> None:
    got = text_detector_scores(uniform_causal(1, 2, 5), list("abcde"))
    assert np.isnan(got["duplicate token"]).all() and np.isnan(got["induction"]).all()
    assert np.isfinite(got["previous token"]).all()  # a previous token exists from the second on
    report = analyze_trace(causal_trace(uniform_causal(2, 3, 5), list("abcde")))
    assert any("not measurable on this text" in n for n in report.notes)


def test_a_causal_report_shows_its_own_columns_and_no_empty_panel() -> None:
    tokens = list("的新世纪的新世纪。")  # 9 tokens, no [CLS]/[SEP]/BOS
    report = analyze_trace(causal_trace(uniform_causal(2, 3, len(tokens)), tokens))
    columns = report.columns()
    assert list(columns) == ["entropy_ratio", "punct", "self", "previous", "distance", "duplicate token",
                             "induction", "first"]
    header = report.table().splitlines()[0].split()
    assert "dup-tok" in header and "induct" in header and not {"cls", "sep", "next"} & set(header)
    for name, values in columns.items():  # every panel has something to show
        assert np.isfinite(values).any() and np.nanmax(values) > 0, name
    assert len(metric_heatmaps(report).axes) == 2 * len(columns)  # one panel and its colour bar per column
    doc = report.to_json()
    assert set(doc["detectors_on_text"]) == {"previous token", "duplicate token", "induction"}
    # an encoder keeps its start and end columns when its tokens hold them, and next
    enc = uniform_causal(1, 2, 4)
    enc[:] = 0.25
    trace = AttentionTrace([AttentionRecord(name="enc", kind="self", layer=0, weights=torch.tensor(enc[0][None]),
                                            query_tokens=["[CLS]", "a", "b", "[SEP]"],
                                            key_tokens=["[CLS]", "a", "b", "[SEP]"])])
    assert {"cls", "sep", "next"} <= set(analyze_trace(trace).columns())


def test_the_sink_columns() -> None:
    """The first token's share from the attention alone (a causal query at 0 left out: it sees nothing else), and the
    value-norm ratio as given: a column of its own, or empty with one note saying why, never drawn empty."""
    tokens = list("abcde")
    w = uniform_causal(2, 3, len(tokens))
    plain = analyze_trace(causal_trace(w, tokens))
    want = np.mean([1 / (i + 1) for i in range(1, 5)])  # uniform rows from the second query on
    np.testing.assert_allclose(plain.columns()["first"], want, rtol=1e-12)
    assert "value_norm_ratio" not in plain.columns() and plain.to_json()["sinks"]["value_norm_ratio"] is None
    ratio = np.arange(6, dtype=float).reshape(2, 3) / 10
    given = analyze_trace(causal_trace(w, tokens), value_norm_ratio=ratio)
    header = given.table().splitlines()[0]
    assert header.split()[-3:] == ["first", "v0", "ratio"]
    assert given.table().splitlines()[2].split()[-1] == "0.10"  # L0 H1
    doc = given.to_json()
    assert doc["sinks"]["value_norm_ratio"] == ratio.tolist() and doc["sinks"]["value_norm_missing"] is None
    assert doc["sinks"]["first"] == doc["metrics"]["first"]
    assert given.heads_meta()["metrics"]["value_norm_ratio"] == ratio.tolist()  # the viewer shows it on hover
    assert len(metric_heatmaps(given).axes) == 2 * len(given.columns())
    missing = analyze_trace(causal_trace(w, tokens), value_norm_missing="no values here")
    lines = missing.table().splitlines()
    assert lines[1].split()[-1] == "-" and sum("no values here" in line for line in lines) == 1
    assert missing.to_json()["sinks"]["value_norm_missing"] == "no values here"
    assert len(metric_heatmaps(missing).axes) == 2 * (len(missing.columns()) - 1)  # the empty panel left out
    with pytest.raises(ShapeError, match="value_norm_ratio"):
        analyze_trace(causal_trace(w, tokens), value_norm_ratio=ratio[:1])
    # an encoder whose first token is [CLS]: first is the cls column, in the table but not drawn twice
    enc = np.full((1, 2, 4, 4), 0.25)
    trace = AttentionTrace([AttentionRecord(name="enc", kind="self", layer=0, weights=torch.tensor(enc[0][None]),
                                            query_tokens=["[CLS]", "a", "b", "[SEP]"],
                                            key_tokens=["[CLS]", "a", "b", "[SEP]"])])
    report = analyze_trace(trace)
    assert np.array_equal(report.columns()["first"], report.columns()["cls"])
    assert len(metric_heatmaps(report).axes) == 2 * (len(report.columns()) - 1)


@pytest.mark.slow
def test_a_trained_induction_head_is_labelled_on_a_string_said_twice() -> None:
    """The 2-layer attention-only model of tests/analysis/test_induction.py, captured on 9 random tokens said
    twice: a layer-1 head earns "induction head" on this text, with the evidence saying so."""
    model = train_induction()
    gen = torch.Generator().manual_seed(5)
    r = torch.randint(0, 24, (9,), generator=gen)
    ids = torch.cat([r, r])[None]  # (1, 18)
    tokens = [f"t{i}" for i in ids[0].tolist()]
    with torch.no_grad(), capture(model) as trace:
        model(ids)
    trace = attach_tokens(trace, tokens)
    report = analyze_trace(trace)
    induction = report.columns()["induction"]
    patterns = detection_patterns(ids[0].numpy())
    assert patterns["induction"].any()
    layer, head = np.unravel_index(int(np.nanargmax(induction)), induction.shape)
    assert layer == 1 and induction[layer, head] > DETECT
    assert report.labels.primary[layer][head] == "induction head"
    evidence = [e for e in report.labels.evidence[layer][head] if e["label"] == "induction head"]
    assert evidence and evidence[0]["on"] == "this text"
    assert "induction head" in report.table()
