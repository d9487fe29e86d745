"""Thumbnails of every head of every layer: the overview of a model's attention.

    >>> fig = al.viz.model_grid(trace)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..trace import AttentionTrace, Kind
from ._panels import Span, count, cut, kind_name, main_kind, record_panel, slices
from .static import (
    DEFAULT_CMAP,
    DEFAULT_GAMMA,
    MAX_INCHES,
    Colours,
    Scale,
    cbar_label,
    figure,
    frameless,
    mosaic,
    norm,
    pooled_note,
    show,
)

if TYPE_CHECKING:
    from matplotlib.colors import Colormap
    from matplotlib.figure import Figure

__all__ = ["model_grid"]

GAP = 0.08  # inches between thumbnails


def model_grid(
    trace: AttentionTrace,
    *,
    kind: Kind | None = None,
    batch: int = 0,
    cmap: str | Colormap = DEFAULT_CMAP,
    span: Span | None = None,
    scale: Scale = "auto",
    gamma: float = DEFAULT_GAMMA,
) -> Figure:
    """Thumbnails of every head of every layer: layers down, heads across, one shared colour scale.

    The overview in which to spot the kinds of heads (diagonal, previous token, [CLS]/[SEP] columns);
    :func:`heatmap` then shows one of them with its tokens.  Thumbnails of long inputs are drawn as block
    means (the title says so); ``span``, ``scale`` and ``gamma`` as in :func:`heatmap`."""
    colours = Colours.check(scale, gamma)
    kind = main_kind(trace, kind)
    records = trace.select(kind=kind)
    n_layers, n_heads = len(records), max(r.n_heads for r in records)
    full_q = max(int(r.weights.shape[2]) for r in records)
    full_k = max(int(r.weights.shape[3]) for r in records)
    slots = [  # layers x heads, None where a layer has fewer heads
        cut(record_panel(r, h, batch), span).matrix if h < r.n_heads else None
        for r in records for h in range(n_heads)
    ]
    lq = max(m.shape[0] for m in slots if m is not None)
    lk = max(m.shape[1] for m in slots if m is not None)
    size = min(  # inches per thumbnail, the whole figure within MAX_INCHES
        1.0 if n_heads <= 12 else max(0.45, 12.0 / n_heads),
        (MAX_INCHES - 2.6) / n_heads - GAP,
        (MAX_INCHES - 1.6) / n_layers - GAP,
    )
    grid = mosaic(slots, n_heads, min(size / lq, size / lk), gaps=(GAP, GAP), shape=(lq, lk))
    fig = figure(max(n_heads * (size + GAP) + 2.6, 4.0), n_layers * (size + GAP) + 1.6)
    ax = fig.add_subplot()
    colour_scale = norm([grid.image], colours, full_k)
    image = show(ax, grid.image, colour_scale, cmap)
    ax.xaxis.tick_top()
    ax.set_xticks([grid.x(h, lk / 2 - 0.5) for h in range(n_heads)], [f"head {h}" for h in range(n_heads)],
                  fontsize=8)
    ax.set_yticks([grid.y(i, lq / 2 - 0.5) for i in range(n_layers)], [f"layer {r.layer}" for r in records],
                  fontsize=8)
    ax.tick_params(length=0)
    frameless(ax)
    note = pooled_note(grid.factor)
    fig.suptitle(f"{kind_name(kind)}: {count(n_layers, 'layer')} x {count(n_heads, 'head')}"
                 f"{slices(span, full_q, full_k)[2]}\n(keys across, queries down{'; ' + note if note else ''})")
    fig.colorbar(image, ax=ax, label=cbar_label(colour_scale), shrink=0.6)
    return fig
