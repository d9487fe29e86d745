"""viz.alignment: source tokens along x, generated tokens along y, one label per column and row."""

from __future__ import annotations

import pytest
import torch

from attnlab import viz
from attnlab.errors import ShapeError


def test_the_axes_carry_the_source_and_the_generated_tokens() -> None:
    weights = torch.softmax(torch.randn(5, 7, generator=torch.Generator().manual_seed(0)), dim=-1)  # (T, S)
    fig = viz.alignment(weights, [*"abcdef", "[EOS]"], list("猫坐在垫子"))
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == [*"abcdef", "[EOS]"]
    assert [t.get_text() for t in ax.get_yticklabels()] == list("猫坐在垫子")
    image = ax.get_images()[0].get_array()
    assert image.shape == (5, 7) and abs(float(image.sum()) - 5.0) < 1e-5  # rows unchanged, each sums to one


def test_a_dollar_token_is_escaped_once() -> None:
    """Labels go through the shared tick labeller once: ``$5`` is labelled ``\\$5`` (drawn $5), not ``\\\\$5``."""
    fig = viz.alignment(torch.full((2, 2), 0.5), ["$5", "a"], ["b", "$"])
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == [r"\$5", "a"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["b", r"\$"]


@pytest.mark.parametrize(("shape", "src", "tgt"), [((3, 4), 3, 3), ((3, 4), 4, 2), ((2, 3, 4), 4, 3)])
def test_labels_that_do_not_fit_are_refused(shape: tuple[int, ...], src: int, tgt: int) -> None:
    with pytest.raises(ShapeError):
        viz.alignment(torch.rand(shape), ["x"] * src, ["y"] * tgt)
