"""capture() on torch.nn.MultiheadAttention and nn.Transformer*: parity, kinds, masks, restoring."""

from __future__ import annotations

import copy
import math

import pytest
import torch
from torch import Tensor, nn

import attnlab as al


def _ref_weights(mha: nn.MultiheadAttention, q_in: Tensor, k_in: Tensor, allowed: Tensor | None) -> Tensor:
    """Per-head weights in float64, batch first, written from the module's parameters.  ``allowed``
    broadcasts to (B, H, L, S) with True = may attend (extra keys from bias_k/zero_attn not included)."""
    e, h = mha.embed_dim, mha.num_heads
    d = e // h
    if mha._qkv_same_embed_dim:
        w_q, w_k = mha.in_proj_weight[:e].double(), mha.in_proj_weight[e : 2 * e].double()
    else:
        w_q, w_k = mha.q_proj_weight.double(), mha.k_proj_weight.double()
    b = mha.in_proj_bias.double() if mha.in_proj_bias is not None else torch.zeros(3 * e, dtype=torch.float64)
    q = q_in.double() @ w_q.T + b[:e]
    k = k_in.double() @ w_k.T + b[e : 2 * e]
    n_extra = 0
    if mha.bias_k is not None:
        k = torch.cat([k, mha.bias_k.double().view(1, 1, e).expand(k.shape[0], 1, e)], 1)
        n_extra += 1
    q = q.view(q.shape[0], -1, h, d).transpose(1, 2)
    k = k.view(k.shape[0], -1, h, d).transpose(1, 2)
    if mha.add_zero_attn:
        k = torch.cat([k, torch.zeros(k.shape[0], h, 1, d, dtype=torch.float64)], 2)
        n_extra += 1
    scores = torch.einsum("bhld,bhsd->bhls", q, k) / math.sqrt(d)
    if allowed is not None:
        allowed = torch.cat([allowed.expand(*scores.shape[:-1], -1),
                             torch.ones(*scores.shape[:-1], n_extra, dtype=torch.bool)], -1)
        scores = scores.masked_fill(~allowed, -math.inf)
    return torch.nan_to_num(torch.softmax(scores, -1), nan=0.0)


def _check(mha: nn.MultiheadAttention, got: Tensor, averaged: Tensor | None, ref: Tensor, label: str) -> None:
    diff = (got.double() - ref).abs().max().item()
    print(f"torch MHA {label}: per head vs float64 {diff:.2e}", end="")
    assert diff < 1e-5, f"{label}: per-head weights differ from the float64 reference by {diff:.2e}"
    if averaged is not None:
        avg_diff = (got.mean(1) - averaged).abs().max().item()
        print(f", head mean vs torch's average {avg_diff:.2e}")
        assert avg_diff < 1e-6, f"{label}: mean over heads differs from torch's averaged weights by {avg_diff:.2e}"


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("extras", ["plain", "bias_kv", "zero_attn", "kdim"])
def test_mha_parity_with_masks(batch_first: bool, extras: str) -> None:
    e, h, lq, lk = 12, 3, 7, 5
    kw = {"add_bias_kv": extras == "bias_kv", "add_zero_attn": extras == "zero_attn"}
    if extras == "kdim":
        kw.update(kdim=13, vdim=11)
    mha = nn.MultiheadAttention(e, h, batch_first=batch_first, **kw).eval()
    q = torch.randn(2, lq, e)
    k = torch.randn(2, lk, 13 if extras == "kdim" else e)
    v = torch.randn(2, lk, 11 if extras == "kdim" else e)
    kpm = torch.zeros(2, lk, dtype=torch.bool)
    kpm[1, 3:] = True  # torch: True = padding
    attn_mask = torch.rand(lq, lk) > 0.8  # torch: True = blocked
    allowed = ~attn_mask & ~kpm[:, None, None, :]

    def t(x: Tensor) -> Tensor:
        return x if batch_first else x.transpose(0, 1)

    with torch.no_grad():
        out_ref, avg = mha(t(q), t(k), t(v), key_padding_mask=kpm, attn_mask=attn_mask)
        with al.capture(mha) as trace:
            out, avg_again = mha(t(q), t(k), t(v), key_padding_mask=kpm, attn_mask=attn_mask)
    assert torch.equal(out, out_ref) and torch.equal(avg, avg_again)  # outputs unchanged
    (r,) = trace.records
    assert r.kind == "cross" and r.weights.shape == (2, h, lq, lk + (extras in ("bias_kv", "zero_attn")))
    _check(mha, r.weights, avg, _ref_weights(mha, q, k, allowed), f"{extras} batch_first={batch_first}")


def test_mha_float_and_3d_masks_and_unbatched() -> None:
    mha = nn.MultiheadAttention(12, 3).eval()
    x = torch.randn(7, 12)  # unbatched (L, E)
    float_mask = torch.randn(3, 7, 7)  # (B * H, L, S) with B = 1, added
    float_mask[:, :, 2] = -math.inf
    with torch.no_grad(), al.capture(mha) as trace:
        _, avg = mha(x, x, x, attn_mask=float_mask)
    (r,) = trace.records
    assert r.kind == "self" and r.weights.shape == (1, 3, 7, 7)
    # the float mask enters the scores; compare against the reference with the mask added in float64
    ref = _ref_weights(mha, x[None], x[None], None)
    ref = torch.softmax(torch.log(ref) + float_mask.double().view(1, 3, 7, 7), -1)
    _check(mha, r.weights, avg[None], ref, "float 3-D mask, unbatched")
    assert (r.weights[..., 2] == 0).all()


def test_mha_need_weights_false_and_fully_masked_rows() -> None:
    mha = nn.MultiheadAttention(12, 2, batch_first=True).eval()  # even heads: torch's fused fast path
    x = torch.randn(2, 7, 12)
    kpm = torch.zeros(2, 7, dtype=torch.bool)
    kpm[1] = True  # every key of input 1 is padding: torch gives NaN, attnlab zeros
    with torch.no_grad():
        ref_out, _ = mha(x, x, x, need_weights=False)
        with al.capture(mha) as trace:
            out, w = mha(x, x, x, need_weights=False)
            mha(x, x, x, key_padding_mask=kpm, need_weights=False)
    assert w is None and torch.equal(out, ref_out)
    assert [r.kind for r in trace] == ["self", "self"]
    assert torch.isfinite(trace[1].weights).all() and (trace[1].weights[1] == 0).all()
    torch.testing.assert_close(trace[1].weights[0].sum(-1), torch.ones(2, 7))


def _copy_state(m: nn.Module) -> tuple[dict[str, Tensor], dict[str, object], list[int]]:
    flags = {
        f"{n}.{a}": getattr(mod, a)
        for n, mod in m.named_modules()
        for a in ("use_nested_tensor", "training", "batch_first", "activation_relu_or_gelu")
        if hasattr(mod, a)
    }
    hooks = [len(mod._forward_hooks) + len(mod._forward_pre_hooks) for mod in m.modules()]
    return copy.deepcopy(m.state_dict()), flags, hooks


@pytest.mark.filterwarnings("ignore:.*nested:UserWarning")
@pytest.mark.parametrize("n_heads", [2, 3])
def test_transformer_encoder_fast_paths_are_captured_and_restored(n_heads: int) -> None:
    layer = nn.TransformerEncoderLayer(12, n_heads, 17, dropout=0.0, batch_first=True)
    enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=True).eval()
    x = torch.randn(2, 7, 12)
    kpm = torch.zeros(2, 7, dtype=torch.bool)
    kpm[1, 5:] = True
    state = _copy_state(enc)
    forwards = [type(m).forward for m in enc.modules()]
    with torch.no_grad():
        ref = enc(x, src_key_padding_mask=kpm)
        with al.capture(enc) as trace:
            out = enc(x, src_key_padding_mask=kpm)
        after = enc(x, src_key_padding_mask=kpm)
    assert [(r.name, r.kind, r.layer) for r in trace] == [
        ("layers.0.self_attn", "self", 0), ("layers.1.self_attn", "self", 1)]
    assert (trace[0].weights[1, :, :, 5:] == 0).all()  # padded keys get no weight
    torch.testing.assert_close(trace[0].weights.sum(-1), torch.ones(2, n_heads, 7))
    # real positions agree with the fused path to rounding; padded positions of the nested path are zeros
    torch.testing.assert_close(out[~kpm], ref[~kpm], rtol=0, atol=1e-5)
    assert torch.equal(after, ref)
    new_state = _copy_state(enc)
    assert new_state[1:] == state[1:]
    assert all(torch.equal(a, b) for a, b in zip(state[0].values(), new_state[0].values(), strict=True))
    assert [type(m).forward for m in enc.modules()] == forwards
    assert all("forward" not in vars(m) for m in enc.modules())


def test_transformer_decoder_kinds() -> None:
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(12, 3, 17, dropout=0.0, batch_first=True), 2).eval()
    tgt, mem = torch.randn(1, 5, 12), torch.randn(1, 7, 12)
    mask = nn.Transformer.generate_square_subsequent_mask(5)  # float, -inf above the diagonal
    with torch.no_grad(), al.capture(dec) as trace:
        dec(tgt, mem, tgt_mask=mask)
    assert [(r.kind, r.layer) for r in trace] == [("causal", 0), ("cross", 0), ("causal", 1), ("cross", 1)]
    assert (trace[0].weights[0].triu(1) == 0).all()
    assert trace[1].weights.shape == (1, 3, 5, 7)
