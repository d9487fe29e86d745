"""The transformer encoder: self-attention and a feed-forward network, each in a residual branch.

Letters: B batch, L length, M d_model.
"""

from __future__ import annotations

from torch import Tensor

from ..masks import Mask
from ._block import TransformerBlock, TransformerStack
from .feedforward import residual

__all__ = ["TransformerEncoder", "TransformerEncoderLayer"]


class TransformerEncoderLayer(TransformerBlock):
    """One encoder layer (Vaswani et al., 2017).

    Post-norm (default, the paper): ``x = LN(x + SA(x)); x = LN(x + FFN(x))``.
    Pre-norm (``norm_first=True``): ``x = x + SA(LN(x)); x = x + FFN(LN(x))``, which trains more
    stably in deep stacks and needs a final LayerNorm after the stack (:class:`TransformerEncoder`
    adds it).  Arguments as :class:`attnlab.layers.TransformerConfig`.
    """

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


class TransformerEncoder(TransformerStack):
    """``n_layers`` encoder layers built from one :class:`TransformerConfig`, with a final LayerNorm
    when the layers are pre-norm."""

    layer_type = TransformerEncoderLayer

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
