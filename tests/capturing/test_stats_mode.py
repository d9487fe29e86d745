"""capture_stats(): the statistics recorded through the efficient kernels equal the statistics of the dense
weights of the same model (float64, odd sizes, key padding, causal, the local kernel's window, dilation and
global tokens, cross-attention), the model's output does not change, and bad cases are refused."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import Tensor

import attnlab as al
from attnlab import masks
from attnlab.capturing import capture_stats
from attnlab.layers import MultiHeadAttention, TransformerConfig, TransformerEncoder

B, L, D, H = 2, 11, 15, 3


def _reference(w: Tensor, top_k: int) -> dict[str, Tensor]:
    """Entropy, mean distance and top-k weights of dense weights (B, H, L, S), float64."""
    w = w.double()
    l, s = w.shape[-2:]
    i = torch.arange(l, dtype=torch.float64).view(-1, 1) + (s - l)  # aligned query positions
    j = torch.arange(s, dtype=torch.float64).view(1, -1)
    logw = torch.where(w > 0, w.log(), torch.zeros_like(w))
    return {"entropy": -(w * logw).sum(-1), "distance": (w * (i - j).abs()).sum(-1),
            "top_weight": w.topk(min(top_k, s), dim=-1).values}


def _check(stats: Any, w: Tensor, top_k: int) -> None:
    ref = _reference(w, top_k)
    torch.testing.assert_close(stats.entropy, ref["entropy"], rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(stats.distance, ref["distance"], rtol=1e-9, atol=1e-9)
    n = ref["top_weight"].shape[-1]
    torch.testing.assert_close(stats.top_weight[..., :n], ref["top_weight"], rtol=1e-9, atol=1e-12)
    picked = w.double().gather(-1, stats.top_index[..., :n].clamp_min(0))
    torch.testing.assert_close(torch.where(stats.top_index[..., :n] >= 0, picked, 0.0), stats.top_weight[..., :n])


def _pair(kernel: str, options: dict[str, Any]) -> tuple[TransformerEncoder, TransformerEncoder]:
    """The model with ``kernel`` and the same model with the dense kernel (same parameters), float64."""
    fast = TransformerEncoder(TransformerConfig(D, H, 17, kernel=kernel, kernel_options=options), 2).double().eval()
    dense = TransformerEncoder(TransformerConfig(D, H, 17), 2).double().eval()
    dense.load_state_dict(fast.state_dict())
    return fast, dense


def _dense_weights(
    model: TransformerEncoder, x: Tensor, kpm: Tensor, causal: bool, mask: Tensor | None
) -> list[Tensor]:
    """The float64 weights each layer's attention hook receives (capture() would round them to float32)."""
    got: list[Tensor] = []
    hooks = []
    for layer in model.layers:
        point = layer.self_attn.attn_hook
        point.active += 1
        hooks.append(point.register_forward_hook(lambda m, args, out: got.append(args[0].weights)))
    try:
        model(x, key_padding_mask=kpm, causal=causal, mask=mask)
    finally:
        for layer, h in zip(model.layers, hooks, strict=True):
            layer.self_attn.attn_hook.active -= 1
            h.remove()
    return got


CASES = {
    "dense": ("dense", {}, None),
    "memory_efficient": ("memory_efficient", {"block_q": 4, "block_k": 3}, None),
    "local": ("local", {"window": 2}, masks.window(2)),
    "local_dilated_global": ("local", {"window": (2, 1), "dilation": 2, "global_tokens": [1]},
                             masks.window(2, 1, dilation=2) | masks.global_tokens([1])),
}


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("case", list(CASES))
def test_stats_equal_those_of_the_dense_weights(case: str, causal: bool) -> None:
    kernel, options, pattern = CASES[case]
    fast, dense = _pair(kernel, options)
    x = torch.randn(B, L, D, dtype=torch.float64)
    kpm = torch.ones(B, L, dtype=torch.bool)
    kpm[1, 8:] = False  # the second input is padded
    plain = fast(x, key_padding_mask=kpm, causal=causal)
    with capture_stats(fast, top_k=4) as stats:
        out = fast(x, key_padding_mask=kpm, causal=causal)
    torch.testing.assert_close(out, plain, rtol=0, atol=0)
    weights = _dense_weights(dense, x, kpm, causal, None if pattern is None else pattern.materialize(L, L))
    assert [r.name for r in stats.records] == ["layers.0.self_attn", "layers.1.self_attn"]
    assert [r.kind for r in stats.records] == ["causal" if causal else "self"] * 2
    assert [r.layer for r in stats.records] == [0, 1]
    for got, w in zip(stats.records, weights, strict=True):
        assert got.stats.entropy.shape == (B, H, L) and got.stats.top_index.shape == (B, H, L, 4)
        _check(got.stats, w, 4)


def test_cross_attention_and_filters() -> None:
    mha = MultiHeadAttention(D, H, kernel="memory_efficient").double()
    q, mem = torch.randn(B, 5, D, dtype=torch.float64), torch.randn(B, 9, D, dtype=torch.float64)
    with capture_stats(mha, top_k=20) as stats:
        mha(q, mem)
    assert [r.kind for r in stats.records] == ["cross"]
    ref = MultiHeadAttention(D, H).double()
    ref.load_state_dict(mha.state_dict())
    _, w = ref(q, mem, return_weights=True)
    assert w is not None
    _check(stats.records[0].stats, w, 20)  # top_k above the 9 keys: the rest is -1 / 0
    assert (stats.records[0].stats.top_index[..., 9:] == -1).all()
    with capture_stats(mha, kinds="self") as none:
        mha(q, mem)
    assert none.records == []


def test_bad_cases_are_refused() -> None:
    x = torch.randn(1, 6, D)
    lsh = TransformerEncoder(TransformerConfig(D, H, 17, kernel="linear"), 1)
    with pytest.raises(al.errors.CaptureError, match="linear"), capture_stats(lsh):
        lsh(x)
    with pytest.raises(al.errors.CaptureError, match="no attnlab MultiHeadAttention"), capture_stats(
            torch.nn.Linear(3, 3)):
        pass
    local = TransformerEncoder(TransformerConfig(D, H, 17, kernel="local", kernel_options={"window": 1}), 1)
    with pytest.raises(al.errors.CaptureError, match="key_padding_mask"), capture_stats(local):
        local(x, mask=torch.ones(1, 1, 6, 6, dtype=torch.bool))
    with pytest.raises(al.errors.InputError, match="top_k"), capture_stats(local, top_k=0):
        pass
    mha = MultiHeadAttention(D, H)
    with capture_stats(mha):
        pass
    assert not mha._forward_hooks and not mha._forward_pre_hooks and not mha.q_proj._forward_hooks
    assert not mha.attn_hook._forward_hooks and mha.attn_hook.listeners == 0


def test_payload_stats_equal_the_old_projection_hooks_bit_for_bit() -> None:
    """The statistics read from the hook payload equal those the old capture_stats computed from forward hooks on
    q_proj / k_proj, split into heads and merged with the key padding by hand (the plain case, where both apply)."""
    mha = MultiHeadAttention(D, H, kernel="memory_efficient", kernel_options={"block_q": 4, "block_k": 3}).double()
    x = torch.randn(B, L, D, dtype=torch.float64)
    kpm = torch.ones(B, L, dtype=torch.bool)
    kpm[0, 7:] = False
    with capture_stats(mha, top_k=3) as stats:
        mha(x, key_padding_mask=kpm, causal=True)
    q = mha.q_proj(x).view(B, L, H, D // H).transpose(1, 2)  # (B, H, L, E)
    k = mha.k_proj(x).view(B, L, H, D // H).transpose(1, 2)
    old = al.functional.attention_stats(q, k, mask=kpm[:, None, None, :], causal=True, top_k=3)
    (got,) = stats.records
    for field in ("entropy", "distance", "top_index", "top_weight", "lse"):
        torch.testing.assert_close(getattr(got.stats, field), getattr(old, field), rtol=0, atol=0, msg=field)


@pytest.mark.parametrize("kernel", ["dense", "memory_efficient"])
def test_rotary_and_temperature_reach_the_statistics(kernel: str) -> None:
    """The payload's q and k are the rotated ones and its scale the kernel's (temperature included): the
    statistics equal those of the layer's own dense weights (projection hooks would have missed both)."""
    options = {"temperature": 0.6} if kernel == "dense" else {}
    mha = MultiHeadAttention(D + 3, H, rotary=True, kernel=kernel, kernel_options=options).double()
    x = torch.randn(B, L, D + 3, dtype=torch.float64)
    with capture_stats(mha, top_k=5) as stats:
        mha(x, causal=True)
    ref = MultiHeadAttention(D + 3, H, rotary=True, kernel_options=options).double()
    ref.load_state_dict(mha.state_dict())
    _, w = ref(x, causal=True, return_weights=True)
    assert w is not None
    _check(stats.records[0].stats, w, 5)


def test_local_kernel_accepts_key_padding_given_as_a_mask() -> None:
    fast, dense = _pair("local", {"window": 2})
    x = torch.randn(B, L, D, dtype=torch.float64)
    kpm = torch.ones(B, L, dtype=torch.bool)
    kpm[1, 6:] = False
    with capture_stats(fast, top_k=4) as stats:
        fast(x, mask=kpm[:, None, None, :])
    weights = _dense_weights(dense, x, kpm, False, masks.window(2).materialize(L, L))
    for got, w in zip(stats.records, weights, strict=True):
        _check(got.stats, w, 4)
