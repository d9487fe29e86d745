"""attnlab.functional.attention against an independent float64 reference and against PyTorch."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from helpers.reference import attention_ref, plain_attention

import attnlab as al
from attnlab import masks

# (B, H, L, S, E, Ev): odd sizes, L != S, E != Ev, single tokens
SHAPES = [(2, 3, 7, 5, 13, 11), (1, 1, 1, 1, 4, 4), (3, 2, 7, 7, 13, 13), (2, 3, 5, 9, 6, 3), (1, 3, 9, 4, 8, 5)]


def make(B, H, L, S, E, Ev, dtype=torch.float32, grad=False):
    g = torch.Generator().manual_seed(B * 1000 + L * 10 + S)
    q = torch.randn(B, H, L, E, generator=g, dtype=torch.float64).to(dtype)
    k = torch.randn(B, H, S, E, generator=g, dtype=torch.float64).to(dtype)
    v = torch.randn(B, H, S, Ev, generator=g, dtype=torch.float64).to(dtype)
    return [t.requires_grad_(grad) for t in (q, k, v)]


def make_mask(kind, B, H, L, S):
    g = torch.Generator().manual_seed(L * S + 7)
    if kind is None:
        return None
    if kind == "bool":
        m = torch.rand(B, 1, L, S, generator=g) > 0.3
        m[..., 0, :] = False  # one fully masked row
        return m
    if kind == "float":
        m = torch.randn(1, H, L, S, generator=g)
        m[..., -1, :] = -math.inf  # one fully masked row
        return m
    if kind == "padding":
        lengths = [max(1, S - i) for i in range(B)]
        return torch.arange(S).view(1, 1, 1, S) < torch.tensor(lengths).view(B, 1, 1, 1)
    raise AssertionError(kind)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("mask_kind", [None, "bool", "float", "padding"])
@pytest.mark.parametrize("causal", [False, True])
def test_float32_matches_float64_reference(shape, mask_kind, causal):
    q, k, v = make(*shape)
    mask = make_mask(mask_kind, *shape[:4])
    out, w = al.attention(q, k, v, mask=mask, causal=causal)
    ref_out, ref_w = attention_ref(q, k, v, mask=mask, causal=causal)
    assert out.dtype == w.dtype == torch.float32
    assert out.shape == (*shape[:3], shape[5]) and w.shape == shape[:4]
    err_o, err_w = (out.double() - ref_out).abs().max().item(), (w.double() - ref_w).abs().max().item()
    assert err_o < 1e-5 and err_w < 1e-5, f"largest difference: output {err_o:.3g}, weights {err_w:.3g}"
    # The fused path (no weights) gives the same output.
    fast, none = al.attention(q, k, v, mask=mask, causal=causal, return_weights=False)
    assert none is None
    err_f = (fast.double() - ref_out).abs().max().item()
    assert err_f < 1e-5, f"fused path: largest difference {err_f:.3g}"


@pytest.mark.parametrize("scale,temperature", [(None, 0.5), (0.3, 1.0), (0.3, 2.5)])
def test_scale_and_temperature(scale, temperature):
    q, k, v = make(2, 3, 7, 5, 13, 11)
    out, w = al.attention(q, k, v, scale=scale, temperature=temperature)
    ref_out, ref_w = attention_ref(q, k, v, scale=scale, temperature=temperature)
    assert (out.double() - ref_out).abs().max() < 1e-5
    fast, _ = al.attention(q, k, v, scale=scale, temperature=temperature, return_weights=False)
    assert (fast.double() - ref_out).abs().max() < 1e-5


def test_temperature_sharpens_and_flattens():
    q, k, v = make(1, 2, 7, 7, 13, 13)

    def entropy(t):
        w = al.attention(q, k, v, temperature=t)[1]
        return -(w * w.clamp_min(1e-30).log()).sum(-1).mean().item()

    assert entropy(0.25) < entropy(1.0) < entropy(4.0) < math.log(7)


@pytest.mark.parametrize("mask_kind", [None, "bool", "float"])
@pytest.mark.parametrize("causal", [False, True])
def test_bfloat16_flashattention_rule(mask_kind, causal):
    """Error against float64 at most twice that of the plain computation in bfloat16 (forward and backward)."""
    shape = (2, 3, 7, 5, 13, 11)
    q64, k64, v64 = make(*shape, dtype=torch.float64, grad=True)
    mask = make_mask(mask_kind, *shape[:4])
    bool_mask = mask if mask is None or mask.dtype == torch.bool else ~torch.isneginf(mask)
    if mask is not None and mask.dtype != torch.bool:
        mask = torch.where(bool_mask, 0.0, -math.inf)  # plain_attention takes bool; keep them equal
    ref = attention_ref(q64, k64, v64, mask=bool_mask, causal=causal)[0]
    dout = torch.randn_like(ref)
    ref_grads = torch.autograd.grad(ref, (q64, k64, v64), dout)

    def run(fn):
        q, k, v = (t.detach().bfloat16().requires_grad_() for t in (q64, k64, v64))
        out = fn(q, k, v)
        grads = torch.autograd.grad(out, (q, k, v), dout.bfloat16())
        return out, grads

    ours, our_grads = run(lambda q, k, v: al.attention(q, k, v, mask=mask, causal=causal)[0])
    plain, plain_grads = run(lambda q, k, v: plain_attention(q, k, v, bool_mask, causal))
    for name, a, p, r in [("out", ours, plain, ref)] + [
        (f"grad {n}", a, p, r) for n, a, p, r in zip("qkv", our_grads, plain_grads, ref_grads, strict=True)
    ]:
        e_ours = (a.double() - r).abs().max().item()
        e_plain = (p.double() - r).abs().max().item()
        assert e_ours <= 2 * e_plain + 1e-6, f"{name}: ours {e_ours:.3g} vs plain bf16 {e_plain:.3g}"
    inputs = [t.detach().bfloat16() for t in (q64, k64, v64)]
    fast = al.attention(*inputs, mask=mask, causal=causal, return_weights=False)[0]
    assert (fast.double() - ref).abs().max().item() <= 2 * (plain.double() - ref).abs().max().item() + 1e-6


@pytest.mark.parametrize("return_weights", [True, False])
@pytest.mark.parametrize("causal", [False, True])
def test_gradcheck_float64(return_weights, causal):
    q, k, v = make(1, 2, 5, 4, 3, 2, dtype=torch.float64, grad=True)
    mask = torch.rand(1, 1, 5, 4, generator=torch.Generator().manual_seed(3)) > 0.4
    mask[..., 1, :] = False  # a fully masked row

    def fn(q, k, v):
        out, w = al.attention(q, k, v, mask=mask, causal=causal, return_weights=return_weights)
        return (out, w) if return_weights else out

    assert torch.autograd.gradcheck(fn, (q, k, v))


def test_float_mask_gradcheck():
    q, k, v = make(1, 1, 4, 6, 3, 2, dtype=torch.float64, grad=True)
    bias = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda q, k, v, b: al.attention(q, k, v, mask=b)[0], (q, k, v, bias))


@pytest.mark.parametrize("return_weights", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_fully_masked_rows_are_zero_and_finite(return_weights, dtype):
    q, k, v = make(2, 3, 6, 5, 8, 4, dtype=dtype, grad=True)
    mask = torch.ones(6, 5, dtype=torch.bool)
    mask[2] = False
    out, w = al.attention(q, k, v, mask=mask, return_weights=return_weights)
    assert torch.isfinite(out).all()
    assert (out[..., 2, :] == 0).all()
    if return_weights:
        assert (w[..., 2, :] == 0).all() and torch.isfinite(w).all()
    out.sum().backward()
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all()
    assert (q.grad[..., 2, :] == 0).all()


def test_causal_with_more_queries_than_keys_masks_leading_rows():
    """Bottom-right alignment: with L > S the first L - S queries see no key at all."""
    q, k, v = make(1, 1, 6, 4, 5, 5)
    out, w = al.attention(q, k, v, causal=True)
    assert (w[..., :2, :] == 0).all() and (out[..., :2, :] == 0).all()
    assert torch.allclose(w[..., 2:, :].sum(-1), torch.ones(1, 1, 4))
    assert torch.equal(w[0, 0, 2:] > 0, torch.ones(4, 4, dtype=torch.bool).tril())


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_parity_with_torch_sdpa(shape):
    q, k, v = make(*shape)
    mask = make_mask("padding", *shape[:4])
    ours = al.attention(q, k, v, mask=mask)[0]
    theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    diff = (ours - theirs).abs().max().item()
    assert diff < 1e-5, f"largest difference vs torch SDPA: {diff:.3g}"
    if shape[2] == shape[3]:  # torch's is_causal is top-left aligned: equal to ours only when L == S
        diff_c = (al.attention(q, k, v, causal=True)[0] - F.scaled_dot_product_attention(q, k, v, is_causal=True))
        assert diff_c.abs().max().item() < 1e-5, f"causal: largest difference {diff_c.abs().max().item():.3g}"


def test_mask_predicate_equals_dense_mask():
    q, k, v = make(2, 3, 9, 9, 8, 8)
    pred = masks.causal() & (masks.window(2) | masks.global_tokens([0]))
    dense = pred.materialize(9, 9)
    a = al.attention(q, k, v, mask=pred)
    b = al.attention(q, k, v, mask=dense)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    lengths = masks.padding([9, 4])
    out, w = al.attention(q, k, v, mask=lengths)
    assert (w[1, :, :, 4:] == 0).all() and (w[0] > 0).all()


def test_leading_dims_and_unbatched():
    q, k, v = make(2, 3, 7, 5, 13, 11)
    out, w = al.attention(q[0, 0], k[0, 0], v[0, 0], mask=masks.causal())  # (L, E)
    ref = attention_ref(q[0, 0], k[0, 0], v[0, 0], causal=True)[0]
    assert out.shape == (7, 11) and (out.double() - ref).abs().max() < 1e-5
    q5 = q.reshape(2, 3, 1, 7, 13)
    out5, _ = al.attention(q5, k.reshape(2, 3, 1, 5, 13), v.reshape(2, 3, 1, 5, 11))
    assert torch.allclose(out5.reshape(2, 3, 7, 11), al.attention(q, k, v)[0])


def test_dropout_applies_to_weights_and_output_is_consistent():
    q, k, v = make(1, 2, 7, 7, 8, 8)
    torch.manual_seed(1)
    out, w = al.attention(q, k, v, dropout=0.5)
    assert (w == 0).any()  # some weights dropped
    kept = w[w > 0]
    full = al.attention(q, k, v)[1]
    assert torch.allclose(kept, (full * 2)[w > 0])  # survivors rescaled by 1 / (1 - p)
    assert torch.allclose(out, w @ v, atol=1e-6)
    torch.manual_seed(1)
    fast = al.attention(q, k, v, dropout=0.5, return_weights=False)[0]
    assert fast.shape == out.shape and torch.isfinite(fast).all()


def test_score_functions_match_reference():
    g = torch.Generator().manual_seed(5)
    q = torch.randn(2, 7, 13, generator=g, dtype=torch.float64)
    k = torch.randn(2, 5, 11, generator=g, dtype=torch.float64)
    W = torch.randn(13, 11, generator=g, dtype=torch.float64)
    assert torch.allclose(al.functional.scores.general(q, k, W), torch.einsum("ble,ef,bsf->bls", q, W, k))
    k13 = torch.randn(2, 5, 13, generator=g, dtype=torch.float64)
    assert torch.allclose(al.functional.scores.dot(q, k13), torch.einsum("ble,bse->bls", q, k13))
    assert torch.allclose(al.functional.scores.scaled_dot(q, k13), torch.einsum("ble,bse->bls", q, k13) / math.sqrt(13))
    wq, wk = torch.randn(6, 13, generator=g, dtype=torch.float64), torch.randn(6, 11, generator=g, dtype=torch.float64)
    va, b = torch.randn(6, generator=g, dtype=torch.float64), torch.randn(6, generator=g, dtype=torch.float64)
    ref = torch.empty(2, 7, 5, dtype=torch.float64)
    for bi in range(2):
        for i in range(7):
            for j in range(5):
                ref[bi, i, j] = va @ torch.tanh(wq @ q[bi, i] + wk @ k[bi, j] + b)
    assert torch.allclose(al.functional.scores.additive(q, k, wq, wk, va, b), ref)
    # concat form: W [q; k] with W = [W_q W_k]
    cat = torch.cat([q.unsqueeze(2).expand(2, 7, 5, 13), k.unsqueeze(1).expand(2, 7, 5, 11)], -1)
    assert torch.allclose(torch.tanh(cat @ torch.cat([wq, wk], 1).t() + b) @ va, ref)


def test_masked_softmax_half_precision_statistics_in_float32():
    s = torch.tensor([[300.0, 299.0, -300.0]], dtype=torch.float16)  # exp overflows float16 without the shift
    w = al.functional.masked_softmax(s)
    assert w.dtype == torch.float32
    ref = torch.softmax(s.double(), -1)
    assert (w.double() - ref).abs().max() < 1e-6


@pytest.mark.parametrize("causal", [False, True])
def test_gradient_through_the_returned_weights_matches_float64(causal):
    """A caller may train on the weights (e.g. an attention-supervision loss): their gradient must flow."""
    shape = (2, 3, 7, 5, 13, 11)
    q, k, v = make(*shape, grad=True)
    mask = make_mask("padding", *shape[:4])  # no fully masked row: the float64 reference's softmax is NaN there
    r = torch.randn(shape[:4], generator=torch.Generator().manual_seed(11), dtype=torch.float64)
    _, w = al.attention(q, k, v, mask=mask, causal=causal)
    grads = torch.autograd.grad((w.double() * r).sum(), (q, k))
    q64, k64 = (t.detach().double().requires_grad_() for t in (q, k))
    _, w_ref = attention_ref(q64, k64, v.detach(), mask=mask, causal=causal)
    ref = torch.autograd.grad((w_ref * r).sum(), (q64, k64))
    for name, g, gr in zip("qk", grads, ref, strict=True):
        err = (g.double() - gr).abs().max().item()
        assert err < 1e-5 * max(1.0, gr.abs().max().item()), f"d/d{name}: largest difference {err:.3g}"
    # float64, with a fully masked row: the finite-difference Jacobian of the weights alone
    q64, k64, v64 = make(1, 2, 5, 4, 3, 2, dtype=torch.float64, grad=True)
    m = torch.rand(1, 1, 5, 4, generator=torch.Generator().manual_seed(3)) > 0.4
    m[..., 1, :] = False
    assert torch.autograd.gradcheck(lambda q, k: al.attention(q, k, v64, mask=m, causal=causal)[1], (q64, k64))


def _nan_on_dead_rows(sdpa):
    """torch's SDPA, but writing NaN (forward and backward) into rows whose mask allows no key, as the CUDA
    kernels do; torch 2.13's CPU kernel happens to return zeros there, which would hide a missing guard."""

    def wrapper(q, k, v, attn_mask=None, *args, **kwargs):
        out = sdpa(q, k, v, attn_mask, *args, **kwargs)
        if attn_mask is None:
            return out
        allowed = attn_mask if attn_mask.dtype == torch.bool else ~torch.isneginf(attn_mask)
        dead = ~allowed.any(dim=-1, keepdim=True)  # (..., L, 1)
        return out * torch.where(dead, float("nan"), 1.0)  # NaN in those rows, and in their gradient

    return wrapper


@pytest.mark.parametrize("case", ["bool", "float", "causal_more_queries"])
def test_fused_path_guards_rows_with_no_key_when_the_kernel_gives_nan(monkeypatch, case):
    monkeypatch.setattr(F, "scaled_dot_product_attention", _nan_on_dead_rows(F.scaled_dot_product_attention))
    dead = torch.zeros(1, 1, 1, 3, dtype=torch.bool)
    assert F.scaled_dot_product_attention(*make(1, 1, 1, 3, 4, 4), attn_mask=dead).isnan().all()  # the stand-in bites
    shape = (2, 3, 6, 4, 8, 5)
    q, k, v = make(*shape, grad=True)
    mask, causal = (None, True) if case == "causal_more_queries" else (make_mask(case, *shape[:4]), False)
    out, none = al.attention(q, k, v, mask=mask, causal=causal, return_weights=False)
    ref = attention_ref(q, k, v, mask=mask, causal=causal)[0]
    assert none is None and torch.isfinite(out).all()
    assert (out.double() - ref).abs().max().item() < 1e-5  # the rows with no key are zeros in the reference
    dout = torch.randn(out.shape, generator=torch.Generator().manual_seed(2))
    grads = torch.autograd.grad(out, (q, k, v), dout)
    readable = al.attention(q, k, v, mask=mask, causal=causal)[0]  # matmul-softmax path: no SDPA call
    ref_grads = torch.autograd.grad(readable, (q, k, v), dout)
    for name, g, gr in zip("qkv", grads, ref_grads, strict=True):
        assert torch.isfinite(g).all(), f"grad {name} is not finite"
        assert (g - gr).abs().max().item() < 1e-5, f"grad {name}: largest difference {(g - gr).abs().max().item():.3g}"


@pytest.mark.parametrize("return_weights", [False, True], ids=["fused", "readable"])
@pytest.mark.parametrize("p", [0.1, 0.5])
def test_dropout_keeps_1_minus_p_and_rescales_by_1_over_1_minus_p(return_weights, p):
    """With v = identity over the keys the output is the dropped, rescaled weights themselves."""
    B, H, L, S, E = 2, 4, 48, 64, 16
    q, k, _ = make(B, H, L, S, E, E, dtype=torch.float64)
    v = torch.eye(S, dtype=torch.float64).expand(B, H, S, S)
    full = al.attention(q, k, v)[1]  # undropped weights, all > 0
    torch.manual_seed(0)
    out, w = al.attention(q, k, v, dropout=p, return_weights=return_weights)
    if return_weights:
        assert torch.equal(out, w)
    n = out.numel()
    dropped = (out == 0).double().mean().item()
    tol = 5 * math.sqrt(p * (1 - p) / n)  # five binomial standard deviations
    assert abs(dropped - p) < tol, f"share dropped {dropped:.4f}, expected {p} +- {tol:.4f}"
    kept = out != 0
    assert torch.allclose(out[kept], full[kept] / (1 - p), rtol=1e-10, atol=0)  # survivors scaled by 1 / (1 - p)
    ratio = (out / full).mean().item()  # each term: 0 w.p. p, 1 / (1 - p) otherwise; mean 1, variance p / (1 - p)
    tol = 5 * math.sqrt(p / (1 - p) / n)
    assert abs(ratio - 1) < tol, f"mean of dropped / undropped weights {ratio:.4f}, expected 1 +- {tol:.4f}"
