"""One process or many: ``torchrun`` sets ``RANK``/``WORLD_SIZE``/``LOCAL_RANK``, and the same code then runs
as one rank of a data-parallel job (gloo on CPU, nccl on GPU).  Only rank 0 writes files.

Data parallelism is done here, not by ``DistributedDataParallel``: every rank starts from rank 0's weights
(:meth:`World.share_weights`) and, after each backward, :meth:`World.average_gradients` replaces every gradient by its
mean over the ranks in one flat all-reduce.  The reason is the end of a run.  A gloo process group's worker threads
must be joined while the interpreter is whole: alive while it finalises, a worker that drops its last collective's
tensors must take the GIL, the interpreter ends that thread, and the rank dies of ``std::terminate`` (SIGABRT,
"terminate called without an active exception"; about one 2-rank run in ten failed so under load).  Two things kept
the group alive past ``destroy_process_group``: ``torch.distributed.nn`` imported after the group started (see
:mod:`attnlab._process_group`), and a DDP wrapper, whose reducer holds the group and frees it with the GIL held, so
that the join can wait forever on a worker that wants the GIL.  Without the wrapper, :meth:`World.close` frees the
group in ``destroy_process_group`` (which lets the GIL go while it joins), and no gloo thread outlives it
(tests/training/test_distributed.py)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

import torch
from torch import nn

from .._process_group import join_process_group

__all__ = ["World", "world"]


@dataclass(frozen=True)
class World:
    rank: int
    size: int
    device: torch.device

    @property
    def main(self) -> bool:
        """Rank 0: the one process that prints and writes."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.size > 1

    def all_sum(self, values: list[float]) -> list[float]:
        """The sums over every rank of ``values`` (float64, so counts stay exact)."""
        if not self.distributed:
            return values
        import torch.distributed as dist

        t = torch.tensor(values, dtype=torch.float64, device=self.device if self.device.type == "cuda" else "cpu")
        dist.all_reduce(t)
        return t.tolist()

    def share_weights(self, model: nn.Module) -> None:
        """Every rank takes rank 0's parameters and buffers (they are seeded alike; this makes it certain)."""
        if not self.distributed:
            return
        import torch.distributed as dist

        for t in [*model.parameters(), *model.buffers()]:
            dist.broadcast(t.data, src=0)

    def average_gradients(self, params: Iterable[torch.Tensor], *, mean: bool = True) -> None:
        """Replace each gradient by its mean over the ranks (its sum with ``mean=False``: sequence parallelism, where
        each rank's loss is already divided by every rank's token count), in one flat all-reduce.  A parameter with a
        gradient on some ranks only counts zeros for the others; one with no gradient on any rank keeps ``None``, as
        it would in one process (so the optimizer skips it there too)."""
        if self.distributed:
            from ..parallel import all_reduce_gradients

            all_reduce_gradients(params, mean=mean)

    def barrier(self) -> None:
        if self.distributed:
            import torch.distributed as dist

            dist.barrier()

    def close(self) -> None:
        """Destroy the process group, which joins its threads, while the interpreter is whole."""
        if self.distributed:
            import torch.distributed as dist

            if dist.is_initialized():
                dist.destroy_process_group()


def world(device: str | None = None) -> World:
    """This process's place in the job: started by ``torchrun`` (``WORLD_SIZE`` > 1) or alone."""
    size = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    name = device or ("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(f"cuda:{local}" if name == "cuda" and size > 1 else name)
    if size > 1:
        join_process_group("nccl" if dev.type == "cuda" else "gloo")
        if dev.type == "cuda":
            torch.cuda.set_device(dev)
    return World(rank, size, dev)
