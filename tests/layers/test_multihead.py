"""MultiHeadAttention against an independent float64 reference: self, cross, causal, masks, dtypes,
gradients, the kernel registry and the capture hook."""

from __future__ import annotations

import math

import pytest
import torch
from helpers.layers_reference import mha_ref, randomize

import attnlab as al
from attnlab import functional, masks
from attnlab.layers import MultiHeadAttention

B, L, S, M, H = 2, 7, 5, 39, 3
DK, DV = 5, 7  # d_k != d_v, neither d_model / n_heads


def layer(dtype=torch.float64, bias=True, d_k=DK, d_v=DV, d_in=None):
    m = MultiHeadAttention(M, H, d_k=d_k, d_v=d_v, bias=bias, d_key_in=d_in, d_value_in=d_in)
    return randomize(m).to(dtype).eval()


def inputs(dtype=torch.float64, d_in=M, seed=1):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, L, M, generator=g, dtype=torch.float64).to(dtype)
    mem = torch.randn(B, S, d_in, generator=g, dtype=torch.float64).to(dtype)
    return x, mem


def make_mask(kind, L, S, dtype=torch.float64):
    g = torch.Generator().manual_seed(L * 31 + S)
    if kind is None:
        return None
    if kind == "bool":
        m = torch.rand(B, 1, L, S, generator=g) > 0.3
        m[:, :, 0, :] = False  # a fully masked row
        return m
    if kind == "float":
        m = torch.randn(1, H, L, S, generator=g, dtype=torch.float64)
        m[..., 1, :] = -math.inf  # a fully masked row
        m[..., 2, 0] = -math.inf
        return m.to(dtype)
    raise AssertionError(kind)


KPM = torch.tensor([[True] * 7, [True] * 4 + [False] * 3])  # second sequence has 3 padded tokens

# (attention kind, mask kind, key padding)
CASES = [
    ("self", None, False),
    ("self", "bool", True),
    ("self", "float", False),
    ("causal", None, False),
    ("causal", "float", True),
    ("cross", None, False),
    ("cross", "bool", True),
    ("cross", "float", True),
]


def run(m, kind, mask_kind, padded, dtype, return_weights=True):
    x, mem = inputs(dtype)
    key = mem if kind == "cross" else None
    s = S if kind == "cross" else L
    mask = make_mask(mask_kind, L, s, dtype)
    kpm = KPM[:, :s] if padded else None
    out = m(x, key, mask=mask, key_padding_mask=kpm, causal=kind == "causal", return_weights=return_weights)
    ref = mha_ref(m, x.double(), None if key is None else key.double(), mask=mask, kpm=kpm, causal=kind == "causal")
    plain = mha_ref(m, x, key, mask=mask, kpm=kpm, causal=kind == "causal")
    return out, ref, plain


def maxdiff(a, b):
    return (a.double() - b.double()).abs().max().item()


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c)))
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_matches_float64_reference(case, dtype):
    m = layer(dtype)
    (out, w), (ref_out, ref_w), _ = run(m, *case, dtype)
    s = S if case[0] == "cross" else L
    assert out.shape == (B, L, M) and w.shape == (B, H, L, s)
    assert out.dtype == w.dtype == dtype
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    eo, ew = maxdiff(out, ref_out), maxdiff(w, ref_w)
    assert eo < tol and ew < tol, f"largest difference: output {eo:.3g}, weights {ew:.3g}"
    # Without weights the kernel takes its fused path: same output.
    (fast, none), _, _ = run(m, *case, dtype, return_weights=False)
    assert none is None
    assert maxdiff(fast, ref_out) < tol, f"fused path: largest difference {maxdiff(fast, ref_out):.3g}"


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c)))
def test_bfloat16_flash_attention_rule(case):
    m = layer(torch.bfloat16)
    (out, w), (ref_out, ref_w), (plain_out, plain_w) = run(m, *case, torch.bfloat16)
    assert out.dtype == torch.bfloat16
    eo, po = maxdiff(out, ref_out), maxdiff(plain_out, ref_out)
    ew, pw = maxdiff(w, ref_w), maxdiff(plain_w, ref_w)
    assert eo <= 2 * po + 1e-6, f"output error {eo:.3g} vs plain bfloat16 {po:.3g}"
    assert ew <= 2 * pw + 1e-6, f"weights error {ew:.3g} vs plain bfloat16 {pw:.3g}"


def test_mask_object_and_default_sizes():
    m = randomize(MultiHeadAttention(M, H)).double()  # d_k = d_v = 13
    x, _ = inputs()
    out, w = m(x, mask=masks.window(2) & masks.key_padding(KPM), return_weights=True)
    i, j = torch.arange(L).view(-1, 1), torch.arange(L).view(1, -1)
    dense = ((i - j).abs() <= 2) & KPM[:, None, None, :]
    ref_out, ref_w = mha_ref(m, x, mask=dense)
    assert maxdiff(out, ref_out) < 1e-12 and maxdiff(w, ref_w) < 1e-12


def test_value_defaults_to_key_and_value_can_differ():
    m = layer()
    x, mem = inputs()
    val = torch.randn(B, S, M, dtype=torch.float64)
    assert maxdiff(m(x, mem)[0], m(x, mem, mem)[0]) == 0
    out, _ = m(x, mem, val)
    assert maxdiff(out, mha_ref(m, x, mem, val)[0]) < 1e-12


def test_rows_sum_to_one_and_heads_not_averaged():
    m = layer()
    x, mem = inputs()
    _, w = m(x, mem, key_padding_mask=KPM[:, :S], return_weights=True)
    assert torch.allclose(w.sum(-1), torch.ones(B, H, L, dtype=torch.float64))
    assert (w[1, :, :, 4:] == 0).all()
    assert not torch.allclose(w[:, 0], w[:, 1])  # per head


GRAD_CASES = [("self", "bool", True), ("causal", "float", False), ("cross", "bool", True)]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: "-".join(map(str, c)))
@pytest.mark.parametrize("return_weights", [True, False])
@pytest.mark.slow
def test_gradcheck_inputs(case, return_weights):
    kind, mask_kind, padded = case
    m = layer()
    x, mem = inputs()
    x.requires_grad_()
    mem.requires_grad_()
    s = S if kind == "cross" else L
    mask = make_mask(mask_kind, L, s)
    kpm = KPM[:, :s].clone() if padded else None
    if kpm is not None and kind == "cross":
        kpm[1] = False  # a sequence with no real key at all: every row of it fully masked

    def f(x, mem):
        out, w = m(x, mem if kind == "cross" else None, mask=mask, key_padding_mask=kpm, causal=kind == "causal",
                   return_weights=return_weights)
        return (out, w) if return_weights else out

    assert torch.autograd.gradcheck(f, (x, mem), eps=1e-6, atol=1e-8)


@pytest.mark.slow
def test_gradcheck_parameters():
    m = randomize(MultiHeadAttention(9, 3, d_k=2, d_v=4)).double()
    x = torch.randn(2, 4, 9, dtype=torch.float64)
    mem = torch.randn(2, 3, 9, dtype=torch.float64)
    mask = torch.ones(2, 1, 4, 3, dtype=torch.bool)
    mask[0, 0, 1] = False  # a fully masked row
    names = [n for n, _ in m.named_parameters()]
    params = tuple(p.detach().clone().requires_grad_() for p in m.parameters())

    def f(*ps):
        return torch.func.functional_call(m, dict(zip(names, ps, strict=True)), (x, mem), dict(mask=mask))[0]

    assert torch.autograd.gradcheck(f, params, eps=1e-6, atol=1e-8)


def test_fully_masked_row_gives_bias_and_zero_weights():
    m = layer()
    x, _ = inputs()
    mask = make_mask("bool", L, L)
    out, w = m(x, mask=mask, return_weights=True)
    assert (w[:, :, 0] == 0).all()
    assert torch.equal(out[:, 0], m.out_proj.bias.expand(B, M))
    nb = layer(bias=False)
    assert (nb(x, mask=mask)[0][:, 0] == 0).all()


def test_kernel_is_looked_up_by_name_and_gets_keyword_options(monkeypatch):
    calls = []

    def spy(q, k, v, **kw):
        calls.append(kw)
        return functional.attention(q, k, v, **kw)

    monkeypatch.setitem(functional.KERNELS, "spy", functional.KernelSpec(spy, weights=True, dropout=True))
    m = MultiHeadAttention(M, H, dropout=0.25, kernel="spy").double()
    x, _ = inputs()
    m.eval()
    m(x, causal=True)
    m.train()
    m(x, return_weights=True)
    assert set(calls[0]) == {"mask", "causal", "dropout", "return_weights"}
    assert calls[0]["dropout"] == 0.0 and calls[0]["causal"] is True and calls[0]["return_weights"] is False
    assert calls[1]["dropout"] == 0.25 and calls[1]["return_weights"] is True
    m.kernel = "dense"  # the attribute may be switched after construction
    m.eval()
    m(x)
    assert len(calls) == 2


def test_dropout_only_in_training():
    m = MultiHeadAttention(M, H, dropout=0.5).double()
    x, _ = inputs()
    m.eval()
    a, b = m(x)[0], m(x)[0]
    assert torch.equal(a, b)
    m.train()
    _, w = m(x, return_weights=True)
    assert (w == 0).any() and (w.sum(-1) - 1).abs().max() > 1e-3  # dropped weights, rescaled


@pytest.mark.parametrize("kind", ["self", "causal", "cross"])
def test_hook_receives_per_head_weights_only_when_active(kind):
    m = layer()
    x, mem = inputs()
    seen = []
    m.attn_hook.register_forward_hook(lambda mod, args, out: seen.append((args[0].kind, out.weights.shape)))
    key = mem if kind == "cross" else None
    before = set(vars(m))
    plain, _ = m(x, key, causal=kind == "causal")
    assert seen == []  # inactive hook: the kernel was not asked for weights
    m.attn_hook.active = 1
    out, w = m(x, key, causal=kind == "causal")
    assert w is None  # capturing does not change what the layer returns
    assert seen == [(kind, (B, H, L, S if kind == "cross" else L))]
    assert maxdiff(out, plain) < 1e-12
    m(x, x, x)  # key is query: self-attention, not cross
    assert seen[-1][0] == "self"
    assert set(vars(m)) == before  # nothing stored on the module


def test_top_level_names():
    for name in ("MultiHeadAttention", "BahdanauAttention", "LuongAttention", "TransformerEncoderLayer"):
        assert getattr(al, name) is getattr(al.layers, name)
