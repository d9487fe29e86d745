"""Hypothesis properties of attention over random shapes and masks."""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

import attnlab as al


@st.composite
def problems(draw, min_len=1):
    B, H = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    L, S = draw(st.integers(min_len, 9)), draw(st.integers(min_len, 9))
    E, Ev = draw(st.integers(1, 8)), draw(st.integers(1, 6))
    seed = draw(st.integers(0, 2**16))
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, H, n, d, generator=g, dtype=torch.float64) * 2 for n, d in ((L, E), (S, E), (S, Ev)))
    density = draw(st.sampled_from([0.0, 0.3, 0.7, 1.0]))
    mask = torch.rand(B, 1, L, S, generator=g) < density
    return q, k, v, mask


@given(problems(), st.booleans())
def test_rows_sum_to_one_over_allowed_keys_and_masked_keys_get_zero(p, causal):
    q, k, v, mask = p
    out, w = al.attention(q, k, v, mask=mask, causal=causal)
    allowed = mask & al.functional.causal_mask(q.shape[-2], k.shape[-2]) if causal else mask.expand_as(w)
    allowed = allowed.expand_as(w)
    assert (w[~allowed] == 0).all()  # exactly zero, not small
    sums = w.sum(-1)
    has_key = allowed.any(-1)
    assert torch.allclose(sums[has_key], torch.ones_like(sums[has_key]), atol=1e-12)
    assert (sums[~has_key] == 0).all() and (out[~has_key] == 0).all()
    assert torch.isfinite(out).all() and torch.isfinite(w).all()


@given(problems(min_len=2), st.data())
def test_causal_output_ignores_the_future(p, data):
    q, k, v, _ = p
    L, S = q.shape[-2], k.shape[-2]
    out = al.attention(q, k, v, causal=True)[0]
    # Change every key/value a given query cannot see: keys j > i + S - L for the query row i = t.
    t = data.draw(st.integers(0, L - 1))
    last_visible = t + S - L
    k2, v2 = k.clone(), v.clone()
    k2[..., max(last_visible + 1, 0):, :] += 5.0
    v2[..., max(last_visible + 1, 0):, :] -= 3.0
    out2 = al.attention(q, k2, v2, causal=True)[0]
    assert torch.allclose(out[..., : t + 1, :], out2[..., : t + 1, :], atol=1e-12)


@given(problems(), st.booleans())
def test_fully_masked_rows_zero_and_finite_backward(p, return_weights):
    q, k, v, mask = p
    mask = mask.clone()
    mask[..., 0, :] = False
    q, k, v = (t.clone().requires_grad_() for t in (q, k, v))
    out, w = al.attention(q, k, v, mask=mask, return_weights=return_weights)
    assert (out[..., 0, :] == 0).all() and not torch.isnan(out).any()
    loss = out.square().sum() + (w.square().sum() if w is not None else 0)
    loss.backward()
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all()
    assert (q.grad[..., 0, :] == 0).all()


@given(problems(), st.booleans())
def test_fused_and_readable_paths_agree(p, causal):
    q, k, v, mask = p
    a = al.attention(q, k, v, mask=mask, causal=causal)[0]
    b = al.attention(q, k, v, mask=mask, causal=causal, return_weights=False)[0]
    assert torch.allclose(a, b, atol=1e-12)
