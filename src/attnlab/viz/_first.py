"""The first view: what every surface shows of a trace before the reader chooses anything.

``attnlab show``'s ``heatmap.png``, the standalone viewer (``save_html``), the lab (``attnlab serve``) and a
comparison of two traces all open on the same view, defined once here: the **last layer** of the trace's main
stack (:attr:`AttentionTrace.main_kind`), the **mean of its heads**.  A comparison opens on the layer where the two
traces differ most (:func:`difference`), the layer it names as most different.  docs/viewer.md describes it.
"""

from __future__ import annotations

from typing import Any, Literal

from ..trace import AttentionTrace

__all__ = ["FIRST_HEAD", "FIRST_LAYER", "difference", "first_view"]

FIRST_LAYER = -1  # the last layer: in the trained models the one nearest the output, and BERT's most task-shaped
FIRST_HEAD: Literal["mean"] = "mean"  # every head at once: no head is singled out before the reader picks one
ROUND = 5  # decimals of the differences returned (JSON for the lab)


def first_view(trace: AttentionTrace, other: AttentionTrace | None = None, *, batch: int = 0) -> dict[str, Any]:
    """The view a surface opens ``trace`` on: ``{"kind", "layer", "head"}`` with ``layer`` the record's layer
    number (the last of the main kind) and ``head`` -1 for the mean of the heads.  Given ``other`` (a comparison),
    ``layer`` is where the two differ most (:func:`difference`), when they can be compared and differ at all."""
    kind = trace.main_kind
    layers = [r.layer for r in trace.select(kind=kind)]
    layer = layers[FIRST_LAYER]
    if other is not None:
        d = difference(trace, other, batch=batch)
        per_layer = [sum(row) / len(row) for row in d["tv"]] if d["tv"] is not None else [0.0]
        if max(per_layer) > 0:  # two identical traces differ nowhere: they open on the first view
            layer = layers[per_layer.index(max(per_layer))]
    return {"kind": kind, "layer": layer, "head": -1}


def difference(a: AttentionTrace, b: AttentionTrace, *, batch: int = 0) -> dict[str, Any]:
    """How far apart the attention of two traces is, per layer and head of ``a``'s main kind: the total variation
    distance between their rows, ``0.5 * sum_k |a - b|``, averaged over the queries (0: the same, 1: disjoint).
    Defined when both have as many layers, heads and tokens; otherwise ``tv`` is None and ``reason`` says why.
    ``batch`` picks the input of a batched trace."""
    kind = a.main_kind
    if kind not in b.kinds:
        return {"kind": kind, "tv": None, "reason": f"the second trace has no {kind} attention; the difference is "
                f"drawn between two traces of one model"}
    wa, wb = a.stack(kind, batch), b.stack(kind, batch)  # (L, H, Q, K) each
    if wa.shape != wb.shape:
        if wa.shape[:2] != wb.shape[:2]:
            why = (f"the traces have {wa.shape[0]} x {wa.shape[1]} and {wb.shape[0]} x {wb.shape[1]} layers x heads; "
                   f"the difference is drawn between two texts of one model")
        else:
            why = (f"the texts have {wa.shape[-1]} and {wb.shape[-1]} tokens; the difference is drawn when both have "
                   f"as many (change one word for another)")
        return {"kind": kind, "tv": None, "reason": why}
    tv = 0.5 * (wa - wb).abs().sum(-1).mean(-1)  # (L, H)
    return {"kind": kind, "tv": [[round(float(x), ROUND) for x in row] for row in tv.tolist()], "reason": None}
