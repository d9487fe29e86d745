"""The figures of circuit discovery: the circuit as a graph (nodes by layer, the kept edges' widths by score, one
colour for each of q, k, v and the rest) and the faithfulness curve with its bootstrap band.  Built on viz's figure
set-up (:mod:`attnlab.viz.static`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..viz import static
from ._discover import Faithfulness
from ._graph import Graph, Node
from .translation import head_tag

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .translation import HeadPatching

__all__ = ["circuit_figure", "faithfulness_figure", "translator_heads_figure"]

INTO_COLOURS = {"q": "#1b9e77", "k": "#d95f02", "v": "#7570b3", "in": "#555555"}


def _places(g: Graph) -> dict[str, tuple[float, float]]:
    """Each node's (x, y): embed at x = 0, layer L's heads at x = L + 1 (one row per head, its MLP below), the
    output at x = N + 1; y downwards."""
    a = g.anatomy
    rows = a.n_heads + (1 if any(layer.mlp is not None for layer in a.layers) else 0)
    mid = (rows - 1) / 2
    places = {"embed": (0.0, mid), "output": (float(a.n_layers + 1), mid)}
    nodes: list[Node] = list(g.senders[1:])
    for n in nodes:
        row = n.head if n.kind == "head" and n.head is not None else a.n_heads  # an MLP: below the heads
        places[n.name] = (float(n.layer + 1), float(row))
    return places


def circuit_figure(g: Graph, scores: np.ndarray, kept: np.ndarray, *, title: str = "", most: int = 60) -> Figure:
    """The nodes of ``g`` and the edges where ``kept`` (bool ``(E,)``; the ``most`` strongest of them, so that a
    large circuit stays readable: the title says so), each an arrow from its sender to its
    receiver (its colour: into q, k, v or an MLP / the output), its width by ``|scores|`` over the
    largest kept one, solid when ablating it lowers the metric (negative score), dashed when it raises it."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import FancyArrowPatch

    places = _places(g)
    a = g.anatomy
    n_kv = len([r for r in g.receivers if r.kind == "kv" and r.layer == 0])

    def at(node: Node) -> tuple[float, float]:  # a shared key/value head is drawn at its first query head
        if node.kind == "kv" and node.head is not None:
            return places[f"{node.layer}.{node.head * (a.n_heads // max(1, n_kv))}"]
        return places[node.name]

    n_rows = max(p[1] for p in places.values()) + 1
    fig = static.figure(min(static.MAX_INCHES, 2.4 + 1.9 * (a.n_layers + 1)),
                        min(static.MAX_INCHES, 1.8 + 0.7 * n_rows))
    ax = fig.add_subplot()
    idx = np.nonzero(kept)[0]
    n_kept = len(idx)
    idx = idx[np.argsort(-np.abs(scores[idx]), kind="stable")[:most]]
    strongest = float(np.abs(scores[idx]).max()) if len(idx) and np.abs(scores[idx]).max() > 0 else 1.0
    for i in idx[np.argsort(np.abs(scores[idx]))]:  # the strongest drawn last, on top
        e = g.edges[i]
        x1, y1 = at(e.sender)
        x2, y2 = at(e.receiver)
        rad = 0.25 if x2 - x1 > 1.5 else 0.08
        ax.add_patch(FancyArrowPatch((x1, y1), (x2, y2), connectionstyle=f"arc3,rad={rad}", arrowstyle="-|>",
                                     mutation_scale=9, linewidth=0.4 + 4.6 * abs(scores[i]) / strongest,
                                     color=INTO_COLOURS[e.into], shrinkA=14, shrinkB=14, zorder=2, alpha=0.8,
                                     linestyle="-" if scores[i] <= 0 else "--"))
    used = {g.edges[i].sender.name for i in idx} | {g.edges[i].receiver.name for i in idx}
    used |= {f"{r.layer}.{(r.head or 0) * (a.n_heads // max(1, n_kv))}" for i in idx
             for r in [g.edges[i].receiver] if r.kind == "kv"}
    for name, (x, y) in places.items():
        on = name in used
        ax.plot(x, y, "o", markersize=26, color="#fdf6e3" if on else "#f4f4f4",
                markeredgecolor="#222222" if on else "#bbbbbb", zorder=3)
        ax.text(x, y, name, ha="center", va="center", fontsize=6 if len(name) > 4 else 7, zorder=4,
                color="black" if on else "#999999")
    ax.set_xlim(-0.6, a.n_layers + 1.6)
    ax.set_ylim(n_rows - 0.4, -0.6)
    ax.set_xticks(range(a.n_layers + 2), ["embed"] + [f"layer {i}" for i in range(a.n_layers)] + ["output"])
    ax.set_yticks([])
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    handles = [Line2D([], [], color=c, linewidth=2.5, label=f"into {m}" if m != "in" else "into MLP / output")
               for m, c in INTO_COLOURS.items()]
    handles.append(Line2D([], [], color="#555555", linewidth=1.5, linestyle="--", label="ablating it raises m"))
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    drawn = f"; its {len(idx)} strongest drawn" if len(idx) < n_kept else ""
    if n_kv:
        drawn += "\n(a shared key/value head L.kvG is drawn at its first query head)"
    ax.set_title((title or f"the circuit: {n_kept} of {g.n_edges} edges") + drawn, fontsize=9)
    return fig


def faithfulness_figure(curves: Mapping[str, Faithfulness], *, title: str = "", level: float = 0.9) -> Figure:
    """Each curve's faithfulness against the share of edges kept, with its bootstrap 95% band, a dotted line at
    ``level`` and at 1; the x axis in percent, logarithmic from the smallest share above 0 when the graph has more
    than 200 edges."""
    from matplotlib.ticker import PercentFormatter

    fig = static.figure(6.4, 3.8)
    ax = fig.add_subplot()
    colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"]
    for (name, f), c in zip(curves.items(), colours, strict=False):
        x = f.fractions
        pos = x > 0 if f.n_edges > 200 else np.ones(len(x), dtype=bool)
        order = np.argsort(x[pos], kind="stable")
        xs, vs = x[pos][order], f.value[pos][order]
        ax.fill_between(xs, f.low[pos][order], f.high[pos][order], color=c, alpha=0.2, linewidth=0)
        style = "-" if len(xs) > 12 else "o-"
        n90 = f.smallest(level)
        label = f"{name}: {level} at n = {n90} ({n90 / f.n_edges:.0%})" if n90 is not None else f"{name}: never {level}"
        ax.plot(xs, vs, style, color=c, linewidth=1.4, markersize=3.5, label=label)
    ax.axhline(1.0, color="#555555", linestyle=":", linewidth=0.8)
    ax.axhline(level, color="#999999", linestyle=":", linewidth=0.8)
    if any(f.n_edges > 200 for f in curves.values()):
        ax.set_xscale("log")
    else:
        ax.set_xlim(0, 1)
    ax.xaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_xlabel("share of edges kept (the rest ablated)")
    ax.set_ylabel("faithfulness")
    ax.legend(fontsize=7, loc="lower right")  # the curves rise from the lower left to the upper right
    ax.set_title(title or "faithfulness (bootstrap 95% band over prompts)", fontsize=9)
    return fig


HEAD_KIND_COLOURS = {"e": "#7570b3", "d": "#1b9e77", "x": "#d95f02"}


def translator_heads_figure(found: HeadPatching, source_tokens: list[str], *, title: str = "") -> Figure:
    """Left: every head's effect (the share of the clean-minus-corrupted metric that patching it removes) with its
    bootstrap 95% interval, coloured by kind (encoder self-, decoder self-, cross-attention).  Right: the cross head
    of largest effect on the first prompt: its attention from each year digit the output writes (rows) over the
    source's tokens (columns), the source's year digits framed."""
    from matplotlib.patches import Patch, Rectangle

    fig = static.figure(11.5, 4.2)
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.15, 1]})
    groups = [h.startswith("all ") for h in found.heads]
    x = np.arange(len(found.heads)) + np.array(groups) * 1.0  # a gap before the groups
    colours = [HEAD_KIND_COLOURS[head_tag(h)] for h in found.heads]
    left.bar(x, found.effect, color=colours, width=0.75, hatch=["//" if g else "" for g in groups],
             edgecolor="white")
    left.errorbar(x, found.effect, yerr=[found.effect - found.low, found.high - found.effect], fmt="none",
                  ecolor="#333333", elinewidth=0.8, capsize=2)
    left.axhline(0, color="#555555", linewidth=0.6)
    labels = [f"all {head_tag(h)}" if g else h for h, g in zip(found.heads, groups, strict=True)]
    left.set_xticks(x, labels, rotation=90, fontsize=7)
    left.set_ylabel("share of the year's logit difference removed")
    left.legend(handles=[Patch(color=c, label=lab) for c, lab in zip(
        HEAD_KIND_COLOURS.values(), ("encoder self-attention", "decoder self-attention", "cross-attention"),
        strict=True)], fontsize=7, loc="upper left")
    left.set_title(f"each head patched ({found.ablation}), then each kind's together (hatched)\n{found.n_prompts} "
                   f"prompt pairs, 95% bootstrap intervals", fontsize=8)
    crosses = [i for i, h in enumerate(found.heads) if h.startswith("x")]  # single cross heads
    top = max(crosses, key=lambda i: found.effect[i])
    name = found.heads[top]
    ex: dict[str, Any] = found.example
    w = np.asarray(ex["weights"][name])  # (P, S)
    right.imshow(w, cmap="Blues", vmin=0, vmax=1, aspect="auto")
    right.set_xticks(range(w.shape[1]), source_tokens[: w.shape[1]], fontsize=7)
    digits = [source_tokens[s] for s in ex["year_source"]]
    right.set_yticks(range(w.shape[0]), [f"writing year digit {p + 1} ({d})" for p, d in zip(ex["positions"], digits,
                                                                                              strict=True)], fontsize=7)
    for s in ex["year_source"]:
        right.add_patch(Rectangle((s - 0.5, -0.5), 1, w.shape[0], fill=False, edgecolor="#d62728", linewidth=1.2))
    att = found.attention.get(name, {})
    right.set_title(f"cross head {name} (the largest effect), writing the year of {ex['source']!r}\n"
                    f"{att.get('on_year', 0):.0%} on the year (framed), {att.get('aligned', 0):.0%} on the digit "
                    f"written (means over the prompts)", fontsize=8)
    fig.suptitle(title, fontsize=9)
    return fig
