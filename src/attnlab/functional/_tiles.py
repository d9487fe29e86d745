"""Masks one tile at a time, for the blockwise kernels (memory-efficient attention, streaming statistics).

Letters: L query length, S key length, Bq / Bk tile sizes.  A tile is the block ``[q0, q1) x [k0, k1)``
of the ``L x S`` score matrix.  :class:`TileMask` answers, per tile and without ever building the
``L x S`` mask: may this tile be skipped (no allowed pair), and if not, which boolean mask and which
additive mask apply to it (``None`` when nothing is masked).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from .. import _validate as check
from ..masks import Mask
from ._checks import predicate_block, resolve_mask


@dataclass(frozen=True)
class Tile:
    keep: Tensor | None  # bool (..., Bq, Bk), True = may attend; None = every pair allowed
    add: Tensor | None  # float (..., Bq, Bk) added to the scores; None = nothing added


def check_block(name: str, value: int) -> int:
    """A tile size: an int >= 1."""
    return check.positive_int(name, value, fix=f"e.g. {name}=256 (a tile of 256 positions)")


class TileMask:
    """The mask of a ``q``/``k`` problem, tile by tile.

    ``mask`` is an :class:`attnlab.masks.Mask` (evaluated per tile: the dense mask never exists), a
    boolean or additive tensor that broadcasts to ``(..., L, S)`` (sliced per tile), or None.
    ``causal`` is bottom-right aligned and decided from the tile's corners alone.
    """

    def __init__(self, mask: Tensor | Mask | None, causal: bool, q: Tensor, k: Tensor):
        self.q, self.k = q, k
        self.L, self.S = q.shape[-2], k.shape[-2]
        self.causal = causal
        self.offset = self.S - self.L  # query i sits at key position i + offset
        self.device = q.device
        self.predicate: Mask | None = mask if isinstance(mask, Mask) else None
        self.tensor = None if isinstance(mask, Mask) else resolve_mask(mask, q, k)

    def tile(self, q0: int, q1: int, k0: int, k1: int) -> Tile | None:
        """The tile's masks, or None when no pair of the tile may attend (skip it)."""
        keep: Tensor | None = None
        add: Tensor | None = None
        if self.causal:
            if k0 > q1 - 1 + self.offset:  # the tile's last query cannot see its first key
                return None
            if k1 - 1 > q0 + self.offset:  # some pair is in the future: mask the tile
                i = torch.arange(q0, q1, device=self.device).view(-1, 1)  # (Bq, 1)
                j = torch.arange(k0, k1, device=self.device).view(1, -1)  # (1, Bk)
                keep = j <= i + self.offset  # (Bq, Bk)
        if self.predicate is not None:
            t = predicate_block(self.predicate, self.q, self.k, q0, q1, k0, k1)  # (B|1, 1, Bq, Bk) at most
            keep = t if keep is None else keep & t
        elif self.tensor is not None:
            m = self.tensor
            t = m[..., q0:q1, :] if m.shape[-2] != 1 else m
            t = t[..., k0:k1] if m.shape[-1] != 1 else t
            if t.dtype == torch.bool:
                keep = t if keep is None else keep & t
            else:
                add = t
        if keep is not None:
            if not bool(keep.any()):
                return None
            if bool(keep.all()):
                keep = None
        if add is not None and bool(torch.isneginf(add).all()):
            return None
        return Tile(keep, add)

    def apply(self, scores: Tensor, tile: Tile) -> Tensor:
        """Mask ``scores`` (..., Bq, Bk) in place with ``-inf`` / add the additive tile."""
        if tile.add is not None:
            scores = scores.add_(tile.add.to(scores.dtype)) if _fits(scores, tile.add) else scores + tile.add
        if tile.keep is not None:
            scores = scores.masked_fill_(~tile.keep, float("-inf")) if _fits(scores, tile.keep) else (
                scores.masked_fill(~tile.keep, float("-inf"))
            )
        return scores


def _fits(scores: Tensor, t: Tensor) -> bool:
    """In-place ops only when ``t`` broadcasts into ``scores`` without growing it."""
    return check.broadcasts_to(t.shape, scores.shape)


def spans(n: int, block: int) -> list[tuple[int, int]]:
    return [(i, min(i + block, n)) for i in range(0, n, block)]
