"""Linear attention equals its own O(n^2) formulation; Performer approaches softmax attention as the number of
features grows; Shen's efficient attention; the Linformer layer."""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F
from helpers.reference import attention_ref

from attnlab.errors import ConfigError, MaskError, ShapeError
from attnlab.functional import (
    efficient_attention,
    get_kernel,
    linear_attention,
    orthogonal_random_features,
    performer_attention,
)
from attnlab.functional.linear import favor_features
from attnlab.layers.linformer import LinformerSelfAttention

PHI = {"elu": lambda x: F.elu(x) + 1, "relu": torch.relu}


def make(L, S, dtype=torch.float64, B=2, H=3, E=13, Ev=11, seed=0):
    g = torch.Generator().manual_seed(seed + L * 5 + S)
    return [torch.randn(B, H, n, d, generator=g, dtype=torch.float64).to(dtype) for n, d in ((L, E), (S, E), (S, Ev))]


def quadratic(fq, fk, v, causal, keymask=None):
    """The O(L S) form: explicit (L, S) kernel matrix, masked, row-normalised."""
    a = fq @ fk.transpose(-2, -1)
    L, S = a.shape[-2:]
    if causal:
        a = a * (torch.arange(S).view(1, -1) <= torch.arange(L).view(-1, 1) + S - L)
    if keymask is not None:
        a = a * keymask
    den = a.sum(-1, keepdim=True)
    return (a @ v) / torch.where(den > 0, den, 1.0)  # a row with no weight at all gives zeros


@pytest.mark.parametrize(("L", "S"), [(37, 37), (20, 37), (37, 20), (1, 1)])
@pytest.mark.parametrize("fmap", ["elu", "relu"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("chunk", [5, 128])
def test_linear_equals_its_quadratic_form(L, S, fmap, causal, chunk):
    q, k, v = make(L, S)
    pad = torch.arange(S).view(1, 1, 1, S) < torch.tensor([S, max(1, S - 4)]).view(2, 1, 1, 1)
    for mask in (None, pad):
        out = linear_attention(q, k, v, feature_map=fmap, causal=causal, chunk=chunk, mask=mask)
        ref = quadratic(PHI[fmap](q), PHI[fmap](k), v, causal, None if mask is None else mask.double())
        assert (out - ref).abs().max().item() < 1e-10
        q32, k32, v32 = q.float(), k.float(), v.float()
        out32 = linear_attention(q32, k32, v32, feature_map=fmap, causal=causal, chunk=chunk, mask=mask)
        assert out32.dtype == torch.float32 and (out32.double() - ref).abs().max().item() < 2e-5


def test_linear_bfloat16_stays_close_and_sums_in_float32():
    q, k, v = make(37, 37)
    ref = quadratic(PHI["elu"](q), PHI["elu"](k), v, True)
    qb, kb, vb = (t.bfloat16() for t in (q, k, v))
    out = linear_attention(qb, kb, vb, causal=True, chunk=8)
    plain = quadratic(PHI["elu"](qb), PHI["elu"](kb), vb, True)  # everything in bf16
    assert out.dtype == torch.bfloat16
    assert (out.double() - ref).abs().max() <= 2 * (plain.double() - ref).abs().max() + 1e-6


def test_linear_causal_gradcheck_and_relu_zero_denominator_gives_zeros():
    q, k, v = (t.requires_grad_() for t in make(9, 7, B=1, H=2, E=3, Ev=2))
    torch.autograd.gradcheck(lambda q, k, v: linear_attention(q, k, v, causal=True, chunk=4), (q, k, v))
    q, k, v = make(5, 5)
    out = linear_attention(-q.abs() - 1, k.abs() + 1, v, feature_map="relu")  # phi(q) = 0: every denominator is 0
    assert torch.isfinite(out).all() and (out == 0).all()


def test_performer_error_falls_as_features_grow():
    q, k, v = (t * 0.6 for t in make(64, 64, B=1, H=4, E=16, Ev=16))
    ref, _ = attention_ref(q, k, v)
    means = []
    for m in (16, 64, 256, 1024):
        errs = [
            (performer_attention(q, k, v, features=m, generator=torch.Generator().manual_seed(s)) - ref).abs().mean()
            for s in range(6)
        ]
        means.append(torch.stack(errs).mean().item())
    assert all(a > b for a, b in itertools.pairwise(means)), means
    assert means[-1] < 0.5 * means[0], means


def test_performer_is_its_own_quadratic_form_and_causal_works():
    q, k, v = make(23, 19, E=8)
    proj = orthogonal_random_features(32, 8, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    r = 8 ** -0.25
    fq, fk = favor_features(q * r, proj, is_query=True), favor_features(k * r, proj, is_query=False)
    for causal in (False, True):
        out = performer_attention(q, k, v, features=proj, causal=causal, chunk=6)
        assert (out - quadratic(fq, fk, v, causal)).abs().max().item() < 1e-10


def unit_variance(n, seed, E=64):
    g = torch.Generator().manual_seed(100 + seed)
    return [torch.randn(1, 2, n, E, generator=g, dtype=torch.float64) for _ in range(3)]


@pytest.mark.parametrize("causal", [False, True])
def test_performer_unit_variance_rows_are_not_shrunk(causal):
    """At d = 64 with unit-variance q, k, the stabilisers make many denominators tiny (under 1e-6 for a third
    to two thirds of the causal rows): they must be divided by as they are, not raised to a floor (which
    shrank those rows toward zero)."""
    q, k, v = unit_variance(256, 0)
    proj = orthogonal_random_features(256, 64, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    r = 64 ** -0.25
    fq, fk = favor_features(q * r, proj, is_query=True), favor_features(k * r, proj, is_query=False)
    out = performer_attention(q, k, v, features=proj, causal=causal, chunk=48)
    assert (out - quadratic(fq, fk, v, causal)).abs().max().item() < 1e-10
    exact = attention_ref(q, k, v, causal=causal)[0]
    ratio = out.norm(dim=-1) / exact.norm(dim=-1)  # (1, 2, n)
    assert ratio.min().item() > 0.05, f"a row shrunk to {ratio.min().item():.3g} of the exact row's norm"


@pytest.mark.parametrize("causal", [False, True])
def test_performer_unit_variance_error_falls_with_features(causal):
    """Relative error ||out - exact|| / ||exact|| at d = 64, unit variance, mean over 6 seeds: falls from
    m = 64 to 256 to 1024 (with the old absolute floor the causal error stalled near 0.9)."""
    means = []
    for m in (64, 256, 1024):
        errs = []
        for seed in range(6):
            q, k, v = unit_variance(256, seed)
            exact = attention_ref(q, k, v, causal=causal)[0]
            proj = orthogonal_random_features(m, 64, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
            out = performer_attention(q, k, v, features=proj, causal=causal)
            errs.append(((out - exact).norm() / exact.norm()).item())
        means.append(sum(errs) / len(errs))
    assert means[0] > means[1] > means[2], means


def test_orthogonal_features_are_orthogonal_within_a_block_and_redraw_differs():
    w = orthogonal_random_features(20, 8, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    d = w[:8] / w[:8].norm(dim=1, keepdim=True)
    assert torch.allclose(d @ d.T, torch.eye(8, dtype=torch.float64), atol=1e-10)
    w2 = orthogonal_random_features(20, 8, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    assert w.shape == (20, 8) and not torch.allclose(w, w2)


def test_efficient_attention_equals_its_quadratic_form():
    q, k, v = make(37, 29)
    pad = torch.arange(29).view(1, 1, 1, 29) < torch.tensor([29, 20]).view(2, 1, 1, 1)
    out = efficient_attention(q, k, v, mask=pad)
    rk = torch.softmax(k.masked_fill(~pad.transpose(-2, -1), float("-inf")), dim=-2)
    w = torch.softmax(q, dim=-1) @ rk.transpose(-2, -1)  # (B, H, L, S), rows sum to one
    assert torch.allclose(w.sum(-1), torch.ones(()).double())
    assert (out - w @ v).abs().max().item() < 1e-12
    assert (efficient_attention(q, k, v, mask=torch.zeros(1, 1, 1, 29, dtype=torch.bool)) == 0).all()


def test_registered_linear_kernels_and_errors():
    q, k, v = make(7, 7)
    for name in ("linear", "linear_relu", "performer", "efficient"):
        out, w = get_kernel(name)(q, k, v)
        assert w is None and out.shape == (2, 3, 7, 11) and torch.isfinite(out).all()
        with pytest.raises(ConfigError, match="never builds"):
            get_kernel(name)(q, k, v, return_weights=True)
        with pytest.raises(ConfigError, match="dropout"):
            get_kernel(name)(q, k, v, dropout=0.1)
    with pytest.raises(ConfigError, match="causal"):
        get_kernel("efficient")(q, k, v, causal=True)
    with pytest.raises(MaskError, match="key-padding"):
        linear_attention(q, k, v, mask=torch.ones(7, 7, dtype=torch.bool))
    with pytest.raises(ConfigError, match="feature_map"):
        linear_attention(q, k, v, feature_map="tanh")


def test_linformer_with_identity_projection_is_dense_attention():
    torch.manual_seed(0)
    layer = LinformerSelfAttention(12, 3, max_len=9, proj_len=9).double()
    with torch.no_grad():
        layer.proj_k.copy_(torch.eye(9))
        layer.proj_v.copy_(torch.eye(9))
    x = torch.randn(2, 9, 12, dtype=torch.float64)
    out, w = layer(x, return_weights=True)
    q, k, v = layer.qkv(x).view(2, 9, 3, 3, 4).permute(2, 0, 3, 1, 4)
    ref, ref_w = attention_ref(q, k, v)
    assert torch.allclose(w, ref_w, atol=1e-12)
    assert torch.allclose(out, layer.out_proj(ref.transpose(1, 2).reshape(2, 9, 12)), atol=1e-12)


def test_linformer_padding_keys_change_nothing_and_bad_input():
    layer = LinformerSelfAttention(8, 2, max_len=16, proj_len=4, share_kv=True).double()
    x = torch.randn(1, 10, 8, dtype=torch.float64)
    keep = torch.arange(10).view(1, 10) < 7
    x2 = x.clone()
    x2[:, 7:] = torch.randn(1, 3, 8, dtype=torch.float64)
    a, _ = layer(x, key_padding_mask=keep)
    b, _ = layer(x2, key_padding_mask=keep)
    assert torch.allclose(a[:, :7], b[:, :7], atol=1e-12)
    out, w = layer(x, return_weights=True)
    assert w.shape == (1, 2, 10, 4)
    with pytest.raises(ShapeError, match="max_len"):
        layer(torch.randn(1, 17, 8, dtype=torch.float64))
    with pytest.raises(ConfigError):
        LinformerSelfAttention(10, 3, max_len=8)
