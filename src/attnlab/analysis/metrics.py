"""Per-head metrics of captured attention (Clark et al. 2019, "What does BERT look at?"), over numpy arrays.

The definitions are one table, :data:`METRICS` (:mod:`attnlab.functional.head_metrics`, where a new metric is one
entry), shared with the corpus reduction (:mod:`attnlab.analysis.corpus`) and ``attnlab.viz.summarize``, and so is
the table of special tokens (:data:`START_TOKENS`, :data:`END_TOKENS`).  Here every metric is a function over a
``(layers, heads, q, k)`` array ``w`` (rows sum to one over the allowed keys) that returns **one value per query**,
``(layers, heads, q)``, with NaN where the metric is undefined for that query (the first token's ``previous``, the
last token's ``next``: left out, not counted as 0).  A head's metric is the mean of its defined queries' values,
so a corpus reduces to two running sums per metric and head (:class:`HeadSums`): no attention matrix is kept.

Letters: L layers, H heads, Q queries, K keys.  Queries are aligned bottom-right with the keys (query ``i`` sits at
key position ``i + K - Q``), as attnlab's causal convention.  The metrics: ``entropy``, ``entropy_ratio``, ``cls``,
``sep``, ``punct``, ``self``, ``previous``, ``next``, ``distance``, ``band`` (see
:mod:`attnlab.functional.head_metrics` for each definition).

Jensen-Shannon distances between heads (:func:`js_distances`) and a 2-D embedding of the heads
(:func:`mds`, classical MDS) follow Clark et al.'s head-clustering figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ..errors import ShapeError
from ..functional import head_metrics as hm
from ..functional.head_metrics import BAND_WIDTH, END_TOKENS, METRICS, MOSTLY, START_TOKENS, Keys, is_punct

__all__ = [
    "BAND_WIDTH",
    "END_TOKENS",
    "METRICS",
    "MOSTLY",
    "START_TOKENS",
    "TOKEN_METRICS",
    "HeadSums",
    "as_weights",
    "band_mass",
    "cls_mass",
    "distance",
    "entropy",
    "entropy_ratio",
    "head_metrics",
    "is_punct",
    "js_distances",
    "js_sums",
    "mds",
    "next_mass",
    "offset_mass",
    "per_query_metrics",
    "previous_mass",
    "punct_mass",
    "self_mass",
    "sep_mass",
]

Array = np.ndarray

TOKEN_METRICS = tuple(name for name, m in METRICS.items() if m.tokens)  # the metrics that need the key tokens


def as_weights(w: Any, *, keep_float32: bool = False) -> Array:
    """``w`` (a tensor or array) as a float64 ``(layers, heads, q, k)`` array (float32 stays float32 with
    ``keep_float32``, for callers that accumulate in float64 themselves); a 3-D ``(heads, q, k)`` array
    is taken as one layer."""
    if hasattr(w, "detach"):
        w = w.detach().to("cpu")
        w = w.numpy() if str(w.dtype) in ("torch.float32", "torch.float64") else w.double().numpy()
    a = np.asarray(w)
    if not (keep_float32 and a.dtype == np.float32):
        a = a.astype(np.float64, copy=False)
    if a.ndim == 3:
        a = a[None]
    if a.ndim != 4:
        raise ShapeError(f"attention weights must be (layers, heads, q, k), got shape {a.shape}; "
                         f"use trace.weights or trace.stack(kind, batch)")
    return a


def per_query_metrics(
    w: Any, tokens: Sequence[str] | None = None, *, causal: bool = False, names: Sequence[str] | None = None
) -> dict[str, Array]:
    """``{name: (L, H, Q)}`` for ``names`` (default: every metric, or every metric that needs no
    tokens when ``tokens`` is None), in float64."""
    values = hm.per_query(torch.from_numpy(as_weights(w)), Keys.of(tokens, causal), names)
    return {n: v.numpy() for n, v in values.items()}


def _one(name: str, w: Any, tokens: Sequence[str] | None = None, causal: bool = False) -> Array:
    return per_query_metrics(w, tokens, causal=causal, names=[name])[name]


def entropy(w: Any) -> Array:
    """``(L, H, Q)``: the entropy of each query's row, in nats (0 log 0 = 0)."""
    return _one("entropy", w)


def entropy_ratio(w: Any, causal: bool = False) -> Array:
    """``(L, H, Q)``: entropy over the entropy of the uniform distribution on the allowed keys;
    NaN for a query allowed a single key (its entropy is 0 whatever the head does)."""
    return _one("entropy_ratio", w, causal=causal)


def offset_mass(w: Any, offset: int) -> Array:
    """``(L, H, Q)``: the weight each query puts on the key ``offset`` positions from its own
    (-1 previous, 0 self, +1 next); NaN where that key does not exist."""
    return hm.offset_mass(torch.from_numpy(as_weights(w)), Keys(), offset).numpy()


def previous_mass(w: Any) -> Array:
    return _one("previous", w)


def next_mass(w: Any) -> Array:
    return _one("next", w)


def self_mass(w: Any) -> Array:
    return _one("self", w)


def distance(w: Any) -> Array:
    """``(L, H, Q)``: the mean distance, in tokens, between a query and the keys it attends to."""
    return _one("distance", w)


def band_mass(w: Any, width: int = BAND_WIDTH) -> Array:
    """``(L, H, Q)``: the weight each query puts on the keys at most ``width`` positions away."""
    return hm.band_mass(torch.from_numpy(as_weights(w)), Keys(), width).numpy()


def cls_mass(w: Any, tokens: Sequence[str] | None) -> Array:
    """``(L, H, Q)``: the weight on start tokens (:data:`START_TOKENS`)."""
    return _one("cls", w, tokens)


def sep_mass(w: Any, tokens: Sequence[str] | None) -> Array:
    """``(L, H, Q)``: the weight on end tokens (:data:`END_TOKENS`)."""
    return _one("sep", w, tokens)


def punct_mass(w: Any, tokens: Sequence[str] | None) -> Array:
    """``(L, H, Q)``: the weight on punctuation tokens."""
    return _one("punct", w, tokens)


@dataclass
class HeadSums:
    """Running sums of per-query metric values, per head: ``total[name]`` and ``count[name]`` are
    ``(L, H)``; NaN values (undefined queries) are left out of both.  Two ``HeadSums`` add with
    :meth:`merge` (or by summing the arrays across processes), so a corpus is reduced in one pass."""

    total: dict[str, Array] = field(default_factory=dict)
    count: dict[str, Array] = field(default_factory=dict)

    def add(self, values: dict[str, Array]) -> HeadSums:
        """Add ``{name: (L, H, Q)}`` (the queries of one input; ``(L, H, ...)`` for many, every axis after the
        heads one of queries) to the sums, in float64; returns self."""
        for name, v in values.items():
            ok = ~np.isnan(v)
            queries = tuple(range(2, v.ndim))
            s, n = np.where(ok, v, 0.0).sum(queries, dtype=np.float64), ok.sum(queries).astype(np.float64)
            if name in self.total:
                if self.total[name].shape != s.shape:
                    raise ShapeError(f"metric {name!r}: adding {s.shape} heads to sums of {self.total[name].shape}")
                self.total[name] = self.total[name] + s
                self.count[name] = self.count[name] + n
            else:
                self.total[name], self.count[name] = s, n
        return self

    def merge(self, other: HeadSums) -> HeadSums:
        """The sums of both (a new object)."""
        out = HeadSums(dict(self.total), dict(self.count))
        for name in other.total:
            if name in out.total:
                out.total[name] = out.total[name] + other.total[name]
                out.count[name] = out.count[name] + other.count[name]
            else:
                out.total[name], out.count[name] = other.total[name], other.count[name]
        return out

    def means(self) -> dict[str, Array]:
        """``{name: (L, H)}``: each head's mean over every query it saw (NaN where it saw none)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return {n: np.where(self.count[n] > 0, self.total[n] / self.count[n], np.nan) for n in self.total}


def head_metrics(w: Any, tokens: Sequence[str] | None = None, *, causal: bool = False) -> dict[str, Array]:
    """``{name: (L, H)}``: every metric of one input, each head's mean over its queries."""
    return HeadSums().add(per_query_metrics(w, tokens, causal=causal)).means()


def js_sums(w: Any, chunk: int = 32) -> tuple[Array, int]:
    """``((L*H, L*H), Q)``: the sum over queries of the Jensen-Shannon divergence (base 2, in [0, 1])
    between every two heads' rows, and the number of queries; heads in layer-major order.
    Add the sums of many inputs and divide by the total count for the corpus mean."""
    a = as_weights(w)
    n_l, n_h, q, k = a.shape
    p = a.reshape(n_l * n_h, q, k).transpose(1, 0, 2)  # (Q, LH, K)
    total = np.zeros((n_l * n_h, n_l * n_h))
    for start in range(0, q, chunk):
        x = p[start:start + chunk]  # (c, LH, K)
        xa, xb = x[:, :, None, :], x[:, None, :, :]  # (c, LH, 1, K), (c, 1, LH, K)
        m = 0.5 * (xa + xb)  # (c, LH, LH, K)
        total += (0.5 * _kl(xa, m) + 0.5 * _kl(xb, m)).sum(0)
    return np.clip(total, 0.0, None), q


def _kl(p: Array, m: Array) -> Array:
    """``sum_k p log2(p / m)`` over the last axis, with 0 log 0 = 0 (``m > 0`` wherever ``p > 0``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(p > 0, p * np.log2(np.where(p > 0, p, 1.0) / np.where(m > 0, m, 1.0)), 0.0)
    return t.sum(-1)


def js_distances(w: Any) -> Array:
    """``(L*H, L*H)``: the Jensen-Shannon distance (square root of the mean JS divergence over the
    queries, base 2, so in [0, 1]) between every two heads of one input.  The square root makes it a
    metric, which the MDS embedding needs; Clark et al. average the divergence itself."""
    total, n = js_sums(w)
    return np.sqrt(total / max(n, 1))


def mds(distances: Array, dims: int = 2) -> Array:
    """``(N, dims)``: classical (Torgerson) multidimensional scaling of a symmetric distance matrix:
    double-centre the squared distances and keep the top eigenvectors scaled by the square roots of
    their eigenvalues (negative eigenvalues, from a non-Euclidean metric, are clipped to 0)."""
    d = np.asarray(distances, dtype=np.float64)
    if d.ndim != 2 or d.shape[0] != d.shape[1]:
        raise ShapeError(f"distances must be a square (N, N) matrix, got shape {d.shape}")
    n = d.shape[0]
    j = np.eye(n) - 1.0 / n  # centring matrix
    b = -0.5 * j @ (d**2) @ j
    vals, vecs = np.linalg.eigh((b + b.T) / 2)
    order = np.argsort(vals)[::-1][:dims]
    return vecs[:, order] * np.sqrt(np.clip(vals[order], 0.0, None))
