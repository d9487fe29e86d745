"""Every head of one layer in a grid, on one shared colour scale.

    >>> fig = al.viz.heads(trace, layer=-1)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import _validate
from ..trace import AttentionTrace, Kind
from . import _fonts
from ._panels import Panel, Span, check_tokens, count, cut, kind_name, record_panel, select, slices
from .static import (
    DEFAULT_CMAP,
    DEFAULT_GAMMA,
    DPI,
    MAX_INCHES,
    X_LABEL,
    Y_LABEL,
    Colours,
    Scale,
    cbar_label,
    cell_inches,
    figure,
    frameless,
    mosaic,
    norm,
    pooled_note,
    set_ticks,
    show,
)

if TYPE_CHECKING:
    from matplotlib.colors import Colormap
    from matplotlib.figure import Figure

__all__ = ["heads"]

GAP = 0.15  # inches between the panels, side by side
TITLE_GAP = 0.3  # inches above each panel, room for its "head i"


def heads(
    trace: AttentionTrace,
    layer: int = -1,
    *,
    kind: Kind | None = None,
    batch: int = 0,
    tokens: Sequence[str] | None = None,
    cmap: str | Colormap = DEFAULT_CMAP,
    ncols: int | None = None,
    span: Span | None = None,
    scale: Scale = "auto",
    gamma: float = DEFAULT_GAMMA,
) -> Figure:
    """Every head of one layer in a grid, on one shared colour scale (0 to the layer's largest weight).

    Token labels sit on the left (queries) and along the bottom (keys) of the grid.  The panels are one
    image in one axes (fast to lay out and to save at any length); ``span``, ``scale`` and ``gamma`` as
    in :func:`heatmap`."""
    colours = Colours.check(scale, gamma)
    rec = select(trace, layer, kind)
    n_heads = rec.n_heads
    full = [record_panel(rec, h, batch) for h in range(n_heads)]
    if tokens is not None:
        toks = check_tokens("tokens", tokens, full[0].matrix.shape[1])
        full = [Panel(p.matrix, toks, toks, p.title) for p in full]
    panels = [cut(p, span) for p in full]
    ncols = min(n_heads, 4) if ncols is None else _validate.positive_int("ncols", ncols)
    nrows = math.ceil(n_heads / ncols)
    lq, lk = panels[0].matrix.shape
    cell = min(  # inches per cell: as for short inputs, but the whole figure within MAX_INCHES
        cell_inches(max(lq, lk), lo=1 / DPI, hi=0.3, span=3.2),  # long inputs: a pixel a cell
        (MAX_INCHES - 3.0 - GAP * (ncols - 1)) / (ncols * lk),
        (MAX_INCHES - 2.0 - TITLE_GAP * nrows) / (nrows * lq),
    )
    grid = mosaic([p.matrix for p in panels], ncols, cell, gaps=(GAP, TITLE_GAP))
    fig = figure(ncols * (lk * cell + GAP) + 3.0, nrows * (lq * cell + TITLE_GAP) + 2.0)
    ax = fig.add_subplot()
    colour_scale = norm([grid.image], colours, full[0].matrix.shape[1])
    image = show(ax, grid.image, colour_scale, cmap)
    x_tokens, y_tokens = panels[0].x_tokens, panels[0].y_tokens
    set_ticks(ax, x_tokens or [str(j) for j in range(lk)], "x", lk * cell, grid.x, ncols)
    set_ticks(ax, y_tokens or [str(i) for i in range(lq)], "y", lq * cell, grid.y, nrows)
    for h in range(n_heads):
        r, c = divmod(h, ncols)
        ax.text(grid.x(c, lk / 2 - 0.5), grid.y(r, -0.5), f"head {h}", ha="center", va="bottom", fontsize=9)
    frameless(ax)
    fig.supxlabel(X_LABEL)
    fig.supylabel(Y_LABEL)
    every = "all " if n_heads > 1 else ""
    note = pooled_note(grid.factor)
    fig.suptitle(f"layer {rec.layer}: {every}{count(n_heads, 'head')} ({kind_name(rec.kind)})"
                 f"{slices(span, *full[0].matrix.shape)[2]}" + (f"\n({note})" if note else ""))
    fig.colorbar(image, ax=ax, label=cbar_label(colour_scale), shrink=0.6)
    _fonts.check_glyphs([*(x_tokens or []), *(y_tokens or [])])
    return fig
