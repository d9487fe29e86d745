"""Interpolated modified Kneser-Ney n-gram models over token ids (Chen & Goodman, 1998, section 3.5): the
baseline a character language model must beat.

For an n-gram model, with ``h`` the last ``k - 1`` tokens and ``h'`` the last ``k - 2``::

    P_k(w | h) = max(c_k(h w) - D_k(c_k(h w)), 0) / c_k(h .)  +  gamma_k(h) P_{k-1}(w | h')
    gamma_k(h) = (D_k1 N1(h .) + D_k2 N2(h .) + D_k3+ N3+(h .)) / c_k(h .)
    P_0(w)     = 1 / V

where ``c_n`` (the highest order) counts occurrences and every lower ``c_k(h w)`` counts the distinct tokens seen
before ``h w`` (continuation counts, ``N1+(. h w)``); ``N_j(h .)`` is the number of tokens ``w`` with
``c_k(h w) = j``; the discounts come from the counts of counts ``n_j`` of each order:
``Y = n1 / (n1 + 2 n2)``, ``D_kj = j - (j + 1) Y n_{j+1} / n_j`` (``j = 1, 2, 3``; kept in ``[0.1, j]``).
A context never seen (``c_k(h .) = 0``) hands its whole mass to the lower order.  Every ``P_k(. | h)`` sums to 1
over the vocabulary.

An n-gram of ids is one int64 key, ``sum_i ids[t - i] V^i`` (the predicted token least significant), so counting is
``np.unique`` and looking up is ``np.searchsorted``: a 5-gram model of 1.7 M characters fits in seconds.

Letters: T positions scored, V vocabulary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError, InputError

__all__ = ["KneserNey", "bits_per_token"]


@dataclass(frozen=True)
class _Order:
    """The counts of one order ``k``: every seen k-gram with its (raw or continuation) count, and per context the
    sum of those counts and the numbers of k-grams seen once, twice, three times or more."""

    keys: np.ndarray  # (G,) sorted k-gram keys
    counts: np.ndarray  # (G,) c_k
    contexts: np.ndarray  # (C,) sorted context keys (key // V)
    totals: np.ndarray  # (C,) c_k(h .)
    backoff: np.ndarray  # (C,) D1 N1(h .) + D2 N2(h .) + D3+ N3+(h .)
    discounts: tuple[float, float, float]  # D1, D2, D3+


class KneserNey:
    """An interpolated modified Kneser-Ney model of order ``order`` over ids ``0 .. vocab_size - 1``, fit on a
    stream of ids with :meth:`fit`; :meth:`log2_probs` scores a stream, :meth:`distribution` gives ``P(. | h)``."""

    def __init__(self, order: int, vocab_size: int, orders: list[_Order]) -> None:
        self.order, self.vocab_size, self._orders = order, vocab_size, orders
        self._dense_rows: list[np.ndarray] | None = None  # orders 1-2 as dense rows, made by distributions()

    @classmethod
    def fit(cls, ids: np.ndarray, order: int, vocab_size: int) -> KneserNey:
        """Count ``ids`` (a 1-D stream, documents joined by a separator token) up to ``order``."""
        if isinstance(order, bool) or not isinstance(order, int) or order < 1:
            raise ConfigError(f"order must be an int >= 1, got {order!r}; e.g. 3 for trigrams")
        if vocab_size ** order >= 2 ** 63:
            raise ConfigError(f"order={order} over {vocab_size} tokens does not fit an int64 key; lower the order "
                              f"or the vocabulary")
        ids = np.asarray(ids, dtype=np.int64)
        if ids.ndim != 1 or len(ids) < order:
            raise InputError(f"need a 1-D stream of at least {order} ids to fit an order-{order} model, got shape "
                             f"{ids.shape}")
        if ids.min() < 0 or ids.max() >= vocab_size:
            raise InputError(f"ids must lie in 0..{vocab_size - 1}, got {ids.min()}..{ids.max()}")
        keys, counts = np.unique(ngram_keys(ids, order, vocab_size), return_counts=True)  # the highest order: raw
        orders = [_stats(keys, counts, vocab_size)]
        for k in range(order - 1, 0, -1):  # continuation counts: distinct left extensions of each k-gram
            keys, counts = np.unique(keys % vocab_size ** k, return_counts=True)
            orders.append(_stats(keys, counts, vocab_size))
        return cls(order, vocab_size, orders[::-1])  # orders[k - 1] is order k

    def log2_probs(self, ids: np.ndarray) -> np.ndarray:
        """``(T,)`` ``log2 P(ids[t] | ids[t - n + 1 .. t - 1])`` for every position of the stream ``ids`` (the first
        positions use the history they have)."""
        ids = np.asarray(ids, dtype=np.int64)
        return np.log2(self._probs(ids, np.arange(len(ids)), np.zeros(len(ids), dtype=np.int64)))

    def distribution(self, history: list[int] | np.ndarray) -> np.ndarray:
        """``(V,)`` ``P(w | history)`` for every token ``w`` (the last ``order - 1`` ids of ``history`` count)."""
        history = np.asarray(history, dtype=np.int64)[max(0, len(history) - (self.order - 1)):] if self.order > 1 \
            else np.zeros(0, dtype=np.int64)  # (a history shorter than order - 1 is used whole)
        V = self.vocab_size
        streams = np.concatenate([np.broadcast_to(history, (V, len(history))), np.arange(V)[:, None]], axis=1)
        flat = streams.reshape(-1)  # V rows of history + w, each scored at its last position
        first = np.arange(V) * (len(history) + 1)
        return self._probs(flat, first + len(history), first)

    def distributions(self, windows: np.ndarray) -> np.ndarray:
        """``(B, L, V)`` float32: ``P(. | windows[b, :t + 1])`` after every position ``t`` of each row of ``windows``
        ``(B, L)`` (each row's own history only; the first positions use the history they have): the
        teacher's next-character distributions for a batch of training windows, built order by order as
        :meth:`_probs` builds one probability, with every seen continuation of a context added at once."""
        w = np.asarray(windows, dtype=np.int64)
        if w.ndim != 2:
            raise InputError(f"windows must be (batch, length) ids, got shape {w.shape}")
        V, (B, L) = self.vocab_size, w.shape
        dense = self._dense()
        ids, at = w.reshape(-1), np.arange(B * L)
        first = np.repeat(np.arange(B) * L, L)  # each row's own first position
        p = np.full((B * L, V), 1.0 / V, dtype=np.float32)  # P_0
        key = np.zeros(B * L, dtype=np.int64)  # the context of order k, one more token to the left each order
        for k, stats in enumerate(self._orders, 1):
            if k > 1:
                start = at - (k - 2)
                has = start >= first
                key = key + np.where(has, ids[np.maximum(start, 0)], 0) * V ** (k - 2)
            else:
                has = np.ones(B * L, dtype=bool)
            c_idx = np.minimum(np.searchsorted(stats.contexts, key), len(stats.contexts) - 1)
            seen = has & (stats.contexts[c_idx] == key)
            rows = np.flatnonzero(seen)
            if not len(rows):
                continue
            total = stats.totals[c_idx[rows]].astype(np.float64)
            scale = (stats.backoff[c_idx[rows]] / total).astype(np.float32)[:, None]
            if k <= len(dense):  # the low orders, whose contexts have many continuations: their rows made dense once
                p[rows] = p[rows] * scale + dense[k - 1][c_idx[rows]]
                continue
            p[rows] *= scale
            lo = np.searchsorted(stats.keys, key[rows] * V)
            hi = np.searchsorted(stats.keys, (key[rows] + 1) * V)
            n = hi - lo  # (R,) the continuations seen after each context
            row = np.repeat(np.arange(len(rows)), n)
            g = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n) + np.repeat(lo, n)  # their k-gram indices
            count = stats.counts[g].astype(np.float64)
            d = np.asarray(stats.discounts)[np.minimum(count, 3).astype(np.int64) - 1]
            p[rows[row], stats.keys[g] % V] += (np.maximum(count - d, 0.0) / total[row]).astype(np.float32)
        return p.reshape(B, L, V)

    def _dense(self) -> list[np.ndarray]:
        """Orders 1 and 2 (when the vocabulary allows) as dense rows, one per context: ``max(c - D, 0) / c(h .)`` at
        every token (``(contexts, V)`` float32, made once; the memory-bound part of :meth:`distributions`)."""
        if self._dense_rows is None:
            rows = []
            V = self.vocab_size
            for stats in self._orders[:2]:
                if len(stats.contexts) * V > 64_000_000:  # 256 MB of float32: leave it sparse
                    break
                table = np.zeros((len(stats.contexts), V), dtype=np.float32)
                c_idx = np.searchsorted(stats.contexts, stats.keys // V)
                d = np.asarray(stats.discounts)[np.minimum(stats.counts, 3) - 1]
                table[c_idx, stats.keys % V] = (np.maximum(stats.counts - d, 0.0) / stats.totals[c_idx]
                                                ).astype(np.float32)
                rows.append(table)
            self._dense_rows = rows
        return self._dense_rows

    def _probs(self, ids: np.ndarray, at: np.ndarray, first: np.ndarray) -> np.ndarray:
        """``P(ids[t] | ids[first .. t - 1])`` for each position ``t`` of ``at`` (the last ``order - 1`` ids of
        that history count)."""
        V = self.vocab_size
        p = np.full(len(at), 1.0 / V)
        key = np.zeros(len(at), dtype=np.int64)  # the k-gram ending at t, built up one token to the left at a time
        for k, stats in enumerate(self._orders, 1):
            start = at - (k - 1)
            has = start >= first  # positions with a history of k - 1 tokens
            key = key + np.where(has, ids[np.maximum(start, 0)], 0) * V ** (k - 1)
            ctx = key // V
            c_idx = np.searchsorted(stats.contexts, ctx)
            c_idx = np.minimum(c_idx, len(stats.contexts) - 1)
            seen = has & (stats.contexts[c_idx] == ctx)
            g_idx = np.minimum(np.searchsorted(stats.keys, key), len(stats.keys) - 1)
            count = np.where(stats.keys[g_idx] == key, stats.counts[g_idx], 0).astype(np.float64)
            d = np.asarray(stats.discounts)[np.minimum(count, 3).astype(np.int64) - 1]
            total = stats.totals[c_idx].astype(np.float64)
            mixed = (np.maximum(count - np.where(count > 0, d, 0.0), 0.0) + stats.backoff[c_idx] * p) / total
            p = np.where(seen, mixed, p)
        return p


def ngram_keys(ids: np.ndarray, k: int, vocab_size: int) -> np.ndarray:
    """``(T - k + 1,)`` the key of every k-gram of ``ids``: ``sum_i ids[t - i] V^i``, ``t`` its last position."""
    T = len(ids) - k + 1
    key = np.zeros(T, dtype=np.int64)
    for i in range(k):  # i tokens back from the last
        key += ids[k - 1 - i: k - 1 - i + T] * vocab_size ** i
    return key


def discounts(counts: np.ndarray) -> tuple[float, float, float]:
    """``(D1, D2, D3+)`` from the counts of counts (Chen & Goodman's estimates), each kept in ``[0.1, j]``: on
    small data an estimate can reach 0 or below, which would give a context seen once no mass to spare (a token never
    seen after it would get probability 0)."""
    n = [int((counts == j).sum()) for j in (1, 2, 3, 4)]
    if n[0] == 0 or n[1] == 0:
        return 0.5, 1.0, 1.5  # too few counts to estimate: fixed, sensible values
    y = n[0] / (n[0] + 2 * n[1])
    out = []
    for j in (1, 2, 3):
        d = j - (j + 1) * y * n[j] / n[j - 1] if n[j - 1] else float(j) / 2
        out.append(min(max(d, 0.1), float(j)))
    return out[0], out[1], out[2]


def _stats(keys: np.ndarray, counts: np.ndarray, vocab_size: int) -> _Order:
    """Per-context sums of one order's counts (``keys`` sorted, so their contexts are too)."""
    d = discounts(counts)
    ctx = keys // vocab_size
    contexts, first = np.unique(ctx, return_index=True)
    totals = np.add.reduceat(counts, first)
    weight = np.asarray(d)[np.minimum(counts, 3) - 1]  # D_j for each k-gram's count
    backoff = np.add.reduceat(weight, first)
    return _Order(keys, counts, contexts, totals, backoff, d)


def bits_per_token(log2_probs: np.ndarray) -> float:
    """The mean of ``-log2 P`` (bits per token; per character for a character model)."""
    return float(-np.mean(log2_probs)) if len(log2_probs) else math.nan
