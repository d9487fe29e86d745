"""How a sequence is split across ranks: which chunks each rank holds, and the helpers that shard and unshard.

Letters: N the full (unpadded) length, P the world size (ranks), C chunks of the padded sequence, c one chunk's
length, n = c * (chunks per rank) a rank's shard length.

``contiguous``: the padded sequence is cut into ``P`` chunks and rank ``r`` holds chunk ``r``.
``zigzag``: it is cut into ``2P`` chunks and rank ``r`` holds chunks ``r`` and ``2P - 1 - r`` (one early, one
late), so that under a causal mask every rank has the same amount of work (see :mod:`attnlab.parallel.schedule`).
The sequence is padded at its end to a multiple of ``C``; the padded positions sit in the last chunk (rank
``P - 1``'s for contiguous, rank 0's second chunk for zigzag), and ring attention masks them as keys.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from torch import Tensor

from .. import _validate as check
from ..errors import ConfigError, ShapeError

__all__ = ["LAYOUTS", "Layout", "padded_length", "rank_chunks", "shard", "shard_positions", "unshard"]

Layout = Literal["contiguous", "zigzag"]
LAYOUTS: tuple[Layout, ...] = ("contiguous", "zigzag")


def check_layout(layout: object) -> Layout:
    return check.one_of("layout", layout, LAYOUTS, "contiguous: rank r holds chunk r; zigzag: chunks r and 2P-1-r")


def chunks_per_rank(layout: Layout) -> int:
    return 2 if layout == "zigzag" else 1


def rank_chunks(layout: Layout, world: int, rank: int) -> tuple[int, ...]:
    """The chunk indices rank ``rank`` holds, in the order they sit in its shard."""
    return (rank, 2 * world - 1 - rank) if layout == "zigzag" else (rank,)


def padded_length(length: int, world: int, layout: Layout) -> int:
    """``length`` rounded up to a multiple of the number of chunks ``P * chunks_per_rank``."""
    n_chunks = world * chunks_per_rank(layout)
    return -(-length // n_chunks) * n_chunks


def _checked(length: int, world: int, layout: object) -> tuple[Layout, int]:
    """The layout and the chunk length ``c`` of a ``length``-long sequence over ``world`` ranks."""
    lay = check_layout(layout)
    check.positive_int("world", world, fix="the number of ranks, e.g. torch.distributed.get_world_size()")
    check.non_negative_int("length", length)
    return lay, padded_length(length, world, lay) // (world * chunks_per_rank(lay))


def shard(x: Tensor, world: int, rank: int, *, layout: Layout = "contiguous", dim: int = -2,
          fill: float = 0) -> Tensor:
    """Rank ``rank``'s shard of ``x`` along ``dim`` (the sequence dim: -2 for ``(batch, heads, seq, dim)``, 1 for
    ``(batch, seq)`` tokens): the sequence is padded with ``fill`` at its end to a multiple of the chunk count, then the
    rank's chunks are concatenated.  Every rank's shard has the same length ``padded_length(N, P, layout) / P``."""
    check.tensor("x", x, "a tensor with a sequence dim")
    d = dim % x.ndim if -x.ndim <= dim < x.ndim else None
    if d is None:
        raise ShapeError(f"dim={dim} is not a dim of x (shape {tuple(x.shape)}); pass the sequence dim")
    lay, c = _checked(x.shape[d], world, layout)
    check.integer("rank", rank, fix=f"a rank in 0 .. {world - 1}")
    if not 0 <= rank < world:
        raise ConfigError(f"rank={rank} is not a rank of a world of {world}; pass a rank in 0 .. {world - 1}")
    pad = padded_length(x.shape[d], world, lay) - x.shape[d]
    if pad:
        shape = list(x.shape)
        shape[d] = pad
        x = torch.cat([x, x.new_full(shape, fill)], dim=d)  # (..., N_pad, ...)
    return torch.cat([x.narrow(d, j * c, c) for j in rank_chunks(lay, world, rank)], dim=d)  # (..., n, ...)


def unshard(shards: Sequence[Tensor], length: int, *, layout: Layout = "contiguous", dim: int = -2) -> Tensor:
    """The inverse of :func:`shard`: the full sequence (``length`` long, padding dropped) from every rank's shard,
    in rank order."""
    world = len(shards)
    lay, c = _checked(length, world, layout)
    k = chunks_per_rank(lay)
    sizes = {s.shape[dim] for s in shards}
    if sizes != {c * k}:
        raise ShapeError(f"unshard got shards of length(s) {sorted(sizes)} along dim {dim}; a {length}-long "
                         f"sequence over {world} ranks ({lay}) has shards of {c * k}; pass the shards shard() made")
    chunks: list[Tensor | None] = [None] * (world * k)
    for rank, s in enumerate(shards):
        for i, j in enumerate(rank_chunks(lay, world, rank)):
            chunks[j] = s.narrow(dim, i * c, c)
    full = torch.cat([t for t in chunks if t is not None], dim=dim)  # (..., N_pad, ...)
    return full.narrow(dim, 0, length)


def shard_positions(length: int, world: int, rank: int, *, layout: Layout = "contiguous",
                    device: torch.device | str | None = None) -> Tensor:
    """The global positions ``(n,)`` (int64) of rank ``rank``'s rows: what a position embedding or a rotary
    rotation needs under sequence parallelism.  Padded rows get positions ``>= length``."""
    positions = torch.arange(padded_length(length, world, check_layout(layout)), device=device)
    return shard(positions[None], world, rank, layout=layout, dim=1)[0]  # (n,)
