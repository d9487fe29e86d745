"""local_attention and bigbird_attention equal dense attention with the equivalent mask, exactly (float64),
on odd shapes, L != S, dilation, global tokens, causal, padding, blocks that do not divide n; bf16; gradients."""

from __future__ import annotations

import itertools

import pytest
import torch
from helpers.reference import attention_ref, plain_attention
from hypothesis import given
from hypothesis import strategies as st

from attnlab import masks
from attnlab.errors import ConfigError
from attnlab.functional import bigbird_attention, get_kernel, local_attention

LENGTHS = [(37, 37), (29, 37), (37, 29)]


def make(L, S, dtype=torch.float64, B=2, H=3, E=13, Ev=11):
    g = torch.Generator().manual_seed(L * 7 + S)
    return [torch.randn(B, H, n, d, generator=g, dtype=torch.float64).to(dtype) for n, d in ((L, E), (S, E), (S, Ev))]


def padding(S):
    return torch.arange(S).view(1, 1, 1, S) < torch.tensor([S, S - 6]).view(2, 1, 1, 1)


def local_mask(L, S, window, dilation, glob, causal):
    before, after = window
    m = masks.window(before, 0 if causal else after, dilation=dilation)
    if glob:
        m = m | masks.global_tokens(glob)
    return m.materialize(L, S)


@pytest.mark.parametrize(("L", "S"), LENGTHS)
@pytest.mark.parametrize("window", [(3, 3), (4, 0), (0, 2), (40, 40)], ids=str)
@pytest.mark.parametrize("dilation", [1, 3])
@pytest.mark.parametrize("glob", [None, [0, 5, 36]], ids=["noglobal", "global"])
def test_local_equals_dense_with_the_window_mask(L, S, window, dilation, glob):
    q, k, v = make(L, S)
    for causal, pad, block, with_lse in itertools.product([False, True], [None, padding(S)], [4, 128], [False, True]):
        out, lse = local_attention(q, k, v, window=window, dilation=dilation, global_tokens=glob, causal=causal,
                                   mask=pad, block=block, return_lse=with_lse)
        mask = local_mask(L, S, window, dilation, glob, causal)
        mask = mask if pad is None else mask & pad
        ref, w = attention_ref(q, k, v, mask=mask, causal=causal)
        err = (out - ref).abs().max().item()
        assert err < 1e-10, f"largest difference {err:.3g} (causal={causal}, pad={pad is not None}, block={block})"
        assert (out[w.sum(-1) == 0] == 0).all()
        if with_lse:
            s = (q @ k.transpose(-2, -1) / 13**0.5).masked_fill(w == 0, float("-inf"))
            assert torch.allclose(lse, torch.logsumexp(s, -1), atol=1e-10)
        else:
            assert lse is None


def test_local_float32_and_additive_mask():
    q, k, v = make(37, 37, torch.float32)
    add = torch.randn(1, 3, 37, 37)
    window = masks.window(5, 2).materialize(37, 37)
    ref, _ = attention_ref(q, k, v, mask=add.double().masked_fill(~window, float("-inf")))
    for with_lse in (False, True):
        out, _ = local_attention(q, k, v, window=(5, 2), mask=add, block=6, return_lse=with_lse)
        assert (out.double() - ref).abs().max().item() < 2e-5


def test_local_bfloat16_rule():
    q, k, v = make(37, 37)
    mask = masks.window(6, 0).materialize(37, 37)
    ref, _ = attention_ref(q, k, v, mask=mask)
    qb, kb, vb = (t.bfloat16() for t in (q, k, v))
    out, _ = local_attention(qb, kb, vb, window=(6, 0), block=5)
    base = (plain_attention(qb, kb, vb, mask=mask).double() - ref).abs().max().item()
    assert out.dtype == torch.bfloat16
    assert (out.double() - ref).abs().max().item() <= 2 * base + 1e-6


@pytest.mark.parametrize("glob", [None, [4]])
@pytest.mark.slow
def test_local_gradcheck_with_an_empty_row(glob):
    q, k, v = (t.requires_grad_() for t in make(9, 9, B=1, H=2, E=4, Ev=3))
    pad = torch.ones(1, 1, 9, 9, dtype=torch.bool)
    pad[..., 2, :] = False  # a query with no key: zeros, and zero gradient, in the fused path too
    torch.autograd.gradcheck(
        lambda q, k, v: local_attention(q, k, v, window=(2, 1), dilation=2, global_tokens=glob, causal=True, block=4,
                                        mask=pad if glob is None else None)[0], (q, k, v))


@pytest.mark.parametrize(("L", "S"), LENGTHS)
@pytest.mark.parametrize("block", [4, 5, 64])
def test_bigbird_equals_dense_with_its_mask(L, S, block):
    q, k, v = make(L, S)
    for window, gb, rb, causal in itertools.product([0, 1], [0, 1], [0, 2], [False, True]):
        out, _ = bigbird_attention(q, k, v, block=block, window=window, global_blocks=gb, random_blocks=rb, seed=3,
                                   causal=causal, mask=padding(S))
        mask = masks.bigbird(block, window, gb, rb, seed=3).materialize(L, S) & padding(S)
        ref, _ = attention_ref(q, k, v, mask=mask, causal=causal)
        err = (out - ref).abs().max().item()
        assert err < 1e-10, f"largest difference {err:.3g} (window={window}, global={gb}, random={rb})"


def test_bigbird_random_blocks_are_seeded():
    a = masks.bigbird(4, 0, 0, 2, seed=1).materialize(40, 40)
    assert torch.equal(a, masks.bigbird(4, 0, 0, 2, seed=1).materialize(40, 40))
    assert not torch.equal(a, masks.bigbird(4, 0, 0, 2, seed=2).materialize(40, 40))


def test_registered_local_kernel_and_errors():
    q, k, v = make(7, 7)
    out, w = get_kernel("local")(q, k, v, causal=True)
    assert w is None and torch.allclose(out, attention_ref(q, k, v, causal=True)[0], atol=1e-12)  # window 128 > 7
    with pytest.raises(ConfigError, match="never builds"):
        get_kernel("local")(q, k, v, return_weights=True)
    with pytest.raises(ConfigError, match="window"):
        local_attention(q, k, v, window=-1)
    with pytest.raises(ConfigError, match="predicate"):
        local_attention(q, k, v, window=2, mask=masks.causal())
    with pytest.raises(ConfigError, match="dilation"):
        local_attention(q, k, v, window=2, dilation=0)


@given(st.integers(1, 25), st.integers(1, 25), st.integers(0, 6), st.integers(0, 6), st.integers(1, 3),
       st.integers(1, 9), st.booleans(), st.integers(0, 99))
@pytest.mark.slow
def test_property_local_equals_dense(L, S, before, after, dilation, block, causal, seed):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(1, 2, n, 3, generator=g, dtype=torch.float64) for n in (L, S, S))
    out, _ = local_attention(q, k, v, window=(before, after), dilation=dilation, causal=causal, block=block)
    mask = masks.window(before, 0 if causal else after, dilation=dilation).materialize(L, S)
    ref, _ = attention_ref(q, k, v, mask=mask, causal=causal)
    assert (out - ref).abs().max().item() < 1e-10
