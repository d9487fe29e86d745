"""The figures of circuits: a patching result as a heatmap (layer x position or layer x head, diverging colours
centred on 0, the cell that restores most outlined), and the composition graph of the heads with its strongest
edges.  Both are built on viz's figure set-up (:mod:`attnlab.viz.static`: the figure, tick labels, ``save``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError
from ..viz import static
from ._lens import Composition
from ._patch import Patching, PathPatching

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["DIVERGING", "composition_figure", "patching_figure"]

DIVERGING = "RdBu_r"  # blue below 0, white at 0, red above: the sign of a change reads at a glance
MODE_COLOURS = {"q": "#1b9e77", "k": "#d95f02", "v": "#7570b3"}


def patching_figure(result: Patching | PathPatching, tokens: Sequence[str] | None = None, *,
                    title: str | None = None) -> Figure:
    """``result.restored`` as a heatmap: rows the layers, columns the positions (labelled with ``tokens``) or the
    heads; colours diverge around 0 on a scale symmetric in the largest absolute share; the cell with the largest
    absolute share is outlined and its value written.  A ``(layer, head, position)`` result is refused: draw one
    head's slice."""
    from matplotlib.colors import TwoSlopeNorm
    from matplotlib.patches import Rectangle

    values = np.asarray(result.restored, dtype=np.float64)
    if values.ndim != 2:
        raise InputError(f"patching_figure draws a (layer, position) or (layer, head) result, got one of shape "
                         f"{values.shape}; draw each head's (layer, position) slice")
    axes = ("layer", "head") if isinstance(result, PathPatching) else result.axes
    n_rows, n_cols = values.shape
    by_position = axes[1] == "position"
    if by_position and tokens is not None and len(tokens) != n_cols:
        raise InputError(f"{len(tokens)} tokens for {n_cols} positions; pass the input's tokens")
    width = min(static.MAX_INCHES, 2.2 + 0.42 * n_cols)
    height = min(static.MAX_INCHES, 1.6 + 0.42 * n_rows)
    fig = static.figure(width, height)
    ax = fig.add_subplot()
    finite = values[np.isfinite(values)]
    bound = float(np.abs(finite).max()) if finite.size and np.abs(finite).max() > 0 else 1.0
    image = static.show(ax, values, TwoSlopeNorm(0.0, -bound, bound), DIVERGING)
    fig.colorbar(image, ax=ax, label="share restored (1 = clean)")
    if finite.size:
        flat = np.nan_to_num(np.abs(values), nan=-1.0)
        r, c = (int(i) for i in np.unravel_index(int(np.argmax(flat)), flat.shape))
        ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=2.0))
        ax.text(c, r, f"{values[r, c]:.2f}", ha="center", va="center", fontsize=8,
                color="white" if abs(values[r, c]) > 0.6 * bound else "black")
    ax.set_yticks(range(n_rows), [str(i) for i in range(n_rows)])
    ax.set_ylabel("layer")
    if by_position:
        labels = [static.label(t) for t in tokens] if tokens is not None else [str(i) for i in range(n_cols)]
        static.set_ticks(ax, labels, "x", width)
        ax.set_xlabel("position")
    else:
        ax.set_xticks(range(n_cols), [str(i) for i in range(n_cols)])
        ax.set_xlabel("head")
    site = result.receiver if isinstance(result, PathPatching) else result.site
    what = f"path patching to {site}" if isinstance(result, PathPatching) else f"patching {site}"
    ax.set_title(title or f"{what}\nmetric: clean {result.clean:.3g}, corrupted {result.corrupted:.3g}", fontsize=9)
    return fig


def composition_figure(comp: Composition, *, top: int = 8, title: str | None = None) -> Figure:
    """The heads as nodes (a column per layer, a row per head) and the ``top`` strongest composition edges of the
    three kinds (Q, K, V: one colour each) as arrows from the writing head to the reading one, wider when
    stronger and labelled with their score."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import FancyArrowPatch

    n_layers, n_heads = comp.k.shape[:2]
    edges = comp.strongest(top)
    fig = static.figure(min(static.MAX_INCHES, 1.8 + 1.8 * n_layers), min(static.MAX_INCHES, 1.4 + 0.55 * n_heads))
    ax = fig.add_subplot()
    for layer in range(n_layers):
        for head in range(n_heads):
            ax.plot(layer, head, "o", markersize=17, color="#f0f0f0", markeredgecolor="#555555", zorder=3)
            ax.text(layer, head, f"{layer}.{head}", ha="center", va="center", fontsize=7, zorder=4)
    strongest = edges[0][3] if edges else 1.0
    for rank, (mode, (l1, h1), (l2, h2), score) in enumerate(edges):
        bend = 0.15 * ("qkv".index(mode) - 1) if (l1, h1) != (l2, h2) else 0.0
        ax.add_patch(FancyArrowPatch((l1, h1), (l2, h2), connectionstyle=f"arc3,rad={bend}", arrowstyle="-|>",
                                     mutation_scale=12, linewidth=0.6 + 3.4 * score / strongest,
                                     color=MODE_COLOURS[mode], shrinkA=11, shrinkB=11, zorder=2,
                                     alpha=1.0 if rank < 3 else 0.7))
        ax.text((l1 + l2) / 2, (h1 + h2) / 2 + bend * (l2 - l1) / 2, f"{score:.2f}", fontsize=6,
                color=MODE_COLOURS[mode], ha="center", va="bottom", zorder=5)
    ax.set_xlim(-0.5, n_layers - 0.5)
    ax.set_ylim(n_heads - 0.5, -0.5)
    ax.set_xticks(range(n_layers), [f"layer {i}" for i in range(n_layers)])
    ax.set_yticks(range(n_heads), [f"head {h}" for h in range(n_heads)])
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.legend(handles=[Line2D([], [], color=c, linewidth=2.5, label=f"{m.upper()}-composition")
                       for m, c in MODE_COLOURS.items()], fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_title(title or f"composition of the heads: the {len(edges)} strongest edges", fontsize=9)
    return fig
