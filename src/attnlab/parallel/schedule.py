"""Who computes what: the score blocks of ring attention, step by step, and the load balance they give.

Letters: P ranks, C chunks (``P`` contiguous, ``2P`` zigzag), i a query chunk, j a key chunk.

At step ``s`` (0 .. P-1) rank ``r`` holds the keys and values of rank ``(r - s) mod P`` and computes, for each of
its query chunks ``i`` and each held key chunk ``j``, the score block ``(i, j)``: all of it without a causal mask;
under one, the whole block when ``j < i``, the lower triangle when ``j == i`` (the diagonal), nothing when ``j > i``
(the future).  The ``allgather`` schedule computes the same blocks; only how the keys arrive differs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .. import _validate as check
from .layout import Layout, check_layout, rank_chunks

__all__ = ["Block", "load_balance", "schedule"]

Kind = Literal["full", "diagonal"]


@dataclass(frozen=True)
class Block:
    """One score block: at ``step``, ``rank`` attends from its query chunk ``q_chunk`` to ``k_chunk`` of
    ``source``'s keys.  ``q_slot`` / ``k_slot`` are the chunks' places in the two shards (0 or 1)."""

    step: int
    rank: int
    source: int
    q_chunk: int
    k_chunk: int
    q_slot: int
    k_slot: int
    kind: Kind


def blocks_at(layout: Layout, world: int, causal: bool, step: int, rank: int) -> list[Block]:
    """The blocks rank ``rank`` computes at ``step`` (the one definition the kernel and the balance use)."""
    source = (rank - step) % world
    out = []
    for q_slot, i in enumerate(rank_chunks(layout, world, rank)):
        for k_slot, j in enumerate(rank_chunks(layout, world, source)):
            if causal and j > i:
                continue
            kind: Kind = "diagonal" if causal and j == i else "full"
            out.append(Block(step, rank, source, i, j, q_slot, k_slot, kind))
    return out


def schedule(world: int, *, layout: Layout = "contiguous", causal: bool = False) -> list[Block]:
    """Every block every rank computes, in step order."""
    lay = check_layout(layout)
    check.positive_int("world", world)
    check.boolean("causal", causal, "True = each query sees the keys at or before its position")
    return [b for step in range(world) for rank in range(world) for b in blocks_at(lay, world, causal, step, rank)]


def load_balance(world: int, *, layout: Layout = "contiguous", causal: bool = False,
                 unit: Literal["block", "pair"] = "block") -> float:
    """The busiest rank's work over the mean rank's, from :func:`schedule`.

    ``unit="block"`` counts score blocks computed (a diagonal block counts as one: it is computed, half masked);
    ``unit="pair"`` counts the query-key pairs actually allowed (a diagonal block of ``c`` rows is worth
    ``(c + 1) / 2c`` of a full one; here in the limit of long chunks, 1/2).  Contiguous causal:
    ``2P / (P + 1)`` blocks, ``(2P - 1) / P`` pairs; zigzag: exactly 1 in both; without a mask: 1.
    """
    check.one_of("unit", unit, ("block", "pair"), "block: score blocks computed; pair: allowed pairs")
    work = [0.0] * world
    for b in schedule(world, layout=layout, causal=causal):
        work[b.rank] += 0.5 if unit == "pair" and b.kind == "diagonal" else 1.0
    return max(work) / (sum(work) / world)
