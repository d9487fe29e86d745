"""How key/value blocks move: between real ranks (torch.distributed: gloo on CPU, nccl on GPU), or between the
simulated ranks of one process.  The ring attention code is written once over a list of the shards this process
holds: one (its own) on a real rank, all ``P`` in the simulation.  ``parts[a]`` is the list of tensors of held
rank ``ranks[a]``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import torch
from torch import Tensor

Parts = list[list[Tensor]]


class Ring(Protocol):
    world: int
    ranks: tuple[int, ...]  # the ranks whose shards this process holds

    def shift(self, parts: Parts) -> Callable[[], Parts]:
        """Start sending each held rank's tensors to the next rank (``r + 1 mod P``); the returned function waits
        for, and returns, what the previous rank sent."""
        ...

    def gather(self, parts: Parts) -> list[Parts]:
        """Per held rank, every rank's tensors in rank order (all-gather)."""
        ...

    def reduce_home(self, parts: list[Parts]) -> Parts:
        """``parts[a][s]`` is what held rank ``a`` computed for rank ``s``; per held rank, the sum of what every
        rank computed for it."""
        ...

    def exchange(self, row: list[Tensor]) -> list[Tensor]:
        """Per rank, its check row (an all-gather of small int64 rows, one per held rank)."""
        ...


class Simulated:
    """All ``world`` ranks in one process: a shift rotates the list, a gather copies it."""

    def __init__(self, world: int):
        self.world = world
        self.ranks: tuple[int, ...] = tuple(range(world))

    def shift(self, parts: Parts) -> Callable[[], Parts]:
        moved = [parts[(a - 1) % self.world] for a in range(self.world)]  # rank a receives from a - 1
        return lambda: moved

    def gather(self, parts: Parts) -> list[Parts]:
        return [list(parts) for _ in range(self.world)]

    def reduce_home(self, parts: list[Parts]) -> Parts:
        return [[sum(parts[b][a][i] for b in range(self.world)) for i in range(len(parts[0][a]))]  # type: ignore[misc]
                for a in range(self.world)]

    def exchange(self, row: list[Tensor]) -> list[Tensor]:
        return row


class Distributed:
    """This process is one rank of ``group`` (None = the default group)."""

    def __init__(self, group: Any = None):
        import torch.distributed as dist

        self.dist, self.group = dist, group
        self.world = dist.get_world_size(group)
        self.rank = dist.get_rank(group)
        self.ranks: tuple[int, ...] = (self.rank,)
        self.next = self._global((self.rank + 1) % self.world)
        self.prev = self._global((self.rank - 1) % self.world)

    def _global(self, rank: int) -> int:
        return rank if self.group is None else self.dist.get_global_rank(self.group, rank)

    def shift(self, parts: Parts) -> Callable[[], Parts]:
        if self.world == 1:
            return lambda: parts
        dist = self.dist
        send = [t.contiguous() for t in parts[0]]
        recv = [torch.empty_like(t) for t in send]
        ops = [dist.P2POp(dist.isend, t, self.next, self.group, tag=i) for i, t in enumerate(send)]
        ops += [dist.P2POp(dist.irecv, t, self.prev, self.group, tag=i) for i, t in enumerate(recv)]
        requests = dist.batch_isend_irecv(ops)

        def wait() -> Parts:
            for r in requests:
                r.wait()
            return [recv]

        return wait

    def gather(self, parts: Parts) -> list[Parts]:
        out: Parts = [[] for _ in range(self.world)]
        for t in parts[0]:
            bufs = [torch.empty_like(t) for _ in range(self.world)]
            self.dist.all_gather(bufs, t.contiguous(), group=self.group)
            for s, b in enumerate(bufs):
                out[s].append(b)
        return [out]

    def reduce_home(self, parts: list[Parts]) -> Parts:
        mine = []
        for i in range(len(parts[0][0])):
            stacked = torch.stack([parts[0][s][i] for s in range(self.world)])  # (P, ...): what I computed for each
            self.dist.all_reduce(stacked, group=self.group)  # gloo has no reduce_scatter: reduce all, keep mine
            mine.append(stacked[self.rank])
        return [mine]

    def exchange(self, row: list[Tensor]) -> list[Tensor]:
        device = torch.device("cuda", torch.cuda.current_device()) if self.dist.get_backend(self.group) == "nccl" \
            else torch.device("cpu")
        mine = row[0].to(device)
        rows = [torch.empty_like(mine) for _ in range(self.world)]
        self.dist.all_gather(rows, mine, group=self.group)
        return [r.cpu() for r in rows]
