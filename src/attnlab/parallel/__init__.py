"""Attention across ranks: ring attention over a sequence sharded by a layout (contiguous or zigzag), its
single-process simulation, the sharding helpers, the schedule and its load balance, and what a sequence-parallel
training step needs, and the process group of a script under torchrun.  See docs/parallel.md."""

from .._process_group import join_process_group
from ._transport import Distributed
from .group import Ranks, process_group
from .kernel import ring_kernel
from .layout import LAYOUTS, Layout, padded_length, rank_chunks, shard, shard_positions, unshard
from .ring import ALONE, ring_attention, simulate_ring_attention
from .schedule import Block, load_balance, schedule
from .sequence import SequenceShard, all_reduce_gradients, current_shard, sequence_parallel, token_mean

__all__ = [
    "ALONE",
    "LAYOUTS",
    "Block",
    "Distributed",
    "Layout",
    "Ranks",
    "SequenceShard",
    "all_reduce_gradients",
    "current_shard",
    "join_process_group",
    "load_balance",
    "padded_length",
    "process_group",
    "rank_chunks",
    "ring_attention",
    "ring_kernel",
    "schedule",
    "sequence_parallel",
    "shard",
    "shard_positions",
    "simulate_ring_attention",
    "token_mean",
    "unshard",
]
