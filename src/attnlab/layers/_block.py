"""What the transformer encoder and decoder layers, and their stacks, have in common."""

from __future__ import annotations

from typing import Any

from torch import nn

from .. import _validate as check
from ._config import Configured, build
from .feedforward import FeedForward, TransformerConfig
from .multihead import MultiHeadAttention


class TransformerBlock(Configured, nn.Module):
    """Self-attention (plus cross-attention when ``cross``), a feed-forward network, one LayerNorm per
    residual branch (``norm1``, ``norm2``, ...) and the branch dropout, from one :class:`TransformerConfig`.

    ``Layer(d_model, n_heads, d_ff, **options)`` takes the fields of :class:`TransformerConfig`;
    ``Layer.from_config(cfg)`` builds the layer a config describes."""

    config_type = TransformerConfig
    cross = False
    norm1: nn.LayerNorm
    norm2: nn.LayerNorm
    norm3: nn.LayerNorm

    def __init__(self, d_model: int, n_heads: int, d_ff: int, *args: Any, **options: Any) -> None:
        super().__init__()
        cfg = build(TransformerConfig, type(self).__name__, d_model, n_heads, d_ff, *args, **options)
        self.config = cfg
        self.self_attn = MultiHeadAttention.from_config(cfg.attention())
        if self.cross:
            self.cross_attn = MultiHeadAttention.from_config(cfg.attention(cross=True))
        self.ff = FeedForward.from_config(cfg.feed_forward())
        for i in range(1, 4 if self.cross else 3):
            setattr(self, f"norm{i}", nn.LayerNorm(cfg.d_model, eps=cfg.eps))
        self.dropout = nn.Dropout(cfg.dropout)


class TransformerStack(nn.Module):
    """``n_layers`` copies of ``layer_type`` from one config, with a final LayerNorm when the layers
    are pre-norm."""

    layer_type: type[TransformerBlock]

    def __init__(self, config: TransformerConfig, n_layers: int) -> None:
        super().__init__()
        check.instance("config", config, TransformerConfig, "a TransformerConfig",
                       "build one with TransformerConfig(d_model, n_heads, d_ff, ...)")
        check.positive_int("n_layers", n_layers)
        self.config = config
        self.layers = nn.ModuleList(self.layer_type.from_config(config) for _ in range(n_layers))
        self.norm = nn.LayerNorm(config.d_model, eps=config.eps) if config.norm_first else None
