"""What the transformer encoder and decoder layers, and their stacks, have in common."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from torch import nn

from .. import _validate as check
from .feedforward import FeedForward, TransformerConfig
from .multihead import MultiHeadAttention


class TransformerBlock(nn.Module):
    """Self-attention (plus cross-attention when ``cross``), a feed-forward network, one LayerNorm per
    residual branch (``norm1``, ``norm2``, ...) and the branch dropout, from one :class:`TransformerConfig`."""

    cross = False
    norm1: nn.LayerNorm
    norm2: nn.LayerNorm
    norm3: nn.LayerNorm

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        norm_first: bool = False,
        activation: str = "gelu",
        *,
        d_k: int | None = None,
        d_v: int | None = None,
        kernel: str = "dense",
        eps: float = 1e-5,
    ) -> None:
        super().__init__()
        cfg = TransformerConfig(d_model, n_heads, d_ff, dropout, norm_first, activation, d_k, d_v, kernel, eps)
        self.config = cfg
        self.self_attn = MultiHeadAttention.from_config(cfg.attention())
        if self.cross:
            self.cross_attn = MultiHeadAttention.from_config(cfg.attention())
        self.ff = FeedForward(d_model, d_ff, activation, dropout)
        for i in range(1, 4 if self.cross else 3):
            setattr(self, f"norm{i}", nn.LayerNorm(d_model, eps=eps))
        self.dropout = nn.Dropout(dropout)

    @classmethod
    def from_config(cls, config: TransformerConfig) -> Any:
        return cls(**asdict(config))


class TransformerStack(nn.Module):
    """``n_layers`` copies of ``layer_type`` from one config, with a final LayerNorm when the layers
    are pre-norm."""

    layer_type: type[TransformerBlock]

    def __init__(self, config: TransformerConfig, n_layers: int) -> None:
        super().__init__()
        check.positive_int("n_layers", n_layers)
        self.config = config
        self.layers = nn.ModuleList(self.layer_type.from_config(config) for _ in range(n_layers))
        self.norm = nn.LayerNorm(config.d_model, eps=config.eps) if config.norm_first else None
