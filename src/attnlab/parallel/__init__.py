"""Attention across ranks: ring attention over a sequence sharded by a layout (contiguous or zigzag), its
single-process simulation, the sharding helpers, the schedule and its load balance, and what a sequence-parallel
training step needs.  See docs/parallel.md."""

from .layout import LAYOUTS, Layout, padded_length, rank_chunks, shard, shard_positions, unshard
from .ring import ring_attention, simulate_ring_attention
from .schedule import Block, load_balance, schedule

__all__ = [
    "LAYOUTS",
    "Block",
    "Layout",
    "load_balance",
    "padded_length",
    "rank_chunks",
    "ring_attention",
    "schedule",
    "shard",
    "shard_positions",
    "simulate_ring_attention",
    "unshard",
]
