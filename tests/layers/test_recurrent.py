"""Bahdanau and Luong attention against an independent float64 reference."""

from __future__ import annotations

import pytest
import torch
from helpers.layers_reference import randomize, single_query_ref

from attnlab.layers import BahdanauAttention, LuongAttention

B, S, DQ, DK, DV = 3, 7, 13, 11, 5
KPM = torch.tensor([[True] * 7, [True] * 4 + [False] * 3, [False] * 7])  # last: nothing to attend to


def build(kind, dtype=torch.float64):
    if kind == "bahdanau":
        m, dq, dk = BahdanauAttention(DQ, DK, 9), DQ, DK
    elif kind == "dot":
        m, dq, dk = LuongAttention(DK, DK, "dot"), DK, DK
    else:
        m, dq, dk = LuongAttention(DQ, DK, kind), DQ, DK
    return randomize(m).to(dtype), dq, dk


def data(dq, dk, dtype=torch.float64):
    g = torch.Generator().manual_seed(dq * 100 + dk)
    q = torch.randn(B, dq, generator=g, dtype=torch.float64).to(dtype)
    keys = torch.randn(B, S, dk, generator=g, dtype=torch.float64).to(dtype)
    values = torch.randn(B, S, DV, generator=g, dtype=torch.float64).to(dtype)
    return q, keys, values


KINDS = ["bahdanau", "dot", "general", "concat"]


def maxdiff(a, b):
    return (a.double() - b.double()).abs().max().item()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("separate_values", [False, True])
def test_matches_float64_reference(kind, dtype, separate_values):
    m, dq, dk = build(kind, dtype)
    q, keys, values = data(dq, dk, dtype)
    values = values if separate_values else None
    ctx, w = m(q, keys, values, key_padding_mask=KPM)
    ref_ctx, ref_w = single_query_ref(m, q.double(), keys.double(), None if values is None else values.double(), KPM)
    assert ctx.shape == (B, DV if separate_values else dk) and w.shape == (B, S)
    assert ctx.dtype == w.dtype == dtype
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    ec, ew = maxdiff(ctx, ref_ctx), maxdiff(w, ref_w)
    assert ec < tol and ew < tol, f"largest difference: context {ec:.3g}, weights {ew:.3g}"
    assert (w[2] == 0).all() and (ctx[2] == 0).all()  # fully padded sequence
    assert torch.allclose(w[:2].sum(-1).double(), torch.ones(2, dtype=torch.float64))


@pytest.mark.parametrize("kind", KINDS)
def test_bfloat16_flash_attention_rule(kind):
    m, dq, dk = build(kind, torch.bfloat16)
    q, keys, values = data(dq, dk, torch.bfloat16)
    ctx, w = m(q, keys, values, key_padding_mask=KPM)
    ref_ctx, ref_w = single_query_ref(m, q.double(), keys.double(), values.double(), KPM)
    plain_ctx, plain_w = single_query_ref(m, q, keys, values, KPM)
    ec, pc = maxdiff(ctx, ref_ctx), maxdiff(plain_ctx, ref_ctx)
    ew, pw = maxdiff(w, ref_w), maxdiff(plain_w, ref_w)
    assert ec <= 2 * pc + 1e-6, f"context error {ec:.3g} vs plain bfloat16 {pc:.3g}"
    assert ew <= 2 * pw + 1e-6, f"weights error {ew:.3g} vs plain bfloat16 {pw:.3g}"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.slow
def test_gradcheck_inputs_and_parameters(kind):
    m, dq, dk = build(kind)
    q, keys, values = (t.requires_grad_() for t in data(dq, dk))
    names = [n for n, _ in m.named_parameters()]
    params = tuple(p.detach().clone().requires_grad_() for p in m.parameters())

    def f(q, keys, values, *ps):
        return torch.func.functional_call(
            m, dict(zip(names, ps, strict=True)), (q, keys, values), dict(key_padding_mask=KPM)
        )

    assert torch.autograd.gradcheck(f, (q, keys, values, *params), eps=1e-6, atol=1e-8)


def test_hook_records_cross_weights():
    m, dq, dk = build("general")
    q, keys, _ = data(dq, dk)
    seen = []
    m.attn_hook.register_forward_hook(lambda mod, args, out: seen.append((args[0].kind, tuple(out.weights.shape))))
    _, w = m(q, keys)
    assert seen == [("cross", (B, 1, 1, S))]


def test_luong_concat_equals_bahdanau_with_the_same_weights():
    b, _, _ = build("bahdanau")
    lu = LuongAttention(DQ, DK, "concat", d_attn=9).double()
    lu.load_state_dict(b.state_dict())
    q, keys, _ = data(DQ, DK)
    assert maxdiff(lu(q, keys)[0], b(q, keys)[0]) == 0
