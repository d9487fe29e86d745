"""The analysis figures keep their text inside the figure, however few heads the model has."""

from __future__ import annotations

import pytest
import torch

import attnlab as al
from attnlab.analysis import analyze_trace
from attnlab.analysis.figures import label_grid

TOKENS = ["[CLS]", "这", "本", "书", "写", "得", "很", "好", "[SEP]"]


def small_trace(layers: int, heads: int) -> al.AttentionTrace:
    g = torch.Generator().manual_seed(0)
    n = len(TOKENS)
    records = [al.AttentionRecord(f"layer.{i}", "self", i, torch.randn(1, heads, n, n, generator=g).softmax(-1),
                                  TOKENS, TOKENS) for i in range(layers)]
    return al.AttentionTrace(records, {"model": "synthetic"})


@pytest.mark.parametrize(("layers", "heads"), [(1, 1), (2, 4), (6, 12)])
def test_the_label_grid_title_fits_the_figure(layers: int, heads: int) -> None:
    """zh-sentiment's 2 x 4 grid cut its title on both sides: every text stays within the figure."""
    fig = label_grid(analyze_trace(small_trace(layers, heads)))
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    fig.draw(renderer)  # run the constrained layout
    page = fig.bbox
    (ax,) = fig.axes
    title = ax.title.get_window_extent(renderer)
    assert ax.title.get_text().startswith("what each head does")
    assert page.x0 <= title.x0 and title.x1 <= page.x1 and title.y1 <= page.y1, (title, page)


def test_a_signed_token_row_is_drawn_on_a_scale_centred_on_zero() -> None:
    import matplotlib.pyplot as plt
    import numpy as np

    from attnlab.analysis.figures import token_map_figure

    row = np.array([[0.3, -0.1, 0.05]])
    plain = token_map_figure(row, ["a", "b", "c"], "t", "v", y_tokens=["p"])
    signed = token_map_figure(row, ["a", "b", "c"], "t", "v", y_tokens=["p"], signed=True)
    assert plain.axes[0].images[0].get_clim() == (0.0, 0.3)  # a share: 0 at the bottom, a negative hidden there
    image = signed.axes[0].images[0]
    assert image.get_clim() == (-0.3, 0.3) and image.get_cmap().name == "RdBu_r"
    plt.close("all")
