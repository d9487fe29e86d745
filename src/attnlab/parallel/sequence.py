"""What a training step needs when every sequence is sharded across ranks (sequence parallelism).

Inside ``with sequence_parallel(length, layout=...) as sp:`` every attention layer whose kernel is ``"ring"``
attends over the whole sequence although each rank holds ``1 / world`` of it.  A step then:

1. ``sp.shard(x, dim=1)`` the batch's inputs (and ``sp.shard(targets, dim=1, fill=-100)``) by the layout;
2. ``sp.positions(device)``: the global positions of the rank's rows (for a position embedding; a rotary layer
   under ``kernel="ring"`` reads them itself);
3. ``token_mean(loss_sum, tokens, sp.group)``: the loss as the mean over every rank's tokens;
4. ``all_reduce_gradients(model.parameters(), sp.group)`` after ``backward``: each rank's gradient is its share
   of the full-sequence gradient (the ring backward already sent each key/value gradient home), so they are summed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from .group import require_group
from .layout import Layout, check_layout, shard, shard_positions

__all__ = ["SequenceShard", "all_reduce_gradients", "current_shard", "sequence_parallel", "token_mean"]


@dataclass(frozen=True)
class SequenceShard:
    """One rank's part of a ``length``-long sequence over ``world`` ranks."""

    length: int
    world: int
    rank: int
    layout: Layout
    group: Any = None

    def shard(self, x: Tensor, *, dim: int = 1, fill: float = 0) -> Tensor:
        """This rank's shard of a full ``x`` (sequence along ``dim``), padded with ``fill`` (e.g. -100 for targets
        that cross-entropy ignores)."""
        return shard(x, self.world, self.rank, layout=self.layout, dim=dim, fill=fill)

    def positions(self, device: torch.device | str | None = None) -> Tensor:
        """The global positions ``(n,)`` of this rank's rows (padding: ``>= length``)."""
        return shard_positions(self.length, self.world, self.rank, layout=self.layout, device=device)


_CURRENT: ContextVar[SequenceShard | None] = ContextVar("attnlab_sequence_shard", default=None)


def current_shard() -> SequenceShard | None:
    """The :class:`SequenceShard` of the innermost :func:`sequence_parallel`, or None outside one."""
    return _CURRENT.get()


@contextmanager
def sequence_parallel(length: int, *, layout: Layout = "zigzag", group: Any = None) -> Iterator[SequenceShard]:
    """Run the ``"ring"`` attention layers inside over a ``length``-long sequence sharded by ``layout`` across
    ``group`` (None = the default group; this process alone when none was started, which under ``torchrun`` is a
    :class:`~attnlab.errors.ConfigError` naming :func:`~attnlab.parallel.process_group`)."""
    import torch.distributed as dist

    lay = check_layout(layout)
    require_group(group, "sequence_parallel")
    if dist.is_available() and dist.is_initialized():
        world, rank = dist.get_world_size(group), dist.get_rank(group)
    else:
        world, rank = 1, 0
    token = _CURRENT.set(SequenceShard(int(length), world, rank, lay, group))
    try:
        yield _CURRENT.get()  # type: ignore[misc]
    finally:
        _CURRENT.reset(token)


def _sum(t: Tensor, group: Any) -> Tensor:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized() and dist.get_world_size(group) > 1:
        dist.all_reduce(t, group=group)
    return t


def token_mean(loss_sum: Tensor, tokens: Tensor | int, group: Any = None) -> tuple[Tensor, Tensor]:
    """``(loss to back-propagate, the mean loss of every rank's tokens)``: this rank's summed token loss over the
    token count of every rank (so that the summed gradients are the full batch's mean-loss gradient), and the
    all-ranks mean itself (detached, the same on every rank)."""
    count = torch.as_tensor(tokens, dtype=torch.float64, device=loss_sum.device)
    count, total = _sum(torch.stack([count, loss_sum.detach().to(torch.float64)]), group)  # one all-reduce
    return loss_sum / count.to(loss_sum.dtype), (total / count).to(loss_sum.dtype)


def all_reduce_gradients(params: Iterable[Tensor], group: Any = None, *, mean: bool = False) -> None:
    """Sum every gradient over the ranks of ``group`` (their mean with ``mean=True``: data parallelism), in one flat
    all-reduce.  A parameter with a gradient on some ranks only counts zeros for the others, so every rank reduces a
    buffer of the same length; one with no gradient on any rank keeps ``None``, as it would in one process (so an
    optimizer skips it there too).  Nothing happens outside a process group of more than one rank."""
    import torch.distributed as dist

    params = [p for p in params if p.requires_grad]
    if not params or not (dist.is_available() and dist.is_initialized() and dist.get_world_size(group) > 1):
        return
    like = params[0]
    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
    has = torch.tensor([float(p.grad is not None) for p in params], dtype=grads[0].dtype, device=like.device)
    flat = _sum(torch.cat([*(g.reshape(-1) for g in grads), has]), group)  # (sum of numels + P,)
    sums, anyone = flat[: flat.numel() - len(params)], flat[flat.numel() - len(params):]
    if mean:
        sums /= dist.get_world_size(group)
    for p, g, used in zip(params, sums.split([q.numel() for q in params]), anyone.tolist(), strict=True):
        p.grad = g.view_as(p).clone() if used else None
