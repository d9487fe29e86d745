"""One attention head (or the mean of a layer's heads) as a heatmap with a colour bar.

Keys (the tokens attended to) run along x and queries (the tokens attending) along y, so row ``i`` is the
distribution token ``i`` spreads over the keys and sums to one.

    >>> fig = al.viz.heatmap(trace, layer=5, head="mean", annotate=True)
    >>> al.viz.save(fig, "cat.png")
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..trace import AttentionRecord, AttentionTrace, Kind
from . import _fonts
from ._first import FIRST_HEAD, FIRST_LAYER
from ._panels import Head, Panel, Span, as_matrix, check_tokens, cut, record_panel, select
from .static import (
    DEFAULT_CMAP,
    DEFAULT_GAMMA,
    X_LABEL,
    Y_LABEL,
    Colours,
    Scale,
    cbar_label,
    cell_inches,
    escape,
    families,
    figure,
    norm,
    pool,
    pool_factor,
    pooled_note,
    root_figure,
    set_ticks,
    show,
    write_values,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.colors import Colormap, Normalize
    from matplotlib.figure import Figure
    from matplotlib.image import AxesImage

__all__ = ["heatmap"]

MAX_INCHES = 16.0  # the largest heatmap: 2400 px at DPI, every 5th label of 512 tokens


def heatmap(
    data: AttentionTrace | AttentionRecord | Any,
    layer: int = FIRST_LAYER,
    head: Head = FIRST_HEAD,
    tokens: Sequence[str] | None = None,
    *,
    annotate: bool = False,
    kind: Kind | None = None,
    ax: Axes | None = None,
    cmap: str | Colormap = DEFAULT_CMAP,
    title: str | None = None,
    x_tokens: Sequence[str] | None = None,
    y_tokens: Sequence[str] | None = None,
    batch: int = 0,
    vmin: float | None = None,
    vmax: float | None = None,
    span: Span | None = None,
    scale: Scale = "auto",
    gamma: float = DEFAULT_GAMMA,
) -> Figure:
    """One attention head (or the mean of a layer's heads) as a heatmap with a colour bar.

    Args:
        data: an :class:`AttentionTrace` (``layer`` of its ``kind`` stack, default its main stack), an
            :class:`AttentionRecord`, or a 2-D ``(q_len, k_len)`` tensor / array / nested list.
        layer: the layer of a trace (negative counts from the end); ignored for a record or a matrix.
            Default: the last, as in every surface's first view (:func:`attnlab.viz.first_view`).
        head: a head index (negative counts from the end) or ``"mean"`` for the mean over heads (the
            default, the first view's); ignored for a 2-D matrix.
        tokens: labels for both axes (self-attention); overrides the trace's tokens.
        annotate: write each weight in its cell, in black or white, whichever reads on that colour.
        kind: ``"self"``, ``"causal"`` or ``"cross"``: which stack of a trace to draw.
        ax: draw into these axes instead of a new figure (the figure of ``ax`` is returned).
        cmap: a matplotlib colour map name or object.
        title: the axes title; by default it names the layer and head.
        x_tokens / y_tokens: separate key (x) and query (y) labels, e.g. for cross-attention.
        batch: which input of a batched trace or record.
        vmin / vmax: the colour scale's ends; by default 0 (log: a decade under the uniform weight
            ``1 / k_len``) to the largest weight shown.
        span: ``(start, stop)`` (or a ``slice``/``range``): draw only positions ``start..stop-1``, of
            both axes when the matrix is square (self-attention), of the queries only otherwise
            (cross-attention: those queries over every key).  ``None`` ends mean the first/last position.
        scale: ``"linear"``, ``"power"`` (colour follows ``weight ** gamma``), ``"log"``, or ``"auto"``:
            linear up to :data:`AUTO_LINEAR_UP_TO` tokens, log beyond.
        gamma: the exponent of ``scale="power"`` (0 < gamma; below 1 brightens small weights).

    Returns:
        the :class:`matplotlib.figure.Figure`; save it with :func:`save`.

    Long inputs keep every row and column (as block means when there are more cells than pixels) but
    label only every k-th token so labels never overlap.
    """
    colours = Colours.check(scale, gamma, vmin, vmax)
    if isinstance(data, AttentionTrace):
        panel = record_panel(select(data, layer, kind), head, batch)
    elif isinstance(data, AttentionRecord):
        panel = record_panel(data, head, batch)
    else:
        panel = Panel(as_matrix(data), None, None, "")
    xt = check_tokens("x_tokens", x_tokens if x_tokens is not None else tokens, panel.matrix.shape[1])
    yt = check_tokens("y_tokens", y_tokens if y_tokens is not None else tokens, panel.matrix.shape[0])
    n_keys = panel.matrix.shape[1]
    panel = cut(Panel(panel.matrix, xt or panel.x_tokens, yt or panel.y_tokens, panel.title), span)

    lq, lk = panel.matrix.shape
    cell = cell_inches(max(lq, lk), lo=0.16, hi=0.55, span=9.0)
    if ax is None:
        fig = figure(min(lk * cell + 3.0, MAX_INCHES), min(lq * cell + 2.4, MAX_INCHES))
        ax = fig.add_subplot()
    else:
        fig = root_figure(ax)
    colour_scale = norm([panel.matrix], colours, n_keys)
    image = _draw(ax, panel, scale=colour_scale, cmap=cmap, annotate=annotate)
    shown_title = title if title is not None else panel.title
    ax.set_title(escape(shown_title), fontfamily=families(shown_title))
    fig.colorbar(image, ax=ax, label=cbar_label(colour_scale), shrink=0.85 if lq > 3 else 1.0)
    _fonts.check_glyphs([*(panel.x_tokens or []), *(panel.y_tokens or []), title or ""])
    return fig


def _draw(ax: Axes, panel: Panel, *, scale: Normalize, cmap: str | Colormap, annotate: bool) -> AxesImage:
    """Draw one matrix into ``ax``: keys along x, queries along y, row 0 at the top."""
    lq, lk = panel.matrix.shape
    width, height = root_figure(ax).get_size_inches()
    box = ax.get_position()
    cell = min(box.width * width / lk, box.height * height / lq)
    factor = pool_factor(cell)
    image = show(ax, pool(panel.matrix, factor), scale, cmap, extent=(-0.5, lk - 0.5, lq - 0.5, -0.5))
    ax.set_title(panel.title, fontsize=9)
    set_ticks(ax, panel.x_tokens or [str(j) for j in range(lk)], "x", box.width * width)
    set_ticks(ax, panel.y_tokens or [str(i) for i in range(lq)], "y", box.height * height)
    ax.set_xlabel(X_LABEL if factor == 1 else f"{X_LABEL}; {pooled_note(factor)}")
    ax.set_ylabel(Y_LABEL)
    if annotate:
        write_values(ax, panel.matrix, image)
    return image
