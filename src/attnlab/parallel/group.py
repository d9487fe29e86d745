"""The process group of a script run under ``torchrun``: started from the environment torchrun sets
(``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``/``MASTER_PORT``), ended cleanly when the script is done.

``with process_group() as (rank, world):`` is the one line a script needs; alone (no torchrun) it is
``(0, 1)`` and starts nothing, so the same script runs in one process and on ``P`` ranks. Ring attention and
:func:`~attnlab.parallel.sequence_parallel` read the group it started; asked for under torchrun before any group
exists, they raise a :class:`~attnlab.errors.ConfigError` naming this function instead of running every rank alone
on its own shard (each rank would compute attention over ``1 / P`` of the sequence, silently)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

from .._process_group import join_process_group
from ..errors import ConfigError

__all__ = ["Ranks", "process_group", "require_group"]


class Ranks(NamedTuple):
    rank: int  # this process's rank, 0 to world - 1
    world: int  # how many processes take part (1 alone)


@contextmanager
def process_group(backend: str = "gloo") -> Iterator[Ranks]:
    """Join the process group ``torchrun``'s environment asks for (started with ``backend``: ``"gloo"`` on CPU,
    ``"nccl"`` for CUDA tensors), yield this process's ``(rank, world)``, and destroy the group on the way out if
    this call started it (which joins its threads while the interpreter is whole). A group already started is used
    as it is and left running; alone, ``(0, 1)`` and nothing is started."""
    if backend not in ("gloo", "nccl", "mpi", "ucc"):
        raise ConfigError(f"process_group got backend={backend!r}; expected 'gloo' (CPU tensors) or 'nccl' (CUDA "
                          f"tensors): pass one of them")
    rank, world, started = join_process_group(backend)
    try:
        yield Ranks(rank, world)
    finally:
        if started:
            import torch.distributed as dist

            if dist.is_initialized():
                dist.destroy_process_group()


def require_group(group: Any, what: str) -> None:
    """Refuse ``what`` under ``torchrun`` (``WORLD_SIZE`` > 1) when no group was given and none was started: every
    rank would run alone on its own shard. ``group`` given (a group, or ``ALONE``) is the caller's choice."""
    import torch.distributed as dist

    world = os.environ.get("WORLD_SIZE", "1")
    if group is not None or not world.isdigit() or int(world) <= 1:
        return
    if dist.is_available() and dist.is_initialized():
        return
    raise ConfigError(f"{what} runs under torchrun (WORLD_SIZE={world}) but no process group was started, so every "
                      f"rank would attend over its own shard alone; start the group first: "
                      f"`with attnlab.parallel.process_group(): ...` (or torch.distributed.init_process_group)")
