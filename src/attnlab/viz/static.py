"""Static matplotlib figures of attention weights: one head, every head of a layer, the whole model.

Every figure puts **key positions along x** (the tokens attended to) and **query positions along y**
(the tokens attending), so row ``i`` is the distribution token ``i`` spreads over the keys and sums to
one.  Figures are :class:`matplotlib.figure.Figure` objects made without pyplot: nothing opens a
window and no global figure state is touched.  :func:`save` writes PNG, SVG or PDF atomically.

    >>> import attnlab as al
    >>> fig = al.viz.heatmap(trace, layer=5, head="mean", annotate=True)
    >>> al.viz.save(fig, "cat.png")
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._io import atomic_write
from ..errors import InputError, ShapeError
from ..trace import AttentionRecord, AttentionTrace, Kind
from . import _fonts

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.colors import Colormap, Normalize
    from matplotlib.figure import Figure
    from matplotlib.image import AxesImage

__all__ = ["FORMATS", "heads", "heatmap", "model_grid", "save"]

FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
DEFAULT_CMAP = "viridis"
X_LABEL = "key position (attended to)"
Y_LABEL = "query position (attending)"
CBAR_LABEL = "attention weight"
_MAX_LABEL_CHARS = 14

Head = int | str  # a head index or "mean"


@dataclass(frozen=True)
class _Panel:
    """One matrix to draw: ``(q_len, k_len)`` weights with the tokens of each axis."""

    matrix: np.ndarray
    x_tokens: list[str] | None
    y_tokens: list[str] | None
    title: str


# ----- public figures ------------------------------------------------------------------------------
def heatmap(
    data: AttentionTrace | AttentionRecord | Any,
    layer: int = 0,
    head: Head = 0,
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
) -> Figure:
    """One attention head (or the mean of a layer's heads) as a heatmap with a colour bar.

    Args:
        data: an :class:`AttentionTrace` (``layer`` of its ``kind`` stack, default its main stack), an
            :class:`AttentionRecord`, or a 2-D ``(q_len, k_len)`` tensor / array / nested list.
        layer: the layer of a trace (negative counts from the end); ignored for a record or a matrix.
        head: a head index (negative counts from the end) or ``"mean"`` for the mean over heads;
            ignored for a 2-D matrix.
        tokens: labels for both axes (self-attention); overrides the trace's tokens.
        annotate: write each weight in its cell, in black or white, whichever reads on that colour.
        kind: ``"self"``, ``"causal"`` or ``"cross"``: which stack of a trace to draw.
        ax: draw into these axes instead of a new figure (the figure of ``ax`` is returned).
        cmap: a matplotlib colour map name or object.
        title: the axes title; by default it names the layer and head.
        x_tokens / y_tokens: separate key (x) and query (y) labels, e.g. for cross-attention.
        batch: which input of a batched trace or record.
        vmin / vmax: the colour scale; by default 0 to the largest weight shown.

    Returns:
        the :class:`matplotlib.figure.Figure`; save it with :func:`save`.

    Long inputs keep every row and column but label only every k-th token so labels never overlap.
    """
    if isinstance(data, AttentionTrace):
        panel = _trace_panel(data, layer, head, kind, batch)
    elif isinstance(data, AttentionRecord):
        panel = _record_panel(data, head, batch)
    else:
        panel = _Panel(_as_matrix(data), None, None, "")
    xt = _check_tokens("x_tokens", x_tokens if x_tokens is not None else tokens, panel.matrix.shape[1])
    yt = _check_tokens("y_tokens", y_tokens if y_tokens is not None else tokens, panel.matrix.shape[0])
    panel = _Panel(panel.matrix, xt or panel.x_tokens, yt or panel.y_tokens, panel.title)

    lq, lk = panel.matrix.shape
    cell = _cell_inches(max(lq, lk), lo=0.16, hi=0.55, span=9.0)
    if ax is None:
        fig = _figure(min(lk * cell + 3.0, 22.0), min(lq * cell + 2.4, 22.0))
        ax = fig.add_subplot()
    else:
        fig = _root_figure(ax)
    norm = _norm([panel.matrix], vmin, vmax)
    image = _draw(ax, panel, norm=norm, cmap=cmap, labels=True, annotate=annotate)
    ax.set_title(_escape(title if title is not None else panel.title), fontfamily=_fonts.families())
    fig.colorbar(image, ax=ax, label=CBAR_LABEL, shrink=0.85 if lq > 3 else 1.0)
    _fonts.check_glyphs([*(panel.x_tokens or []), *(panel.y_tokens or []), title or ""])
    return fig


def heads(
    trace: AttentionTrace,
    layer: int = -1,
    *,
    kind: Kind | None = None,
    batch: int = 0,
    tokens: Sequence[str] | None = None,
    cmap: str | Colormap = DEFAULT_CMAP,
    ncols: int | None = None,
) -> Figure:
    """Every head of one layer in a grid, on one shared colour scale (0 to the layer's largest weight).

    Token labels sit on the left column (queries) and the bottom row (keys) of the grid."""
    rec = _select(trace, layer, kind)
    n_heads = rec.n_heads
    panels = [_record_panel(rec, h, batch) for h in range(n_heads)]
    if tokens is not None:
        n = panels[0].matrix.shape[1]
        toks = _check_tokens("tokens", tokens, n)
        panels = [_Panel(p.matrix, toks, toks, p.title) for p in panels]
    ncols = ncols or min(n_heads, 4)
    if ncols < 1:
        raise InputError(f"ncols must be at least 1, got {ncols}")
    nrows = math.ceil(n_heads / ncols)
    lq, lk = panels[0].matrix.shape
    cell = _cell_inches(max(lq, lk), lo=0.05, hi=0.3, span=3.2)
    fig = _figure(ncols * (lk * cell + 1.1) + 1.6, nrows * (lq * cell + 1.0) + 0.8)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    norm = _norm([p.matrix for p in panels], None, None)
    image = None
    for i, ax in enumerate(axes.flat):
        if i >= n_heads:
            ax.set_axis_off()
            continue
        p = panels[i]
        left, bottom = i % ncols == 0, i + ncols >= n_heads
        label_panel = _Panel(p.matrix, p.x_tokens if bottom else None, p.y_tokens if left else None, f"head {i}")
        image = _draw(ax, label_panel, norm=norm, cmap=cmap, labels=True, annotate=False, axis_titles=False)
        if not bottom:
            ax.set_xticks([])
        if not left:
            ax.set_yticks([])
    fig.supxlabel(X_LABEL)
    fig.supylabel(Y_LABEL)
    every = "all " if n_heads > 1 else ""
    fig.suptitle(f"layer {rec.layer}: {every}{_count(n_heads, 'head')} ({_kind_name(rec.kind)})")
    assert image is not None
    fig.colorbar(image, ax=axes, label=CBAR_LABEL, shrink=0.6)
    _fonts.check_glyphs([*(panels[0].x_tokens or []), *(panels[0].y_tokens or [])])
    return fig


def model_grid(
    trace: AttentionTrace,
    *,
    kind: Kind | None = None,
    batch: int = 0,
    cmap: str | Colormap = DEFAULT_CMAP,
) -> Figure:
    """Thumbnails of every head of every layer: layers down, heads across, one shared colour scale.

    The overview in which to spot the kinds of heads (diagonal, previous token, [CLS]/[SEP] columns);
    :func:`heatmap` then shows one of them with its tokens."""
    kind = _kind(trace, kind)
    records = trace.select(kind=kind)
    n_layers, n_heads = len(records), max(r.n_heads for r in records)
    panels = [[_record_panel(r, h, batch) for h in range(r.n_heads)] for r in records]
    size = 1.0 if n_heads <= 12 else max(0.45, 12.0 / n_heads)
    title = f"{_kind_name(kind)}: {_count(n_layers, 'layer')} x {_count(n_heads, 'head')}\n(keys across, queries down)"
    fig = _figure(max(n_heads * size + 1.8, 4.0), n_layers * size + 1.3)
    axes = fig.subplots(n_layers, n_heads, squeeze=False)
    norm = _norm([p.matrix for row in panels for p in row], None, None)
    image = None
    for li, row in enumerate(axes):
        for hi, ax in enumerate(row):
            if hi < len(panels[li]):
                image = _draw(ax, panels[li][hi], norm=norm, cmap=cmap, labels=False, annotate=False, axis_titles=False)
                ax.set_title("")
            ax.set_xticks([])
            ax.set_yticks([])
            for spine in ax.spines.values():
                spine.set_visible(hi < len(panels[li]))
            if li == 0:
                ax.set_title(f"head {hi}", fontsize=8)
            if hi == 0:
                ax.set_ylabel(f"layer {records[li].layer}", fontsize=8)
    fig.suptitle(title)
    assert image is not None
    fig.colorbar(image, ax=axes, label=CBAR_LABEL, shrink=0.6)
    return fig


def save(fig: Figure, path: str | os.PathLike[str], *, dpi: int = 150) -> Path:
    """Write ``fig`` to ``path`` as PNG, SVG or PDF, chosen by the file name's suffix, atomically
    (a failure leaves no partial file).  The folder must exist."""
    path = Path(path)
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(
            f"cannot save a figure as {str(path)!r}: the suffix {path.suffix or '(none)'!r} is not one of "
            f"{', '.join(FORMATS)}; give the file one of those suffixes"
        )
    from matplotlib import rc_context

    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"cannot save {str(path)!r}: the folder {str(parent)!r} does not exist; create it first")
    with warnings.catch_warnings():
        # A missing CJK font was already reported once by check_glyphs; skip matplotlib's per-glyph repeats.
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from (current )?font")
        with rc_context({"svg.hashsalt": "attnlab"}):  # stable SVG element ids: same figure, same bytes
            atomic_write(path, lambda tmp: fig.savefig(tmp, format=fmt, dpi=dpi, metadata=_metadata(fmt)))
    return path


# ----- choosing what to draw -----------------------------------------------------------------------
def _kind(trace: AttentionTrace, kind: Kind | None) -> Kind:
    if not trace.records:
        raise InputError("the trace is empty: nothing was captured, so there is nothing to draw")
    kind = kind or trace.main_kind
    if not trace.select(kind=kind):
        raise InputError(f"the trace has no {kind!r} attention; it has {trace.kinds}; pass kind= one of those")
    return kind


def _index(value: int, n: int, what: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{what} must be an integer, got {value!r}")
    if not -n <= value < n:
        raise InputError(f"{what} {value} is out of range: {where} has {n} {what}s (0..{n - 1}, or -1 for the last)")
    return int(value) % n


def _select(trace: AttentionTrace, layer: int, kind: Kind | None) -> AttentionRecord:
    kind = _kind(trace, kind)
    records = trace.select(kind=kind)
    return records[_index(layer, len(records), "layer", f"the trace's {kind!r} stack")]


def _trace_panel(trace: AttentionTrace, layer: int, head: Head, kind: Kind | None, batch: int) -> _Panel:
    return _record_panel(_select(trace, layer, kind), head, batch)


def _record_panel(rec: AttentionRecord, head: Head, batch: int) -> _Panel:
    w = rec.weights
    b = _index(batch, int(w.shape[0]), "batch", f"record {rec.name!r}")
    if head == "mean":
        matrix, which = w[b].float().mean(0), f"mean of {rec.n_heads} heads"
    elif isinstance(head, str):
        raise InputError(f"head must be an integer or 'mean', got {head!r}")
    else:
        h = _index(head, rec.n_heads, "head", f"layer {rec.layer}")
        matrix, which = w[b, h], f"head {h}"
    kind = "" if rec.kind == "self" else f" ({rec.kind})"
    return _Panel(
        _as_matrix(matrix), rec.key_tokens, rec.query_tokens, f"layer {rec.layer}, {which}{kind}"
    )


def _as_matrix(data: Any) -> np.ndarray:
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


def _check_tokens(what: str, tokens: Sequence[str] | None, n: int) -> list[str] | None:
    if tokens is None:
        return None
    if isinstance(tokens, str):
        raise InputError(f"{what} must be a list of strings, got the string {tokens!r}; pass text.split() or a list")
    toks = [str(t) for t in tokens]
    if len(toks) != n:
        raise ShapeError(f"{what} has {len(toks)} tokens but the matrix has {n} positions on that axis")
    return toks


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _kind_name(kind: Kind) -> str:
    return {"self": "self-attention", "causal": "causal self-attention", "cross": "cross-attention"}.get(kind, kind)


# ----- drawing -------------------------------------------------------------------------------------
def _figure(width: float, height: float) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(max(width, 3.0), max(height, 2.5)), layout="constrained")
    FigureCanvasAgg(fig)  # drawn by Agg whatever pyplot's backend: no window ever opens
    return fig


def _root_figure(ax: Axes) -> Figure:
    parent = ax.figure  # the Figure, or the SubFigure the axes sit on
    assert parent is not None, "axes without a figure"
    return parent.figure  # a SubFigure's root Figure; a Figure's is itself (Axes.get_figure(root=True), 3.10+)


def _cell_inches(n: int, *, lo: float, hi: float, span: float) -> float:
    """Cell size: ``span`` inches shared by ``n`` cells, clamped to [lo, hi]."""
    return min(hi, max(lo, span / n))


def _norm(matrices: Sequence[np.ndarray], vmin: float | None, vmax: float | None) -> Normalize:
    from matplotlib.colors import Normalize

    finite = [m[np.isfinite(m)] for m in matrices]
    top = max((float(f.max()) for f in finite if f.size), default=1.0)
    lo = 0.0 if vmin is None else vmin
    hi = (top if top > lo else lo + 1.0) if vmax is None else vmax
    return Normalize(vmin=lo, vmax=hi)


def _escape(text: str) -> str:
    """Show text literally: ``$`` would otherwise start matplotlib math mode."""
    return text.replace("$", r"\$")


def _label(token: str) -> str:
    shown = token.replace("\n", "\\n").replace("\t", "\\t")
    if not shown.strip():
        shown = "␣" * max(1, len(shown))
    if len(shown) > _MAX_LABEL_CHARS:
        shown = shown[: _MAX_LABEL_CHARS - 1] + "…"
    return _escape(shown)


def _tick_step(n: int, axis_inches: float, fontsize: float) -> int:
    """Label every ``step``-th position so that labels (about 1.3 font sizes apart) never overlap."""
    fits = max(1, int(axis_inches * 72 / (fontsize * 1.3)))
    return max(1, math.ceil(n / fits))


def _set_ticks(ax: Axes, tokens: list[str], axis: str) -> None:
    fig = _root_figure(ax)
    n = len(tokens)
    fontsize = 9.0 if n <= 24 else 7.5 if n <= 48 else 6.0
    width, height = fig.get_size_inches()
    bbox = ax.get_position()
    inches = (bbox.width * width) if axis == "x" else (bbox.height * height)
    step = _tick_step(n, max(inches, 0.5), fontsize)
    positions = list(range(0, n, step))
    labels = [_label(tokens[i]) for i in positions]
    families = _fonts.families()
    if axis == "x":
        # Upright labels when the longest fits in its column (wide CJK characters count double), else 45 degrees.
        # Upright when the longest label fits its column (wide CJK characters count double); 45 degrees for a
        # few long labels; 90 degrees for many, where labels packed one font size apart still clear each other.
        longest = max(sum(2 if ord(c) > 0x2E80 else 1 for c in lab) for lab in labels)
        rot: dict[str, Any] = {"rotation": 90}
        if longest * fontsize * 0.62 < inches * 72 / n * step * 0.9:
            rot = {}
        elif len(labels) <= 24:
            rot = {"rotation": 45, "ha": "right", "rotation_mode": "anchor"}
        ax.set_xticks(positions, labels, fontsize=fontsize, fontfamily=families, **rot)
    else:
        ax.set_yticks(positions, labels, fontsize=fontsize, fontfamily=families)


def _draw(
    ax: Axes,
    panel: _Panel,
    *,
    norm: Normalize,
    cmap: str | Colormap,
    labels: bool,
    annotate: bool,
    axis_titles: bool = True,
) -> AxesImage:
    """Draw one matrix into ``ax``: keys along x, queries along y, row 0 at the top."""
    lq, lk = panel.matrix.shape
    image = ax.imshow(panel.matrix, cmap=cmap, norm=norm, aspect="auto", interpolation="nearest")
    ax.set_title(panel.title, fontsize=9)
    if labels:
        _set_ticks(ax, panel.x_tokens or [str(i) for i in range(lk)], "x")
        _set_ticks(ax, panel.y_tokens or [str(i) for i in range(lq)], "y")
    if axis_titles:
        ax.set_xlabel(X_LABEL)
        ax.set_ylabel(Y_LABEL)
    if annotate:
        _annotate(ax, panel.matrix, image)
    return image


def _annotate(ax: Axes, matrix: np.ndarray, image: AxesImage) -> None:
    """Write each value in its cell, white on dark colours and black on light ones."""
    lq, lk = matrix.shape
    fontsize = max(4.0, min(9.0, 110.0 / max(lq, lk)))
    rgba = np.asarray(image.cmap(image.norm(matrix)))  # (q, k, 4)
    luminance = rgba[..., :3] @ np.array([0.299, 0.587, 0.114])  # (q, k)
    for i in range(lq):
        for j in range(lk):
            ax.text(
                j, i, f"{matrix[i, j]:.2f}", ha="center", va="center", fontsize=fontsize,
                color="white" if luminance[i, j] < 0.5 else "black",
            )


def _metadata(fmt: str) -> dict[str, Any]:
    """Reproducible files: no creation date in the SVG and PDF, no version-dependent software tag."""
    if fmt == "svg":
        return {"Date": None}
    if fmt == "pdf":
        return {"CreationDate": None}
    return {"Software": None}
