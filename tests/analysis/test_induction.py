"""Causal detectors: a trained 2-layer attention-only model grows an induction head that the detector
finds; a previous-token head planted by hand is found; an untrained model has neither."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers.analysis_models import AttentionOnly, train_induction

from attnlab.analysis import causal_scores, detect_causal_heads, label_heads, repeated_tokens
from attnlab.analysis.labels import DETECT
from attnlab.analysis.metrics import head_metrics
from attnlab.errors import InputError, ShapeError


def test_repeated_tokens_shape_and_repeat() -> None:
    ids = repeated_tokens(50, 7, 3, seed=1, bos=0, low=5)
    assert ids.shape == (3, 15) and (ids[:, 0] == 0).all()
    assert torch.equal(ids[:, 1:8], ids[:, 8:]) and int(ids[:, 1:].min()) >= 5
    with pytest.raises(InputError, match="length >= 2"):
        repeated_tokens(50, 1, 3)


def test_scores_of_hand_made_patterns() -> None:
    """Weights built to follow each pattern exactly score 1 on it (and a uniform head about 1/i)."""
    t, start = 5, 1
    n = start + 2 * t
    prev = np.zeros((n, n))
    prev[0, 0] = 1.0
    prev[np.arange(1, n), np.arange(n - 1)] = 1.0
    induction = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]  # uniform causal rows
    second = np.arange(start + t, n)
    induction[second] = 0.0
    induction[second, second - t + 1] = 1.0
    w = np.stack([prev, induction])[None]  # (1, 2, n, n)
    s = causal_scores(w, t, start=start)
    assert s["previous token"][0, 0] == 1.0 and s["induction"][0, 1] == 1.0
    assert s["duplicate token"][0, 1] == 0.0 and s["induction"][0, 0] == 0.0
    with pytest.raises(ShapeError, match="at least 11"):
        causal_scores(w[..., :9, :9], t, start=start)


@pytest.mark.slow
def test_detector_finds_the_trained_induction_head() -> None:
    torch.manual_seed(0)
    untrained = detect_causal_heads(AttentionOnly(24, 32, 2, 2, 20), 24, length=10, batch=16)
    assert untrained["induction"].max() < DETECT and untrained["previous token"].max() < DETECT

    scores = detect_causal_heads(train_induction(), 24, length=10, batch=16)
    induction, previous = scores["induction"], scores["previous token"]
    print({k: v.round(2).tolist() for k, v in scores.items()})
    # the induction head sits in layer 1 (it needs layer 0's previous-token head), as in Olsson et al.
    layer, head = np.unravel_index(int(np.argmax(induction)), induction.shape)
    assert layer == 1 and induction[layer, head] > DETECT
    assert induction[0].max() < DETECT, "a layer-0 head cannot do induction on a random sequence"
    assert previous[0].max() > DETECT, "the induction head is fed by a previous-token head in layer 0"
    labels = label_heads(head_metrics(np.full((2, 2, 13, 13), 1 / 13)), causal_scores=scores)  # broad otherwise
    assert labels.primary[1][int(head)] == "induction head"


def test_detector_finds_a_planted_previous_token_head() -> None:
    """Head 0 of a 1-layer model set by hand: positions one-hot in the first 21 of 48 dimensions, its
    keys read them and its queries read them shifted by one, so query i matches only key i - 1."""
    torch.manual_seed(0)
    n, d = 21, 48
    model = AttentionOnly(30, d, 2, 1, n)
    attn = model.blocks[0]
    with torch.no_grad():
        model.pos.weight.zero_()
        model.pos.weight[:, :n] = torch.eye(n)
        model.embed.weight[:, :n] = 0.0  # tokens stay out of the position dimensions
        # head 0 owns query/key rows 0..23 (d // 2 = 24 >= 21: one dimension per position)
        attn.q_proj.weight.zero_()
        attn.k_proj.weight.zero_()
        attn.q_proj.bias.zero_()
        attn.k_proj.bias.zero_()
        for i in range(1, n):  # query at position i carries position i - 1's code, scaled
            attn.q_proj.weight[i - 1, i] = 40.0
        for j in range(n):
            attn.k_proj.weight[j, j] = 1.0
    scores = detect_causal_heads(model, 30, length=10, batch=4, bos=0)
    assert scores["previous token"][0, 0] > 0.95
    assert scores["previous token"][0, 1] < DETECT
