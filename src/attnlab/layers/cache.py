"""Key/value caches for incremental decoding.

A :class:`KVCache` belongs to one attention layer.  It holds the *projected* keys and values
``(B, H, S, D)`` that the layer has seen so far and is extended in place, so decoding one token at a
time costs one projection per new token instead of re-projecting the whole prefix.  With
``causal=True`` the new queries align bottom-right with the cached keys, so the last query sees every
key: the outputs equal those of the full causal computation.

For cross-attention the cache keeps the projected memory: it is filled on the first call and reused
unchanged afterwards (the encoder's output does not change while the decoder generates).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from ..errors import ShapeError

__all__ = ["DecoderLayerCache", "KVCache"]


@dataclass
class KVCache:
    """Projected keys ``(B, H, S, Dk)`` and values ``(B, H, S, Dv)`` of one attention layer."""

    keys: Tensor | None = None
    values: Tensor | None = None

    def __len__(self) -> int:
        """The number of cached positions ``S``."""
        return 0 if self.keys is None else int(self.keys.shape[-2])

    @property
    def empty(self) -> bool:
        return self.keys is None

    def append(self, keys: Tensor, values: Tensor) -> tuple[Tensor, Tensor]:
        """Add new positions at the end and return every cached key and value."""
        if self.keys is None or self.values is None:
            self.keys, self.values = keys, values
        else:
            if keys.shape[:2] != self.keys.shape[:2]:
                raise ShapeError(
                    f"cache holds (batch, heads) = {tuple(self.keys.shape[:2])} but the new keys have "
                    f"{tuple(keys.shape[:2])}; use one cache per sequence batch (KVCache() starts a new one)"
                )
            self.keys = torch.cat([self.keys, keys], dim=-2)  # (B, H, S + L, Dk)
            self.values = torch.cat([self.values, values], dim=-2)  # (B, H, S + L, Dv)
        return self.keys, self.values

    def clear(self) -> None:
        self.keys = self.values = None


@dataclass
class DecoderLayerCache:
    """The two caches of one decoder layer: its causal self-attention (grows by the new tokens each
    call) and its cross-attention (the projected encoder memory, computed once)."""

    self_attn: KVCache = field(default_factory=KVCache)
    cross_attn: KVCache = field(default_factory=KVCache)
