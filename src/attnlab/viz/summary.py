"""A readable text summary of a trace: per layer, the tokens attended to most and the heads that
follow one simple pattern ([CLS], [SEP], previous token, next token, self).

    >>> print(attnlab.viz.summarize(trace))
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import torch
from torch import Tensor

from ..errors import InputError
from ..trace import AttentionTrace, Kind

__all__ = ["MOSTLY", "LayerSummary", "head_pattern", "layer_summaries", "pattern_scores", "summarize"]

MOSTLY = 0.5  # a head "mostly" follows a pattern when it puts more than this share of its weight there
_START = {"[CLS]", "<s>", "<cls>", "[BOS]", "<bos>"}
_END = {"[SEP]", "</s>", "<sep>", "[EOS]", "<eos>"}


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
    """For one head's ``(q_len, k_len)`` weights: the mean share each query gives to each pattern."""
    lq, lk = w.shape
    scores: dict[str, float] = {}
    first = tokens[0] if tokens and tokens[0] in _START else "first token"
    scores[first] = float(w[:, 0].mean())
    ends = [j for j, t in enumerate(tokens) if t in _END]
    if ends:
        scores[tokens[ends[0]]] = float(w[:, ends].sum(-1).mean())
    if lq == lk:
        if lq > 1:
            scores["previous token"] = float(torch.diagonal(w, -1).mean())
            scores["next token"] = float(torch.diagonal(w, 1).mean())
        scores["self"] = float(torch.diagonal(w).mean())
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
    keys = rec.key_tokens or [str(j) for j in range(rec.weights.shape[-1])]

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
