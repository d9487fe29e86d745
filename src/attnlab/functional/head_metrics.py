"""Per-head metrics of attention weights: the one table of their definitions (:data:`METRICS`) and the one table
of special tokens (:data:`START_TOKENS`, :data:`END_TOKENS`), read by ``attnlab.analysis`` (one text and a whole
corpus) and by ``attnlab.viz.summarize``.

Letters: N inputs (or the layers of one input), H heads, Q queries, K keys.

Every metric is a pure function of weights ``w`` ``(N, H, Q, K)`` (rows sum to one over the allowed keys) and of
what is known of the keys (:class:`Keys`: causal or not, how many are real, their tokens) that gives **one value per
query**, ``(N, H, Q)``, NaN where the metric is undefined for that query.  A head's metric is the mean over the
queries where it is defined, so a corpus reduces to two running sums per metric and head (a total and a count).
Queries are aligned bottom-right with the keys (query ``i`` sits at key position ``p_i = i + K - Q``), as
attnlab's causal convention; with right padding (``Keys.lengths``) the real keys are the first ``n`` and a query
at ``p_i >= n`` is padding: NaN for every metric.

* ``entropy``: ``-sum_j w_ij log w_ij`` in nats;
* ``entropy_ratio``: entropy over ``log(allowed keys)``, 1 for a uniform row, 0 for a one-hot one; a causal query
  is allowed ``min(p_i + 1, n)`` keys, a self-attention query all ``n``; undefined when one key is allowed;
* ``cls``, ``sep``: the mass on start tokens (:data:`START_TOKENS`) and on end tokens (:data:`END_TOKENS`);
* ``punct``: the mass on punctuation tokens (every character in a Unicode P* category, sub-word marks removed);
* ``self``, ``previous``, ``next``: the weight on key ``p_i``, ``p_i - 1``, ``p_i + 1``.  **Undefined (NaN) where
  that key does not exist**: the first token has no previous token and the last real token no next one, so they
  are left out of the head's mean rather than counted as 0 (a 0 there would be a fact about the sentence's ends,
  not about the head, and would pull every head's mean down by about one over the length);
* ``distance``: the mean distance ``sum_j w_ij |p_i - j|`` in tokens;
* ``band``: the mass on the keys at most :data:`BAND_WIDTH` (2) positions from the query, itself included;
* ``first``: the weight on the first key, position 0 (an encoder's ``[CLS]``, a language model's first token): the
  attention-sink share.  Undefined for a causal query at position 0, which can attend to nothing else.

A new metric is one function and one entry in :data:`METRICS`.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from ..errors import InputError, ShapeError

__all__ = [
    "BAND_WIDTH",
    "END_TOKENS",
    "METRICS",
    "MOSTLY",
    "START_TOKENS",
    "HeadMetric",
    "Keys",
    "is_punct",
    "key_mass",
    "per_query",
]

# The special tokens of the tokenizers attnlab meets (BERT, RoBERTa / BART, XLNet, GPT-2, Llama 3, attnlab's own):
# start tokens open a text (GPT-2's <|endoftext|> is the BOS it prepends), end tokens close it.
START_TOKENS = frozenset({"[CLS]", "<s>", "<cls>", "[BOS]", "<bos>", "<|endoftext|>", "<|begin_of_text|>"})
END_TOKENS = frozenset({"[SEP]", "</s>", "<sep>", "[EOS]", "<eos>", "<|end_of_text|>", "<|eot_id|>"})

BAND_WIDTH = 2  # the half-width of the diagonal band of the ``band`` metric
# A head "mostly" follows a pattern when more than this share of its weight, averaged over its queries, goes there:
# above one half that position is, for most queries, the single largest weight (the labels and the summary agree).
MOSTLY = 0.5


def is_punct(token: str) -> bool:
    """A token made only of punctuation characters (Unicode categories P*), sub-word marks removed."""
    text = token.removeprefix("##").lstrip("Ġ▁")
    return bool(text) and all(unicodedata.category(c).startswith("P") for c in text)


@dataclass(frozen=True)
class Keys:
    """What the metrics know of the keys of weights ``(N, H, Q, K)``."""

    causal: bool = False  # whether query p_i was allowed keys 0 .. p_i only
    lengths: Tensor | None = None  # (N,) ints: real keys of each input (right padding, real ones first); None = K
    tokens: Sequence[Sequence[str]] | None = None  # N (or 1, for all) lists of K key tokens; None = not known

    @classmethod
    def of(cls, tokens: Sequence[str] | None, causal: bool = False) -> Keys:
        """The keys of one input (or of every layer of one input): one token list for all."""
        return cls(causal, None, None if tokens is None else [list(tokens)])

    def flags(self, w: Tensor, metrics: Sequence[str], keeps: Sequence[Callable[[str], bool]]) -> Tensor:
        """``(N or 1, K, F)`` bool: for each of the F predicates ``keeps``, the keys whose token it accepts
        (refused, naming ``metrics``, when the tokens are unknown)."""
        if self.tokens is None:
            raise InputError(f"the {', '.join(metrics)} metric needs the key tokens, but the trace has none; "
                             f"capture with attnlab.trace_text or attach them with "
                             f"attnlab.capturing.attach_tokens(trace, tokens)")
        k = w.shape[-1]
        bad = [len(t) for t in self.tokens if len(t) != k]
        if bad:
            raise ShapeError(f"got {bad[0]} key tokens for attention over {k} keys")
        rows = [[[keep(t) for keep in keeps] for t in row] for row in self.tokens]
        return torch.tensor(rows, dtype=torch.bool, device=w.device).view(len(rows), k, len(keeps))

    def n(self, w: Tensor) -> Tensor:
        """``(N or 1, 1, 1)``: the real keys of each input."""
        if self.lengths is None:
            return torch.full((1, 1, 1), w.shape[-1], device=w.device)
        return self.lengths.to(w.device).view(-1, 1, 1)


def _positions(w: Tensor) -> Tensor:
    """``(Q,)``: the key position of each query (bottom-right aligned)."""
    q, k = w.shape[-2:]
    return torch.arange(q, device=w.device) + (k - q)


def entropy(w: Tensor, keys: Keys) -> Tensor:
    """``(N, H, Q)``: the entropy of each query's row, in nats (0 log 0 = 0)."""
    return -(torch.log(w) * w).nansum(-1)  # 0 * -inf = NaN where w = 0, skipped by nansum (faster than xlogy)


def entropy_ratio(w: Tensor, keys: Keys, entropy_: Tensor | None = None) -> Tensor:
    """``(N, H, Q)``: entropy over the entropy of the uniform distribution on the allowed keys; NaN where one
    key is allowed (its entropy is 0 whatever the head does).  ``entropy_``: the rows' entropy when known."""
    n = keys.n(w)  # (N, 1, 1)
    allowed = torch.minimum(_positions(w) + 1, n) if keys.causal else n.expand(-1, -1, w.shape[-2])  # (N, 1, Q)
    top = torch.where(allowed > 1, allowed.to(w.dtype).log(), torch.nan)
    return (entropy(w, keys) if entropy_ is None else entropy_) / top


def key_mass(w: Tensor, flags: Tensor) -> Tensor:
    """``(N, H, Q, F)``: the weight each query puts on each of the F key sets ``flags`` ``(N or 1, K, F)`` marks
    (one pass over the weights for all of them)."""
    return torch.matmul(w, flags.to(w.dtype)[:, None])  # (N, H, Q, K) @ (N, 1, K, F)


def offset_mass(w: Tensor, keys: Keys, offset: int) -> Tensor:
    """``(N, H, Q)``: the weight on the key ``offset`` positions from the query's own (-1 previous, 0 self, +1 next);
    NaN where that key does not exist (before the first key, after the last real one)."""
    target = _positions(w) + offset  # (Q,)
    ok = (target >= 0) & (target < keys.n(w))  # (N, 1, Q)
    index = target.clamp(0, w.shape[-1] - 1).expand(*w.shape[:-1])[..., None]  # (N, H, Q, 1)
    return torch.where(ok, w.gather(-1, index).squeeze(-1), torch.nan)


def _distances(w: Tensor) -> Tensor:
    """``(Q, K)``: ``|p_i - j|`` in tokens."""
    return (_positions(w)[:, None] - torch.arange(w.shape[-1], device=w.device)[None, :]).abs()


def distance(w: Tensor, keys: Keys) -> Tensor:
    """``(N, H, Q)``: the mean distance, in tokens, between a query and the keys it attends to."""
    return torch.linalg.vecdot(w, _distances(w).to(w.dtype))  # no (N, H, Q, K) temporary


def band_mass(w: Tensor, keys: Keys, width: int = BAND_WIDTH) -> Tensor:
    """``(N, H, Q)``: the weight each query puts on the keys at most ``width`` positions away."""
    return torch.linalg.vecdot(w, (_distances(w) <= width).to(w.dtype))


def first_mass(w: Tensor, keys: Keys) -> Tensor:
    """``(N, H, Q)``: the weight each query puts on the first key (position 0); NaN for a causal query at position
    0, whose one allowed key it is whatever the head does."""
    first = w[..., 0]
    return torch.where(_positions(w) >= 1, first, torch.nan) if keys.causal else first


@dataclass(frozen=True)
class HeadMetric:
    """One entry of :data:`METRICS`."""

    title: str  # what it measures, for tables and figures
    # (w (N, H, Q, K), keys[, the values of `uses`]) -> (N, H, Q), NaN where undefined; None for a key-set metric
    fn: Callable[..., Tensor] | None = None
    uses: str | None = None  # a metric whose values fn takes as its third argument (computed once for both)
    # a key-set metric: the mass on the keys whose token this accepts (all of them in one pass over the weights)
    keep: Callable[[str], bool] | None = None

    @property
    def tokens(self) -> bool:
        """Whether it needs the key tokens."""
        return self.keep is not None


METRICS: dict[str, HeadMetric] = {
    "entropy": HeadMetric("row entropy (nats)", entropy),
    "entropy_ratio": HeadMetric("entropy / uniform entropy", entropy_ratio, uses="entropy"),  # one log pass
    "cls": HeadMetric("mass on start token ([CLS], BOS)", keep=START_TOKENS.__contains__),
    "sep": HeadMetric("mass on end token ([SEP])", keep=END_TOKENS.__contains__),
    "punct": HeadMetric("mass on punctuation", keep=is_punct),
    "self": HeadMetric("mass on self", lambda w, k: offset_mass(w, k, 0)),
    "previous": HeadMetric("mass on previous token", lambda w, k: offset_mass(w, k, -1)),
    "next": HeadMetric("mass on next token", lambda w, k: offset_mass(w, k, +1)),
    "distance": HeadMetric("mean attention distance (tokens)", distance),
    "band": HeadMetric(f"mass within ±{BAND_WIDTH} tokens", band_mass),
    "first": HeadMetric("mass on the first token (sink)", first_mass),
}


def per_query(w: Tensor, keys: Keys, names: Sequence[str] | None = None) -> dict[str, Tensor]:
    """``{name: (N, H, Q)}`` for ``names`` (default: every metric, or every metric that needs no tokens when
    ``keys.tokens`` is None), computed in ``w``'s dtype; NaN where undefined and at padded queries."""
    if w.ndim != 4:
        raise ShapeError(f"attention weights must be (inputs, heads, q, k), got shape {tuple(w.shape)}")
    if names is None:
        names = [n for n, m in METRICS.items() if keys.tokens is not None or not m.tokens]
    unknown = [n for n in names if n not in METRICS]
    if unknown:
        raise InputError(f"unknown metric(s) {unknown}; the metrics are {list(METRICS)}")
    if not names:
        return {}
    on_keys = [n for n in names if METRICS[n].keep is not None]
    done: dict[str, Tensor] = {}
    if on_keys:  # every key-set metric in one matmul
        keeps = [METRICS[n].keep for n in on_keys]
        masses = key_mass(w, keys.flags(w, on_keys, [k for k in keeps if k is not None]))  # (N, H, Q, F)
        done.update(zip(on_keys, masses.unbind(-1), strict=True))

    def value(name: str) -> Tensor:  # (N, H, Q); a metric another one uses is computed once
        if name not in done:
            m = METRICS[name]
            assert m.fn is not None
            done[name] = m.fn(w, keys) if m.uses is None else m.fn(w, keys, value(m.uses))
        return done[name]

    values = torch.stack([value(n) for n in names])  # (names, N, H, Q)
    padded = _positions(w) >= keys.n(w)  # (N or 1, 1, Q): queries on padding
    if keys.lengths is not None:
        values = values.masked_fill(padded, torch.nan)
    return dict(zip(names, values.unbind(0), strict=True))
