"""Memory-efficient exact attention: blockwise online softmax, the ``L x S`` matrix never exists.

Letters: B batch, H heads (any leading dims ``...``), L query length, S key length, E query/key
features, Ev value features, Bq / Bk query / key tile sizes.

Queries are processed ``Bq`` rows at a time; for each query block the keys are visited ``Bk`` at a
time and the softmax is kept as running statistics (row maximum ``m``, normaliser ``l``, output
accumulator), rescaled whenever the maximum grows (Milakov & Gimelshein 2018; Rabe & Staats 2021;
FlashAttention).  Tiles that the mask forbids entirely are skipped.  The backward pass is a custom
autograd function that recomputes each tile from ``q``, ``k``, ``v`` and the saved row log-sum-exp,
so training memory is ``O((L + S) * E + Bq * Bk)`` too, not ``O(L * S)``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor

from ..masks import Mask
from ._checks import check_options, check_qkv
from ._kernel import refuse, reject_options
from ._tiles import Tile, TileMask, check_block, spans
from .dense import finite_or_zero, log_normaliser, work_dtype

__all__ = ["blockwise_backward", "blockwise_forward", "memory_efficient_attention", "memory_efficient_kernel"]

BLOCK_Q = 256
BLOCK_K = 512


def _keep(seed: int, index: int, shape: torch.Size, p: float, device: torch.device) -> Tensor:
    """The dropout keep-mask of one tile, regenerated identically in the backward from (seed, index)."""
    g = torch.Generator(device=device).manual_seed(seed + index)
    return torch.rand(shape, generator=g, device=device) >= p


class _Plan:
    """Everything the forward and backward share: tiles, scale, dropout."""

    def __init__(
        self, tiles: TileMask, scale: float, block_q: int, block_k: int, dropout: float, seed: int, work: torch.dtype
    ):
        self.tiles, self.scale, self.dropout, self.seed, self.work = tiles, scale, dropout, seed, work
        self.q_spans, self.k_spans = spans(tiles.L, block_q), spans(tiles.S, block_k)
        self.nk = len(self.k_spans)

    def visit(self) -> Any:
        """Yield ``(qi, q0, q1, [(ki, k0, k1, tile), ...])`` for each query block, skipping empty tiles."""
        for qi, (q0, q1) in enumerate(self.q_spans):
            row = []
            for ki, (k0, k1) in enumerate(self.k_spans):
                t = self.tiles.tile(q0, q1, k0, k1)
                if t is not None:
                    row.append((ki, k0, k1, t))
            yield qi, q0, q1, row

    def scores(self, qb: Tensor, kb: Tensor, tile: Tile) -> Tensor:
        s = torch.matmul(qb, kb.transpose(-2, -1)).mul_(self.scale)  # (..., Bq, Bk)
        return self.tiles.apply(s, tile)

    def drop(self, qi: int, ki: int, shape: torch.Size, device: torch.device) -> Tensor | None:
        """Dropout multiplier of a tile (``keep / (1 - p)``), or None without dropout."""
        if self.dropout == 0.0:
            return None
        keep = _keep(self.seed, qi * self.nk + ki, shape, self.dropout, device)
        return keep.to(self.work) / (1.0 - self.dropout)


def _forward(q: Tensor, k: Tensor, v: Tensor, plan: _Plan) -> tuple[Tensor, Tensor]:
    work = plan.work
    lead = q.shape[:-2]
    out = torch.zeros(*lead, plan.tiles.L, v.shape[-1], dtype=work, device=q.device)  # (..., L, Ev)
    lse = torch.full((*lead, plan.tiles.L), float("-inf"), dtype=work, device=q.device)  # (..., L)
    for qi, q0, q1, row in plan.visit():
        if not row:
            continue
        qb = q[..., q0:q1, :].to(work)  # (..., Bq, E)
        m = torch.full((*lead, q1 - q0, 1), float("-inf"), dtype=work, device=q.device)  # (..., Bq, 1)
        l = torch.zeros_like(m)
        acc = torch.zeros(*lead, q1 - q0, v.shape[-1], dtype=work, device=q.device)  # (..., Bq, Ev)
        for ki, k0, k1, tile in row:
            s = plan.scores(qb, k[..., k0:k1, :].to(work), tile)  # (..., Bq, Bk)
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            m_safe = finite_or_zero(m_new)  # all -inf so far: 0
            p = s.sub_(m_safe).exp_()  # (..., Bq, Bk), unnormalised weights
            alpha = torch.exp(m - m_safe)  # rescales what was accumulated under the old maximum
            l.mul_(alpha).add_(p.sum(dim=-1, keepdim=True))
            z = plan.drop(qi, ki, p.shape, q.device)
            acc.mul_(alpha).add_(torch.matmul(p if z is None else p * z, v[..., k0:k1, :].to(work)))
            m = m_new
        row_lse, divisor = log_normaliser(finite_or_zero(m), l)  # (..., Bq, 1) each
        out[..., q0:q1, :] = acc / divisor
        lse[..., q0:q1] = row_lse.squeeze(-1)
    return out, lse


def _backward(
    q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor, dout: Tensor, plan: _Plan
) -> tuple[Tensor, Tensor, Tensor]:
    work = plan.work
    dout = dout.to(work)
    dq = torch.zeros(q.shape, dtype=work, device=q.device)
    dk = torch.zeros(k.shape, dtype=work, device=q.device)
    dv = torch.zeros(v.shape, dtype=work, device=q.device)
    delta = (dout * out).sum(dim=-1, keepdim=True)  # (..., L, 1): rowsum(dO * O)
    lse_safe = torch.where(torch.isfinite(lse), lse, torch.full_like(lse, float("inf"))).unsqueeze(-1)  # (..., L, 1)
    for qi, q0, q1, row in plan.visit():
        if not row:
            continue
        qb = q[..., q0:q1, :].to(work)  # (..., Bq, E)
        dob, lb, db = dout[..., q0:q1, :], lse_safe[..., q0:q1, :], delta[..., q0:q1, :]
        for ki, k0, k1, tile in row:
            kb, vb = k[..., k0:k1, :].to(work), v[..., k0:k1, :].to(work)  # (..., Bk, E), (..., Bk, Ev)
            p = plan.scores(qb, kb, tile).sub_(lb).exp_()  # (..., Bq, Bk), the normalised weights
            z = plan.drop(qi, ki, p.shape, q.device)
            pz = p if z is None else p * z
            dv[..., k0:k1, :] += torch.matmul(pz.transpose(-2, -1), dob)  # (..., Bk, Ev)
            dp = torch.matmul(dob, vb.transpose(-2, -1))  # (..., Bq, Bk)
            if z is not None:
                dp.mul_(z)
            ds = p.mul_(dp.sub_(db)).mul_(plan.scale)  # (..., Bq, Bk): softmax backward, times the scale
            dq[..., q0:q1, :] += torch.matmul(ds, kb)
            dk[..., k0:k1, :] += torch.matmul(ds.transpose(-2, -1), qb)
    return dq, dk, dv


def _plain_plan(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | Mask | None, causal: bool,
                scale: float | None) -> _Plan:
    check_qkv(q, k, v)
    check_options(scale, 1.0, 0.0)
    s = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    return _Plan(TileMask(mask, causal, q, k), s, BLOCK_Q, BLOCK_K, 0.0, 0, work_dtype(q.dtype))


def blockwise_forward(
    q: Tensor, k: Tensor, v: Tensor, *, mask: Tensor | Mask | None = None, causal: bool = False,
    scale: float | None = None,
) -> tuple[Tensor, Tensor]:
    """One block of exact attention without autograd, for kernels that merge blocks themselves (ring attention):
    ``(output (..., L, Ev), lse (..., L))``, both in the work dtype (float32 for half inputs), the output
    normalised within the block, ``-inf`` / zeros on rows that see no key of the block.  Blocks merge exactly by
    their log-sum-exp.  Arguments as :func:`memory_efficient_attention` (no dropout)."""
    return _forward(q, k, v, _plain_plan(q, k, v, mask, causal, scale))


def blockwise_backward(
    q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor, dout: Tensor, *, mask: Tensor | Mask | None = None,
    causal: bool = False, scale: float | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """The gradients ``(dq, dk, dv)`` (work dtype) that one key/value block contributes, given the **whole row's**
    output ``out`` (..., L, Ev) and log-sum-exp ``lse`` (..., L) over every block, and the output gradient
    ``dout``: summed over the blocks, they are the exact gradients of attention over all the keys."""
    return _backward(q, k, v, out, lse, dout, _plain_plan(q, k, v, mask, causal, scale))


class _MemoryEfficientAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, q: Tensor, k: Tensor, v: Tensor, plan: _Plan) -> tuple[Tensor, Tensor]:
        out, lse = _forward(q, k, v, plan)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.plan = plan
        ctx.mark_non_differentiable(lse)
        return out.to(q.dtype), lse

    @staticmethod
    def backward(ctx: Any, dout: Tensor, _dlse: Tensor | None) -> tuple[Tensor | None, ...]:
        q, k, v, out, lse = ctx.saved_tensors
        dq, dk, dv = _backward(q, k, v, out, lse, dout, ctx.plan)
        return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), None


def memory_efficient_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    mask: Tensor | Mask | None = None,
    causal: bool = False,
    scale: float | None = None,
    dropout: float = 0.0,
    block_q: int = BLOCK_Q,
    block_k: int = BLOCK_K,
    seed: int | None = None,
) -> tuple[Tensor, Tensor]:
    r"""Exact attention :math:`\mathrm{softmax}(QK^\top s + M)V` without the ``L x S`` matrix.

    Args:
        q: the queries ``(..., L, E)``; one dtype and device with ``k`` and ``v``.
        k: the keys ``(..., S, E)``.
        v: the values ``(..., S, Ev)``.
        mask: an :class:`attnlab.masks.Mask` (evaluated one tile at a time: the best choice for long
            inputs), or a bool (**True = may attend**) / additive float tensor broadcasting to
            ``(..., L, S)`` (sliced per tile).  Tiles with no allowed pair are skipped.
        causal: query ``i`` sees keys ``j <= i + S - L`` (bottom-right alignment); whole tiles above
            the diagonal are skipped without being computed.
        scale: ``None`` means ``1 / sqrt(E)``.
        dropout: probability of dropping a weight.  Each tile's keep-mask comes from its own generator
            seeded with ``seed + tile index``, so the backward regenerates it instead of storing it.
        block_q: the tile size along the queries (need not divide ``L``).  The working memory is about
            ``prod(...) * block_q * block_k`` floats, independent of ``L`` and ``S``.
        block_k: the tile size along the keys (need not divide ``S``).
        seed: dropout seed; ``None`` draws one from torch's global generator.

    Returns:
        ``(output, lse)``: output ``(..., L, Ev)`` in the input dtype and the row log-sum-exp
        ``(..., L)`` of the masked scaled scores in float32 (float64 for float64 inputs), ``-inf``
        where a row has no allowed key (its output is zeros, and so is its gradient).

    Statistics accumulate in float32 for half inputs.  Differentiable with respect to ``q``, ``k``,
    ``v`` (not the mask); the backward recomputes the tiles.
    """
    check_qkv(q, k, v)
    check_options(scale, 1.0, dropout)
    check_block("block_q", block_q)
    check_block("block_k", block_k)
    s = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    if seed is None:
        seed = int(torch.randint(0, 2**62, (1,)).item()) if dropout > 0 else 0
    plan = _Plan(TileMask(mask, causal, q, k), s, block_q, block_k, float(dropout), seed, work_dtype(q.dtype))
    out, lse = _MemoryEfficientAttention.apply(q, k, v, plan)
    return out, lse


def check_memory_efficient_options(options: Mapping[str, Any]) -> None:
    """The values of kernel ``"memory_efficient"``'s options (``block_q``, ``block_k``: tile sizes >= 1)."""
    for name in ("block_q", "block_k"):
        if name in options:
            check_block(name, options[name])


def memory_efficient_kernel(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    mask: Tensor | Mask | None = None,
    causal: bool = False,
    scale: float | None = None,
    dropout: float = 0.0,
    return_weights: bool = False,
    block_q: int = BLOCK_Q,
    block_k: int = BLOCK_K,
    **options: Any,
) -> tuple[Tensor, None]:
    """The registered kernel ``"memory_efficient"``: :func:`memory_efficient_attention` in the
    ``(out, weights_or_None)`` form, with the options ``block_q`` and ``block_k`` (e.g.
    ``MultiHeadAttention(..., kernel="memory_efficient", kernel_options={"block_k": 1024})``).  It never
    builds the weights, so ``return_weights=True`` raises :class:`~attnlab.errors.ConfigError` (capture
    with ``kernel="dense"``, or use :func:`attnlab.functional.attention_stats` for per-row statistics of
    long inputs)."""
    reject_options("memory_efficient", options, ("block_q", "block_k"))
    refuse("memory_efficient", return_weights, dropout, dropout_ok=True)
    out, _ = memory_efficient_attention(
        q, k, v, mask=mask, causal=causal, scale=scale, dropout=dropout, block_q=block_q, block_k=block_k
    )
    return out, None
