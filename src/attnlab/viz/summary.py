"""A readable text summary of a trace: per layer, the tokens attended to most and the heads that
follow one simple pattern ([CLS], [SEP], previous token, next token, self).

The patterns are the per-head metrics of :mod:`attnlab.functional.head_metrics` (the table ``attnlab analyze``
uses, with its special tokens), so a head the summary calls "previous token" has the same share in the analysis.

    >>> print(attnlab.viz.summarize(trace))
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass

import torch
from torch import Tensor

from ..errors import InputError
from ..functional.head_metrics import END_TOKENS, MOSTLY, START_TOKENS, Keys, key_mass, per_query
from ..trace import AttentionTrace, Kind

__all__ = ["MOSTLY", "LayerSummary", "head_pattern", "layer_summaries", "pattern_scores", "summarize"]

# pattern name -> the metric that scores it (positional patterns are read for self-attention only)
_POSITIONAL = {"previous token": "previous", "next token": "next", "self": "self"}


@dataclass(frozen=True)
class LayerSummary:
    """What one layer attends to.

    ``top`` lists ``(key position, share)``: the share of the layer's attention (mean over heads and
    queries) each key receives, largest first.  ``patterns`` maps a pattern name to the heads that put
    more than :data:`MOSTLY` of their weight on it."""

    layer: int
    top: list[tuple[int, float]]
    patterns: dict[str, list[int]]


def pattern_scores(w: Tensor, tokens: list[str]) -> dict[str, float]:
    """For one head's ``(q_len, k_len)`` weights: the mean share its queries give each pattern (the head's metric,
    over the queries where it is defined).  The start tokens are named by the first of them (``[CLS]``) and scored
    by the ``cls`` metric, or, when the keys have none, ``"first token"`` is the mass on the first key; the end
    tokens by the ``sep`` metric, named by the first end token when there is one."""
    lq, lk = w.shape
    w4 = w[None, None].double()  # (1, 1, Q, K)
    names = ["cls", "sep", *(_POSITIONAL.values() if lq == lk else ())]
    means = {n: float(v.nanmean()) for n, v in per_query(w4, Keys.of(tokens), names).items()}
    scores: dict[str, float] = {}
    starts = [t for t in tokens if t in START_TOKENS]
    if starts:
        scores[starts[0]] = means["cls"]
    else:
        first = torch.zeros(1, lk, 1, dtype=torch.bool)  # (1, K, 1): the first key alone
        first[0, 0, 0] = True
        scores["first token"] = float(key_mass(w4, first).mean())
    ends = [t for t in tokens if t in END_TOKENS]
    if ends:
        scores[ends[0]] = means["sep"]
    for pattern, metric in _POSITIONAL.items():
        if metric in means and not math.isnan(means[metric]):  # NaN: no query has that key (a 1-token input)
            scores[pattern] = means[metric]
    return scores


def head_pattern(w: Tensor, tokens: list[str]) -> str | None:
    """The pattern one head's ``(q_len, k_len)`` weights mostly follow, or None when none has > MOSTLY."""
    scores = pattern_scores(w, tokens)
    name = max(scores, key=lambda k: scores[k])
    return name if scores[name] > MOSTLY else None


def layer_summaries(
    trace: AttentionTrace, *, kind: Kind | None = None, batch: int = 0, top: int = 3
) -> list[LayerSummary]:
    """One :class:`LayerSummary` per layer of the trace's ``kind`` stack (default: its main stack)."""
    if not trace.records:
        raise InputError("the trace is empty: nothing was captured, so there is nothing to summarise")
    kind = kind or trace.main_kind
    out = []
    for rec in trace.select(kind=kind):
        w = rec.weights[batch].float()  # (H, Lq, Lk)
        lk = w.shape[-1]
        keys = rec.key_tokens or [str(j) for j in range(lk)]
        received = w.mean(dim=(0, 1))  # (Lk,): share of the layer's attention on each key
        order = torch.argsort(received, descending=True, stable=True)[:top]
        patterns: dict[str, list[int]] = {}
        for h in range(w.shape[0]):
            name = head_pattern(w[h], keys)
            if name is not None:
                patterns.setdefault(name, []).append(h)
        out.append(LayerSummary(rec.layer, [(int(j), float(received[j])) for j in order], patterns))
    return out


def summarize(trace: AttentionTrace, *, kind: Kind | None = None, batch: int = 0, top: int = 3) -> str:
    """A few lines per trace: the tokens, then per layer the most attended keys and the pattern heads."""
    layers = layer_summaries(trace, kind=kind, batch=batch, top=top)
    kind = kind or trace.main_kind
    rec = trace.select(kind=kind)[0]
    keys = [one_line(k) for k in rec.key_tokens or []] or [str(j) for j in range(rec.weights.shape[-1])]

    def name(j: int) -> str:
        return keys[j] if keys.count(keys[j]) == 1 else f"{keys[j]}@{j}"

    cols = [
        "  ".join(f"{name(j)} {_percent(share)}" for j, share in s.top) for s in layers
    ]
    header = "most attended keys (share of all attention)"
    width = max(len(header), *(_width(c) for c in cols))
    model = f" ({trace.meta['model']})" if trace.meta.get("model") else ""
    lines = [
        f"{kind}-attention{model}: {_count(len(layers), 'layer')} x {_count(rec.n_heads, 'head')}, "
        f"{_count(len(keys), 'token')}",
        "tokens: " + " ".join(keys),
        "",
        f"layer  {header:<{width}}  heads mostly (>{MOSTLY:.0%}) on",
    ]
    for s, col in zip(layers, cols, strict=True):
        heads = "; ".join(f"{p} {','.join(map(str, hs))}" for p, hs in s.patterns.items()) or "-"
        lines.append(f"{s.layer:>5}  {col}{' ' * (width - _width(col))}  {heads}")
    return "\n".join(lines)


def _percent(share: float) -> str:
    """A share in two significant digits (57%, 5.0%, 0.41%): enough to rank the keys of a long input,
    where every key gets well under 1% and whole percents would print 0% for all of them."""
    percent = 100 * share
    return f"{percent:.0f}%" if percent >= 10 else f"{percent:#.2g}%"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _width(text: str) -> int:
    """Terminal columns: wide (CJK) characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def one_line(token: str) -> str:
    """Text as one-line rows show it (the summary's, a command's answer): a line break or tab written as its escape
    (``\\n``)."""
    return token.replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")
