"""Linformer self-attention (Wang et al. 2020): keys and values projected along the sequence to a fixed length.

Letters: B batch, L sequence length, N the maximum length, P the projected length, H heads, D head size.

Attention matrices of trained transformers are close to low rank, so Linformer multiplies the ``L``
keys and values by learned ``(P, L)`` matrices ``E`` and ``F`` before attending: every query attends to
``P`` mixed "keys", in ``O(L P D)`` time and memory instead of ``O(L^2 D)``.  The projections are sized
for a maximum length ``N``; shorter inputs use their first ``L`` columns.  Padding keys are zeroed before
the projection, so they contribute nothing.  The weights returned have shape ``(B, H, L, P)``: they are
over projected positions, not over tokens, so the layer does not report them to :func:`attnlab.capture`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from .. import _validate as check
from ..errors import ConfigError, ShapeError
from ..functional import attention
from ._config import Configured, build

__all__ = ["LinformerConfig", "LinformerSelfAttention"]


@dataclass(frozen=True)
class LinformerConfig:
    """Sizes of a :class:`LinformerSelfAttention` (its constructor takes exactly these)."""

    d_model: int  # width of the input and of the output
    n_heads: int  # heads; d_model must be divisible by it
    max_len: int  # the longest input the sequence projections take (N)
    proj_len: int = 64  # the projected length P every query attends over
    share_kv: bool = False  # one projection for keys and values (the paper's "key-value sharing")
    dropout: float = 0.0  # dropout on the attention weights, in training only

    def __post_init__(self) -> None:
        for name in ("d_model", "n_heads", "max_len", "proj_len"):
            check.positive_int(name, getattr(self, name))
        if self.d_model % self.n_heads:
            raise ConfigError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}; choose a divisor")
        check.boolean("share_kv", self.share_kv, "one projection for keys and values")
        check.probability("dropout", self.dropout)


class LinformerSelfAttention(Configured, nn.Module):
    """Multi-head self-attention over sequence-projected keys and values, batch first ``(B, L, d_model)``.

    ``forward(x, key_padding_mask=None, return_weights=False)`` returns ``(output (B, L, d_model),
    weights (B, H, L, P) or None)``; ``key_padding_mask`` is ``(B, L)`` bool, True = real token.
    ``LinformerSelfAttention(d_model, n_heads, max_len, **options)`` takes the fields of :class:`LinformerConfig`.
    """

    config_type = LinformerConfig

    def __init__(self, d_model: int, n_heads: int, max_len: int, *args: Any, **options: Any) -> None:
        super().__init__()
        cfg = build(LinformerConfig, "LinformerSelfAttention", d_model, n_heads, max_len, *args, **options)
        self.config = cfg
        m, p, n = cfg.d_model, cfg.proj_len, cfg.max_len
        self.qkv = nn.Linear(m, 3 * m)
        self.out_proj = nn.Linear(m, m)
        self.proj_k = nn.Parameter(torch.randn(p, n) / math.sqrt(p))  # E (P, N)
        self.proj_v = None if cfg.share_kv else nn.Parameter(torch.randn(p, n) / math.sqrt(p))

    def forward(
        self, x: Tensor, key_padding_mask: Tensor | None = None, return_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        cfg = self.config
        check.features("x", x, 3, cfg.d_model, "(batch, seq, d_model)", self.qkv.weight)
        B, n, _ = x.shape
        if n > cfg.max_len:
            raise ShapeError(
                f"x has {n} positions but this Linformer was built for max_len={cfg.max_len}; "
                f"build it with max_len >= {n} or cut the input"
            )
        H, D = cfg.n_heads, cfg.d_model // cfg.n_heads
        q, k, v = self.qkv(x).view(B, n, 3, H, D).permute(2, 0, 3, 1, 4)  # 3 x (B, H, L, D)
        if key_padding_mask is not None:
            keep = check.key_padding(key_padding_mask, B, n)[:, None, :, None].to(x.dtype)  # (B, 1, L, 1)
            k, v = k * keep, v * keep
        e = self.proj_k[:, :n]  # (P, L)
        f = e if self.proj_v is None else self.proj_v[:, :n]
        kp = torch.matmul(e, k)  # (B, H, P, D)
        vp = torch.matmul(f, v)  # (B, H, P, D)
        p = cfg.dropout if self.training else 0.0
        out, w = attention(q, kp, vp, dropout=p, return_weights=return_weights)  # (B, H, L, D)
        out = out.transpose(1, 2).reshape(B, n, cfg.d_model)  # (B, L, H * D)
        return self.out_proj(out), w
