"""The tutorials' claims, reproduced, checked and corrected: one small function per topic.

    >>> from attnlab import explain
    >>> f = explain.scaling()              # a Finding: .verdict, .numbers, .lines, .figures
    >>> print(f.text)
    >>> explain.write_figures(f, "out")    # out/scaling.png, written all or nothing

Every number is computed when the function runs, from seeded inputs; the verdict is built from those
numbers.  ``attnlab explain [TOPIC]`` is the command line for the same functions.  The tutorials' own
buggy snippets are reproduced, faithfully and privately, in ``_tutorial_code``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ._additive import additive
from ._basics import cosine, softmax, temperature
from ._cost import cost
from ._efficient import efficient
from ._finding import TUTORIALS, Finding, write_figures
from ._masks import masking
from ._multihead import multihead
from ._scaling import scaling
from ._seeing import seeing


@dataclass(frozen=True)
class Topic:
    """A topic: its function and the one-line claim and verdict shown by ``attnlab explain``."""

    name: str
    run: Callable[..., Finding]
    summary: str  # the claim and its verdict, without numbers (those come from running it)


TOPICS: dict[str, Topic] = {
    t.name: t
    for t in (
        Topic("scaling", scaling,
              "缩放点积: Var(q·k) = d_k, unscaled softmax saturates; gradients vanish AND explode: true"),
        Topic("softmax", softmax, "softmax([10, 8, 2]) printed as [0.88, 0.11, 0.01]: wrong"),
        Topic("cosine", cosine, "the dot product is cosine similarity: only for unit vectors"),
        Topic("temperature", temperature, "温度 τ: τ < 1 sharpens, τ > 1 flattens: true"),
        Topic("masks", masking, "掩码: two tutorial bugs (an MHA that drops its mask; True = blocked into mask == 0)"),
        Topic("multihead", multihead,
              "多头注意力 has the parameters of one head at the same d_model: true; d_k != d_v works"),
        Topic("cost", cost, "复杂度: dense n², linear n d², local n w measured; RNN O(d²) per step; sparse != n log n"),
        Topic("additive", additive,
              "Bahdanau vs Luong dot/general/concat: one softmax, four scores; concat = additive"),
        Topic("efficient", efficient, "the tutorial's 高效注意力 gives unnormalised weights; Shen et al.'s sum to 1"),
        Topic("seeing", seeing, "注意力可视化: heatmap, heads, layers x heads of MiniLM: what they show and do not"),
    )
}


def get_topic(name: str) -> Topic:
    """The topic called ``name``; a :class:`ConfigError` naming the valid topics otherwise."""
    try:
        return TOPICS[name]
    except KeyError:
        raise ConfigError(f"unknown topic {name!r}; choose one of: {', '.join(TOPICS)}") from None


def run(name: str, **options: Any) -> Finding:
    """Run the topic called ``name`` with ``options`` (e.g. ``explain.run("cost", quick=False)``)."""
    return get_topic(name).run(**options)


__all__ = [
    "TOPICS",
    "TUTORIALS",
    "Finding",
    "Topic",
    "additive",
    "cosine",
    "cost",
    "efficient",
    "get_topic",
    "masking",
    "multihead",
    "run",
    "scaling",
    "seeing",
    "softmax",
    "temperature",
    "write_figures",
]
