"""Reformer's LSH attention in ``O(n log n + n c)``: hash, sort into buckets, attend within chunks.

Letters: B batch, H heads (any leading dims ``...``, flattened to N), L sequence length (queries and keys),
E query/key features, Ev value features, R hashing rounds, U buckets, C chunk (queries per chunk),
G chunks per round, P = G * C the padded length.

Softmax attention is dominated by its largest scores, and with shared query-keys those are the keys
nearest in angle to the query.  Reformer (Kitaev, Kaiser & Levskaya 2020, "Reformer: The Efficient
Transformer", section 2) finds them by angular locality-sensitive hashing:

1. **Hash** every vector by a random rotation: ``h(x) = argmax([xR ; -xR])`` with ``R`` an ``(E, U/2)``
   Gaussian matrix, so nearby directions tend to share a bucket (Andoni et al. 2015).  ``R`` rounds use
   ``R`` independent matrices.
2. **Sort** the positions by ``(bucket, position)``; a bucket becomes a contiguous run.
3. **Chunk** the sorted sequence into chunks of ``C`` and let each chunk attend to itself and to the
   chunk before it (a bucket may straddle a chunk boundary).  Work ``O(n C)`` per round.
4. **Combine the rounds** by their log-sum-exps: ``out = sum_r exp(lse_r - logsumexp_r lse_r) out_r``.

Shared query-key (the paper's setting): the keys are the unit-normalised queries, so a query and its
key hash to the same bucket and land in the same chunk.  A query is the key most similar to itself,
so it may not attend to itself unless it has no other key (Reformer's self mask).

What this follows, and where it differs:

* lucidrains/reformer-pytorch ``reformer_pytorch.py``, ``LSHAttention``: rotations ``(E, R, U/2)``
  shared over the batch, the sort key ``L * bucket + position``, ``look_one_back``, unit-length keys
  (``make_unit_length``), ``dim ** -0.5`` scaling, the self mask (there a score of ``-5e4``, here
  ``-inf`` with an explicit fallback to the token itself), the round combination by ``logsumexp``
  and the optional duplicate correction (``allow_duplicate_attention=False`` subtracts the log of
  the number of rounds in which a pair met; here ``dedup=True``).
* google/trax ``trax/layers/research/efficient_attention.py`` (and Hugging Face's port,
  ``LSHSelfAttention._hash_vectors``): the even number of buckets and ``argmax([xR ; -xR])``.
* Differences: both references roll the chunks so that the first chunk looks back at the last one
  (of the previous round); here the first chunk of a round has no previous chunk, and rounds are
  sorted and chunked separately.  ``n`` need not be a multiple of ``C`` (the sorted sequence is
  padded, the padding masked).  Rotations are drawn from a seeded ``torch.Generator``, so the hashes
  are deterministic; Reformer draws new ones on every call (pass another ``seed`` per step for that).

The result is exactly dense attention over the pairs the plan allows (see :func:`lsh_plan`): with
``count_ij`` the number of rounds in which key ``j`` sits in query ``i``'s chunk or the one before,
the output is dense attention with the additive mask ``log(count_ij)`` (``-inf`` where it is 0); with
``dedup=True`` the counts are divided out, giving plain softmax attention restricted to
``count_ij > 0``.  The tests check this against a float64 reference.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from ..errors import ConfigError, MaskError, ShapeError
from ..masks import Mask
from ._checks import check_options, check_qkv, resolve_mask
from ._kernel import refuse, reject_options
from ._tiles import check_block
from .dense import finite_or_zero, keyless_output, log_normaliser, work_dtype

__all__ = ["LSHPlan", "lsh_attention", "lsh_kernel", "lsh_plan", "random_rotations"]


@dataclass(frozen=True)
class LSHPlan:
    """Where every position goes: ``order[..., r, t]`` is the position of the ``t``-th vector of round ``r``
    after sorting by ``(bucket, position)``; chunk ``g`` of a round is ``order[..., r, g*C:(g+1)*C]``.
    ``q_*`` for the queries, ``k_*`` for the keys (the same tensors with shared query-key)."""

    q_buckets: Tensor  # (..., R, L) int64 in [0, U)
    k_buckets: Tensor  # (..., R, L)
    q_order: Tensor  # (..., R, L) int64: sorted rank -> position
    k_order: Tensor  # (..., R, L)
    n_buckets: int
    chunk: int


def random_rotations(
    dim: int, n_buckets: int, n_hashes: int, seed: int = 0, *, dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> Tensor:
    """The hashing matrices ``(R, E, U/2)``: i.i.d. standard Gaussian entries drawn in float64 on the CPU from
    ``torch.Generator().manual_seed(seed)`` (the same on every device), then cast."""
    g = torch.Generator().manual_seed(seed)
    r = torch.randn(n_hashes, dim, n_buckets // 2, generator=g, dtype=torch.float64)
    return r.to(device=device, dtype=dtype)


def _hash(x: Tensor, rotations: Tensor, n_buckets: int) -> Tensor:
    """``argmax([xR ; -xR])`` per round: x (..., L, E), rotations (R, E, U/2) -> buckets (..., R, L)."""
    if n_buckets == 1:
        return torch.zeros(*x.shape[:-2], rotations.shape[0], x.shape[-2], dtype=torch.long, device=x.device)
    rotated = torch.einsum("...le,reu->...rlu", x, rotations)  # (..., R, L, U/2)
    # argmax of [xR ; -xR] without building it: the largest entry, or the most negative one (+ U/2) when
    # its magnitude is larger (ties go to the first half, as argmax over the concatenation does).
    top, low = rotated.max(dim=-1), rotated.min(dim=-1)  # (..., R, L) each
    return torch.where(top.values >= -low.values, top.indices, low.indices + n_buckets // 2)  # (..., R, L)


def _sort(buckets: Tensor) -> Tensor:
    """Positions sorted by ``(bucket, position)``: buckets (..., R, L) -> order (..., R, L)."""
    L = buckets.shape[-1]
    pos = torch.arange(L, device=buckets.device)
    return torch.argsort(buckets * L + pos)  # keys are distinct, so the order is unique


def _default_buckets(L: int, chunk: int) -> int:
    """About one chunk per bucket (the paper's setting): the even number nearest ``L / chunk``, at least 2."""
    return max(2, 2 * round(L / (2 * chunk)))


def _check_params(n_buckets: int | None, n_hashes: int, chunk: int, seed: int, L: int) -> int:
    check_block("n_hashes", n_hashes)
    check_block("chunk", chunk)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ConfigError(f"seed must be an int (it seeds the random rotations), got {seed!r}")
    if n_buckets is None:
        return _default_buckets(L, chunk)
    if not isinstance(n_buckets, int) or isinstance(n_buckets, bool) or n_buckets < 1 or (
        n_buckets > 1 and n_buckets % 2
    ):
        raise ConfigError(
            f"n_buckets must be an even int >= 2 (argmax over [xR; -xR] gives 2 buckets per rotation), or 1 "
            f"(no hashing), or None (about L / chunk), got {n_buckets!r}; e.g. n_buckets=32"
        )
    return n_buckets


def check_lsh_options(options: Mapping[str, Any]) -> None:
    """The values of kernel ``"lsh"``'s options, as :func:`lsh_attention` checks them."""
    get = options.get
    _check_params(get("n_buckets"), get("n_hashes", 4), get("chunk", 64), get("seed", 0), 1)  # any length: 1
    for name in ("shared_qk", "dedup"):
        if name in options and not isinstance(options[name], bool):
            raise ConfigError(f"{name} must be True or False, got {options[name]!r}; pass a bool")


def lsh_plan(
    q: Tensor, k: Tensor | None = None, *, n_buckets: int | None = None, n_hashes: int = 4, chunk: int = 64,
    seed: int = 0,
) -> LSHPlan:
    """The buckets and the sort order :func:`lsh_attention` uses for ``q`` (and ``k`` when the query-keys
    are not shared; ``None`` means shared).  Hashing runs in float32 (float64 for float64 inputs) and
    does not take part in the gradient."""
    U = _check_params(n_buckets, n_hashes, chunk, seed, q.shape[-2])
    work = work_dtype(q.dtype)
    rot = random_rotations(q.shape[-1], U, n_hashes, seed, dtype=work, device=q.device)
    with torch.no_grad():
        qb = _hash(q.detach().to(work), rot, U)  # (..., R, L)
        kb = qb if k is None else _hash(k.detach().to(work), rot, U)
        qo = _sort(qb)
        ko = qo if k is None else _sort(kb)
    return LSHPlan(qb, kb, qo, ko, U, chunk)


def _key_padding(mask: Tensor | Mask | None, q: Tensor, k: Tensor) -> Tensor | None:
    """A boolean key-padding mask broadcasting to ``(..., 1, S)`` as ``(..., S)``; anything else is refused:
    the kernel never forms the ``L x S`` pairs, so a per-query mask would have to be gathered densely."""
    if isinstance(mask, Mask):
        raise ConfigError(
            f"lsh_attention takes key-padding masks as tensors, got the predicate {mask!r}; pass "
            f"mask.materialize(1, S) for a key mask, causal=True for a causal one"
        )
    m = resolve_mask(mask, q, k)
    if m is None:
        return None
    if m.dtype != torch.bool or m.shape[-2] != 1:
        raise MaskError(
            f"lsh_attention takes only a boolean key-padding mask of shape (..., 1, S) (True = real key), "
            f"got {m.dtype} of shape {tuple(m.shape)}; use causal=True for causal masking, or a quadratic "
            f"kernel ('dense', 'memory_efficient') for per-query or additive masks"
        )
    return m[..., 0, :].expand(*q.shape[:-2], k.shape[-2])  # (..., S)


def _gather(x: Tensor, idx: Tensor) -> Tensor:
    """Rows of x (N, L, D) at idx (N, M) -> (N, M, D)."""
    N, L, D = x.shape
    flat = idx + torch.arange(N, device=idx.device).unsqueeze(1) * L  # (N, M): rows of x viewed as (N * L, D)
    return x.reshape(N * L, D).index_select(0, flat.view(-1)).view(N, -1, D)  # faster than gather on CPU


def _look_one_back(x: Tensor, fill: float | bool) -> Tensor:
    """Each chunk next to the chunk before it: (N, G, C, *) -> (N, G, 2C, *); chunk 0's "before" is ``fill``."""
    before = torch.cat([torch.full_like(x[:, :1], fill), x[:, :-1]], dim=1)  # (N, G, C, *)
    return torch.cat([before, x], dim=2)  # (N, G, 2C, *)


def _chunk_of(order: Tensor, chunk: int) -> Tensor:
    """Round by round, the chunk each position falls in: order (N, R, L) -> (N, R, L)."""
    rank = torch.empty_like(order)
    rank.scatter_(-1, order, torch.arange(order.shape[-1], device=order.device).expand_as(order))
    return torch.div(rank, chunk, rounding_mode="floor")


def _meetings(q_chunks: Tensor, k_chunks: Tensor, qpos: Tensor, kpos: Tensor) -> Tensor:
    """In how many rounds key ``kpos`` sits in query ``qpos``'s chunk or the one before.
    q_chunks, k_chunks (N, R, L); qpos (N, G, C); kpos (N, G, 2C) -> counts (N, G, C, 2C)."""
    N, G, C = qpos.shape
    count = torch.zeros(N, G, C, 2 * C, dtype=torch.int32, device=qpos.device)
    for r in range(q_chunks.shape[1]):
        qc = q_chunks[:, r].gather(1, qpos.reshape(N, -1)).view(N, G, C, 1)
        kc = k_chunks[:, r].gather(1, kpos.reshape(N, -1)).view(N, G, 1, 2 * C)
        count += ((kc == qc) | (kc == qc - 1)).int()
    return count


def _round(
    q: Tensor, k: Tensor, v: Tensor, q_order: Tensor, k_order: Tensor, key_ok: Tensor | None, *,
    chunk: int, scale: float, causal: bool, shared: bool, chunks: tuple[Tensor, Tensor] | None,
) -> tuple[Tensor, Tensor]:
    """One hashing round: q (N, L, E), k (N, L, E), v (N, L, Ev), orders (N, L), key_ok (N, L) or None.
    Returns the round's output (N, L, Ev) and log-sum-exp (N, L, 1), in original positions."""
    N, L, _ = q.shape
    C = chunk
    pad = -L % C
    G = (L + pad) // C
    real = torch.arange(L + pad, device=q.device) < L  # (P,): the padding sits after the sorted positions
    qpos = F.pad(q_order, (0, pad)).view(N, G, C)  # (N, G, C) original positions (0 on the padding)
    kpos = F.pad(k_order, (0, pad)).view(N, G, C)
    kvalid = real.view(1, G, C).expand(N, G, C)
    if key_ok is not None:
        kvalid = kvalid & key_ok.gather(1, kpos.view(N, -1)).view(N, G, C)
    kvalid = _look_one_back(kvalid, False)  # (N, G, 2C)
    kpos2 = _look_one_back(kpos, 0)  # (N, G, 2C): the keys of each chunk and of the chunk before
    qs = _gather(q * scale, qpos.view(N, -1)).view(N, G, C, -1)  # (N, G, C, E)
    ks = _gather(k, kpos2.view(N, -1)).view(N, G, 2 * C, -1)  # (N, G, 2C, E)
    vs = _gather(v, kpos2.view(N, -1)).view(N, G, 2 * C, -1)  # (N, G, 2C, Ev)

    s = torch.matmul(qs, ks.transpose(-2, -1))  # (N, G, C, 2C), scaled
    allowed = kvalid.unsqueeze(2)  # (N, G, 1, 2C)
    if shared:
        allowed = allowed & (kpos2.unsqueeze(2) != qpos.unsqueeze(3))  # (N, G, C, 2C): no attending to oneself
    if causal:
        allowed = allowed & (kpos2.unsqueeze(2) <= qpos.unsqueeze(3))
    if chunks is not None:  # dedup: divide each pair by the number of rounds in which it met
        s = s - _meetings(chunks[0], chunks[1], qpos, kpos2).clamp_min(1).to(s.dtype).log()
    s = s.masked_fill(~allowed, float("-inf"))
    m = finite_or_zero(s.amax(dim=-1, keepdim=True).detach())  # (N, G, C, 1)
    p = torch.exp(s - m)  # (N, G, C, 2C)
    lse, divisor = log_normaliser(m, p.sum(dim=-1, keepdim=True))  # (N, G, C, 1) each
    out = torch.matmul(p, vs) / divisor  # (N, G, C, Ev)

    inv = torch.empty_like(q_order)
    inv.scatter_(1, q_order, torch.arange(L, device=q.device).expand(N, L))  # position -> sorted rank
    out = _gather(out.view(N, G * C, -1), inv)  # (N, L, Ev): back to original positions
    lse = _gather(lse.view(N, G * C, 1), inv)  # (N, L, 1)
    return out, lse


def lsh_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    n_buckets: int | None = None,
    n_hashes: int = 4,
    chunk: int = 64,
    seed: int = 0,
    shared_qk: bool = True,
    dedup: bool = False,
    mask: Tensor | Mask | None = None,
    causal: bool = False,
    scale: float | None = None,
) -> Tensor:
    """Reformer's LSH attention (Kitaev et al. 2020), ``O(R (n log n + n C (E + Ev)))``.

    Args:
        q: queries ``(..., L, E)``.
        k: keys ``(..., L, E)``.  With ``shared_qk=True`` (Reformer) only its shape is used: the keys are
            ``q / |q|`` (unit-normalised queries); pass ``k=q``.  With ``shared_qk=False`` the keys are
            hashed with the same rotations and sorted on their own; query chunk ``g`` attends to key
            chunks ``g`` and ``g - 1`` (an extension: the paper shares query-keys so that a query and
            its key land in the same chunk).  Either way ``L == S``.
        v: values ``(..., L, Ev)``.
        n_buckets: ``U``, even (``argmax([xR; -xR])`` gives 2 buckets per rotation column), or 1 (no
            hashing: sorted order = positions, i.e. blocked local attention); ``None`` means the even
            number nearest ``L / chunk`` (the paper's choice, about one chunk per bucket).
        n_hashes: rounds ``R`` of hashing; more rounds miss fewer near keys, at ``R`` times the cost.
        chunk: ``C`` queries per chunk; each attends to ``2C`` keys.  ``chunk >= L`` is full attention.
        seed: seeds the rotations (deterministic; Reformer redraws them every call: vary the seed).
        shared_qk: see ``k``.  A query does not attend to itself unless no other key is allowed.
        dedup: divide out pairs that met in several rounds (softmax over the union of the rounds'
            chunks); the default counts them once per round, as Reformer does by default.
        mask: boolean key padding broadcasting to ``(..., 1, L)`` (True = real key); others are refused.
        causal: key ``j`` only for query ``i >= j`` (original positions).
        scale: ``None`` for ``1 / sqrt(E)``.

    Returns the output ``(..., L, Ev)`` in the input dtype; scores and softmax statistics run in float32
    (float64 for float64 inputs).  A query with no allowed key (its own key padded and every other key
    masked) gets zeros.
    """
    check_qkv(q, k, v)
    check_options(scale, 1.0, 0.0)
    L = q.shape[-2]
    if k.shape[-2] != L:
        raise ShapeError(
            f"lsh_attention sorts queries and keys of one sequence into the same chunks, so q_len must equal "
            f"k_len, got {L} and {k.shape[-2]}; for cross-attention or decoding use 'dense' or 'memory_efficient'"
        )
    if not isinstance(shared_qk, bool) or not isinstance(dedup, bool):
        raise ConfigError(f"shared_qk and dedup must be bools, got {shared_qk!r} and {dedup!r}")
    plan = lsh_plan(q, None if shared_qk else k, n_buckets=n_buckets, n_hashes=n_hashes, chunk=chunk, seed=seed)
    key_ok = _key_padding(mask, q, k)
    lead, Ev, work = q.shape[:-2], v.shape[-1], work_dtype(q.dtype)
    if L == 0:
        return keyless_output(q, k, v)  # (..., 0, Ev), in the autograd graph
    s = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])

    qw = q.to(work).reshape(-1, L, q.shape[-1])  # (N, L, E)
    kw = F.normalize(qw, dim=-1) if shared_qk else k.to(work).reshape(-1, L, k.shape[-1])  # (N, L, E)
    vw = v.to(work).reshape(-1, L, Ev)  # (N, L, Ev)
    N = qw.shape[0]
    ok = None if key_ok is None else key_ok.reshape(N, L)  # (N, L)
    qo, ko = plan.q_order.reshape(N, n_hashes, L), plan.k_order.reshape(N, n_hashes, L)  # (N, R, L)
    chunks = (_chunk_of(qo, chunk), _chunk_of(ko, chunk)) if dedup and n_hashes > 1 else None

    outs, lses = [], []
    for r in range(n_hashes):
        o, l = _round(qw, kw, vw, qo[:, r], ko[:, r], ok, chunk=chunk, scale=s, causal=causal,
                      shared=shared_qk, chunks=chunks)
        outs.append(o)
        lses.append(l)
    out, lse = _combine(torch.stack(outs, dim=1), torch.stack(lses, dim=1))  # (N, L, Ev), (N, L, 1)
    if shared_qk:  # a query with no other key attends to itself (if its own key is not padded)
        alone = torch.isneginf(lse) if ok is None else torch.isneginf(lse) & ok.unsqueeze(-1)  # (N, L, 1)
        out = torch.where(alone, vw, out)
    return out.reshape(*lead, L, Ev).to(q.dtype)


def _combine(outs: Tensor, lses: Tensor) -> tuple[Tensor, Tensor]:
    """Merge the rounds' softmaxes by their log-sum-exps: outs (N, R, L, Ev), lses (N, R, L, 1)."""
    m = finite_or_zero(lses.amax(dim=1).detach())  # (N, L, 1)
    w = torch.exp(lses - m.unsqueeze(1))  # (N, R, L, 1); 0 for a round with no key
    lse, divisor = log_normaliser(m, w.sum(dim=1))  # (N, L, 1) each
    return (w * outs).sum(dim=1) / divisor, lse


def lsh_kernel(
    q: Tensor, k: Tensor, v: Tensor, *, mask: Tensor | Mask | None = None, causal: bool = False,
    scale: float | None = None, dropout: float = 0.0, return_weights: bool = False,
    n_buckets: int | None = None, n_hashes: int = 4, chunk: int = 64, seed: int = 0, shared_qk: bool = True,
    dedup: bool = False, **options: Any,
) -> tuple[Tensor, None]:
    """The registered kernel ``"lsh"``: :func:`lsh_attention` with shared query-key (the layer's key
    projection is then unused: the keys are the normalised queries), 4 rounds, chunks of 64.  Other settings
    go per layer: ``MultiHeadAttention(..., kernel="lsh", kernel_options={"n_hashes": 8})``.  Never returns
    weights (ConfigError if asked); no dropout."""
    reject_options("lsh", options, ("n_buckets", "n_hashes", "chunk", "seed", "shared_qk", "dedup"))
    refuse("lsh", return_weights, dropout)
    out = lsh_attention(q, k, v, n_buckets=n_buckets, n_hashes=n_hashes, chunk=chunk, seed=seed,
                        shared_qk=shared_qk, dedup=dedup, mask=mask, causal=causal, scale=scale)
    return out, None
