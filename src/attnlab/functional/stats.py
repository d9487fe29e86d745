"""Streaming attention statistics: per query row, without the ``L x S`` matrix.

Letters: B batch, H heads (any leading dims ``...``), L query length, S key length, E features,
K top-k, Bq / Bk tile sizes.

For long inputs the weights do not fit in memory (16k tokens x 8 heads is 8 GB in float32), but what a
person looks at usually is a few numbers per query: how spread the attention is (entropy), how far it
reaches (mean distance), and which keys it picks (top-k with their weights).  All three follow from
running sums over key tiles, kept next to the online-softmax statistics:

    l = sum_j e_j,  a = sum_j e_j s_j,  d = sum_j e_j |i - j|,    e_j = exp(s_j - m)

    entropy = m + log l - a / l,   mean distance = d / l,   weight of key j = exp(s_j - lse)

rescaled by ``exp(m_old - m_new)`` whenever the row maximum ``m`` grows; the top-k scores are merged
tile by tile.  Memory is ``O(L * K + Bq * Bk)`` per head.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from .. import _validate as check
from ..masks import Mask
from ._checks import check_options, check_qkv
from ._tiles import TileMask, check_block, spans
from .dense import finite_or_zero, log_normaliser, work_dtype

__all__ = ["AttentionStats", "attention_stats"]


@dataclass(frozen=True)
class AttentionStats:
    """Per query row statistics of one attention call (float32; float64 for float64 inputs).

    Rows with no allowed key have entropy 0, distance 0, lse ``-inf``, top-k index -1 and weight 0.
    """

    entropy: Tensor  # (..., L) in nats; 0 = all weight on one key, log(n) = uniform over n keys
    distance: Tensor  # (..., L) mean |i - j| under the weights, i in aligned (bottom-right) key positions
    top_index: Tensor  # (..., L, K) int64 key positions, strongest first; -1 where fewer than K keys are allowed
    top_weight: Tensor  # (..., L, K) their attention weights
    lse: Tensor  # (..., L) log-sum-exp of the masked scaled scores


def attention_stats(
    q: Tensor,
    k: Tensor,
    *,
    mask: Tensor | Mask | None = None,
    causal: bool = False,
    scale: float | None = None,
    top_k: int = 8,
    block_q: int = 512,
    block_k: int = 1024,
    compile: bool = False,
) -> AttentionStats:
    """Entropy, mean attention distance and the ``top_k`` strongest keys of every query row, per head,
    of ``softmax(q k^T * scale + mask)``, computed tile by tile (the weights are never stored).

    ``q`` ``(..., L, E)``, ``k`` ``(..., S, E)``; ``mask`` and ``causal`` as in
    :func:`attnlab.functional.memory_efficient_attention` (fully masked tiles are skipped).  The values
    are not needed.  Equals the statistics of the dense weights of :func:`attnlab.functional.attention`.

    ``compile=True`` runs the per-tile update of the running sums (row maximum, ``exp``, the three sums)
    as one ``torch.compile``d function (inductor fuses it into one pass over the tile instead of about
    ten); the first call compiles (seconds to minutes).  Where compiling fails (no C++ compiler, an
    inductor error) it warns once and runs the eager path from then on.  The top-k merge is not fused
    (inductor calls ATen's ``topk``).
    """
    check_qkv(q, k, k)
    check_options(scale, 1.0, 0.0)
    check_block("block_q", block_q)
    check_block("block_k", block_k)
    check.positive_int("top_k", top_k, fix="e.g. top_k=32")
    check.boolean("compile", compile, "True = fuse the per-tile update with torch.compile")
    tiles = TileMask(mask, causal, q, k)
    L, S = tiles.L, tiles.S
    work = work_dtype(q.dtype)
    s_ = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    lead, dev, inf = q.shape[:-2], q.device, float("inf")
    ent = torch.zeros(*lead, L, dtype=work, device=dev)
    dist = torch.zeros(*lead, L, dtype=work, device=dev)
    lse = torch.full((*lead, L), -inf, dtype=work, device=dev)
    top_w = torch.zeros(*lead, L, top_k, dtype=work, device=dev)
    top_i = torch.full((*lead, L, top_k), -1, dtype=torch.long, device=dev)
    for q0, q1 in spans(L, block_q):
        qb = q[..., q0:q1, :].to(work)  # (..., Bq, E)
        m = torch.full((*lead, q1 - q0, 1), -inf, dtype=work, device=dev)  # (..., Bq, 1)
        l, a, d = torch.zeros_like(m), torch.zeros_like(m), torch.zeros_like(m)
        # each tile's top-k, merged once per query block: one concatenation and one top-k of (tiles x K)
        # candidates instead of a merge per tile (a last-dim cat of K columns is slow in ATen on CPU)
        cand_v: list[Tensor] = [torch.full((*lead, q1 - q0, 0), -inf, dtype=work, device=dev)]  # (..., Bq, 0)
        cand_i: list[Tensor] = [torch.zeros((*lead, q1 - q0, 0), dtype=torch.long, device=dev)]
        for k0, k1 in spans(S, block_k):
            tile = tiles.tile(q0, q1, k0, k1)
            if tile is None:
                continue
            s = torch.matmul(qb, k[..., k0:k1, :].to(work).transpose(-2, -1)).mul_(s_)  # (..., Bq, Bk)
            s = tiles.apply(s, tile)
            kk = min(top_k, k1 - k0)
            v_new, i_new = s.topk(kk, dim=-1, sorted=False)  # (..., Bq, kk)
            cand_v.append(v_new)
            cand_i.append(i_new.add_(k0))
            masked = tile.keep is not None or tile.add is not None
            a0 = q0 + tiles.offset
            if compile and _compiled() is not None:
                m, l, a, d = _fused(s, m, l, a, d, a0, q1 + tiles.offset, k0, k1)
            else:
                m, l, a, d = _update(s, m, l, a, d, a0, q1 + tiles.offset, k0, k1, masked)
        all_v, all_i = torch.cat(cand_v, dim=-1), torch.cat(cand_i, dim=-1)  # (..., Bq, tiles x K)
        tv, sel = all_v.topk(min(top_k, all_v.shape[-1]), dim=-1)  # (..., Bq, <=K) best scores, strongest first
        ti = all_i.gather(-1, sel)
        has = l > 0
        row_lse, l1 = log_normaliser(finite_or_zero(m), l)  # (..., Bq, 1): -inf where no key is allowed
        ent[..., q0:q1] = torch.where(has, row_lse - a / l1, torch.zeros_like(l)).squeeze(-1).clamp_min(0)
        dist[..., q0:q1] = torch.where(has, d / l1, torch.zeros_like(l)).squeeze(-1)
        lse[..., q0:q1] = row_lse.squeeze(-1)
        n = tv.shape[-1]
        ok = torch.isfinite(tv)
        top_w[..., q0:q1, :n] = torch.where(ok, torch.exp(tv - row_lse), torch.zeros((), dtype=work))
        top_i[..., q0:q1, :n] = torch.where(ok, ti, torch.full_like(ti, -1))
    return AttentionStats(ent, dist, top_i, top_w, lse)


def _update(
    s: Tensor, m: Tensor, l: Tensor, a: Tensor, d: Tensor, a0: int, a1: int, k0: int, k1: int, masked: bool
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The eager update of the running maximum and sums (each (..., Bq, 1)) by one tile of scores (..., Bq, Bk)."""
    m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
    m_safe = finite_or_zero(m_new)
    e = torch.exp(s - m_safe)  # (..., Bq, Bk), 0 where masked
    alpha = torch.exp(m - m_safe)
    l = l * alpha + e.sum(dim=-1, keepdim=True)
    a = a * alpha + _rowdot(e, s.nan_to_num_(neginf=0.0) if masked else s)  # masked scores left out
    d = d * alpha + _distance(e, a0, a1, k0, k1)
    return m_new, l, a, d


def _update_plain(
    s: Tensor, m: Tensor, l: Tensor, a: Tensor, d: Tensor, i: Tensor, j: Tensor
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The same update written as plain elementwise ops and row sums, for inductor to fuse
    (``i`` (Bq, 1) aligned query positions, ``j`` (1, Bk) key positions)."""
    m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
    m_safe = finite_or_zero(m_new)
    e = torch.exp(s - m_safe)  # (..., Bq, Bk)
    alpha = torch.exp(m - m_safe)
    s_kept = torch.where(torch.isneginf(s), torch.zeros_like(s), s)  # masked scores left out
    l = l * alpha + e.sum(dim=-1, keepdim=True)
    a = a * alpha + (e * s_kept).sum(dim=-1, keepdim=True)
    d = d * alpha + (e * (i - j).abs()).sum(dim=-1, keepdim=True)
    return m_new, l, a, d


_COMPILED: dict[str, Callable[..., tuple[Tensor, Tensor, Tensor, Tensor]] | None] = {}


def _compiled() -> Callable[..., tuple[Tensor, Tensor, Tensor, Tensor]] | None:
    """The compiled update, made on first use; None once compiling has failed in this process."""
    if "update" not in _COMPILED:
        _COMPILED["update"] = torch.compile(_update_plain, dynamic=True)
    return _COMPILED["update"]


def _fused(
    s: Tensor, m: Tensor, l: Tensor, a: Tensor, d: Tensor, a0: int, a1: int, k0: int, k1: int
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The compiled update; on any compile error, a one-time warning and the eager update from then on."""
    fn = _compiled()
    assert fn is not None
    i = torch.arange(a0, a1, device=s.device, dtype=s.dtype).view(-1, 1)  # (Bq, 1)
    j = torch.arange(k0, k1, device=s.device, dtype=s.dtype).view(1, -1)  # (1, Bk)
    try:
        return fn(s, m, l, a, d, i, j)
    except Exception as exc:  # inductor raises many types: no compiler, codegen, lowering
        _COMPILED["update"] = None
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        warnings.warn(
            f"attention_stats(compile=True): torch.compile failed ({type(exc).__name__}: {first[:200]}); "
            f"running the eager path from now on (install a C++ compiler for inductor's CPU backend to fuse it)",
            RuntimeWarning,
            stacklevel=3,
        )
        return _update(s, m, l, a, d, a0, a1, k0, k1, masked=True)


def _rowdot(x: Tensor, y: Tensor) -> Tensor:
    """``(x * y).sum(-1, keepdim=True)`` as a batched dot product, without the temporary."""
    return torch.matmul(x.unsqueeze(-2), y.unsqueeze(-1)).squeeze(-1)  # (..., Bq, 1)


def _distance(e: Tensor, a0: int, a1: int, k0: int, k1: int) -> Tensor:
    """``sum_j e_ij |i - j|`` for aligned query positions ``[a0, a1)`` and keys ``[k0, k1)``, (..., Bq, 1).
    When the tile lies on one side of the diagonal, ``|i - j| = +-(i - j)`` and the sum is a matrix-vector
    product; otherwise the ``|i - j|`` tile is built."""
    i = torch.arange(a0, a1, device=e.device, dtype=e.dtype).view(-1, 1)  # (Bq, 1)
    j = torch.arange(k0, k1, device=e.device, dtype=e.dtype).view(-1, 1)  # (Bk, 1)
    if k1 - 1 <= a0 or k0 >= a1 - 1:
        sign = 1.0 if k1 - 1 <= a0 else -1.0
        return sign * (i * e.sum(dim=-1, keepdim=True) - torch.matmul(e, j))
    return (e * (i - j.view(1, -1)).abs_()).sum(dim=-1, keepdim=True)
