"""The hook payload (AttentionCall) carries exactly what the layer computed: its q and k equal the manual
projections (rotary and a KV cache included), its scale the kernel's, its mask the merge of the call's mask and key
padding, its weights the returned ones and its heads what the output projection reads; a listener's replacement
payload is what the layer goes on with; attach/detach keep the counters."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from helpers.layers_reference import randomize
from torch import Tensor

from attnlab.errors import InputError, ShapeError
from attnlab.functional.rotary import apply_rotary
from attnlab.layers import AttentionCall, AttentionHook, KVCache, LuongAttention, MultiHeadAttention

B, L, S, M, H = 2, 7, 5, 39, 3
DK, DV = 5, 7


def heads(x: Tensor, d: int) -> Tensor:
    """(B, n, H * d) -> (B, H, n, d), written out independently of the layer."""
    return x.reshape(x.shape[0], x.shape[1], H, d).permute(0, 2, 1, 3)


def payloads(m: MultiHeadAttention, weights: bool = False) -> tuple[list[AttentionCall], object]:
    got: list[AttentionCall] = []
    detach = m.attn_hook.attach(got.append, weights=weights)
    return got, detach


@pytest.mark.parametrize("kind", ["self", "causal", "cross"])
@pytest.mark.parametrize("mask_kind", [None, "bool", "float"])
def test_payload_is_what_the_layer_computed(kind: str, mask_kind: str | None) -> None:
    m = randomize(MultiHeadAttention(M, H, d_k=DK, d_v=DV, kernel_options={"temperature": 1.7})).double().eval()
    g = torch.Generator().manual_seed(3)
    x = torch.randn(B, L, M, generator=g, dtype=torch.float64)
    mem = torch.randn(B, S, M, generator=g, dtype=torch.float64) if kind == "cross" else x
    n = mem.shape[1]
    kpm = torch.ones(B, n, dtype=torch.bool)
    kpm[1, n - 2:] = False
    mask = None
    if mask_kind == "bool":
        mask = torch.rand(B, 1, L, n, generator=g) > 0.3
    elif mask_kind == "float":
        mask = torch.randn(1, H, L, n, generator=g, dtype=torch.float64)
    got, detach = payloads(m, weights=True)
    out, w = m(x, None if kind != "cross" else mem, mask=mask, key_padding_mask=kpm, causal=kind == "causal",
               return_weights=True)
    detach()
    (call,) = got
    assert call.kind == kind and call.causal == (kind == "causal") and call.kernel == "dense"
    assert dict(call.kernel_options) == {"temperature": 1.7}
    torch.testing.assert_close(call.q, heads(m.q_proj(x), DK), rtol=0, atol=0)
    torch.testing.assert_close(call.k, heads(m.k_proj(mem), DK), rtol=0, atol=0)
    assert call.scale == pytest.approx(DK**-0.5 / 1.7, rel=1e-15)
    pad = kpm[:, None, None, :]  # (B, 1, 1, S)
    want_mask = pad  # the key padding alone, or merged into the call's mask:
    if mask is not None:
        want_mask = mask & pad if mask.dtype == torch.bool else mask.masked_fill(~pad, -torch.inf)
    assert call.mask is not None and torch.equal(call.mask, want_mask)
    assert call.weights is w
    additive = torch.where(want_mask, 0.0, -torch.inf) if want_mask.dtype == torch.bool else want_mask
    scores = (call.q @ call.k.transpose(-1, -2)) * call.scale + additive  # (B, H, L, S)
    if kind == "causal":
        scores = scores.masked_fill(~torch.ones(L, n, dtype=torch.bool).tril(n - L), -torch.inf)
    torch.testing.assert_close(w, scores.softmax(-1).nan_to_num(0.0), rtol=1e-12, atol=1e-12)
    merged = call.heads.transpose(1, 2).reshape(B, L, H * DV)  # (B, L, H * Dv)
    torch.testing.assert_close(out, m.out_proj(merged), rtol=0, atol=0)
    assert m.attn_hook.active == 0 and m.attn_hook.listeners == 0 and not m.attn_hook._forward_hooks


def test_rotary_and_cached_keys_are_the_ones_the_kernel_used() -> None:
    m = randomize(MultiHeadAttention(M, H, d_k=6, rotary=True)).double().eval()
    x = torch.randn(B, L + 1, M, dtype=torch.float64)
    cache = KVCache()
    got, detach = payloads(m)  # no weights asked: listened to without them
    m(x[:, :L], cache=cache, causal=True)
    m(x[:, L:], cache=cache, causal=True)  # one decoding step
    detach()
    first, step = got
    assert first.weights is None and step.weights is None  # listening alone does not compute weights
    k_all = apply_rotary(heads(m.k_proj(x), 6))  # (B, H, L + 1, 6): positions 0 .. L
    torch.testing.assert_close(first.q, apply_rotary(heads(m.q_proj(x[:, :L]), 6)), rtol=0, atol=0)
    torch.testing.assert_close(step.q, apply_rotary(heads(m.q_proj(x[:, L:]), 6), offset=L), rtol=0, atol=0)
    torch.testing.assert_close(step.k, k_all, rtol=1e-15, atol=1e-15)  # the cached keys and the new one
    assert step.kind == "causal" and step.mask is None and step.heads.shape == (B, H, 1, 6)


def test_a_listener_replacing_the_heads_changes_the_output_and_only_while_attached() -> None:
    m = randomize(MultiHeadAttention(M, H, d_k=DK, d_v=DV)).double().eval()
    x = torch.randn(B, L, M, dtype=torch.float64)
    plain, _ = m(x)
    gate = torch.tensor([1.0, 0.0, 1.0], dtype=torch.float64)[None, :, None, None]  # (1, H, 1, 1): head 1 off
    detach = m.attn_hook.attach(lambda call: replace(call, heads=call.heads * gate), weights=False)
    assert m.attn_hook.listeners == 1 and m.attn_hook.active == 0
    gated, w = m(x)
    detach()
    assert w is None and m.attn_hook.listeners == 0
    _, full = m(x, return_weights=True)
    v = heads(m.v_proj(x), DV)  # (B, H, L, Dv)
    merged = (full @ v * gate).transpose(1, 2).reshape(B, L, H * DV)
    torch.testing.assert_close(gated, m.out_proj(merged), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(m(x)[0], plain, rtol=0, atol=0)
    bad = m.attn_hook.attach(lambda call: replace(call, heads=call.heads[:, :2]), weights=False)
    with pytest.raises(ShapeError, match="returned heads of shape"):
        m(x)
    bad()


def test_recurrent_attention_hands_its_weights_only_and_bad_payloads_are_refused() -> None:
    m = LuongAttention(6, 6, "general").double()
    got: list[AttentionCall] = []
    detach = m.attn_hook.attach(got.append, weights=True)
    _, w = m(torch.randn(B, 6, dtype=torch.float64), torch.randn(B, S, 6, dtype=torch.float64))
    detach()
    (call,) = got
    assert call.kind == "cross" and call.q is None and call.heads is None and call.weights.shape == (B, 1, 1, S)
    torch.testing.assert_close(call.weights[:, 0, 0], w, rtol=0, atol=0)
    with pytest.raises(InputError, match="AttentionCall"):
        AttentionHook()(torch.ones(1, 1, 2, 2))
