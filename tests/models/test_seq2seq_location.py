"""Luong's location-based score ``a_t = softmax(W_a h_t)`` (Luong et al., 2015, section 3.1), against plain float64
sums written out element by element."""

from __future__ import annotations

import math

import pytest
import torch

from attnlab.errors import ConfigError, ShapeError, TooLongError
from attnlab.functional import scores
from attnlab.layers import BahdanauAttention, LuongAttention
from attnlab.models import Seq2Seq, Seq2SeqConfig


def test_the_score_is_w_a_times_the_query_cut_to_the_source() -> None:
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 3, 5, generator=g, dtype=torch.float64)  # (..., L, Eq)
    w = torch.randn(7, 5, generator=g, dtype=torch.float64)  # (S_max, Eq)
    got = scores.location(q, w, 4)
    assert got.shape == (2, 3, 4)
    for b in range(2):
        for i in range(3):
            for j in range(4):
                want = sum(float(w[j, e]) * float(q[b, i, e]) for e in range(5))
                assert abs(float(got[b, i, j]) - want) < 1e-12


def test_the_layer_weights_positions_whatever_the_keys_hold() -> None:
    layer = LuongAttention(5, 6, score="location", max_length=7).double()
    g = torch.Generator().manual_seed(1)
    query = torch.randn(3, 5, generator=g, dtype=torch.float64)
    keys = torch.randn(3, 4, 6, generator=g, dtype=torch.float64)
    real = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]], dtype=torch.bool)
    with torch.no_grad():
        context, weights = layer(query, keys, key_padding_mask=real)
    w_a = layer.weight.detach()
    for b in range(3):
        n = int(real[b].sum())
        e = [sum(float(w_a[j, d]) * float(query[b, d]) for d in range(5)) for j in range(n)]
        z = sum(math.exp(x) for x in e)
        a = [math.exp(x) / z for x in e] + [0.0] * (4 - n)
        for j in range(4):
            assert abs(float(weights[b, j]) - a[j]) < 1e-12
        for d in range(6):
            want = sum(a[j] * float(keys[b, j, d]) for j in range(4))
            assert abs(float(context[b, d]) - want) < 1e-12
    shuffled = keys[:, torch.randperm(4, generator=g)]
    assert torch.equal(layer(query, shuffled, key_padding_mask=real)[1].detach(), weights)  # the keys do not score


def test_location_needs_its_max_length_and_only_it_takes_one() -> None:
    with pytest.raises(ConfigError, match="max_length"):
        LuongAttention(5, 5, score="location")
    with pytest.raises(ConfigError, match="leave max_length=None"):
        LuongAttention(5, 5, score="dot", max_length=4)
    with pytest.raises(ConfigError, match="max_length"):
        BahdanauAttention(5, 5, max_length=4)
    layer = LuongAttention(5, 5, score="location", max_length=3)
    with pytest.raises(ShapeError, match=r"knows 3 source positions.*the source has 4"):
        layer(torch.randn(2, 5), torch.randn(2, 4, 5))


def test_a_luong_location_model_refuses_a_source_past_its_positions() -> None:
    model = Seq2Seq(Seq2SeqConfig(9, 9, d_embed=4, d_hidden=6, attention="luong", score="location", max_length=5))
    assert model.attention.weight.shape == (5, 6)  # one row per source position
    with pytest.raises(TooLongError, match="at most 5"):
        model.generate(torch.full((1, 6), 4))


@pytest.mark.parametrize("layer", [BahdanauAttention(5, 6, d_attn=7), LuongAttention(5, 6, score="concat")])
def test_a_precomputed_key_projection_gives_the_same_attention(layer: BahdanauAttention | LuongAttention) -> None:
    """The decoders project the encoder states once per source (``project_keys``) instead of once per step."""
    layer = layer.double()
    g = torch.Generator().manual_seed(2)
    query = torch.randn(3, 5, generator=g, dtype=torch.float64)
    keys = torch.randn(3, 4, 6, generator=g, dtype=torch.float64)
    real = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [0, 0, 0, 0]], dtype=torch.bool)
    projection = layer.project_keys(keys)
    assert projection is not None and projection.shape == (3, 4, layer.config.d_attn)
    plain = layer(query, keys, key_padding_mask=real)
    fast = layer(query, keys, key_padding_mask=real, keys_projection=projection)
    for a, b in zip(plain, fast, strict=True):
        assert (a - b).abs().max() < 1e-12
    with pytest.raises(ShapeError, match="keys_projection"):
        layer(query, keys, keys_projection=projection[:, :3])


def test_scores_without_a_key_projection_refuse_one() -> None:
    layer = LuongAttention(5, 5, score="dot")
    keys = torch.randn(2, 4, 5)
    assert layer.project_keys(keys) is None
    with pytest.raises(ConfigError, match="keys_projection"):
        layer(torch.randn(2, 5), keys, keys_projection=torch.randn(2, 4, 5))
