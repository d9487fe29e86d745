"""The transformer encoder: self-attention and a feed-forward network, each in a residual branch.

Letters: B batch, L length, M d_model.
"""

from __future__ import annotations

from dataclasses import asdict

from torch import Tensor, nn

from ..masks import Mask
from . import _validate as check
from .feedforward import FeedForward, TransformerConfig, residual
from .multihead import MultiHeadAttention

__all__ = ["TransformerEncoder", "TransformerEncoderLayer"]


class TransformerEncoderLayer(nn.Module):
    """One encoder layer (Vaswani et al., 2017).

    Post-norm (default, the paper): ``x = LN(x + SA(x)); x = LN(x + FFN(x))``.
    Pre-norm (``norm_first=True``): ``x = x + SA(LN(x)); x = x + FFN(LN(x))``, which trains more
    stably in deep stacks and needs a final LayerNorm after the stack (:class:`TransformerEncoder`
    adds it).  Arguments as :class:`attnlab.layers.TransformerConfig`.
    """

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
        self.ff = FeedForward(d_model, d_ff, activation, dropout)
        self.norm1 = nn.LayerNorm(d_model, eps=eps)
        self.norm2 = nn.LayerNorm(d_model, eps=eps)
        self.dropout = nn.Dropout(dropout)

    @classmethod
    def from_config(cls, config: TransformerConfig) -> TransformerEncoderLayer:
        return cls(**asdict(config))

    def forward(
        self,
        x: Tensor,
        *,
        mask: Tensor | Mask | None = None,
        key_padding_mask: Tensor | None = None,
        causal: bool = False,
    ) -> Tensor:
        """``x`` ``(B, L, d_model)`` to ``(B, L, d_model)``; masks as :meth:`MultiHeadAttention.forward`."""

        def attend(h: Tensor) -> Tensor:
            return self.self_attn(h, mask=mask, key_padding_mask=key_padding_mask, causal=causal)[0]

        first = self.config.norm_first
        x = residual(x, self.norm1, attend, self.dropout, first)
        return residual(x, self.norm2, self.ff, self.dropout, first)


class TransformerEncoder(nn.Module):
    """``n_layers`` encoder layers built from one :class:`TransformerConfig`, with a final LayerNorm
    when the layers are pre-norm."""

    def __init__(self, config: TransformerConfig, n_layers: int) -> None:
        super().__init__()
        check.positive_int("n_layers", n_layers)
        self.config = config
        self.layers = nn.ModuleList(TransformerEncoderLayer.from_config(config) for _ in range(n_layers))
        self.norm = nn.LayerNorm(config.d_model, eps=config.eps) if config.norm_first else None

    def forward(
        self,
        x: Tensor,
        *,
        mask: Tensor | Mask | None = None,
        key_padding_mask: Tensor | None = None,
        causal: bool = False,
    ) -> Tensor:
        for layer in self.layers:
            x = layer(x, mask=mask, key_padding_mask=key_padding_mask, causal=causal)
        return x if self.norm is None else self.norm(x)
