"""What every static matplotlib figure of attnlab shares: the figure itself, its colour scale, its labels, the
drawing of a weight matrix, and :func:`save`.

The figures are one module each (``_heatmap``, ``_heads``, ``_grid``, ``_alignment`` in this package; the
analysis, explain and training plots elsewhere) and take everything they share from here, by its public name.
Figures are :class:`matplotlib.figure.Figure` objects made without pyplot by :func:`figure`: nothing opens a
window and no global figure state is touched.  :func:`save` writes PNG, SVG or PDF atomically.

Figures stay viewable at any length: a figure is at most :data:`MAX_PIXELS` pixels a side when saved, labels
are thinned so they never overlap (:func:`set_ticks`), a matrix with more cells than pixels is drawn as block
means (:func:`pool`), and ``scale`` chooses a linear, power or log colour scale (:func:`norm`; by default log
for inputs longer than :data:`AUTO_LINEAR_UP_TO` tokens, where a linear scale shows one dark field).

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
from ..errors import InputError
from . import _fonts

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.colors import Colormap, Normalize
    from matplotlib.figure import Figure
    from matplotlib.image import AxesImage

__all__ = [
    "AUTO_LINEAR_UP_TO", "CBAR_LABEL", "DEFAULT_CMAP", "DEFAULT_GAMMA", "DPI", "FORMATS", "MAX_INCHES", "MAX_PIXELS",
    "MIN_INCHES", "SCALES", "X_LABEL", "Y_LABEL", "Colours", "Mosaic", "Scale", "cbar_label", "cell_inches", "escape",
    "families", "figure", "frameless", "label", "mosaic", "norm", "pool", "pool_factor", "pooled_note", "root_figure",
    "save", "set_ticks", "show", "write_values",
]

FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
DEFAULT_CMAP = "viridis"
X_LABEL = "key position (attended to)"
Y_LABEL = "query position (attending)"
CBAR_LABEL = "attention weight"
DPI = 150  # save()'s default resolution; figure sizes are planned for it
MAX_PIXELS = 4000  # the longest side of a saved figure, in pixels (Pillow refuses images of about 9500 px a side)
MAX_INCHES = MAX_PIXELS / DPI - 0.6  # the largest figure the figures plan, so that the cap rarely has to act
MIN_INCHES = (3.0, 2.5)  # the smallest figure: room for a title, labels and a colour bar
_MAX_LABEL_CHARS = 14

Scale = Literal["auto", "linear", "power", "log"]
SCALES: tuple[Scale, ...] = ("auto", "linear", "power", "log")
AUTO_LINEAR_UP_TO = 64  # scale="auto" is linear up to this many tokens a side, log beyond
DEFAULT_GAMMA = 0.5  # scale="power": colour ~ weight ** gamma (0.5: square root)
LOG_DECADES_UNDER_UNIFORM = 1  # scale="log" starts this many decades under the uniform weight 1 / k_len


# ----- the figure and its file ---------------------------------------------------------------------
def figure(width: float, height: float) -> Figure:
    """A ``width`` x ``height`` inch figure (at least :data:`MIN_INCHES`) with a constrained layout, drawn by Agg
    whatever pyplot's backend: no window ever opens and no global figure state is touched."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(max(width, MIN_INCHES[0]), max(height, MIN_INCHES[1])), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def root_figure(ax: Axes) -> Figure:
    """The figure ``ax`` is drawn in (the root one when the axes sit on a SubFigure)."""
    parent = ax.figure  # the Figure, or the SubFigure the axes sit on
    assert parent is not None, "axes without a figure"
    return parent.figure  # a SubFigure's root Figure; a Figure's is itself (Axes.get_figure(root=True), 3.10+)


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
    the first draw resamples every image too; laying out from text sizes alone and saving with no engine draws
    once."""
    from matplotlib import rc_context

    engine = fig.get_layout_engine()
    if engine is None:
        yield
        return
    engine.execute(fig)
    # None, not "none": "none" leaves a placeholder engine, and savefig draws once more for any engine
    with rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):  # None means rc's
        fig.set_layout_engine(None)
    try:
        yield
    finally:
        fig.set_layout_engine(engine)


def _options(fmt: str) -> dict[str, Any]:
    """Reproducible files: no creation date in the SVG and PDF, no version-dependent software tag.  PNGs
    are compressed at zlib level 3, not 6: a third of the time for files of about the same size."""
    if fmt == "svg":
        return {"metadata": {"Date": None}}
    if fmt == "pdf":
        return {"metadata": {"CreationDate": None}}
    return {"metadata": {"Software": None}, "pil_kwargs": {"compress_level": 3}}


# ----- colour scales -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Colours:
    """What ``scale``, ``gamma``, ``vmin`` and ``vmax`` ask for, checked once by :meth:`check`."""

    scale: Scale
    gamma: float
    vmin: float | None
    vmax: float | None

    @classmethod
    def check(cls, scale: Any, gamma: Any, vmin: Any = None, vmax: Any = None) -> Colours:
        _validate.one_of("scale", scale, SCALES, "e.g. scale='log' for long inputs")
        _validate.positive_float("gamma", gamma, fix="e.g. gamma=0.5 (square root: brightens small weights)")
        for name, value in (("vmin", vmin), ("vmax", vmax)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                      or not math.isfinite(value)):
                raise InputError(f"{name} must be a finite number or None, got {value!r}")
        if scale == "log" and vmin is not None and vmin <= 0:
            raise InputError(f"scale='log' needs vmin > 0, got vmin={vmin}; leave vmin=None for a decade under "
                             f"1/k_len")
        return cls(scale, float(gamma), vmin, vmax)


def norm(matrices: Sequence[np.ndarray], colours: Colours, n_keys: int) -> Normalize:
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


def cbar_label(scale: Normalize) -> str:
    """The colour bar's label, naming a log or power scale."""
    from matplotlib.colors import LogNorm, PowerNorm

    if isinstance(scale, LogNorm):
        return f"{CBAR_LABEL} (log scale)"
    if isinstance(scale, PowerNorm):
        return f"{CBAR_LABEL} (power scale, gamma {scale.gamma:g})"
    return CBAR_LABEL


# ----- many cells, few pixels ----------------------------------------------------------------------
@dataclass(frozen=True)
class Mosaic:
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


def mosaic(
    matrices: Sequence[np.ndarray | None],
    ncols: int,
    cell: float,
    *,
    gaps: tuple[float, float],
    shape: tuple[int, int] | None = None,
) -> Mosaic:
    """Tile ``matrices`` (row by row, ``ncols`` a row; None leaves a slot empty) whose cells will be
    ``cell`` inches, with ``gaps`` = (between columns, between rows) inches between panels."""
    lq, lk = shape if shape is not None else next(m for m in matrices if m is not None).shape
    factor = pool_factor(cell)
    ph, pw = math.ceil(lq / factor), math.ceil(lk / factor)
    gx, gy = (max(1, round(g / (cell * factor))) for g in gaps)
    nrows = math.ceil(len(matrices) / ncols)
    image = np.full((nrows * (ph + gy) - gy, ncols * (pw + gx) - gx), np.nan, dtype=np.float32)
    for i, m in enumerate(matrices):
        if m is None:
            continue
        r, c = divmod(i, ncols)
        pooled = pool(m, factor)
        top, left = r * (ph + gy), c * (pw + gx)
        image[top : top + pooled.shape[0], left : left + pooled.shape[1]] = pooled
    return Mosaic(image, factor, ph, pw, gy, gx)


def pool_factor(cell_inches: float) -> int:
    """How many cells a side one pixel (at :data:`DPI`) must average: 1 while a cell is at least a pixel."""
    return max(1, math.ceil(1.0 / (cell_inches * DPI) - 1e-9))


def pool(matrix: np.ndarray, factor: int) -> np.ndarray:
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


def pooled_note(factor: int) -> str:
    """What a cell shows when the matrix was pooled by ``factor`` (empty when it was not)."""
    return "" if factor == 1 else f"each cell: the mean of {factor} x {factor} weights"


def cell_inches(n: int, *, lo: float, hi: float, span: float) -> float:
    """Cell size: ``span`` inches shared by ``n`` cells, clamped to [lo, hi]."""
    return min(hi, max(lo, span / n))


# ----- labels --------------------------------------------------------------------------------------
def escape(text: str) -> str:
    """Show text literally: ``$`` would otherwise start matplotlib math mode."""
    return text.replace("$", r"\$")


def label(token: str) -> str:
    """A token as a tick label: whitespace made visible, at most 14 characters, shown literally."""
    shown = token.replace("\n", "\\n").replace("\t", "\\t")
    if not shown.strip():
        shown = "␣" * max(1, len(shown))
    if len(shown) > _MAX_LABEL_CHARS:
        shown = shown[: _MAX_LABEL_CHARS - 1] + "…"
    return escape(shown)


def families(text: str) -> list[str]:
    """The font family list for ``text``: the CJK fallback only when the base font lacks a character
    (a fallback list makes matplotlib look up every glyph in two fonts, which doubles the text work)."""
    return [_fonts.BASE_FAMILY] if _fonts.font_covers(_fonts.BASE_FAMILY, text) else _fonts.families()


def _tick_step(n: int, axis_inches: float, fontsize: float) -> int:
    """Label every ``step``-th position so that labels (about 1.3 font sizes apart) never overlap."""
    fits = max(1, int(axis_inches * 72 / (fontsize * 1.3)))
    return max(1, math.ceil(n / fits))


def set_ticks(
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
    labels = [label(tokens[i]) for i in positions]
    where = [p if place is None else place(c, p) for c in range(copies) for p in positions]
    fonts = families("".join(labels))
    if axis == "x":
        # Upright when the longest label fits its column (wide CJK characters count double); 45 degrees for a
        # few long labels; 90 degrees for many, where labels packed one font size apart still clear each other.
        longest = max(sum(2 if ord(ch) > 0x2E80 else 1 for ch in lab) for lab in labels)
        rot: dict[str, Any] = {"rotation": 90}
        if longest * fontsize * 0.62 < inches * 72 / n * step * 0.9:
            rot = {}
        elif len(labels) <= 24:
            rot = {"rotation": 45, "ha": "right", "rotation_mode": "anchor"}
        ax.set_xticks(where, labels * copies, fontsize=fontsize, fontfamily=fonts, **rot)
    else:
        ax.set_yticks(where, labels * copies, fontsize=fontsize, fontfamily=fonts)


# ----- drawing -------------------------------------------------------------------------------------
def show(ax: Axes, image: np.ndarray, scale: Normalize, cmap: str | Colormap, extent: Any = None) -> AxesImage:
    """``image`` with nearest-cell colours on the colour scale ``scale``; NaN (gaps between panels) drawn blank."""
    from matplotlib import colormaps

    colours = (colormaps[cmap] if isinstance(cmap, str) else cmap).with_extremes(bad=(1.0, 1.0, 1.0, 0.0))
    return ax.imshow(image, cmap=colours, norm=scale, aspect="auto", interpolation="nearest",
                     interpolation_stage="data", extent=extent)  # "data": colours computed once per pixel


def frameless(ax: Axes) -> None:
    """Hide the axes' frame (a mosaic's panels are framed by their gaps)."""
    for spine in ax.spines.values():
        spine.set_visible(False)


def write_values(ax: Axes, matrix: np.ndarray, image: AxesImage) -> None:
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
