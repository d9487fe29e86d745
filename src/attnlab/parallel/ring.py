"""Ring attention (Liu et al., 2023): exact attention over a sequence split across ranks.

Letters: B batch, H heads (any leading dims ``...``), N the full length, P ranks, n = N_pad / P one rank's shard,
c one chunk (``n`` contiguous, ``n / 2`` zigzag), E query/key features, Ev value features.

Each rank holds its shard of ``q``, ``k``, ``v`` ``(..., n, E)``.  At each of ``P`` steps it attends from its
queries to the key/value shard it holds (one score block per pair of chunks that the causal mask allows, computed
tile by tile by :func:`attnlab.functional.memory_efficient.blockwise_forward`) and merges the block's output into
its running output by their log-sum-exp, while the shard moves on to the next rank (``isend``/``irecv`` started
before the block is computed, so the transfer overlaps it).  After ``P`` steps every query has seen every key,
exactly.  The backward (an autograd function) passes the key/value shards around the ring again, each with the
accumulators of its gradients ``dk``, ``dv``, which arrive home after ``P`` hops; no rank ever holds the full
sequence.  ``schedule="allgather"`` gathers the keys and values once instead (every rank then holds all of them:
simpler, more memory) and sums the key/value gradients back to their owners.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from ..functional.dense import finite_or_zero
from ..functional.memory_efficient import blockwise_backward, blockwise_forward
from ._checks import agree, local_problem, row
from ._transport import Distributed, Parts, Ring, Simulated
from .group import require_group
from .layout import Layout, chunks_per_rank, shard, unshard
from .schedule import Block, blocks_at

__all__ = ["ALONE", "ring_attention", "simulate_ring_attention"]

ALONE = "alone"  # group=ALONE: this process only, even when a process group was started (data parallelism)


@dataclass(frozen=True)
class _Plan:
    """What the forward and the backward share."""

    layout: Layout
    world: int
    causal: bool
    scale: float
    length: int  # the unpadded full length: keys at positions >= length are padding
    chunk: int  # c
    allgather: bool

    def rows(self, slot: int) -> slice:
        return slice(slot * self.chunk, (slot + 1) * self.chunk)

    def keep(self, b: Block, mask: Tensor | None, ndim: int, device: torch.device) -> Tensor | None:
        """The keys of block ``b`` that may be attended, ``(B|1, 1.., 1, c)`` bool, or None when all may."""
        first = b.k_chunk * self.chunk
        keep = None
        if first + self.chunk > self.length:  # the block holds padding
            keep = (torch.arange(first, first + self.chunk, device=device) < self.length)[None]  # (1, c)
        if mask is not None:
            m = mask[:, self.rows(b.k_slot)].bool()  # (B, c)
            keep = m if keep is None else keep & m
        if keep is None or bool(keep.all()):
            return None
        return keep.view(keep.shape[0], *([1] * (ndim - 2)), self.chunk)  # (B|1, 1.., 1, c)

    def blocks(self, step: int, rank: int) -> list[Block]:
        return blocks_at(self.layout, self.world, self.causal, step, rank)


def _merge(out: Tensor, lse: Tensor, o: Tensor, l: Tensor) -> None:
    """Fold a block's normalised output ``o`` (..., c, Ev) and log-sum-exp ``l`` (..., c) into the running ones, in
    place: ``out = (e^lse out + e^l o) / (e^lse + e^l)``; rows that have seen no key stay at zeros and ``-inf``."""
    new = torch.logaddexp(lse, l)  # (..., c)
    shift = finite_or_zero(new)
    out.mul_(torch.exp(lse - shift).unsqueeze(-1)).add_(o * torch.exp(l - shift).unsqueeze(-1))
    lse.copy_(new)


def _held(ring: Ring, plan: _Plan, kvm: Parts) -> Any:
    """Yield ``(step, [(a, rank, k, v, mask) ...])``: the key/value shard each held rank has at each step, moved
    along the ring (the next transfer started before the step's work) or taken from one all-gather."""
    if plan.allgather:
        everyone = ring.gather(kvm)
        for step in range(plan.world):
            yield step, [(a, r, *_unpack(everyone[a][(r - step) % plan.world])) for a, r in enumerate(ring.ranks)]
        return
    for step in range(plan.world):
        wait = ring.shift(kvm) if step + 1 < plan.world else None
        yield step, [(a, r, *_unpack(kvm[a])) for a, r in enumerate(ring.ranks)]
        if wait is not None:
            kvm = wait()


def _unpack(parts: list[Tensor]) -> tuple[Tensor, Tensor, Tensor | None]:
    return parts[0], parts[1], (parts[2] if len(parts) > 2 else None)


def _pack(k: Tensor, v: Tensor, mask: Tensor | None) -> list[Tensor]:
    return [k, v] if mask is None else [k, v, mask.to(torch.uint8)]  # gloo sends no bool


def _forward(ring: Ring, plan: _Plan, qs: list[Tensor], ks: list[Tensor], vs: list[Tensor],
             masks: list[Tensor | None]) -> tuple[list[Tensor], list[Tensor]]:
    work = torch.float64 if qs[0].dtype == torch.float64 else torch.float32
    outs = [torch.zeros(*q.shape[:-1], v.shape[-1], dtype=work, device=q.device)  # (..., n, Ev)
            for q, v in zip(qs, vs, strict=True)]
    lses = [torch.full(q.shape[:-1], float("-inf"), dtype=work, device=q.device) for q in qs]  # (..., n)
    kvm = [_pack(k, v, m) for k, v, m in zip(ks, vs, masks, strict=True)]
    for step, held in _held(ring, plan, kvm):
        for a, r, k, v, m in held:
            q = qs[a]
            for b in plan.blocks(step, r):
                qr, kr = plan.rows(b.q_slot), plan.rows(b.k_slot)
                o, l = blockwise_forward(q[..., qr, :], k[..., kr, :], v[..., kr, :], scale=plan.scale,
                                         mask=plan.keep(b, m, q.ndim, q.device), causal=b.kind == "diagonal")
                _merge(outs[a][..., qr, :], lses[a][..., qr], o, l)
    return outs, lses


def _backward(ring: Ring, plan: _Plan, qs: list[Tensor], ks: list[Tensor], vs: list[Tensor],
              masks: list[Tensor | None], outs: list[Tensor], lses: list[Tensor],
              douts: list[Tensor]) -> tuple[list[Tensor], list[Tensor], list[Tensor]]:
    work = outs[0].dtype
    dqs = [torch.zeros(q.shape, dtype=work, device=q.device) for q in qs]
    # the gradient accumulators of the key/value shard each rank holds: they travel with it (ring), or one per
    # source rank (allgather), summed home at the end
    if plan.allgather:
        sums = [[[torch.zeros(ks[0].shape, dtype=work, device=ks[0].device),
                  torch.zeros(vs[0].shape, dtype=work, device=vs[0].device)] for _ in range(plan.world)]
                for _ in ring.ranks]  # [a][source] -> [dk, dv]
    acc: Parts = [] if plan.allgather else [  # [a] -> [dk, dv] of the shard a holds
        [torch.zeros(k.shape, dtype=work, device=k.device), torch.zeros(v.shape, dtype=work, device=v.device)]
        for k, v in zip(ks, vs, strict=True)]
    kvm = [_pack(k, v, m) for k, v, m in zip(ks, vs, masks, strict=True)]
    for step, held in _held(ring, plan, kvm):
        for a, r, k, v, m in held:
            q, target = qs[a], (sums[a][(r - step) % plan.world] if plan.allgather else acc[a])
            for b in plan.blocks(step, r):
                qr, kr = plan.rows(b.q_slot), plan.rows(b.k_slot)
                dq, dk, dv = blockwise_backward(
                    q[..., qr, :], k[..., kr, :], v[..., kr, :], outs[a][..., qr, :], lses[a][..., qr],
                    douts[a][..., qr, :], scale=plan.scale, mask=plan.keep(b, m, q.ndim, q.device),
                    causal=b.kind == "diagonal")
                dqs[a][..., qr, :] += dq
                target[0][..., kr, :] += dk
                target[1][..., kr, :] += dv
        if not plan.allgather:
            acc = ring.shift(acc)()  # on to the next rank with its shard; after P hops, home
    home = ring.reduce_home(sums) if plan.allgather else acc
    return dqs, [h[0] for h in home], [h[1] for h in home]


class _RingAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, ring: Ring, plan: _Plan, masks: list[Tensor | None], *qkv: Tensor) -> tuple[Tensor, ...]:
        n = len(ring.ranks)
        qs, ks, vs = list(qkv[:n]), list(qkv[n:2 * n]), list(qkv[2 * n:])
        outs, lses = _forward(ring, plan, qs, ks, vs, masks)
        ctx.save_for_backward(*qs, *ks, *vs, *outs, *lses)
        ctx.ring, ctx.plan, ctx.masks = ring, plan, masks
        ctx.mark_non_differentiable(*lses)
        return (*[o.to(qs[0].dtype) for o in outs], *lses)

    @staticmethod
    def backward(ctx: Any, *grads: Tensor | None) -> tuple[Tensor | None, ...]:
        ring, plan = ctx.ring, ctx.plan
        n = len(ring.ranks)
        saved = ctx.saved_tensors
        qs, ks, vs, outs, lses = (list(saved[i * n:(i + 1) * n]) for i in range(5))
        douts = [torch.zeros_like(o) if g is None else g.to(o.dtype) for g, o in zip(grads[:n], outs, strict=True)]
        dqs, dks, dvs = _backward(ring, plan, qs, ks, vs, ctx.masks, outs, lses, douts)
        return (None, None, None, *[d.to(qs[0].dtype) for d in (*dqs, *dks, *dvs)])


def _run(ring: Ring, qs: list[Tensor], ks: list[Tensor], vs: list[Tensor], masks: list[Tensor | None],
         scale: float | None, options: tuple[object, object, object, object]) -> tuple[list[Tensor], list[Tensor]]:
    """Check every held rank's inputs, agree with the other ranks (one small all-gather), then attend."""
    rows = []
    for q, k, v, m in zip(qs, ks, vs, masks, strict=True):
        problem, checked = local_problem(q, k, v, m, scale, options)
        rows.append(row(problem, q, k, v, m, checked))
    opts, full = agree(ring.exchange(rows))
    n = qs[0].shape[-2]
    s = float(scale) if scale is not None else qs[0].shape[-1] ** -0.5
    plan = _Plan(opts.layout, ring.world, opts.causal, s, full, n // chunks_per_rank(opts.layout),
                 opts.schedule == "allgather")
    res = _RingAttention.apply(ring, plan, masks, *qs, *ks, *vs)
    return list(res[:len(qs)]), list(res[len(qs):])


def ring_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    causal: bool = False,
    scale: float | None = None,
    mask: Tensor | None = None,
    group: Any = None,
    layout: Layout = "contiguous",
    schedule: str = "ring",
    length: int | None = None,
    return_lse: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """Exact attention over a sequence sharded across the ranks of ``group``; call it on every rank.

    Args:
        q: this rank's shard of the queries ``(B, ..., n, E)``, made with :func:`attnlab.parallel.shard` (same
            ``layout``, same ``n`` on every rank), as ``k`` and ``v`` are.
        k: this rank's shard of the keys ``(B, ..., n, E)``.
        v: this rank's shard of the values ``(B, ..., n, Ev)``.
        causal: position ``i`` of the full sequence sees positions ``j <= i``.
        scale: ``None`` means ``1 / sqrt(E)``.
        mask: this rank's shard of a key-padding mask, bool ``(B, n)``, **True = real key** (shard the full
            ``(B, N)`` mask with ``shard(mask, world, rank, layout=..., dim=1)``); it travels with the keys.
        group: a ``torch.distributed`` process group; None = the default group, or this process alone when no
            group was started (under ``torchrun``, a :class:`~attnlab.errors.ConfigError` that names
            :func:`~attnlab.parallel.process_group`); :data:`ALONE` = this process alone (then it is exact blockwise
            attention).
        layout: ``"contiguous"`` or ``"zigzag"`` (see :mod:`attnlab.parallel.layout`).
        schedule: ``"ring"`` (point to point, transfers overlapped with compute) or ``"allgather"``.
        length: the full sequence's length before padding (keys at positions ``>= length`` are ignored); None =
            ``P * n``, no padding.
        return_lse: also return the row log-sum-exp ``(B, ..., n)`` (float32; float64 for float64 inputs).

    Returns:
        this rank's shard of the output ``(B, ..., n, Ev)`` in the input dtype (and the log-sum-exp).  A query with
        no key to see (all masked) gets zeros, and zero gradients.  Differentiable in ``q``, ``k``, ``v``.

    Every rank checks its inputs and shares one small row with the others before any key moves, so bad input
    raises the same :class:`~attnlab.errors.AttnLabError` on every rank and none is left waiting.
    """
    import torch.distributed as dist

    require_group(group, "ring_attention")
    distributed = group is not ALONE and dist.is_available() and dist.is_initialized()
    ring: Ring = Distributed(group) if distributed else Simulated(1)
    outs, lses = _run(ring, [q], [k], [v], [mask], scale, (layout, schedule, causal, length))
    return (outs[0], lses[0]) if return_lse else outs[0]


def simulate_ring_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    world: int,
    *,
    causal: bool = False,
    scale: float | None = None,
    mask: Tensor | None = None,
    layout: Layout = "contiguous",
    schedule: str = "ring",
    return_lse: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """Ring attention over ``world`` simulated ranks in this process: the full ``q, k, v`` ``(B, ..., N, E)`` (and
    key-padding ``mask`` ``(B, N)``, True = real key) are sharded with :func:`attnlab.parallel.shard`, run through
    the same schedule, checks, merges and autograd function as :func:`ring_attention` (only the transport differs:
    a list rotates instead of ranks sending), and unsharded: the full output ``(B, ..., N, Ev)`` (and
    log-sum-exp).  Differentiable."""
    from .. import _validate as check

    check.positive_int("world", world, fix="the number of ranks to simulate, e.g. 4")
    check.qkv(q, k, v)
    length = q.shape[-2]
    qs, ks, vs = ([shard(t, world, r, layout=layout) for r in range(world)] for t in (q, k, v))
    masks: list[Tensor | None] = [None if mask is None else shard(mask, world, r, layout=layout, dim=1)
                                  for r in range(world)]
    outs, lses = _run(Simulated(world), qs, ks, vs, masks, scale, (layout, schedule, causal, length))
    out = unshard(outs, length, layout=layout)
    lse = unshard([lse[..., None] for lse in lses], length, layout=layout)[..., 0]
    return (out, lse) if return_lse else out
