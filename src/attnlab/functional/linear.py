"""Linear (kernel) attention in ``O(n d^2)``: feature maps, Performer's FAVOR+, Shen's efficient attention.

Letters: B batch, H heads (any leading dims ``...``), L query length, S key length, E query/key
features, F feature-map size (E for elu+1 / ReLU, m for Performer), Ev value features, C chunk.

Softmax attention weighs key ``j`` by ``exp(q.k)``; kernel attention replaces it by a product of
feature maps ``phi(q).phi(k)``, so the sum over keys can be taken first:

    out_i = phi(q_i) (sum_j phi(k_j) v_j^T) / phi(q_i) . (sum_j phi(k_j))

which costs ``O((L + S) F Ev)`` instead of ``O(L S E)``.  The causal form needs the sums over the
keys up to each query only: chunks of ``C`` queries use the running sum of the earlier chunks plus a
``C x C`` triangular product inside the chunk, so memory stays ``O(C^2 + F Ev)`` per head.  Sums are
kept in float32 (float64 for float64 inputs).  With non-negative features the denominator is a sum of
non-negative terms, zero only when the row has no weight at all (every key masked, no key, or ReLU
features that miss every key): such a row gives zeros.  Any positive denominator is used as it is,
however small: Performer's stabilisers scale numerator and denominator alike by an arbitrary factor, so
an absolute floor would shrink rows (see docs/efficient.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from .. import _validate as check
from ..errors import ConfigError, MaskError
from ..masks import Mask
from ._checks import check_options, check_qkv, resolve_mask
from ._kernel import refuse, reject_options
from ._tiles import check_block
from .dense import keyless_output, masked_softmax, work_dtype

__all__ = [
    "FEATURE_MAPS",
    "efficient_attention",
    "efficient_kernel",
    "favor_features",
    "linear_attention",
    "linear_kernel",
    "linear_relu_kernel",
    "orthogonal_random_features",
    "performer_attention",
    "performer_kernel",
]

FEATURE_EPS = 1e-6  # added to every FAVOR+ feature (part of the features, not a guard on the denominator)
_GROUP = 1024  # causal form: positions handled per step (vectorised over their chunks); bounds the memory

FEATURE_MAPS: dict[str, Callable[[Tensor], Tensor]] = {
    "elu": lambda x: F.elu(x).add_(1.0),  # Katharopoulos et al. 2020: positive, smooth
    "relu": F.relu,  # may give a zero denominator: that row gives zeros
}


def _key_mask(mask: Tensor | Mask | None, q: Tensor, k: Tensor, what: str) -> Tensor | None:
    """A mask that only drops keys (shape ``(..., 1, S)``) as a 0/1 float ``(..., S, 1)``; anything else
    cannot be expressed by a sum over keys and is refused."""
    if isinstance(mask, Mask):
        raise ConfigError(
            f"{what} takes key-padding masks as tensors, got the predicate {mask!r}; pass mask.materialize(L, S)"
        )
    m = resolve_mask(mask, q, k)
    if m is None:
        return None
    if m.shape[-2] != 1 or m.dtype != torch.bool:
        raise MaskError(
            f"{what} sums over keys once for all queries, so it takes only a boolean key-padding mask of shape "
            f"(..., 1, S), got {m.dtype} of shape {tuple(m.shape)}; per-query masks need a quadratic kernel "
            f"('dense', 'memory_efficient') and causal masks causal=True"
        )
    return m.transpose(-2, -1).to(work_dtype(q.dtype))  # (..., S, 1)


def _ratio(num: Tensor, den: Tensor) -> Tensor:
    """``num / den`` where ``den > 0``, zeros elsewhere (rows with no weight), with a finite gradient."""
    has = den > 0
    return torch.where(has, num / torch.where(has, den, torch.ones_like(den)), torch.zeros_like(num))


def _exclusive_cumsum(x: Tensor, dim: int) -> Tensor:
    """Sums of the entries strictly before each one along ``dim``.  Not ``cumsum - x``: when a late
    entry dwarfs the earlier ones (Performer's key features span orders of magnitude), that subtraction
    rounds the earlier ones away."""
    c = x.cumsum(dim=dim).narrow(dim, 0, x.shape[dim] - 1)
    return torch.cat([torch.zeros_like(x.narrow(dim, 0, 1)), c], dim=dim)


def _kernelized(fq: Tensor, fk: Tensor, v: Tensor, causal: bool, chunk: int) -> Tensor:
    """``out_i = sum_j (fq_i . fk_j) v_j / sum_j fq_i . fk_j`` over all keys, or over ``j <= i + S - L``
    when causal (chunked prefix sums); zeros where the denominator is 0.  fq (..., L, F), fk (..., S, F),
    v (..., S, Ev), features non-negative."""
    if not causal:
        kv = torch.matmul(fk.transpose(-2, -1), v)  # (..., F, Ev)
        z = fk.sum(dim=-2).unsqueeze(-1)  # (..., F, 1)
        return _ratio(torch.matmul(fq, kv), torch.matmul(fq, z))  # (..., L, Ev)
    L, S = fq.shape[-2], fk.shape[-2]
    off = S - L
    lead, Ev = fq.shape[:-2], v.shape[-1]
    # Keys before `pre` are seen by every query: they start the running sums.  Queries before `skip`
    # see no key.  What is left is aligned: query t sees keys u <= t.
    pre, skip = max(off, 0), max(-off, 0)
    kv = torch.matmul(fk[..., :pre, :].transpose(-2, -1), v[..., :pre, :])  # (..., F, Ev)
    z = fk[..., :pre, :].sum(dim=-2).unsqueeze(-1)  # (..., F, 1)
    fq, fk, v = fq[..., skip:, :], fk[..., pre:, :], v[..., pre:, :]
    n = fq.shape[-2]
    c = min(chunk, max(n, 1))
    tri = torch.ones(c, c, dtype=torch.bool, device=fq.device).tril()  # (C, C)
    span = c * max(1, _GROUP // c)  # positions per step: the memory bound
    outs = [fq.new_zeros(*lead, skip, Ev)]
    for t0 in range(0, n, span):
        t1 = min(t0 + span, n)
        pad = -(t1 - t0) % c
        g = (t1 - t0 + pad) // c
        fqg, fkg, vg = (_chunks(x[..., t0:t1, :], pad, g, c) for x in (fq, fk, v))  # (..., G, C, *)
        kvc = torch.matmul(fkg.transpose(-2, -1), vg)  # (..., G, F, Ev): each chunk's own sums
        zc = fkg.sum(dim=-2).unsqueeze(-1)  # (..., G, F, 1)
        kv_before = kv.unsqueeze(-3) + _exclusive_cumsum(kvc, -3)  # (..., G, F, Ev): sums of the earlier chunks
        z_before = z.unsqueeze(-3) + _exclusive_cumsum(zc, -3)  # (..., G, F, 1)
        a = torch.matmul(fqg, fkg.transpose(-2, -1)) * tri  # (..., G, C, C): inside the chunk, causal
        num = torch.matmul(fqg, kv_before) + torch.matmul(a, vg)  # (..., G, C, Ev)
        den = torch.matmul(fqg, z_before) + a.sum(dim=-1, keepdim=True)  # (..., G, C, 1)
        outs.append(_ratio(num, den).view(*lead, g * c, Ev)[..., : t1 - t0, :])
        kv = kv + kvc.sum(dim=-3)
        z = z + zc.sum(dim=-3)
    return outs[1] if len(outs) == 2 and not skip else torch.cat(outs, dim=-2)  # (..., L, Ev)


def _chunks(x: Tensor, pad: int, g: int, c: int) -> Tensor:
    """(..., n, D) -> (..., G, C, D), zero-padded at the end only when C does not divide n."""
    x = F.pad(x, (0, 0, 0, pad)) if pad else x
    return x.reshape(*x.shape[:-2], g, c, x.shape[-1])


def _prepare(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | Mask | None, chunk: int, what: str
) -> tuple[Tensor | None, torch.dtype]:
    check_qkv(q, k, v)
    check_block("chunk", chunk)
    return _key_mask(mask, q, k, what), work_dtype(q.dtype)


def linear_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    feature_map: str | Callable[[Tensor], Tensor] = "elu",
    mask: Tensor | Mask | None = None,
    causal: bool = False,
    chunk: int = 128,
) -> Tensor:
    r"""Kernel attention :math:`\phi(Q)(\phi(K)^\top V) / \phi(Q)\,\phi(K)^\top 1` (Katharopoulos et al. 2020).

    Args:
        feature_map: ``"elu"`` (``elu(x) + 1``), ``"relu"``, or a callable applied to the last dim that
            gives non-negative features.
        mask: boolean key padding ``(..., 1, S)`` (True = real key); per-query masks are refused.
        causal: query ``i`` sums keys ``j <= i + S - L`` (bottom-right), via chunked prefix sums.
        chunk: queries per chunk in the causal form (memory ``O(chunk^2 + F Ev)`` per head).

    Equals its own ``O(L S)`` form ``(phi(Q) phi(K)^T [masked]) V / rowsum``; a row whose sum is 0 (no
    weight on any key) gives zeros.  Everything after ``v`` is keyword-only.  Returns the output
    ``(..., L, Ev)`` in the input dtype; sums run in float32 (float64 for float64 inputs).
    """
    km, work = _prepare(q, k, v, mask, chunk, "linear_attention")
    phi = feature_map if callable(feature_map) else FEATURE_MAPS[
        check.one_of("feature_map", feature_map, sorted(FEATURE_MAPS), fix="or pass a callable")
    ]
    if q.shape[-2] == 0 or k.shape[-2] == 0:  # no query, or no key to see: zeros
        return keyless_output(q, k, v)
    fq, fk = phi(q.to(work)), phi(k.to(work))  # (..., L, F), (..., S, F)
    if km is not None:
        fk = fk * km
    return _kernelized(fq, fk, v.to(work), causal, chunk).to(q.dtype)


def orthogonal_random_features(
    num_features: int, dim: int, *, generator: torch.Generator | None = None, dtype: torch.dtype = torch.float32
) -> Tensor:
    """Performer's projection ``(num_features, dim)``: blocks of ``dim`` orthogonal rows (QR of a Gaussian
    matrix), each row rescaled to the norm of a Gaussian vector, so that every row is marginally
    ``N(0, I)`` while rows within a block are exactly orthogonal (lower variance than i.i.d. rows).
    Drawing again with another generator state is the *redraw* of FAVOR+."""
    check.positive_int("num_features", num_features, fix="e.g. num_features=256 random features")
    check.positive_int("dim", dim, fix="pass the head size d_k")
    blocks = []
    for _ in range(-(-num_features // dim)):
        g = torch.randn(dim, dim, generator=generator, dtype=torch.float64)
        qm, _ = torch.linalg.qr(g)  # (E, E), orthonormal columns
        blocks.append(qm.T)
    w = torch.cat(blocks, dim=0)[:num_features]  # (m, E)
    norms = torch.randn(num_features, dim, generator=generator, dtype=torch.float64).norm(dim=1, keepdim=True)
    return (w * norms).to(dtype)


def favor_features(x: Tensor, projection: Tensor, *, is_query: bool) -> Tensor:
    r"""Positive random features :math:`\phi(x) = \exp(Wx - \|x\|^2/2 - c) / \sqrt m + \epsilon` (FAVOR+), whose
    products estimate ``exp(q . k)`` (without bias but for the small ``epsilon = FEATURE_EPS``, which keeps
    every feature positive, as in the reference implementation).  ``c`` is a stabiliser that cancels in the
    attention ratio: the row maximum for queries, the maximum over all keys of a head for keys.  ``x``
    (..., n, E), projection ``(m, E)``; returns ``(..., n, m)``."""
    wx = torch.matmul(x, projection.to(x.dtype).T)  # (..., n, m)
    if wx.numel() == 0:  # no position (or no feature): nothing to stabilise
        return wx
    sq = (x * x).sum(dim=-1, keepdim=True) / 2  # (..., n, 1)
    c = wx.amax(dim=-1, keepdim=True) if is_query else wx.amax(dim=(-2, -1), keepdim=True)
    return torch.exp(wx - sq - c.detach()) / math.sqrt(projection.shape[0]) + FEATURE_EPS


def performer_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    features: int | Tensor = 256,
    generator: torch.Generator | None = None,
    mask: Tensor | Mask | None = None,
    causal: bool = False,
    scale: float | None = None,
    chunk: int = 128,
) -> Tensor:
    """Performer (FAVOR+, Choromanski et al. 2021): an unbiased random-feature estimate of softmax attention
    ``softmax(q k^T * scale) v`` in ``O((L + S) m Ev)``.

    ``features`` is a projection from :func:`orthogonal_random_features` (fixed features), or a number
    ``m`` of features to draw afresh from ``generator`` on this call (a redraw per call).  The error against
    exact softmax attention falls as ``m`` grows (about ``1 / sqrt(m)``).  ``mask``, ``causal``, ``chunk``
    as in :func:`linear_attention`; everything after ``v`` is keyword-only.
    """
    km, work = _prepare(q, k, v, mask, chunk, "performer_attention")
    check_options(scale, 1.0, 0.0)
    proj = (
        orthogonal_random_features(features, q.shape[-1], generator=generator, dtype=work)
        if isinstance(features, int) else features
    )
    if not isinstance(proj, Tensor) or proj.ndim != 2 or proj.shape[1] != q.shape[-1]:
        raise ConfigError(
            f"features must be an int (how many to draw) or a (m, {q.shape[-1]}) projection from "
            f"orthogonal_random_features, got {getattr(proj, 'shape', proj)!r}"
        )
    if q.shape[-2] == 0 or k.shape[-2] == 0:  # no query, or no key to see: zeros
        return keyless_output(q, k, v)
    s = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    r = math.sqrt(s)  # exp(q.k * s) = exp((r q).(r k))
    proj = proj.to(device=q.device, dtype=work)
    fq = favor_features(q.to(work) * r, proj, is_query=True)  # (..., L, m)
    fk = favor_features(k.to(work) * r, proj, is_query=False)  # (..., S, m)
    if km is not None:
        fk = fk * km
    return _kernelized(fq, fk, v.to(work), causal, chunk).to(q.dtype)


def efficient_attention(q: Tensor, k: Tensor, v: Tensor, *, mask: Tensor | Mask | None = None) -> Tensor:
    r"""Efficient attention (Shen et al. 2021): :math:`\mathrm{softmax}_{feat}(Q)\,(\mathrm{softmax}_{pos}(K)^\top V)`.

    The keys are normalised over positions (each of the ``E`` key features becomes a distribution over
    the ``S`` positions, a "global context" per feature) and each query over its features, so each
    output row is a convex combination of the values, in ``O((L + S) E Ev)``.  The tutorials'
    ``EfficientAttention`` normalises the keys only.  Non-causal by construction (the softmax over
    positions sees every key).  ``mask``: boolean key padding ``(..., 1, S)``; masked keys get zero
    weight in every feature; if every key is masked the output is zeros.
    """
    check_qkv(q, k, v)
    km = _key_mask(mask, q, k, "efficient_attention")
    work = work_dtype(q.dtype)
    rq = torch.softmax(q.to(work), dim=-1)  # (..., L, E): over features
    keep = None if km is None else km.transpose(-2, -1) > 0  # (..., 1, S)
    rk = masked_softmax(k.to(work).transpose(-2, -1), keep)  # (..., E, S): each feature over positions
    context = torch.matmul(rk, v.to(work))  # (..., E, Ev)
    return torch.matmul(rq, context).to(q.dtype)  # (..., L, Ev)


# The registered kernels (see attnlab.functional.Kernel): (q, k, v, *, mask, causal, scale, dropout,
# return_weights, **options) -> (out, None).  None of them builds the weights (ConfigError if asked) or
# takes dropout; masks must be key padding.


def check_linear_options(options: Mapping[str, Any]) -> None:
    """The values of kernels ``"linear"`` and ``"linear_relu"``'s options, as :func:`linear_attention` checks them."""
    fm = options.get("feature_map", "elu")
    if not callable(fm):
        check.one_of("feature_map", fm, sorted(FEATURE_MAPS), fix="or pass a callable")
    if "chunk" in options:
        check_block("chunk", options["chunk"])


def check_performer_options(options: Mapping[str, Any]) -> None:
    """The values of kernel ``"performer"``'s options, as :func:`orthogonal_random_features` and
    :func:`performer_attention` check them."""
    if "features" in options:
        check.positive_int("num_features", options["features"], fix="e.g. kernel_options={'features': 256}")
    if "seed" in options and (not isinstance(options["seed"], int) or isinstance(options["seed"], bool)):
        raise ConfigError(f"seed must be an int (it seeds the random features), got {options['seed']!r}")
    if "chunk" in options:
        check_block("chunk", options["chunk"])


def linear_kernel(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    mask: Tensor | Mask | None = None,
    causal: bool = False,
    scale: float | None = None,
    dropout: float = 0.0,
    return_weights: bool = False,
    feature_map: str | Callable[[Tensor], Tensor] = "elu",
    chunk: int = 128,
    **options: Any,
) -> tuple[Tensor, None]:
    """Kernels ``"linear"`` (elu + 1) and ``"linear_relu"``, with the options ``feature_map`` and ``chunk``
    of :func:`linear_attention`; ``scale`` (if given) multiplies the queries."""
    reject_options("linear", options, ("feature_map", "chunk"))
    refuse(f"linear ({feature_map})", return_weights, dropout)
    check_options(scale, 1.0, 0.0)
    qs = q if scale is None else q * scale
    return linear_attention(qs, k, v, feature_map=feature_map, mask=mask, causal=causal, chunk=chunk), None


def linear_relu_kernel(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    mask: Tensor | Mask | None = None,
    causal: bool = False,
    scale: float | None = None,
    dropout: float = 0.0,
    return_weights: bool = False,
    chunk: int = 128,
    **options: Any,
) -> tuple[Tensor, None]:
    """Kernel ``"linear_relu"``: :func:`linear_kernel` with ``feature_map="relu"``; option ``chunk``."""
    reject_options("linear_relu", options, ("chunk",))
    return linear_kernel(
        q, k, v, mask=mask, causal=causal, scale=scale, dropout=dropout, return_weights=return_weights,
        feature_map="relu", chunk=chunk,
    )


_PROJECTIONS: dict[tuple[int, int, int], Tensor] = {}


def performer_kernel(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    mask: Tensor | Mask | None = None,
    causal: bool = False,
    scale: float | None = None,
    dropout: float = 0.0,
    return_weights: bool = False,
    features: int = 256,
    seed: int = 0,
    chunk: int = 128,
    **options: Any,
) -> tuple[Tensor, None]:
    """Kernel ``"performer"``: FAVOR+ with ``features`` fixed orthogonal random features drawn once per
    ``(features, dim, seed)`` (deterministic).  The options ``features``, ``seed`` and ``chunk`` go per
    layer: ``MultiHeadAttention(..., kernel="performer", kernel_options={"features": 512, "seed": 1})``;
    redraw by changing ``seed``, or call :func:`performer_attention` with a fresh projection."""
    reject_options("performer", options, ("features", "seed", "chunk"))
    refuse("performer", return_weights, dropout)
    key = (features, q.shape[-1], seed)
    if key not in _PROJECTIONS:
        _PROJECTIONS[key] = orthogonal_random_features(
            features, q.shape[-1], generator=torch.Generator().manual_seed(seed), dtype=torch.float64
        )
    out = performer_attention(
        q, k, v, features=_PROJECTIONS[key], mask=mask, causal=causal, scale=scale, chunk=chunk
    )
    return out, None


def efficient_kernel(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    mask: Tensor | Mask | None = None,
    causal: bool = False,
    scale: float | None = None,
    dropout: float = 0.0,
    return_weights: bool = False,
    **options: Any,
) -> tuple[Tensor, None]:
    """Kernel ``"efficient"`` (Shen et al.): non-causal only, no options; ``scale`` is not used (both
    softmaxes are over raw features), so a scale other than None is refused."""
    reject_options("efficient", options, ())
    refuse("efficient", return_weights, dropout)
    if causal:
        raise ConfigError(
            "kernel 'efficient' normalises the keys over all positions, so it cannot be causal; use "
            "kernel='linear' (causal by prefix sums) or 'memory_efficient'"
        )
    if scale is not None:
        raise ConfigError(f"kernel 'efficient' takes no scale (its softmaxes use raw features), got {scale!r}")
    return efficient_attention(q, k, v, mask=mask), None
