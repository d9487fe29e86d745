"""memory_efficient_attention against an independent float64 reference: odd shapes, masks, tiles that do
not divide the lengths, fully masked rows, bfloat16, gradients (gradcheck), dropout, the kernel registry."""

from __future__ import annotations

import math

import pytest
import torch
from helpers.reference import attention_ref, plain_attention
from hypothesis import given
from hypothesis import strategies as st

from attnlab import masks
from attnlab.errors import ConfigError, MaskError
from attnlab.functional import get_kernel, memory_efficient_attention
from attnlab.functional.memory_efficient import _keep

SHAPES = [(2, 3, 37, 37, 13, 11), (1, 3, 7, 29, 13, 13), (2, 2, 29, 7, 5, 3), (1, 1, 1, 1, 4, 4)]
BLOCKS = [(5, 7), (512, 1024)]


def make(B, H, L, S, E, Ev, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed + L * 31 + S)
    return [torch.randn(B, H, n, d, generator=g, dtype=torch.float64).to(dtype) for n, d in ((L, E), (S, E), (S, Ev))]


def make_mask(kind, B, H, L, S):
    g = torch.Generator().manual_seed(L + 3 * S)
    if kind is None:
        return None
    if kind == "bool":
        m = torch.rand(B, 1, L, S, generator=g) > 0.4
        m[..., L // 2, :] = False  # a fully masked row
        return m
    if kind == "float":
        m = torch.randn(1, H, L, S, generator=g, dtype=torch.float64)
        m[..., -1, :] = -math.inf
        return m
    if kind == "padding":
        return torch.arange(S).view(1, 1, 1, S) < torch.tensor([max(1, S - 3 * b) for b in range(B)]).view(B, 1, 1, 1)
    if kind == "predicate":
        return masks.window(3, 2) | masks.global_tokens([0])
    raise AssertionError(kind)


def dense_mask(mask, L, S):
    return mask.materialize(L, S) if isinstance(mask, masks.Mask) else mask


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("kind", [None, "bool", "float", "padding", "predicate"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("blocks", BLOCKS, ids=str)
def test_matches_float64_reference(shape, kind, causal, blocks):
    q, k, v = make(*shape)
    mask = make_mask(kind, *shape[:4])
    ref, w = attention_ref(q, k, v, mask=dense_mask(mask, *shape[2:4]), causal=causal)
    out64, lse = memory_efficient_attention(q, k, v, mask=mask, causal=causal, block_q=blocks[0], block_k=blocks[1])
    err64 = (out64 - ref).abs().max().item()
    assert err64 < 1e-10, f"float64 largest difference {err64:.3g}"
    m32 = mask.float() if isinstance(mask, torch.Tensor) and mask.dtype == torch.float64 else mask
    out32, _ = memory_efficient_attention(q.float(), k.float(), v.float(), mask=m32, causal=causal,
                                          block_q=blocks[0], block_k=blocks[1])
    assert out32.dtype == torch.float32
    err32 = (out32.double() - ref).abs().max().item()
    assert err32 < 2e-5, f"float32 largest difference {err32:.3g}"
    # lse: log of the normaliser; -inf exactly on rows with no allowed key, where the output is zero.
    empty = (w.sum(-1) == 0)
    assert torch.isneginf(lse[empty]).all() and (out64[empty] == 0).all()
    s = q @ k.transpose(-2, -1) / math.sqrt(shape[4])
    allowed = w > 0
    ref_lse = torch.logsumexp(torch.where(allowed, s + (mask if kind == "float" else 0), -math.inf), -1)
    assert torch.allclose(lse[~empty], ref_lse[~empty], atol=1e-10)


def test_bfloat16_within_twice_the_error_of_plain_bfloat16():
    q, k, v = make(2, 3, 37, 41, 13, 11)
    mask = make_mask("bool", 2, 3, 37, 41)
    ref, _ = attention_ref(q, k, v, mask=mask, causal=True)
    qb, kb, vb = (t.bfloat16() for t in (q, k, v))
    out, _ = memory_efficient_attention(qb, kb, vb, mask=mask, causal=True, block_q=8, block_k=6)
    assert out.dtype == torch.bfloat16
    err = (out.double() - ref).abs().max().item()
    base = (plain_attention(qb, kb, vb, mask=mask, causal=True).double() - ref).abs().max().item()
    assert err <= 2 * base + 1e-6, f"bf16 error {err:.3g} vs plain bf16 {base:.3g}"


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dropout", [0.0, 0.3])
@pytest.mark.slow
def test_gradcheck_float64(causal, dropout):
    q, k, v = (t.requires_grad_() for t in make(2, 3, 7, 6, 5, 4))
    mask = make_mask("bool", 2, 3, 7, 6)
    torch.autograd.gradcheck(
        lambda q, k, v: memory_efficient_attention(q, k, v, mask=mask, causal=causal, dropout=dropout, seed=11,
                                                   block_q=3, block_k=4)[0], (q, k, v))


@pytest.mark.parametrize("kind", ["bool", "float", "predicate"])
def test_gradients_match_reference_and_fully_masked_rows_get_zero_gradient(kind):
    q, k, v = (t.float().requires_grad_() for t in make(2, 3, 19, 23, 13, 11))
    mask = make_mask(kind, 2, 3, 19, 23)
    m32 = mask.float() if kind == "float" else mask
    out, _ = memory_efficient_attention(q, k, v, mask=m32, block_q=4, block_k=5)
    g = torch.randn_like(out)
    grads = torch.autograd.grad(out, (q, k, v), g)
    qd, kd, vd = (t.detach().double().requires_grad_() for t in (q, k, v))
    ref, _ = attention_ref(qd, kd, vd, mask=dense_mask(mask, 19, 23))
    ref_grads = torch.autograd.grad(ref, (qd, kd, vd), g.double())
    for name, a, b in zip("qkv", grads, ref_grads, strict=True):
        assert torch.isfinite(a).all()
        err = (a.double() - b).abs().max().item()
        assert err < 5e-5, f"d{name} largest difference {err:.3g}"
    if kind == "bool":
        assert (grads[0][..., 19 // 2, :] == 0).all()


def test_dropout_equals_reference_with_the_same_tile_masks():
    q, k, v = make(1, 2, 9, 10, 5, 4)
    p, seed, bq, bk = 0.4, 123, 4, 3
    out, _ = memory_efficient_attention(q, k, v, dropout=p, seed=seed, block_q=bq, block_k=bk)
    nk = -(-10 // bk)
    keep = torch.zeros(1, 2, 9, 10, dtype=torch.bool)
    for qi, q0 in enumerate(range(0, 9, bq)):
        for ki, k0 in enumerate(range(0, 10, bk)):
            q1, k1 = min(q0 + bq, 9), min(k0 + bk, 10)
            keep[..., q0:q1, k0:k1] = _keep(seed, qi * nk + ki, torch.Size((1, 2, q1 - q0, k1 - k0)), p, q.device)
    _, w = attention_ref(q, k, v)
    ref = (w * keep / (1 - p)) @ v
    assert (out - ref).abs().max().item() < 1e-12
    assert 0 < keep.float().mean().item() < 1
    again, _ = memory_efficient_attention(q, k, v, dropout=p, seed=seed, block_q=bq, block_k=bk)
    assert torch.equal(out, again)


def test_registered_kernel_returns_no_weights_and_refuses_to_build_them():
    q, k, v = make(1, 2, 5, 5, 4, 4)
    kernel = get_kernel("memory_efficient")
    out, w = kernel(q, k, v, causal=True)
    assert w is None and torch.allclose(out, attention_ref(q, k, v, causal=True)[0], atol=1e-12)
    with pytest.raises(ConfigError, match="never builds"):
        kernel(q, k, v, return_weights=True)


def test_bad_input_raises_clear_errors():
    q, k, v = make(1, 1, 4, 4, 3, 3)
    with pytest.raises(ConfigError, match="block_q"):
        memory_efficient_attention(q, k, v, block_q=0)
    with pytest.raises(MaskError):
        memory_efficient_attention(q, k, v, mask=torch.ones(3, 3, dtype=torch.bool))
    with pytest.raises(ConfigError, match="dropout"):
        memory_efficient_attention(q, k, v, dropout=1.5)


@given(
    st.integers(1, 2), st.integers(1, 3), st.integers(1, 20), st.integers(1, 20), st.integers(1, 6),
    st.integers(1, 8), st.integers(1, 8), st.sampled_from([0.0, 0.3, 0.8, 1.0]), st.booleans(), st.integers(0, 999),
)
def test_property_equals_dense_for_random_shapes_masks_and_blocks(B, H, L, S, E, bq, bk, density, causal, seed):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, H, n, E, generator=g, dtype=torch.float64) * 2 for n in (L, S, S))
    mask = torch.rand(B, 1, L, S, generator=g) < density
    out, _ = memory_efficient_attention(q, k, v, mask=mask, causal=causal, block_q=bq, block_k=bk)
    ref, _ = attention_ref(q, k, v, mask=mask, causal=causal)
    assert (out - ref).abs().max().item() < 1e-10


def test_bfloat16_gradients_within_twice_the_error_of_plain_bfloat16():
    q, k, v = make(1, 2, 33, 29, 8, 8)
    g = torch.randn(1, 2, 33, 8, dtype=torch.float64)
    qd, kd, vd = (t.clone().requires_grad_() for t in (q, k, v))
    ref = torch.autograd.grad(attention_ref(qd, kd, vd, causal=True)[0], (qd, kd, vd), g)
    qb, kb, vb = (t.bfloat16().requires_grad_() for t in (q, k, v))
    ours = torch.autograd.grad(memory_efficient_attention(qb, kb, vb, causal=True, block_q=8, block_k=7)[0],
                               (qb, kb, vb), g.bfloat16())
    qp, kp, vp = (t.bfloat16().requires_grad_() for t in (q, k, v))
    plain = torch.autograd.grad(plain_attention(qp, kp, vp, causal=True), (qp, kp, vp), g.bfloat16())
    for name, a, b, r in zip("qkv", ours, plain, ref, strict=True):
        assert a.dtype == torch.bfloat16
        err, base = (a.double() - r).abs().max().item(), (b.double() - r).abs().max().item()
        assert err <= 2 * base + 1e-6, f"d{name}: bf16 error {err:.3g} vs plain bf16 {base:.3g}"


def test_layer_trains_with_the_memory_efficient_kernel():
    from attnlab.layers import MultiHeadAttention

    torch.manual_seed(0)
    dense = MultiHeadAttention(12, 3, dropout=0.0).double()
    eff = MultiHeadAttention(12, 3, dropout=0.0, kernel="memory_efficient").double()
    eff.load_state_dict(dense.state_dict())
    x = torch.randn(2, 11, 12, dtype=torch.float64)
    pad = torch.arange(11).view(1, 11) < torch.tensor([[11], [6]])
    a, _ = dense(x, x, x, key_padding_mask=pad, causal=True)
    b, _ = eff(x, x, x, key_padding_mask=pad, causal=True)
    assert (a - b).abs().max().item() < 1e-12
    b.sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in eff.parameters())
