"""Per-head metrics of captured attention (Clark et al. 2019, "What does BERT look at?").

Every metric is a small pure function over a ``(layers, heads, q, k)`` array ``w`` (rows sum to one
over the allowed keys) that returns **one value per query**, ``(layers, heads, q)``, with NaN where
the metric is undefined for that query (no previous token for the first query, say).  A head's
metric is the mean of its queries' values, so a corpus reduces to two running sums per metric and
head (:class:`HeadSums`): no attention matrix is kept.

Letters: L layers, H heads, Q queries, K keys.  Queries are aligned bottom-right with the keys
(query ``i`` sits at key position ``i + K - Q``), as attnlab's causal convention.

The metrics (``METRICS``):

* ``entropy``: ``-sum_j w_ij log w_ij`` in nats;
* ``entropy_ratio``: entropy over ``log(allowed keys)``, 1 for a uniform row, 0 for a one-hot one;
  a causal query ``i`` is allowed ``i + 1`` keys, a self-attention query all ``K``; undefined when one
  key is allowed;
* ``cls``, ``sep``: the mass on start tokens ([CLS], <s>, BOS) and on end tokens ([SEP], </s>);
* ``punct``: the mass on punctuation tokens (every character in a Unicode P* category);
* ``self``, ``previous``, ``next``: the mass on the query's own position, the one before, the one after;
* ``distance``: the mean distance ``sum_j w_ij |i - j|`` in tokens;
* ``band``: the mass on the keys at most ``BAND_WIDTH`` (2) positions from the query, itself included.

Jensen-Shannon distances between heads (:func:`js_distances`) and a 2-D embedding of the heads
(:func:`mds`, classical MDS) follow Clark et al.'s head-clustering figure.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError, ShapeError

__all__ = [
    "BAND_WIDTH",
    "END_TOKENS",
    "METRICS",
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

START_TOKENS = frozenset({"[CLS]", "<s>", "<cls>", "[BOS]", "<bos>", "<|endoftext|>", "<|begin_of_text|>"})
END_TOKENS = frozenset({"[SEP]", "</s>", "<sep>", "[EOS]", "<eos>"})

Array = np.ndarray


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


def _positions(q: int, k: int) -> Array:
    """``(Q,)``: the key position of each query (bottom-right aligned)."""
    return np.arange(q) + (k - q)


def _allowed(q: int, k: int, causal: bool) -> Array:
    """``(Q,)``: how many keys each query may attend to."""
    return _positions(q, k) + 1 if causal else np.full(q, k)


def entropy(w: Array) -> Array:
    """``(L, H, Q)``: the entropy of each query's row, in nats (0 log 0 = 0)."""
    w = as_weights(w)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(w > 0, w * np.log(np.where(w > 0, w, 1.0)), 0.0)
    return -terms.sum(-1)


def entropy_ratio(w: Array, causal: bool = False) -> Array:
    """``(L, H, Q)``: entropy over the entropy of the uniform distribution on the allowed keys;
    NaN for a query allowed a single key (its entropy is 0 whatever the head does)."""
    w = as_weights(w)
    n = _allowed(w.shape[2], w.shape[3], causal).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        top = np.where(n > 1, np.log(n), np.nan)
    return entropy(w) / top


def offset_mass(w: Array, offset: int) -> Array:
    """``(L, H, Q)``: the weight each query puts on the key ``offset`` positions from its own
    (-1 previous, 0 self, +1 next); NaN where that key does not exist."""
    w = as_weights(w)
    q, k = w.shape[2], w.shape[3]
    target = _positions(q, k) + offset
    ok = (target >= 0) & (target < k)
    out = np.full(w.shape[:3], np.nan)
    rows = np.nonzero(ok)[0]
    out[..., rows] = w[..., rows, target[ok]]
    return out


def previous_mass(w: Array) -> Array:
    return offset_mass(w, -1)


def next_mass(w: Array) -> Array:
    return offset_mass(w, +1)


def self_mass(w: Array) -> Array:
    return offset_mass(w, 0)


def distance(w: Array) -> Array:
    """``(L, H, Q)``: the mean distance, in tokens, between a query and the keys it attends to."""
    w = as_weights(w)
    q, k = w.shape[2], w.shape[3]
    d = np.abs(_positions(q, k)[:, None] - np.arange(k)[None, :])  # (Q, K)
    return (w * d).sum(-1)


BAND_WIDTH = 2  # the half-width of the diagonal band of the ``band`` metric (see attnlab.analysis.labels)


def band_mass(w: Array, width: int = BAND_WIDTH) -> Array:
    """``(L, H, Q)``: the weight each query puts on the keys at most ``width`` positions away."""
    w = as_weights(w)
    q, k = w.shape[2], w.shape[3]
    near = np.abs(_positions(q, k)[:, None] - np.arange(k)[None, :]) <= width  # (Q, K)
    return (w * near).sum(-1)


def _key_mass(w: Array, keys: Sequence[bool]) -> Array:
    w = as_weights(w)
    sel = np.asarray(keys, dtype=bool)
    if sel.shape != (w.shape[3],):
        raise ShapeError(f"got {len(sel)} key tokens for attention over {w.shape[3]} keys")
    return w[..., sel].sum(-1)


def _need_tokens(tokens: Sequence[str] | None, what: str) -> Sequence[str]:
    if tokens is None:
        raise InputError(f"the {what} metric needs the key tokens, but the trace has none; capture with "
                         f"attnlab.trace_text or attach them with attnlab.capture.attach_tokens(trace, tokens)")
    return tokens


def cls_mass(w: Array, tokens: Sequence[str] | None) -> Array:
    """``(L, H, Q)``: the weight on start tokens ([CLS], <s>, BOS)."""
    toks = _need_tokens(tokens, "cls")
    return _key_mass(w, [t in START_TOKENS for t in toks])


def sep_mass(w: Array, tokens: Sequence[str] | None) -> Array:
    """``(L, H, Q)``: the weight on end tokens ([SEP], </s>)."""
    toks = _need_tokens(tokens, "sep")
    return _key_mass(w, [t in END_TOKENS for t in toks])


def is_punct(token: str) -> bool:
    """A token made only of punctuation characters (Unicode categories P*), sub-word marks removed."""
    text = token.removeprefix("##").lstrip("Ġ▁")
    return bool(text) and all(unicodedata.category(c).startswith("P") for c in text)


def punct_mass(w: Array, tokens: Sequence[str] | None) -> Array:
    """``(L, H, Q)``: the weight on punctuation tokens."""
    toks = _need_tokens(tokens, "punct")
    return _key_mass(w, [is_punct(t) for t in toks])


# name -> function of (w, tokens, causal) giving (L, H, Q)
METRICS: dict[str, Callable[[Array, Sequence[str] | None, bool], Array]] = {
    "entropy": lambda w, t, c: entropy(w),
    "entropy_ratio": lambda w, t, c: entropy_ratio(w, c),
    "cls": lambda w, t, c: cls_mass(w, t),
    "sep": lambda w, t, c: sep_mass(w, t),
    "punct": lambda w, t, c: punct_mass(w, t),
    "self": lambda w, t, c: self_mass(w),
    "previous": lambda w, t, c: previous_mass(w),
    "next": lambda w, t, c: next_mass(w),
    "distance": lambda w, t, c: distance(w),
    "band": lambda w, t, c: band_mass(w),
}
TOKEN_METRICS = ("cls", "sep", "punct")  # the metrics that need the key tokens


def per_query_metrics(
    w: Any, tokens: Sequence[str] | None = None, *, causal: bool = False, names: Sequence[str] | None = None
) -> dict[str, Array]:
    """``{name: (L, H, Q)}`` for ``names`` (default: every metric, or every metric that needs no
    tokens when ``tokens`` is None)."""
    a = as_weights(w)
    if names is None:
        names = [n for n in METRICS if tokens is not None or n not in TOKEN_METRICS]
    unknown = [n for n in names if n not in METRICS]
    if unknown:
        raise InputError(f"unknown metric(s) {unknown}; the metrics are {list(METRICS)}")
    return {n: METRICS[n](a, tokens, causal) for n in names}


@dataclass
class HeadSums:
    """Running sums of per-query metric values, per head: ``total[name]`` and ``count[name]`` are
    ``(L, H)``; NaN values (undefined queries) are left out of both.  Two ``HeadSums`` add with
    :meth:`merge` (or by summing the arrays across processes), so a corpus is reduced in one pass."""

    total: dict[str, Array] = field(default_factory=dict)
    count: dict[str, Array] = field(default_factory=dict)

    def add(self, values: dict[str, Array]) -> HeadSums:
        """Add ``{name: (L, H, Q)}`` (one input) to the sums; returns self."""
        for name, v in values.items():
            ok = ~np.isnan(v)
            s, n = np.where(ok, v, 0.0).sum(-1), ok.sum(-1).astype(np.float64)
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
