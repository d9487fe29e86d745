"""The figures of an analysis: the layers x heads label grid, one heatmap per metric, the MDS map of
the heads, rollout and flow.  matplotlib is imported when a figure is drawn, never at import time."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..viz.static import figure
from .attribution import METHOD_TITLES, AttributionSummary
from .report import Report

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["KIND_COLOURS", "attribution_figures", "flow_figure", "label_grid", "mds_figure", "metric_heatmaps",
           "rollout_figure", "token_map_figure"]

# Paul Tol's "bright" palette (colour-blind safe), one colour per kind of label
KIND_COLOURS = {"positional": "#4477AA", "causal": "#AA3377", "sink": "#EE6677", "syntactic": "#228833",
                "broad": "#CCBB44", "mixed": "#DDDDDD"}


def _kind_of(report: Report, layer: int, head: int) -> str:
    label = report.labels.primary[layer][head]
    for e in report.labels.evidence[layer][head]:
        if e["label"] == label:
            return str(e["kind"])
    return "mixed"


def label_grid(report: Report) -> Figure:
    """Layers (rows) x heads (columns), each cell coloured by the kind of its primary label and
    naming it; a cell with more than one label shows ``+n``."""
    from matplotlib.patches import Patch, Rectangle

    n_l, n_h = report.shape
    fig = figure(max(1.15 * n_h + 1.2, 5.0), 0.62 * n_l + 1.6)
    ax = fig.add_subplot()
    for layer in range(n_l):
        for h in range(n_h):
            kind = _kind_of(report, layer, h)
            ax.add_patch(Rectangle((h, layer), 1, 1, facecolor=KIND_COLOURS[kind], edgecolor="white", lw=1.5))
            label = report.labels.primary[layer][h].replace(" sink", "\nsink").replace(": ", ":\n")
            label = label.replace(" token", "\ntoken").replace(" head", "")
            extra = len(report.labels.evidence[layer][h]) - 1
            text = label + (f"\n+{extra}" if extra > 0 else "")
            ax.text(h + 0.5, layer + 0.5, text, ha="center", va="center", fontsize=6.5,
                    color="white" if kind in ("positional", "causal", "syntactic") else "black")
    ax.set_xlim(0, n_h)
    ax.set_ylim(n_l, 0)
    ax.set_xticks(np.arange(n_h) + 0.5, [str(h) for h in range(n_h)])
    ax.set_yticks(np.arange(n_l) + 0.5, [str(layer) for layer in range(n_l)])
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    kinds = sorted({_kind_of(report, layer, h) for layer in range(n_l) for h in range(n_h)},
                   key=list(KIND_COLOURS).index)
    ax.legend(handles=[Patch(color=KIND_COLOURS[k], label=k) for k in kinds], loc="upper center",
              bbox_to_anchor=(0.5, -0.12 if n_l > 3 else -0.3), ncol=len(kinds), frameon=False, fontsize=8)
    ax.set_title("what each head does\n(primary label; +n: more labels, see analysis.json)", fontsize=10)
    return fig


def metric_heatmaps(report: Report) -> Figure:
    """One layers x heads heatmap per column of the table (:meth:`Report.columns`), each cell annotated with its
    value; not the sink columns' where they would repeat another (``first`` when it is ``cls``) or be empty."""
    columns = report.columns()  # the table's columns: none that is 0 by construction
    if not np.isfinite(columns.get("value_norm_ratio", np.zeros(1))).any():  # not measured: the table's note says why
        columns.pop("value_norm_ratio")
    if "cls" in columns and "first" in columns and np.allclose(columns["cls"], columns["first"], equal_nan=True):
        columns.pop("first")  # the first token is the start token ([CLS]): its panel would be the cls panel again
    n_l, n_h = report.shape
    cols = 2
    rows = (len(columns) + cols - 1) // cols
    fig = figure(cols * (0.5 * n_h + 1.8), rows * (0.42 * n_l + 1.0))
    for i, (name, m) in enumerate(columns.items()):
        ax = fig.add_subplot(rows, cols, i + 1)
        # a share is drawn 0 to 1; a distance (tokens) and a ratio of norms up to their largest
        vmax = max(float(np.nanmax(m)), 1e-9) if name in _UNBOUNDED and np.isfinite(m).any() else 1.0
        image = ax.imshow(m, cmap="viridis", vmin=0.0, vmax=vmax, aspect="auto")
        for (layer, h), v in np.ndenumerate(m):
            if np.isfinite(v):
                # inside its cell, so left out of the layout (which would measure every one of them: a third of
                # the figure's time)
                ax.text(h, layer, _short(v, name == "distance"), ha="center", va="center", fontsize=5.5,
                        color="white" if v < 0.55 * vmax else "black", in_layout=False)
        ax.set_title(report.title(name), fontsize=9)
        ax.set_xticks(range(n_h))
        ax.set_yticks(range(n_l))
        ax.tick_params(labelsize=6, length=0)
        ax.set_xlabel("head", fontsize=7)
        ax.set_ylabel("layer", fontsize=7)
        fig.colorbar(image, ax=ax, shrink=0.9)
    return fig


_UNBOUNDED = ("distance", "value_norm_ratio")


def _short(v: float, distance: bool) -> str:
    """A cell's number in few characters: ``4.2`` tokens, ``.37`` for a share (``1.0`` for one)."""
    if distance:
        return f"{v:.1f}"
    text = f"{v:.2f}"
    return text[1:] if text.startswith("0.") else f"{v:.1f}"


def mds_figure(report: Report) -> Figure:
    """The heads embedded in 2-D by classical MDS of their Jensen-Shannon distances (Clark et al.'s
    Figure 5): colour is the layer, the marker the kind of label."""
    from matplotlib import colormaps
    from matplotlib.lines import Line2D

    n_l, n_h = report.shape
    fig = figure(7.5, 6.0)
    ax = fig.add_subplot()
    cmap = colormaps["viridis"]
    markers = {"positional": "s", "causal": "D", "sink": "^", "syntactic": "P", "broad": "o", "mixed": "."}
    xy = report.embedding
    for layer in range(n_l):
        for h in range(n_h):
            kind = _kind_of(report, layer, h)
            x, y = xy[layer * n_h + h]
            ax.scatter([x], [y], color=cmap(layer / max(n_l - 1, 1)), marker=markers[kind], s=60,
                       edgecolors="black", linewidths=0.4)
            ax.annotate(f"{layer}-{h}", (x, y), fontsize=5.5, xytext=(3, 3), textcoords="offset points")
    present = sorted({_kind_of(report, layer, h) for layer in range(n_l) for h in range(n_h)},
                     key=list(markers).index)
    handles = [Line2D([], [], marker=markers[k], ls="", color="grey", label=k) for k in present]
    handles += [Line2D([], [], marker="o", ls="", color=cmap(layer / max(n_l - 1, 1)), label=f"layer {layer}")
                for layer in range(n_l)]
    ax.legend(handles=handles, fontsize=7, loc="best", framealpha=0.8)
    ax.set_aspect("equal", adjustable="datalim")  # distances read the same along both axes
    ax.set_title("heads by Jensen-Shannon distance (classical MDS); label: layer-head")
    ax.set_xlabel("MDS 1")
    ax.set_ylabel("MDS 2")
    return fig


def rollout_figure(report: Report) -> Figure:
    from ..viz import heatmap

    n = len(report.tokens)
    fig = heatmap(report.rollout, tokens=report.tokens, annotate=n <= 20,
                  title="attention rollout after the last layer (0.5 A + 0.5 I, renormalised)")
    return _relabel(fig, "share of the output drawn from the input")


def flow_figure(report: Report) -> Figure:
    from ..viz import heatmap

    assert report.flow is not None
    n = len(report.tokens)
    fig = heatmap(report.flow, x_tokens=report.tokens, y_tokens=[report.tokens[t] for t in report.flow_targets],
                  annotate=n <= 20, title="attention flow: max-flow from each input token (x) to each output (y)")
    return _relabel(fig, "max-flow value (at most 1)")


def token_map_figure(matrix: Any, tokens: Sequence[str], title: str, value: str,
                     y_tokens: Sequence[str] | None = None, *, signed: bool = False) -> Figure:
    """Any token-to-token map drawn as rollout is (attribution matrices; a ``(1, n)`` row for a per-token score).
    ``signed``: the values may be negative (gradient x input, ALTI-Logit), drawn on a red-blue scale centred on 0."""
    from ..viz import heatmap

    values = np.asarray(matrix)
    scale: dict[str, Any] = {}
    if signed:
        top = float(np.abs(values).max()) or 1.0
        scale = {"cmap": "RdBu_r", "vmin": -top, "vmax": top}
    fig = heatmap(values, x_tokens=list(tokens), y_tokens=list(y_tokens or tokens),
                  annotate=len(tokens) <= 20, title=title, **scale)
    return _relabel(fig, value)


def _relabel(fig: Figure, value: str) -> Figure:
    """Axis names for a token-to-token map that is not one head's attention."""
    ax, bar = fig.axes[0], fig.axes[-1]
    ax.set_xlabel("input token (layer 0)")
    ax.set_ylabel("output position")
    bar.set_ylabel(value)
    return fig


def attribution_figures(summary: AttributionSummary) -> dict[str, Figure]:
    """``analyze --attribution``'s figures by file stem: each rolled-out method as a token map (``norm``,
    ``value-zeroing``, ``alti``), and for a classifier gradient x input and (pre-norm) ALTI-Logit as one signed row."""
    att, tokens = summary.attribution, summary.tokens
    figures = {name.replace("_", "-"): token_map_figure(matrix, tokens, METHOD_TITLES[name],
                                                        "share of the output drawn from the input")
               for name, matrix in summary.maps.items()}
    if att.grad_x_input is not None:
        figures["grad-x-input"] = token_map_figure(att.grad_x_input[None], tokens,
                                                   f"gradient x input of p({att.label})", "x . dp/dx",
                                                   y_tokens=[f"p({att.label})"], signed=True)
    if att.alti_logit is not None:  # a pre-norm classifier: each position's signed share of the predicted logit
        figures["alti-logit"] = token_map_figure(att.alti_logit[None], tokens,
                                                 f"ALTI-Logit: each token's share of the logit of {att.label} "
                                                 "(Ferrando et al. 2023)", "logit contribution",
                                                 y_tokens=[f"logit({att.label})"], signed=True)
    return figures
