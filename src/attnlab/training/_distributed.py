"""One process or many: ``torchrun`` sets ``RANK``/``WORLD_SIZE``/``LOCAL_RANK``, and the same code then runs
as one rank of a DistributedDataParallel job (gloo on CPU, nccl on GPU).  Only rank 0 writes files."""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

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

    def barrier(self) -> None:
        if self.distributed:
            import torch.distributed as dist

            dist.barrier()

    def close(self) -> None:
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
