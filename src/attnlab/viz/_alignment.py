"""The alignment of a translation, drawn as the tutorials draw it: source tokens along x, generated tokens along
y, row ``i`` the attention the model paid to the source while it generated token ``i``.

    >>> fig = al.viz.alignment(weights, source_tokens, target_tokens)   # weights (T, S)
    >>> al.viz.save(fig, "alignment.png")
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ShapeError
from . import _fonts
from .static import DEFAULT_CMAP, figure, set_ticks, show, write_values

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["alignment"]

ANNOTATE_UP_TO = 24  # write the weights into the cells when neither side is longer than this


def alignment(weights: Any, source_tokens: Sequence[str], target_tokens: Sequence[str], *,
              title: str | None = None, annotate: bool | None = None, cmap: str = DEFAULT_CMAP) -> Figure:
    """A heatmap of ``weights`` ``(T, S)``: source tokens (attended to) along x, generated tokens along y.

    Args:
        weights: a tensor or array with one row per generated token and one column per source token.
        source_tokens, target_tokens: the labels, ``S`` and ``T`` of them.
        annotate: write each weight into its cell (default: when both sides have at most 24 tokens).
    """
    matrix = np.asarray(weights.detach().float().cpu() if hasattr(weights, "detach") else weights, dtype=float)
    if matrix.ndim != 2:
        raise ShapeError(f"an alignment is a (generated, source) matrix, got shape {tuple(matrix.shape)}; pass "
                         f"one translation's weights")
    t, s = matrix.shape
    if len(source_tokens) != s or len(target_tokens) != t:
        raise ShapeError(f"the alignment is {t} x {s} (generated x source) but got {len(target_tokens)} generated "
                         f"and {len(source_tokens)} source tokens; give one label per row and per column")
    from matplotlib.colors import Normalize

    _fonts.check_glyphs([*source_tokens, *target_tokens])
    cell = min(0.55, max(0.22, 9.0 / max(s, t, 1)))
    fig = figure(1.6 + cell * s, 1.4 + cell * t)
    ax = fig.add_subplot()
    image = show(ax, matrix, Normalize(0.0, max(1e-9, float(matrix.max()) if matrix.size else 1.0)), cmap,
                  extent=(-0.5, s - 0.5, t - 0.5, -0.5))
    width, height = fig.get_size_inches()
    set_ticks(ax, list(source_tokens), "x", width * 0.8)
    set_ticks(ax, list(target_tokens), "y", height * 0.8)
    ax.set_xlabel("source token (attended to)")
    ax.set_ylabel("generated token")
    if title:
        ax.set_title(title, fontsize=9, fontfamily=_fonts.families())
    if annotate if annotate is not None else max(s, t) <= ANNOTATE_UP_TO:
        write_values(ax, matrix, image)
    fig.colorbar(image, ax=ax, shrink=0.8, label="attention weight")
    return fig
