"""Independent references for the layer tests, written with plain tensor ops (no attnlab.functional).

They read a module's parameters by name and compute in the dtype of their inputs: float64 inputs give
the reference, bfloat16 inputs give "the same plain computation in bfloat16" of FlashAttention's rule.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


def randomize(module: nn.Module, seed: int = 0) -> nn.Module:
    """Give every parameter random values (non-zero biases, non-unit norms) so that a reference
    that forgets a parameter fails."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            r = torch.randn(p.shape, generator=g, dtype=torch.float64)
            if "norm" in name and name.endswith("weight"):  # LayerNorm gains around 1
                p.copy_(1 + 0.3 * r)
            elif p.ndim >= 2:
                p.copy_(r / math.sqrt(p[0].numel()))
            else:
                p.copy_(0.3 * r)
    return module


def lin(x: Tensor, layer: nn.Linear) -> Tensor:
    out = x @ layer.weight.to(x.dtype).T
    return out if layer.bias is None else out + layer.bias.to(x.dtype)


def mha_ref(
    m: nn.Module,
    query: Tensor,
    key: Tensor | None = None,
    value: Tensor | None = None,
    *,
    mask: Tensor | None = None,
    kpm: Tensor | None = None,
    causal: bool = False,
) -> tuple[Tensor, Tensor]:
    """Multi-head attention of module ``m`` (q_proj, k_proj, v_proj, out_proj, n_heads)."""
    key = query if key is None else key
    value = key if value is None else value
    H = m.n_heads
    dk, dv = m.q_proj.out_features // H, m.v_proj.out_features // H
    B, L, _ = query.shape
    S = key.shape[1]
    q = lin(query, m.q_proj).reshape(B, L, H, dk).permute(0, 2, 1, 3)
    k = lin(key, m.k_proj).reshape(B, S, H, dk).permute(0, 2, 1, 3)
    v = lin(value, m.v_proj).reshape(B, S, H, dv).permute(0, 2, 1, 3)
    scores = q @ k.transpose(-1, -2) / math.sqrt(dk)
    allowed = torch.ones(B, H, L, S, dtype=torch.bool)
    if mask is not None:
        if mask.dtype == torch.bool:
            allowed = allowed & mask
        else:
            scores = scores + mask.to(scores.dtype)
            allowed = allowed & ~torch.isneginf(mask)
    if kpm is not None:
        allowed = allowed & kpm.bool()[:, None, None, :]
    if causal:
        allowed = allowed & (torch.arange(S).view(1, -1) <= torch.arange(L).view(-1, 1) + S - L)
    w = torch.softmax(scores.masked_fill(~allowed, -math.inf), dim=-1).nan_to_num(0.0)
    o = (w @ v).permute(0, 2, 1, 3).reshape(B, L, H * dv)
    return lin(o, m.out_proj), w


def layer_norm_ref(x: Tensor, norm: nn.LayerNorm) -> Tensor:
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + norm.eps) * norm.weight.to(x.dtype) + norm.bias.to(x.dtype)


def ff_ref(x: Tensor, ff: nn.Module, activation: str) -> Tensor:
    h = lin(x, ff.linear1)
    h = 0.5 * h * (1 + torch.erf(h / math.sqrt(2))) if activation == "gelu" else h.clamp_min(0)
    return lin(h, ff.linear2)


def _sub(x: Tensor, norm: nn.LayerNorm, f, pre: bool) -> Tensor:
    return x + f(layer_norm_ref(x, norm)) if pre else layer_norm_ref(x + f(x), norm)


def encoder_layer_ref(layer: nn.Module, x: Tensor, *, kpm: Tensor | None = None, causal: bool = False) -> Tensor:
    cfg = layer.config
    x = _sub(x, layer.norm1, lambda h: mha_ref(layer.self_attn, h, kpm=kpm, causal=causal)[0], cfg.norm_first)
    return _sub(x, layer.norm2, lambda h: ff_ref(h, layer.ff, cfg.activation), cfg.norm_first)


def decoder_layer_ref(
    layer: nn.Module, x: Tensor, memory: Tensor, *, kpm: Tensor | None = None, memory_kpm: Tensor | None = None
) -> Tensor:
    cfg = layer.config
    x = _sub(x, layer.norm1, lambda h: mha_ref(layer.self_attn, h, kpm=kpm, causal=True)[0], cfg.norm_first)
    x = _sub(x, layer.norm2, lambda h: mha_ref(layer.cross_attn, h, memory, kpm=memory_kpm)[0], cfg.norm_first)
    return _sub(x, layer.norm3, lambda h: ff_ref(h, layer.ff, cfg.activation), cfg.norm_first)


def single_query_ref(
    m: nn.Module, query: Tensor, keys: Tensor, values: Tensor | None = None, kpm: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """Bahdanau / Luong attention of one query per sequence."""
    values = keys if values is None else values
    score = m.config.score
    if score == "dot":
        e = (keys * query[:, None, :]).sum(-1)
    elif score == "general":
        e = (keys * (query @ m.weight.to(query.dtype))[:, None, :]).sum(-1)
    else:
        h = (query @ m.w_query.to(query.dtype).T)[:, None, :] + keys @ m.w_key.to(query.dtype).T
        e = torch.tanh(h) @ m.v.to(query.dtype)
    if kpm is not None:
        e = e.masked_fill(~kpm.bool(), -math.inf)
    w = torch.softmax(e, dim=-1).nan_to_num(0.0)
    return (w[..., None] * values).sum(1), w


def conv_block_ref(block: nn.Module, x: Tensor, kpm: Tensor | None = None) -> Tensor:
    a = mha_ref(block.attn, x, kpm=kpm)[0]
    if kpm is not None:
        x = x * kpm[..., None].to(x.dtype)
    return layer_norm_ref(a + grouped_conv_ref(x, block.conv.weight, block.conv.bias), block.norm)


def grouped_conv_ref(x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """A zero-padded 1-D convolution along the sequence of ``x`` (B, L, M) with ``weight`` (M, M / G, K):
    output channel ``o`` of group ``g = o // (M / G)`` sums, over its group's input channels ``c`` and taps ``j``,
    ``w[o, c, j] * x[l + j - K // 2, g * M / G + c]``."""
    w = weight.to(x.dtype)
    m, per_group, k = w.shape  # (M, M / G, K)
    length = x.shape[1]
    xp = torch.nn.functional.pad(x, (0, 0, k // 2, k // 2))  # (B, L + K - 1, M): zero padding along the sequence
    out = torch.zeros_like(x)
    for o in range(m):
        first = (o // per_group) * per_group  # the group's first input channel
        for j in range(k):
            out[:, :, o] += xp[:, j : j + length, first : first + per_group] @ w[o, :, j]  # (B, L)
    return out + bias.to(x.dtype)
