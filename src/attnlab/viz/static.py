"""Static matplotlib figures of attention weights: one head, every head of a layer, the whole model.

Every figure puts **key positions along x** (the tokens attended to) and **query positions along y**
(the tokens attending), so row ``i`` is the distribution token ``i`` spreads over the keys and sums to
one.  Figures are :class:`matplotlib.figure.Figure` objects made without pyplot: nothing opens a
window and no global figure state is touched.  :func:`save` writes PNG, SVG or PDF atomically.

Figures stay viewable at any length: a figure is at most :data:`MAX_PIXELS` pixels a side when saved,
labels are thinned so they never overlap, a matrix with more cells than pixels is drawn as block means,
``span=(start, stop)`` draws a range of positions, and ``scale`` chooses a linear, power or log colour
scale (by default log for inputs longer than :data:`AUTO_LINEAR_UP_TO` tokens, where a linear scale
shows one dark field).

    >>> import attnlab as al
    >>> fig = al.viz.heatmap(trace, layer=5, head="mean", annotate=True)
    >>> al.viz.save(fig, "cat.png")
"""

from __future__ import annotations

import contextlib
import math
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .. import _validate
from .._io import atomic_write
from ..errors import InputError, ShapeError
from ..trace import AttentionRecord, AttentionTrace, Kind
from . import _fonts

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.colors import Colormap, Normalize
    from matplotlib.figure import Figure
    from matplotlib.image import AxesImage

__all__ = ["AUTO_LINEAR_UP_TO", "FORMATS", "MAX_PIXELS", "SCALES", "heads", "heatmap", "model_grid", "save"]

FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
DEFAULT_CMAP = "viridis"
X_LABEL = "key position (attended to)"
Y_LABEL = "query position (attending)"
CBAR_LABEL = "attention weight"
DPI = 150  # save()'s default resolution; figure sizes below are planned for it
MAX_PIXELS = 4000  # the longest side of a saved figure, in pixels (Pillow refuses images of about 9500 px a side)
_MAX_INCHES = MAX_PIXELS / DPI - 0.6  # the figure sizes planned here, so that the cap rarely has to act
_MAX_LABEL_CHARS = 14

Scale = Literal["auto", "linear", "power", "log"]
SCALES: tuple[Scale, ...] = ("auto", "linear", "power", "log")
AUTO_LINEAR_UP_TO = 64  # scale="auto" is linear up to this many tokens a side, log beyond
DEFAULT_GAMMA = 0.5  # scale="power": colour ~ weight ** gamma (0.5: square root)
LOG_DECADES_UNDER_UNIFORM = 1  # scale="log" starts this many decades under the uniform weight 1 / k_len

Head = int | str  # a head index or "mean"
Span = tuple[int | None, int | None] | slice | range  # a range of token positions, stop excluded


@dataclass(frozen=True)
class _Panel:
    """One matrix to draw: ``(q_len, k_len)`` weights with the tokens of each axis."""

    matrix: np.ndarray
    x_tokens: list[str] | None
    y_tokens: list[str] | None
    title: str


@dataclass(frozen=True)
class _Colours:
    """What ``scale``, ``gamma``, ``vmin`` and ``vmax`` ask for, checked once."""

    scale: Scale
    gamma: float
    vmin: float | None
    vmax: float | None


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
    span: Span | None = None,
    scale: Scale = "auto",
    gamma: float = DEFAULT_GAMMA,
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
    colours = _colours(scale, gamma, vmin, vmax)
    if isinstance(data, AttentionTrace):
        panel = _trace_panel(data, layer, head, kind, batch)
    elif isinstance(data, AttentionRecord):
        panel = _record_panel(data, head, batch)
    else:
        panel = _Panel(_as_matrix(data), None, None, "")
    xt = _check_tokens("x_tokens", x_tokens if x_tokens is not None else tokens, panel.matrix.shape[1])
    yt = _check_tokens("y_tokens", y_tokens if y_tokens is not None else tokens, panel.matrix.shape[0])
    n_keys = panel.matrix.shape[1]
    panel = _cut(_Panel(panel.matrix, xt or panel.x_tokens, yt or panel.y_tokens, panel.title), span)

    lq, lk = panel.matrix.shape
    cell = _cell_inches(max(lq, lk), lo=0.16, hi=0.55, span=9.0)
    if ax is None:
        fig = _figure(min(lk * cell + 3.0, _HEATMAP_INCHES), min(lq * cell + 2.4, _HEATMAP_INCHES))
        ax = fig.add_subplot()
    else:
        fig = _root_figure(ax)
    norm = _norm([panel.matrix], colours, n_keys)
    image = _draw(ax, panel, norm=norm, cmap=cmap, annotate=annotate)
    shown_title = title if title is not None else panel.title
    ax.set_title(_escape(shown_title), fontfamily=_families(shown_title))
    fig.colorbar(image, ax=ax, label=_cbar_label(norm), shrink=0.85 if lq > 3 else 1.0)
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
    span: Span | None = None,
    scale: Scale = "auto",
    gamma: float = DEFAULT_GAMMA,
) -> Figure:
    """Every head of one layer in a grid, on one shared colour scale (0 to the layer's largest weight).

    Token labels sit on the left (queries) and along the bottom (keys) of the grid.  The panels are one
    image in one axes (fast to lay out and to save at any length); ``span``, ``scale`` and ``gamma`` as
    in :func:`heatmap`."""
    colours = _colours(scale, gamma, None, None)
    rec = _select(trace, layer, kind)
    n_heads = rec.n_heads
    full = [_record_panel(rec, h, batch) for h in range(n_heads)]
    if tokens is not None:
        toks = _check_tokens("tokens", tokens, full[0].matrix.shape[1])
        full = [_Panel(p.matrix, toks, toks, p.title) for p in full]
    panels = [_cut(p, span) for p in full]
    ncols = min(n_heads, 4) if ncols is None else _validate.positive_int("ncols", ncols)
    nrows = math.ceil(n_heads / ncols)
    lq, lk = panels[0].matrix.shape
    cell = min(  # inches per cell: as for short inputs, but the whole figure within _MAX_INCHES
        _cell_inches(max(lq, lk), lo=1 / DPI, hi=0.3, span=3.2),  # long inputs: a pixel a cell
        (_MAX_INCHES - 3.0 - _GAP * (ncols - 1)) / (ncols * lk),
        (_MAX_INCHES - 2.0 - _TITLE_GAP * nrows) / (nrows * lq),
    )
    grid = _mosaic([p.matrix for p in panels], ncols, cell, gaps=(_GAP, _TITLE_GAP))
    fig = _figure(ncols * (lk * cell + _GAP) + 3.0, nrows * (lq * cell + _TITLE_GAP) + 2.0)
    ax = fig.add_subplot()
    norm = _norm([grid.image], colours, full[0].matrix.shape[1])
    image = _show(ax, grid.image, norm, cmap)
    x_tokens, y_tokens = panels[0].x_tokens, panels[0].y_tokens
    _set_ticks(ax, x_tokens or [str(j) for j in range(lk)], "x", lk * cell, grid.x, ncols)
    _set_ticks(ax, y_tokens or [str(i) for i in range(lq)], "y", lq * cell, grid.y, nrows)
    for h in range(n_heads):
        r, c = divmod(h, ncols)
        ax.text(grid.x(c, lk / 2 - 0.5), grid.y(r, -0.5), f"head {h}", ha="center", va="bottom", fontsize=9)
    _frameless(ax)
    fig.supxlabel(X_LABEL)
    fig.supylabel(Y_LABEL)
    every = "all " if n_heads > 1 else ""
    note = _pooled_note(grid.factor)
    fig.suptitle(f"layer {rec.layer}: {every}{_count(n_heads, 'head')} ({_kind_name(rec.kind)})"
                 f"{_slices(span, *full[0].matrix.shape)[2]}" + (f"\n({note})" if note else ""))
    fig.colorbar(image, ax=ax, label=_cbar_label(norm), shrink=0.6)
    _fonts.check_glyphs([*(x_tokens or []), *(y_tokens or [])])
    return fig


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
    colours = _colours(scale, gamma, None, None)
    kind = _kind(trace, kind)
    records = trace.select(kind=kind)
    n_layers, n_heads = len(records), max(r.n_heads for r in records)
    full_q = max(int(r.weights.shape[2]) for r in records)
    full_k = max(int(r.weights.shape[3]) for r in records)
    slots = [  # layers x heads, None where a layer has fewer heads
        _cut(_record_panel(r, h, batch), span).matrix if h < r.n_heads else None
        for r in records for h in range(n_heads)
    ]
    lq = max(m.shape[0] for m in slots if m is not None)
    lk = max(m.shape[1] for m in slots if m is not None)
    size = min(  # inches per thumbnail, the whole figure within _MAX_INCHES
        1.0 if n_heads <= 12 else max(0.45, 12.0 / n_heads),
        (_MAX_INCHES - 2.6) / n_heads - _THUMB_GAP,
        (_MAX_INCHES - 1.6) / n_layers - _THUMB_GAP,
    )
    grid = _mosaic(slots, n_heads, min(size / lq, size / lk), gaps=(_THUMB_GAP, _THUMB_GAP), shape=(lq, lk))
    fig = _figure(max(n_heads * (size + _THUMB_GAP) + 2.6, 4.0), n_layers * (size + _THUMB_GAP) + 1.6)
    ax = fig.add_subplot()
    norm = _norm([grid.image], colours, full_k)
    image = _show(ax, grid.image, norm, cmap)
    ax.xaxis.tick_top()
    ax.set_xticks([grid.x(h, lk / 2 - 0.5) for h in range(n_heads)], [f"head {h}" for h in range(n_heads)],
                  fontsize=8)
    ax.set_yticks([grid.y(i, lq / 2 - 0.5) for i in range(n_layers)], [f"layer {r.layer}" for r in records],
                  fontsize=8)
    ax.tick_params(length=0)
    _frameless(ax)
    note = _pooled_note(grid.factor)
    fig.suptitle(f"{_kind_name(kind)}: {_count(n_layers, 'layer')} x {_count(n_heads, 'head')}"
                 f"{_slices(span, full_q, full_k)[2]}\n(keys across, queries down{'; ' + note if note else ''})")
    fig.colorbar(image, ax=ax, label=_cbar_label(norm), shrink=0.6)
    return fig


def save(fig: Figure, path: str | os.PathLike[str], *, dpi: int = DPI, max_pixels: int | None = MAX_PIXELS) -> Path:
    """Write ``fig`` to ``path`` as PNG, SVG or PDF, chosen by the file name's suffix, atomically
    (a failure leaves no partial file).  The folder must exist.

    ``max_pixels`` caps the longest side of the result: a figure that would be larger at ``dpi`` is
    written at the lower resolution that fits (``None``: no cap)."""
    path = Path(path)
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(
            f"cannot save a figure as {str(path)!r}: the suffix {path.suffix or '(none)'!r} is not one of "
            f"{', '.join(FORMATS)}; give the file one of those suffixes"
        )
    _validate.positive_int("dpi", dpi)
    _validate.positive_int("max_pixels", max_pixels, optional=True)
    from matplotlib import rc_context

    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"cannot save {str(path)!r}: the folder {str(parent)!r} does not exist; create it first")
    if max_pixels is not None:
        dpi = min(dpi, max(1, math.floor(max_pixels / max(fig.get_size_inches()))))
    with warnings.catch_warnings():
        # A missing CJK font was already reported once by check_glyphs; skip matplotlib's per-glyph repeats.
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from (current )?font")
        with rc_context({"svg.hashsalt": "attnlab"}), _laid_out(fig):  # stable SVG ids: same figure, same bytes
            atomic_write(path, lambda tmp: fig.savefig(tmp, format=fmt, dpi=dpi, **_options(fmt)))
    return path


@contextlib.contextmanager
def _laid_out(fig: Figure) -> Iterator[None]:
    """Run the figure's layout engine once, then save with the layout fixed.

    ``savefig`` with a layout engine draws the figure twice (once to lay it out, once to write it), and
    the first draw resamples every image too; laying out from text sizes alone halves the image work."""
    engine = fig.get_layout_engine()
    if engine is None:
        yield
        return
    engine.execute(fig)
    fig.set_layout_engine("none")
    try:
        yield
    finally:
        fig.set_layout_engine(engine)


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
    values = matrix.detach().to("cpu").float().numpy()  # a float32 view, no copy: 72 heads x 512^2 is 75 MB
    return _Panel(values, rec.key_tokens, rec.query_tokens, f"layer {rec.layer}, {which}{kind}")


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


def _slices(span: Span | None, lq: int, lk: int) -> tuple[slice, slice, str]:
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


def _cut(panel: _Panel, span: Span | None) -> _Panel:
    """``panel`` restricted to ``span``, its labels the tokens (or the positions) of the rows and columns kept."""
    if span is None:
        return panel
    lq, lk = panel.matrix.shape
    rows, cols, note = _slices(span, lq, lk)
    x_tokens = panel.x_tokens if panel.x_tokens is not None else [str(j) for j in range(lk)]
    y_tokens = panel.y_tokens if panel.y_tokens is not None else [str(i) for i in range(lq)]
    return _Panel(panel.matrix[rows, cols], x_tokens[cols], y_tokens[rows], panel.title + note)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _kind_name(kind: Kind) -> str:
    return {"self": "self-attention", "causal": "causal self-attention", "cross": "cross-attention"}.get(kind, kind)


# ----- colour scales -------------------------------------------------------------------------------
def _colours(scale: Any, gamma: Any, vmin: Any, vmax: Any) -> _Colours:
    _validate.one_of("scale", scale, SCALES, "e.g. scale='log' for long inputs")
    _validate.positive_float("gamma", gamma, fix="e.g. gamma=0.5 (square root: brightens small weights)")
    for name, value in (("vmin", vmin), ("vmax", vmax)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not math.isfinite(value)):
            raise InputError(f"{name} must be a finite number or None, got {value!r}")
    if scale == "log" and vmin is not None and vmin <= 0:
        raise InputError(f"scale='log' needs vmin > 0, got vmin={vmin}; leave vmin=None for a decade under 1/k_len")
    return _Colours(scale, float(gamma), vmin, vmax)


def _norm(matrices: Sequence[np.ndarray], colours: _Colours, n_keys: int) -> Normalize:
    """The colour scale of a figure: from 0 (log: a decade under the uniform weight) to its largest weight."""
    from matplotlib.colors import LogNorm, Normalize, PowerNorm

    finite = [m[np.isfinite(m)] for m in matrices]
    top = max((float(f.max()) for f in finite if f.size), default=1.0)
    scale = colours.scale
    if scale == "auto":
        scale = "linear" if n_keys <= AUTO_LINEAR_UP_TO else "log"
    if scale == "log":
        floor = min(top, 1.0 / n_keys) / 10**LOG_DECADES_UNDER_UNIFORM if top > 0 else 1e-3
        lo = colours.vmin if colours.vmin is not None else floor
        hi = colours.vmax if colours.vmax is not None else max(top, lo * 10)
        return LogNorm(vmin=lo, vmax=hi, clip=True)  # weights under the floor (and zeros) take the lowest colour
    lo = 0.0 if colours.vmin is None else colours.vmin
    hi = (top if top > lo else lo + 1.0) if colours.vmax is None else colours.vmax
    if scale == "power":
        return PowerNorm(colours.gamma, vmin=lo, vmax=hi, clip=True)
    return Normalize(vmin=lo, vmax=hi)


def _cbar_label(norm: Normalize) -> str:
    from matplotlib.colors import LogNorm, PowerNorm

    if isinstance(norm, LogNorm):
        return f"{CBAR_LABEL} (log scale)"
    if isinstance(norm, PowerNorm):
        return f"{CBAR_LABEL} (power scale, gamma {norm.gamma:g})"
    return CBAR_LABEL


# ----- drawing -------------------------------------------------------------------------------------
_HEATMAP_INCHES = 16.0  # the largest heatmap: 2400 px at DPI, every 5th label of 512 tokens
_GAP = 0.15  # inches between the panels of heads(), side by side
_TITLE_GAP = 0.3  # inches above each panel of heads(), room for its "head i"
_THUMB_GAP = 0.08  # inches between model_grid() thumbnails


@dataclass(frozen=True)
class _Mosaic:
    """Panels of equal shape tiled into one image (NaN, drawn blank, between them and in empty slots).

    One image in one axes lays out and saves in a fraction of the time of one axes per panel.  When a
    panel has more cells than pixels, each image cell is the mean of ``factor x factor`` weights."""

    image: np.ndarray  # (rows * (ph + gy) - gy, cols * (pw + gx) - gx)
    factor: int
    ph: int
    pw: int
    gy: int
    gx: int

    def x(self, col: int, j: float) -> float:
        """The image x coordinate of key position ``j`` of the panels in column ``col``."""
        return col * (self.pw + self.gx) + (j + 0.5) / self.factor - 0.5

    def y(self, row: int, i: float) -> float:
        """The image y coordinate of query position ``i`` of the panels in row ``row``."""
        return row * (self.ph + self.gy) + (i + 0.5) / self.factor - 0.5


def _mosaic(
    matrices: Sequence[np.ndarray | None],
    ncols: int,
    cell: float,
    *,
    gaps: tuple[float, float],
    shape: tuple[int, int] | None = None,
) -> _Mosaic:
    """Tile ``matrices`` (row by row, ``ncols`` a row; None leaves a slot empty) whose cells will be
    ``cell`` inches, with ``gaps`` = (between columns, between rows) inches between panels."""
    lq, lk = shape if shape is not None else next(m for m in matrices if m is not None).shape
    factor = _pool_factor(cell)
    ph, pw = math.ceil(lq / factor), math.ceil(lk / factor)
    gx, gy = (max(1, round(g / (cell * factor))) for g in gaps)
    nrows = math.ceil(len(matrices) / ncols)
    image = np.full((nrows * (ph + gy) - gy, ncols * (pw + gx) - gx), np.nan, dtype=np.float32)
    for i, m in enumerate(matrices):
        if m is None:
            continue
        r, c = divmod(i, ncols)
        pooled = _pool(m, factor)
        top, left = r * (ph + gy), c * (pw + gx)
        image[top : top + pooled.shape[0], left : left + pooled.shape[1]] = pooled
    return _Mosaic(image, factor, ph, pw, gy, gx)


def _pool_factor(cell_inches: float) -> int:
    """How many cells a side one pixel (at :data:`DPI`) must average: 1 while a cell is at least a pixel."""
    return max(1, math.ceil(1.0 / (cell_inches * DPI) - 1e-9))


def _pool(matrix: np.ndarray, factor: int) -> np.ndarray:
    """The mean of each ``factor x factor`` block (the last blocks averaging the cells they have)."""
    if factor == 1:
        return matrix
    lq, lk = matrix.shape
    pq, pk = math.ceil(lq / factor), math.ceil(lk / factor)
    padded = np.zeros((pq * factor, pk * factor), dtype=np.float64)
    padded[:lq, :lk] = matrix
    sums = padded.reshape(pq, factor, pk, factor).sum(axis=(1, 3))  # (pq, pk)
    rows = np.minimum(factor, lq - factor * np.arange(pq))  # cells each block really has, per axis
    cols = np.minimum(factor, lk - factor * np.arange(pk))
    return sums / np.outer(rows, cols)


def _pooled_note(factor: int) -> str:
    return "" if factor == 1 else f"each cell: the mean of {factor} x {factor} weights"


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


def _families(text: str) -> list[str]:
    """The font family list for ``text``: the CJK fallback only when the base font lacks a character
    (a fallback list makes matplotlib look up every glyph in two fonts, which doubles the text work)."""
    return [_fonts.BASE_FAMILY] if _fonts.font_covers(_fonts.BASE_FAMILY, text) else _fonts.families()


def _tick_step(n: int, axis_inches: float, fontsize: float) -> int:
    """Label every ``step``-th position so that labels (about 1.3 font sizes apart) never overlap."""
    fits = max(1, int(axis_inches * 72 / (fontsize * 1.3)))
    return max(1, math.ceil(n / fits))


def _set_ticks(
    ax: Axes,
    tokens: list[str],
    axis: str,
    inches: float,
    place: Callable[[int, float], float] | None = None,
    copies: int = 1,
) -> None:
    """Label every ``step``-th of ``tokens`` along ``axis`` (``inches`` long), once per panel:
    ``place(copy, position)`` gives the image coordinate of a position in panel ``copy`` (default: itself)."""
    n = len(tokens)
    fontsize = 9.0 if n <= 24 else 7.5 if n <= 48 else 6.0
    step = _tick_step(n, max(inches, 0.5), fontsize)
    positions = list(range(0, n, step))
    labels = [_label(tokens[i]) for i in positions]
    where = [p if place is None else place(c, p) for c in range(copies) for p in positions]
    families = _families("".join(labels))
    if axis == "x":
        # Upright when the longest label fits its column (wide CJK characters count double); 45 degrees for a
        # few long labels; 90 degrees for many, where labels packed one font size apart still clear each other.
        longest = max(sum(2 if ord(ch) > 0x2E80 else 1 for ch in lab) for lab in labels)
        rot: dict[str, Any] = {"rotation": 90}
        if longest * fontsize * 0.62 < inches * 72 / n * step * 0.9:
            rot = {}
        elif len(labels) <= 24:
            rot = {"rotation": 45, "ha": "right", "rotation_mode": "anchor"}
        ax.set_xticks(where, labels * copies, fontsize=fontsize, fontfamily=families, **rot)
    else:
        ax.set_yticks(where, labels * copies, fontsize=fontsize, fontfamily=families)


def _show(ax: Axes, image: np.ndarray, norm: Normalize, cmap: str | Colormap, extent: Any = None) -> AxesImage:
    """``image`` with nearest-cell colours; NaN (gaps between panels) drawn blank."""
    from matplotlib import colormaps

    colours = (colormaps[cmap] if isinstance(cmap, str) else cmap).with_extremes(bad=(1.0, 1.0, 1.0, 0.0))
    return ax.imshow(image, cmap=colours, norm=norm, aspect="auto", interpolation="nearest",
                     interpolation_stage="data", extent=extent)  # "data": colours computed once per pixel


def _frameless(ax: Axes) -> None:
    for spine in ax.spines.values():
        spine.set_visible(False)


def _draw(ax: Axes, panel: _Panel, *, norm: Normalize, cmap: str | Colormap, annotate: bool) -> AxesImage:
    """Draw one matrix into ``ax``: keys along x, queries along y, row 0 at the top."""
    lq, lk = panel.matrix.shape
    width, height = _root_figure(ax).get_size_inches()
    box = ax.get_position()
    cell = min(box.width * width / lk, box.height * height / lq)
    factor = _pool_factor(cell)
    image = _show(ax, _pool(panel.matrix, factor), norm, cmap, extent=(-0.5, lk - 0.5, lq - 0.5, -0.5))
    ax.set_title(panel.title, fontsize=9)
    _set_ticks(ax, panel.x_tokens or [str(j) for j in range(lk)], "x", box.width * width)
    _set_ticks(ax, panel.y_tokens or [str(i) for i in range(lq)], "y", box.height * height)
    ax.set_xlabel(X_LABEL if factor == 1 else f"{X_LABEL}; {_pooled_note(factor)}")
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


def _options(fmt: str) -> dict[str, Any]:
    """Reproducible files: no creation date in the SVG and PDF, no version-dependent software tag.  PNGs
    are compressed at zlib level 3, not 6: a third of the time for files of about the same size."""
    if fmt == "svg":
        return {"metadata": {"Date": None}}
    if fmt == "pdf":
        return {"metadata": {"CreationDate": None}}
    return {"metadata": {"Software": None}, "pil_kwargs": {"compress_level": 3}}
