"""Choosing what a figure draws: which record of a trace, which head, which range of positions, with which labels.

A :class:`Panel` is one ``(q_len, k_len)`` matrix with the tokens of its axes and a title; the figure modules
build panels here and draw them with :mod:`attnlab.viz.static`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _validate
from ..errors import InputError, ShapeError
from ..trace import AttentionRecord, AttentionTrace, Kind

__all__ = ["Head", "Panel", "Span", "as_matrix", "check_tokens", "count", "cut", "index", "kind_name", "main_kind",
           "record_panel", "select", "slices"]

Head = int | str  # a head index or "mean"
Span = tuple[int | None, int | None] | slice | range  # a range of token positions, stop excluded


@dataclass(frozen=True)
class Panel:
    """One matrix to draw: ``(q_len, k_len)`` weights with the tokens of each axis."""

    matrix: np.ndarray
    x_tokens: list[str] | None
    y_tokens: list[str] | None
    title: str


def main_kind(trace: AttentionTrace, kind: Kind | None) -> Kind:
    """``kind``, or the trace's main kind when None, checked to be in the trace."""
    if not trace.records:
        raise InputError("the trace is empty: nothing was captured, so there is nothing to draw")
    kind = kind or trace.main_kind
    if not trace.select(kind=kind):
        raise InputError(f"the trace has no {kind!r} attention; it has {trace.kinds}; pass kind= one of those")
    return kind


def index(value: int, n: int, what: str, where: str) -> int:
    """``value`` as an index into ``n`` things (negative counts from the end), or an error naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{what} must be an integer, got {value!r}")
    if not -n <= value < n:
        raise InputError(f"{what} {value} is out of range: {where} has {n} {what}s (0..{n - 1}, or -1 for the last)")
    return int(value) % n


def select(trace: AttentionTrace, layer: int, kind: Kind | None) -> AttentionRecord:
    """Layer ``layer`` of the trace's ``kind`` stack (its main stack when None)."""
    kind = main_kind(trace, kind)
    records = trace.select(kind=kind)
    return records[index(layer, len(records), "layer", f"the trace's {kind!r} stack")]


def record_panel(rec: AttentionRecord, head: Head, batch: int) -> Panel:
    """Head ``head`` (or ``"mean"`` of the heads) of input ``batch`` of ``rec``."""
    w = rec.weights
    b = index(batch, int(w.shape[0]), "batch", f"record {rec.name!r}")
    if head == "mean":
        matrix, which = w[b].float().mean(0), f"mean of {rec.n_heads} heads"
    elif isinstance(head, str):
        raise InputError(f"head must be an integer or 'mean', got {head!r}")
    else:
        h = index(head, rec.n_heads, "head", f"layer {rec.layer}")
        matrix, which = w[b, h], f"head {h}"
    kind = "" if rec.kind == "self" else f" ({rec.kind})"
    values = matrix.detach().to("cpu").float().numpy()  # a float32 view, no copy: 72 heads x 512^2 is 75 MB
    return Panel(values, rec.key_tokens, rec.query_tokens, f"layer {rec.layer}, {which}{kind}")


def as_matrix(data: Any) -> np.ndarray:
    """A 2-D tensor, array or nested list as a float64 ``(q_len, k_len)`` array."""
    if hasattr(data, "detach"):  # a torch tensor, on any device and in any dtype
        data = data.detach().to("cpu").double().numpy()
    try:
        matrix = np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(
            f"heatmap takes an AttentionTrace, an AttentionRecord or a 2-D matrix; got {type(data).__name__} ({exc})"
        ) from None
    if matrix.ndim != 2 or 0 in matrix.shape:
        raise ShapeError(
            f"heatmap needs a 2-D (q_len, k_len) matrix, got shape {matrix.shape}; "
            f"index it first, e.g. weights[0, head] for (batch, heads, q, k), or pass the trace itself"
        )
    return matrix


def check_tokens(what: str, tokens: Sequence[str] | None, n: int) -> list[str] | None:
    """``tokens`` as a list of ``n`` strings (None stays None)."""
    if tokens is None:
        return None
    if isinstance(tokens, str):
        raise InputError(f"{what} must be a list of strings, got the string {tokens!r}; pass text.split() or a list")
    toks = [str(t) for t in tokens]
    if len(toks) != n:
        raise ShapeError(f"{what} has {len(toks)} tokens but the matrix has {n} positions on that axis")
    return toks


def slices(span: Span | None, lq: int, lk: int) -> tuple[slice, slice, str]:
    """The query and key slices ``span`` selects in a ``(lq, lk)`` matrix, and a note for titles.

    A square matrix (self-attention) is cut on both axes; any other (cross-attention) on its queries."""
    every = slice(0, None)
    if span is None:
        return every, every, ""
    start, stop = _span_ends(span)
    start = 0 if start is None else start
    stop = lq if stop is None else stop
    if not 0 <= start < stop <= lq:
        raise InputError(
            f"span ({start}, {stop}) does not fit: the matrix has {lq} query positions, so a span must satisfy "
            f"0 <= start < stop <= {lq} (stop excluded); e.g. span=({max(0, lq - 60)}, {lq})"
        )
    rows = slice(start, stop)
    if lq == lk:
        return rows, rows, f", positions {start}-{stop - 1} of {lq}"
    return rows, every, f", queries {start}-{stop - 1} of {lq}"


def _span_ends(span: Span) -> tuple[int | None, int | None]:
    if isinstance(span, (slice, range)):
        if span.step not in (None, 1):
            raise InputError(f"span takes consecutive positions, got step {span.step}; pass (start, stop)")
        ends: Any = (span.start, span.stop)
    elif isinstance(span, (tuple, list)) and len(span) == 2:
        ends = tuple(span)
    else:
        raise InputError(f"span must be (start, stop), a slice or a range of positions, got {span!r}")
    for end in ends:
        _validate.non_negative_int("span's start and stop", end, optional=True,
                                   fix="positions count from 0; use None for the first or last")
    return ends[0], ends[1]


def cut(panel: Panel, span: Span | None) -> Panel:
    """``panel`` restricted to ``span``, its labels the tokens (or the positions) of the rows and columns kept."""
    if span is None:
        return panel
    lq, lk = panel.matrix.shape
    rows, cols, note = slices(span, lq, lk)
    x_tokens = panel.x_tokens if panel.x_tokens is not None else [str(j) for j in range(lk)]
    y_tokens = panel.y_tokens if panel.y_tokens is not None else [str(i) for i in range(lq)]
    return Panel(panel.matrix[rows, cols], x_tokens[cols], y_tokens[rows], panel.title + note)


def count(n: int, noun: str) -> str:
    """``"1 head"``, ``"2 heads"``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def kind_name(kind: Kind) -> str:
    """The kind of attention in words, for titles."""
    return {"self": "self-attention", "causal": "causal self-attention", "cross": "cross-attention"}.get(kind, kind)
