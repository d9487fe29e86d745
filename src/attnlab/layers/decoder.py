"""The transformer decoder: causal self-attention, cross-attention to the encoder's memory, and a
feed-forward network, each in a residual branch; with key/value caches for incremental decoding.

Letters: B batch, L target length, S memory length, M d_model.
"""

from __future__ import annotations

from torch import Tensor

from .. import _validate as check
from ..errors import ConfigError
from ._block import TransformerBlock, TransformerStack
from .cache import DecoderLayerCache
from .feedforward import residual

__all__ = ["TransformerDecoder", "TransformerDecoderLayer"]


class TransformerDecoderLayer(TransformerBlock):
    """One decoder layer (Vaswani et al., 2017); post-norm by default, pre-norm with
    ``norm_first=True``.  Arguments as :class:`attnlab.layers.TransformerConfig`."""

    cross = True

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        *,
        key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        cache: DecoderLayerCache | None = None,
    ) -> Tensor:
        """Decode ``x`` ``(B, L, d_model)`` against ``memory`` ``(B, S, d_model)``.

        Args:
            key_padding_mask: ``(B, L_total)`` True = real target token; with a cache it covers the
                cached tokens and the new ones.
            memory_key_padding_mask: ``(B, S)`` True = real source token.
            cache: a :class:`DecoderLayerCache`; pass the same one at every step and feed only the
                new tokens. The self-attention is causal and aligned bottom-right, so the new tokens
                see every cached one and the result equals decoding the whole prefix at once.
        """
        if cache is not None:
            check.instance("cache", cache, DecoderLayerCache, "a DecoderLayerCache",
                           "for a TransformerDecoder use decoder.new_cache()")
        sa_cache = cache.self_attn if cache is not None else None
        ca_cache = cache.cross_attn if cache is not None else None

        def attend_self(h: Tensor) -> Tensor:
            return self.self_attn(h, causal=True, key_padding_mask=key_padding_mask, cache=sa_cache)[0]

        def attend_memory(h: Tensor) -> Tensor:
            return self.cross_attn(h, memory, key_padding_mask=memory_key_padding_mask, cache=ca_cache)[0]

        first = self.config.norm_first
        x = residual(x, self.norm1, attend_self, self.dropout, first)
        x = residual(x, self.norm2, attend_memory, self.dropout, first)
        return residual(x, self.norm3, self.ff, self.dropout, first)


class TransformerDecoder(TransformerStack):
    """``n_layers`` decoder layers from one :class:`TransformerConfig`, with a final LayerNorm when
    the layers are pre-norm.  ``new_cache()`` makes the per-layer caches for incremental decoding."""

    layer_type = TransformerDecoderLayer

    def new_cache(self) -> list[DecoderLayerCache]:
        """Empty caches, one per layer; pass the list as ``cache=`` at every decoding step."""
        return [DecoderLayerCache() for _ in self.layers]

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        *,
        key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        cache: list[DecoderLayerCache] | None = None,
    ) -> Tensor:
        if cache is not None and len(cache) != len(self.layers):
            raise ConfigError(
                f"cache has {len(cache)} entries but the decoder has {len(self.layers)} layers; "
                f"make it with decoder.new_cache()"
            )
        for i, layer in enumerate(self.layers):
            x = layer(
                x,
                memory,
                key_padding_mask=key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask,
                cache=cache[i] if cache is not None else None,
            )
        return x if self.norm is None else self.norm(x)
