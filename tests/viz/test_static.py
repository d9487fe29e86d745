"""Static figures: what is drawn where (keys along x), colour bar, cell text, tick thinning, CJK glyphs,
saving by suffix, and clear errors."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

import attnlab as al
from attnlab.errors import InputError, ShapeError
from attnlab.viz import _fonts, static

TOKENS = ["[CLS]", "the", "cat", "sat", "on", "the", "mat", "[SEP]"]
ZH = ["[CLS]", "我", "喜", "欢", "这", "部", "电", "影", "[SEP]"]


def synthetic_trace(tokens=TOKENS, layers=3, heads=5, seed=0) -> al.AttentionTrace:
    """Random softmax weights, odd sizes; one record per layer like a BERT encoder."""
    g = torch.Generator().manual_seed(seed)
    n = len(tokens)
    records = [
        al.AttentionRecord(f"encoder.layer.{i}.attention.self", "self", i,
                           (torch.randn(1, heads, n, n, generator=g) * 2).softmax(-1), list(tokens), list(tokens))
        for i in range(layers)
    ]
    return al.AttentionTrace(records, {"model": "synthetic"})


def cross_record() -> al.AttentionRecord:
    """Cross-attention: 3 queries (y) over 7 keys (x), so a transposed drawing cannot pass."""
    w = torch.randn(1, 2, 3, 7).softmax(-1)
    return al.AttentionRecord("decoder.layer.0.cross", "cross", 0, w, ["q0", "q1", "q2"], [f"k{i}" for i in range(7)])


def images(fig: Figure):
    return [im for ax in fig.axes for im in ax.get_images()]


def ticklabels(ax, axis: str) -> list[str]:
    ticks = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()
    return [t.get_text() for t in ticks]


# ----- heatmap -------------------------------------------------------------------------------------
def test_keys_along_x_queries_along_y():
    rec = cross_record()
    fig = al.viz.heatmap(rec, head=1)
    (im,) = images(fig)
    ax = im.axes
    np.testing.assert_allclose(im.get_array(), rec.weights[0, 1].numpy(), rtol=0, atol=1e-7)  # (q, k) = (3, 7)
    assert ticklabels(ax, "x") == rec.key_tokens
    assert ticklabels(ax, "y") == rec.query_tokens
    assert "key" in ax.get_xlabel() and "query" in ax.get_ylabel()
    assert ax.get_ylim()[0] > ax.get_ylim()[1], "row 0 (the first query) must be at the top"
    assert ax.get_title() == "layer 0, head 1 (cross)"


def test_colour_bar_from_zero_to_largest_weight():
    trace = synthetic_trace()
    fig = al.viz.heatmap(trace, layer=2, head=3)
    assert len(fig.axes) == 2, "the heatmap and its colour bar"
    cbar_ax = fig.axes[1]
    assert cbar_ax.get_ylabel() == "attention weight"
    (im,) = images(fig)
    assert im.norm.vmin == 0.0
    assert im.norm.vmax == pytest.approx(float(trace.weights[2, 3].max()))


def test_trace_layer_head_mean_and_negative_indices():
    trace = synthetic_trace()
    (im,) = images(al.viz.heatmap(trace, layer=-1, head="mean"))
    np.testing.assert_allclose(im.get_array(), trace.weights[2].mean(0).numpy(), atol=1e-6)
    assert im.axes.get_title() == "layer 2, mean of 5 heads"
    (im,) = images(al.viz.heatmap(trace, layer=1, head=-2))
    np.testing.assert_allclose(im.get_array(), trace.weights[1, 3].numpy(), atol=1e-7)


@pytest.mark.parametrize("make", [lambda w: w, lambda w: w.numpy(), lambda w: w.tolist(), lambda w: w.bfloat16()])
def test_matrix_inputs(make):
    w = torch.rand(4, 6)
    (im,) = images(al.viz.heatmap(make(w), x_tokens=list("abcdef"), y_tokens=list("wxyz")))
    np.testing.assert_allclose(im.get_array(), w.numpy(), atol=1e-2)
    assert ticklabels(im.axes, "x") == list("abcdef")


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda t: al.viz.heatmap(t, layer=3), InputError, ["layer 3", "3 layers"]),
        (lambda t: al.viz.heatmap(t, layer=-4), InputError, ["layer -4"]),
        (lambda t: al.viz.heatmap(t, head=5), InputError, ["head 5", "5 heads"]),
        (lambda t: al.viz.heatmap(t, head="max"), InputError, ["'max'", "mean"]),
        (lambda t: al.viz.heatmap(t, kind="cross"), InputError, ["cross", "['self']"]),
        (lambda t: al.viz.heatmap(t, tokens=["a", "b"]), ShapeError, ["2 tokens", "8 positions"]),
        (lambda t: al.viz.heatmap(t, tokens="the cat"), InputError, ["list of strings"]),
        (lambda t: al.viz.heatmap(torch.rand(2, 3, 3)), ShapeError, ["2-D", "(2, 3, 3)"]),
        (lambda t: al.viz.heatmap(object()), InputError, ["object"]),
        (lambda t: al.viz.heatmap(al.AttentionTrace()), InputError, ["empty"]),
        (lambda t: al.viz.heads(t, 7), InputError, ["layer 7"]),
    ],
)
def test_bad_input_raises_clear_errors(call, error, words):
    with pytest.raises(error) as info:
        call(synthetic_trace())
    for word in words:
        assert word in str(info.value), str(info.value)


def annotation_colours(fig: Figure) -> dict[str, str]:
    from matplotlib.colors import to_hex

    (im,) = images(fig)
    return {t.get_text(): to_hex(t.get_color()) for t in im.axes.texts}


def test_annotate_writes_every_value_in_a_colour_that_reads():
    w = torch.tensor([[0.0, 1.0, 0.25], [0.5, 0.5, 0.0]])
    fig = al.viz.heatmap(w, annotate=True, cmap="viridis")
    (im,) = images(fig)
    texts = [t.get_text() for t in im.axes.texts]
    assert sorted(texts) == sorted(f"{x:.2f}" for x in w.flatten().tolist())
    colours = annotation_colours(fig)
    assert colours["0.00"] == "#ffffff", "dark purple cell (viridis at 0) needs white text"
    assert colours["1.00"] == "#000000", "yellow cell (viridis at 1) needs black text"
    colours = annotation_colours(al.viz.heatmap(w, annotate=True, cmap="Greys"))  # the other way round
    assert colours["0.00"] == "#000000" and colours["1.00"] == "#ffffff"
    assert not al.viz.heatmap(w).axes[0].texts, "no cell text unless asked"


@pytest.mark.slow
def test_long_input_thins_labels_without_overlap():
    n = 300
    fig = al.viz.heatmap(torch.rand(n, n).softmax(-1), tokens=[f"tok{i}" for i in range(n)])
    (im,) = images(fig)
    ax = im.axes
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for axis in ("x", "y"):
        labels = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()
        assert 10 < len(labels) < n, f"{axis}: {len(labels)} labels for {n} tokens"
        boxes = [t.get_window_extent(renderer) for t in labels]
        assert not any(a.overlaps(b) for a, b in itertools.pairwise(boxes)), f"{axis} labels overlap"
    assert ticklabels(ax, "x")[:2] == ["tok0", f"tok{int(ax.get_xticks()[1])}"]


def test_labels_are_literal_text():
    fig = al.viz.heatmap(torch.rand(3, 3), tokens=["$x$", "\n", "a" * 40])
    labels = fig.axes[0].get_xticklabels()
    shown = [t._preprocess_math(t.get_text()) for t in labels]  # what matplotlib will render
    assert shown[0] == ("$x$", False), "a $ must not switch to math mode"
    assert shown[1][0] == "\\n"
    assert len(shown[2][0]) == 14 and shown[2][0].endswith("…")


@pytest.mark.slow
def test_figures_draw_with_agg_and_no_pyplot(tmp_path):
    """A figure is a plain Agg figure: pyplot never manages it (no window opens, none piles up in pyplot's
    figure list), and drawing and saving never import pyplot (checked in a fresh interpreter, since another
    test in this process may have imported it)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = al.viz.heatmap(torch.eye(3))
    assert isinstance(fig.canvas, FigureCanvasAgg)
    assert fig.canvas.manager is None, "the figure is registered with pyplot's figure manager"
    code = (
        "import sys, torch, attnlab as al\n"
        "trace = al.AttentionTrace([al.AttentionRecord('a', 'self', 0, torch.rand(1, 2, 3, 3).softmax(-1))], {})\n"
        "for fig in (al.viz.heatmap(torch.eye(3)), al.viz.heads(trace, layer=0), al.viz.model_grid(trace)):\n"
        "    assert fig.canvas.manager is None, type(fig.canvas.manager)\n"
        f"    al.viz.save(fig, {str(tmp_path / 'fig.png')!r})\n"
        "print(sorted(m for m in sys.modules if m.startswith('matplotlib.pyplot')))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "[]\n", f"drawing imported pyplot: {run.stdout}"


def test_draws_into_given_axes():
    fig = Figure()
    left, right = fig.subplots(1, 2)
    assert al.viz.heatmap(torch.rand(3, 3), ax=right) is fig
    assert right.get_images() and not left.get_images()
    sub = Figure().subfigures(1, 2)[1]
    assert al.viz.heatmap(torch.rand(3, 3), ax=sub.subplots()) is sub.figure  # the root figure, not the SubFigure


# ----- heads and model grid ------------------------------------------------------------------------
def runs(blank: np.ndarray) -> list[slice]:
    """The runs of False in ``blank``: where the panels lie along one axis of a mosaic."""
    edges = np.flatnonzero(np.diff(np.r_[True, blank, True].astype(int)))
    return [slice(a, b) for a, b in zip(edges[::2], edges[1::2], strict=True)]


def panel(fig: Figure, row: int, col: int) -> np.ndarray:
    """The cells of panel (row, col) of a heads/model_grid mosaic (blank gaps between panels are NaN)."""
    (im,) = images(fig)
    grid = np.ma.filled(im.get_array().astype(float), np.nan)
    blank = np.isnan(grid)
    rows, cols = runs(blank.all(axis=1)), runs(blank.all(axis=0))
    return grid[rows[row], cols[col]]


def test_heads_grid_one_panel_per_head_on_one_scale():
    trace = synthetic_trace()
    fig = al.viz.heads(trace, layer=1)
    (im,) = images(fig)
    for h in range(5):
        r, c = divmod(h, 4)
        np.testing.assert_allclose(panel(fig, r, c), trace.weights[1, h].numpy(), atol=1e-7)
    assert np.isnan(panel(fig, 1, 1)).all(), "5 heads in 4 columns: the empty slots stay blank"
    assert im.norm.vmin == 0.0 and im.norm.vmax == pytest.approx(float(trace.weights[1].max()))
    assert [t.get_text() for t in im.axes.texts] == [f"head {h}" for h in range(5)]
    # queries labelled down the left of each row of panels, keys along the bottom of each column
    assert ticklabels(im.axes, "y") == TOKENS * 2 and ticklabels(im.axes, "x") == TOKENS * 4
    assert "layer 1: all 5 heads" in fig.get_suptitle()
    assert any(ax.get_ylabel() == "attention weight" for ax in fig.axes)


def test_heads_labels_sit_on_their_cells():
    """Tick k of panel column c is at the x of key k in that column, wherever the panels lie."""
    trace = synthetic_trace()
    fig = al.viz.heads(trace, layer=0)
    (im,) = images(fig)
    n = len(TOKENS)
    xs = im.axes.get_xticks()
    for c in range(4):
        left = round(float(xs[c * n]))
        np.testing.assert_allclose(im.get_array()[: n, left : left + n], trace.weights[0, c].numpy(), atol=1e-7)


def test_model_grid_layers_by_heads():
    trace = synthetic_trace()
    fig = al.viz.model_grid(trace)
    (im,) = images(fig)
    for layer in range(3):
        for head in range(5):
            np.testing.assert_allclose(panel(fig, layer, head), trace.weights[layer, head].numpy(), atol=1e-7)
    assert ticklabels(im.axes, "x") == [f"head {h}" for h in range(5)]
    assert ticklabels(im.axes, "y") == [f"layer {i}" for i in range(3)]
    assert "mean of" not in fig.get_suptitle(), "a short input is drawn cell by cell"


# ----- long inputs ---------------------------------------------------------------------------------
def long_trace(n: int, layers: int = 1, heads: int = 12) -> al.AttentionTrace:
    """Sharp rows (each query mostly on the previous token) over ``n`` tokens, like a real long input."""
    g = torch.Generator().manual_seed(1)
    scores = torch.randn(1, heads, n, n, generator=g) + 12 * torch.eye(n).roll(-1, dims=1)
    toks = [f"w{i}" for i in range(n)]
    return al.AttentionTrace([al.AttentionRecord(f"l.{i}", "self", i, scores.softmax(-1), toks, toks)
                              for i in range(layers)])


def png_size(path) -> tuple[int, int]:
    import struct

    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", header[16:24])


@pytest.mark.slow
def test_long_input_figures_stay_under_the_pixel_cap(tmp_path):
    trace = long_trace(520, heads=4)
    for name, fig in {"heatmap": al.viz.heatmap(trace, head="mean"), "heads": al.viz.heads(trace, 0),
                      "model": al.viz.model_grid(trace)}.items():
        width, height = png_size(al.viz.save(fig, tmp_path / f"{name}.png"))
        assert max(width, height) <= static.MAX_PIXELS, (name, width, height)
        assert min(width, height) >= 400, (name, width, height)  # and not shrunk to nothing


def test_save_caps_any_figure_and_can_be_told_not_to(tmp_path):
    fig = Figure(figsize=(60, 10))
    fig.add_subplot().plot([0, 1])
    assert max(png_size(al.viz.save(fig, tmp_path / "capped.png"))) <= 4000
    assert png_size(al.viz.save(fig, tmp_path / "small.png", max_pixels=1200)) == (1200, 200)
    assert png_size(al.viz.save(fig, tmp_path / "full.png", dpi=100, max_pixels=None)) == (6000, 1000)
    with pytest.raises(al.errors.ConfigError, match="max_pixels"):
        al.viz.save(fig, tmp_path / "x.png", max_pixels=0)


def test_more_cells_than_pixels_are_drawn_as_block_means():
    trace = long_trace(700, heads=2)
    fig = al.viz.model_grid(trace)
    (im,) = images(fig)
    factor = static.pool_factor(1.0 / 700)  # thumbnails of at most an inch
    assert factor > 1 and f"mean of {factor} x {factor} weights" in fig.get_suptitle()
    w = trace.weights[0, 1].double().numpy()
    blocks = -(-700 // factor)
    expected = np.array([[w[i * factor:(i + 1) * factor, j * factor:(j + 1) * factor].mean() for j in range(blocks)]
                         for i in range(blocks)])
    np.testing.assert_allclose(panel(fig, 0, 1), expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(("n", "factor"), [(6, 2), (7, 3), (5, 1)])
def test_pool_is_the_mean_of_each_block(n, factor):
    m = np.arange(n * (n + 1), dtype=np.float64).reshape(n, n + 1)
    pooled = static.pool(m, factor)
    for i in range(pooled.shape[0]):
        for j in range(pooled.shape[1]):
            block = m[i * factor : (i + 1) * factor, j * factor : (j + 1) * factor]
            assert pooled[i, j] == pytest.approx(block.mean())  # the last blocks average only the cells they have


@pytest.mark.slow
def test_span_draws_a_range_of_positions():
    trace = synthetic_trace()
    fig = al.viz.heatmap(trace, layer=1, head=2, span=(2, 6))
    (im,) = images(fig)
    np.testing.assert_allclose(im.get_array(), trace.weights[1, 2, 2:6, 2:6].numpy(), atol=1e-7)
    assert ticklabels(im.axes, "x") == TOKENS[2:6] == ticklabels(im.axes, "y")
    assert im.axes.get_title() == "layer 1, head 2, positions 2-5 of 8"
    for same in (slice(2, 6), range(2, 6), [2, 6]):
        (other,) = images(al.viz.heatmap(trace, layer=1, head=2, span=same))
        np.testing.assert_array_equal(other.get_array(), im.get_array())
    (tail,) = images(al.viz.heatmap(trace, head="mean", span=(5, None)))
    assert tail.get_array().shape == (3, 3)
    (im,) = images(al.viz.heatmap(torch.rand(20, 20), span=(10, 13)))
    assert ticklabels(im.axes, "x") == ["10", "11", "12"], "without tokens the labels are the positions"


def test_span_of_cross_attention_cuts_the_queries_only():
    rec = cross_record()
    (im,) = images(al.viz.heatmap(rec, head=0, span=(1, 3)))
    np.testing.assert_allclose(im.get_array(), rec.weights[0, 0, 1:3].numpy(), atol=1e-7)
    assert ticklabels(im.axes, "y") == ["q1", "q2"] and ticklabels(im.axes, "x") == rec.key_tokens
    assert im.axes.get_title().endswith("queries 1-2 of 3")


def test_span_in_heads_and_model_grid():
    trace = synthetic_trace()
    for fig in (al.viz.heads(trace, 0, span=(1, 4)), al.viz.model_grid(trace, span=(1, 4))):
        np.testing.assert_allclose(panel(fig, 0, 1), trace.weights[0, 1, 1:4, 1:4].numpy(), atol=1e-7)
        assert "positions 1-3 of 8" in fig.get_suptitle()


@pytest.mark.parametrize(
    ("span", "words"),
    [((3, 3), ["(3, 3)", "start < stop"]), ((0, 9), ["8 query positions"]), ((-2, None), ["span", "-2"]),
     ((True, 4), ["bool"]), (slice(0, 6, 2), ["step 2"]), ("2:5", ["(start, stop)"]), ((1, 2, 3), ["(start, stop)"])],
)
def test_bad_spans_are_refused(span, words):
    with pytest.raises(al.errors.AttnLabError) as info:
        al.viz.heatmap(synthetic_trace(), span=span)
    for word in words:
        assert word in str(info.value), str(info.value)


# ----- colour scales -------------------------------------------------------------------------------
@pytest.mark.slow
def test_colour_scales():
    from matplotlib.colors import LogNorm, PowerNorm

    short = synthetic_trace()
    (im,) = images(al.viz.heatmap(short))
    assert type(im.norm).__name__ == "Normalize", "auto is linear for a short input"
    fig = al.viz.heatmap(short, scale="power", gamma=0.3)
    (im,) = images(fig)
    assert isinstance(im.norm, PowerNorm) and im.norm.gamma == 0.3 and im.norm.vmin == 0.0
    assert "power scale, gamma 0.3" in fig.axes[1].get_ylabel()
    fig = al.viz.heatmap(short, layer=0, head=0, scale="log")
    (im,) = images(fig)
    top = float(short.weights[0, 0].max())  # layer 0, head 0
    assert isinstance(im.norm, LogNorm) and fig.axes[1].get_ylabel() == "attention weight (log scale)"
    assert im.norm.vmin == pytest.approx(min(top, 1 / 8) / 10) and im.norm.vmax == pytest.approx(top)
    assert im.norm(0.0) == 0.0, "a zero weight takes the lowest colour, not the 'bad' one"

    long = long_trace(static.AUTO_LINEAR_UP_TO + 1, heads=2)
    for fig in (al.viz.heatmap(long), al.viz.heads(long, 0), al.viz.model_grid(long)):
        (im,) = images(fig)
        assert isinstance(im.norm, LogNorm), "auto is log past AUTO_LINEAR_UP_TO tokens"
    (im,) = images(al.viz.heatmap(long, scale="linear"))
    assert type(im.norm).__name__ == "Normalize"


@pytest.mark.slow
def test_a_log_scale_shows_what_a_linear_one_hides():
    """On a 512-token head, the weights between 1/(10 n) and 10/n (most of what is not the peak) span most
    colours in log and almost none in linear: the uniform dark field of the issue."""
    g = torch.Generator().manual_seed(2)
    w = (1.5 * torch.randn(1, 1, 512, 512, generator=g)).softmax(-1)  # no peak: every weight near 1/512
    trace = al.AttentionTrace([al.AttentionRecord("l.0", "self", 0, w)])
    w = w[0, 0].numpy()
    mid = w[(w > 1 / 5120) & (w < 10 / 512)]
    assert mid.size > 0.5 * w.size
    norms = {scale: images(al.viz.heatmap(trace, scale=scale))[0].norm for scale in ("linear", "log")}
    spread = {scale: float(np.ptp(norm(mid))) for scale, norm in norms.items()}
    assert spread["log"] > 0.5 and spread["linear"] < 0.1, spread


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [({"scale": "sqrt"}, al.errors.ConfigError, ["scale", "'sqrt'", "log"]),
     ({"gamma": 0}, al.errors.ConfigError, ["gamma", "> 0"]),
     ({"scale": "log", "vmin": 0.0}, InputError, ["vmin > 0"]),
     ({"vmax": float("nan")}, InputError, ["vmax", "finite"])],
)
def test_bad_scales_are_refused(kwargs, error, words):
    with pytest.raises(error) as info:
        al.viz.heatmap(torch.rand(3, 3), **kwargs)
    for word in words:
        assert word in str(info.value), str(info.value)


# ----- fonts ---------------------------------------------------------------------------------------
def glyph_warnings(fig: Figure) -> list[str]:
    import io

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig.savefig(io.BytesIO(), format="png")
    return [str(w.message) for w in caught if "Glyph" in str(w.message)]


@pytest.mark.slow
def test_chinese_tokens_render_with_a_cjk_font():
    cjk = _fonts.cjk_family()
    assert cjk is not None, "no CJK font: install fonts-wqy-zenhei (`make system`)"
    assert _fonts.font_covers(cjk, "我喜欢这部电影")
    fig = al.viz.heatmap(synthetic_trace(ZH), title="我喜欢这部电影")
    ax = fig.axes[0]
    assert cjk in ax.get_xticklabels()[1].get_fontfamily()
    assert cjk in ax.title.get_fontfamily()
    assert glyph_warnings(fig) == []
    assert glyph_warnings(al.viz.heads(synthetic_trace(ZH), 0)) == []


def test_without_the_cjk_fallback_glyphs_would_be_missing():
    """The control for the test above: DejaVu alone has no ideographs, and matplotlib says so."""
    assert not _fonts.font_covers(_fonts.BASE_FAMILY, "我")
    fig = al.viz.heatmap(torch.rand(2, 2), tokens=["我", "a"])
    for label in fig.axes[0].get_xticklabels():
        label.set_fontfamily([_fonts.BASE_FAMILY])
    assert any(re.search(r"missing from (current )?font", w) for w in glyph_warnings(fig))


def test_no_cjk_font_warns_once_and_still_draws(monkeypatch, tmp_path):
    monkeypatch.setattr(_fonts, "cjk_family", lambda: None)
    monkeypatch.setattr(_fonts, "_warned", False)
    with pytest.warns(UserWarning, match="fonts-wqy-zenhei") as caught:
        fig = al.viz.heatmap(torch.rand(3, 3), tokens=["我", "喜", "欢"])
        al.viz.heatmap(torch.rand(3, 3), tokens=["电", "影", "x"])
    assert sum("fonts-wqy-zenhei" in str(w.message) for w in caught) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        al.viz.save(fig, tmp_path / "boxes.png")  # matplotlib's per-glyph warnings are not repeated
    assert (tmp_path / "boxes.png").stat().st_size > 0


# ----- the shared figure ---------------------------------------------------------------------------
def test_figure_is_agg_drawn_constrained_and_never_too_small():
    """viz.static.figure: the one set-up of every figure (viz, analysis, explain, training)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = static.figure(1.0, 9.0)
    assert isinstance(fig.canvas, FigureCanvasAgg) and fig.get_layout_engine() is not None
    assert tuple(fig.get_size_inches()) == (static.MIN_INCHES[0], 9.0)
    assert tuple(static.figure(7.5, 0.5).get_size_inches()) == (7.5, static.MIN_INCHES[1])


# ----- saving --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("suffix", "magic"), [(".png", b"\x89PNG"), (".svg", b"<?xml"), (".PDF", b"%PDF")])
def test_save_by_suffix(tmp_path, suffix, magic):
    path = al.viz.save(al.viz.heatmap(synthetic_trace(ZH), head="mean"), tmp_path / f"fig{suffix}")
    assert path.read_bytes().startswith(magic)
    assert [p.name for p in tmp_path.iterdir()] == [f"fig{suffix}"], "no temporary file left"


def test_cjk_glyphs_are_embedded_in_svg_and_pdf(tmp_path):
    import re

    cjk = _fonts.cjk_family()
    assert cjk is not None, "no CJK font: install fonts-wqy-zenhei (`make system`)"
    fig = al.viz.heatmap(torch.rand(7, 7), tokens=list("我喜欢这部电影"))
    svg = al.viz.save(fig, tmp_path / "zh.svg").read_text()
    glyphs = set(re.findall(r'<path id="([A-Za-z]+)-[0-9a-f]+"', svg))
    assert cjk.replace(" ", "") in glyphs, glyphs  # the seven ideographs are drawn from the CJK font's outlines
    pdf = al.viz.save(fig, tmp_path / "zh.pdf").read_bytes()
    assert re.search(rb"/BaseFont /[A-Z]{6}\+" + cjk.replace(" ", "").encode(), pdf)


@pytest.mark.slow
def test_save_is_reproducible(tmp_path):
    w = torch.rand(5, 5)
    for suffix in (".svg", ".pdf", ".png"):
        a = al.viz.save(al.viz.heatmap(w, annotate=True), tmp_path / f"a{suffix}")
        b = al.viz.save(al.viz.heatmap(w, annotate=True), tmp_path / f"b{suffix}")
        assert a.read_bytes() == b.read_bytes(), suffix


def test_save_refuses_unknown_suffix_and_missing_folder(tmp_path):
    fig = al.viz.heatmap(torch.eye(3))
    with pytest.raises(InputError, match=r"'\.jpg' is not one of \.png, \.svg, \.pdf"):
        al.viz.save(fig, tmp_path / "fig.jpg")
    with pytest.raises(InputError, match="does not exist"):
        al.viz.save(fig, tmp_path / "missing" / "fig.png")
    assert list(tmp_path.iterdir()) == []


def test_failed_save_leaves_no_file(tmp_path, monkeypatch):
    fig = al.viz.heatmap(torch.eye(3))

    def broken(path, **kwargs):
        with open(path, "wb") as f:
            f.write(b"\x89PNG half a file")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fig, "savefig", broken)
    with pytest.raises(OSError, match="No space"):
        static.save(fig, tmp_path / "fig.png")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_import_attnlab_does_not_import_matplotlib():
    code = "import sys, attnlab; assert 'matplotlib' not in sys.modules; attnlab.viz.heatmap; print('ok')"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "ok\n"
