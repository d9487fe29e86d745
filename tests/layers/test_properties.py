"""Properties of the layers over random sizes (hypothesis): cached decoding equals the full causal
computation, and fully masked rows give zeros and finite gradients."""

from __future__ import annotations

from itertools import pairwise

import pytest
import torch
from helpers.layers_reference import randomize
from hypothesis import given
from hypothesis import strategies as st

from attnlab.layers import KVCache, MultiHeadAttention


@st.composite
def decode_case(draw):
    b, h = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    dk, dv = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    d_model = draw(st.integers(1, 9))
    length = draw(st.integers(1, 9))
    cuts = sorted(draw(st.sets(st.integers(1, length - 1), max_size=length - 1))) if length > 1 else []
    left_pad = draw(st.lists(st.integers(0, length - 1), min_size=b, max_size=b))
    bias = draw(st.booleans())
    return b, h, dk, dv, d_model, length, [0, *cuts, length], left_pad, bias, draw(st.integers(0, 2**16))


@given(decode_case())
@pytest.mark.slow
def test_cached_decoding_equals_full_causal(case):
    b, h, dk, dv, d_model, length, bounds, left_pad, bias, seed = case
    torch.manual_seed(seed)
    m = randomize(MultiHeadAttention(d_model, h, d_k=dk, d_v=dv, bias=bias), seed).double().eval()
    x = torch.randn(b, length, d_model, dtype=torch.float64)
    real = torch.arange(length).view(1, -1) >= torch.tensor(left_pad).view(-1, 1)  # (B, T), left padding
    full, full_w = m(x, causal=True, key_padding_mask=real, return_weights=True)
    cache = KVCache()
    outs = []
    for start, stop in pairwise(bounds):  # chunks of random sizes
        out, w = m(x[:, start:stop], causal=True, key_padding_mask=real[:, :stop], cache=cache, return_weights=True)
        assert w.shape == (b, h, stop - start, stop) and len(cache) == stop
        assert (w - full_w[:, :, start:stop, :stop]).abs().max() <= 1e-12
        outs.append(out)
    err = (torch.cat(outs, dim=1) - full).abs().max().item()
    assert err <= 1e-12, f"cached decoding differs from the full computation by {err:.3g}"


@given(decode_case(), st.integers(1, 6))
def test_cached_cross_attention_reuses_the_memory(case, mem_len):
    b, h, dk, dv, d_model, length, bounds, _, bias, seed = case
    m = randomize(MultiHeadAttention(d_model, h, d_k=dk, d_v=dv, bias=bias), seed).double().eval()
    x = torch.randn(b, length, d_model, dtype=torch.float64)
    memory = torch.randn(b, mem_len, d_model, dtype=torch.float64)
    full, _ = m(x, memory)
    cache = KVCache()
    outs = [m(x[:, s:e], memory, cache=cache)[0] for s, e in pairwise(bounds)]
    assert len(cache) == mem_len
    assert (torch.cat(outs, dim=1) - full).abs().max() <= 1e-12


@st.composite
def masked_case(draw):
    b, h = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    lq, lk = draw(st.integers(1, 7)), draw(st.integers(1, 7))
    d_model = h * draw(st.integers(1, 4))
    keep = draw(st.lists(st.booleans(), min_size=b * lq * lk, max_size=b * lq * lk))
    dead = draw(st.lists(st.integers(0, lq - 1), min_size=1, max_size=lq))  # rows forced fully masked
    return b, h, lq, lk, d_model, keep, sorted(set(dead)), draw(st.booleans()), draw(st.booleans())


@given(masked_case())
@pytest.mark.slow
def test_fully_masked_rows_give_zeros_and_finite_gradients(case):
    b, h, lq, lk, d_model, keep, dead, bias, return_weights = case
    m = randomize(MultiHeadAttention(d_model, h, bias=bias)).double()
    mask = torch.tensor(keep).view(b, 1, lq, lk)
    mask[:, :, dead] = False
    x = torch.randn(b, lq, d_model, dtype=torch.float64, requires_grad=True)
    mem = torch.randn(b, lk, d_model, dtype=torch.float64, requires_grad=True)
    out, _ = m(x, mem, mask=mask)
    _, w = m(x, mem, mask=mask, return_weights=True)
    rows = ~mask.any(-1)[:, 0]  # (B, L): no allowed key
    assert (w.permute(0, 2, 1, 3)[rows] == 0).all()
    expected = m.out_proj.bias if bias else torch.zeros(d_model, dtype=torch.float64)
    assert torch.equal(out[rows], expected.expand(int(rows.sum()), d_model))
    loss = (out**2).sum() + (w**2).sum() if return_weights else (out**2).sum()
    loss.backward()
    grads = [x.grad, mem.grad, *(p.grad for p in m.parameters())]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    assert (x.grad[rows] == 0).all()  # a dead row's query gets no gradient
