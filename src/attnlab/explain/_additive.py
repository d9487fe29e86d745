"""Bahdanau (加性注意力, additive) against Luong (dot, general, concat) on the same inputs, side by side.

All four are a softmax over the same encoder states; only the score function differs:
    Bahdanau   e_j = v^T tanh(W_a s + U_a h_j)
    Luong dot  e_j = s · h_j            general  e_j = s^T W h_j        concat  e_j = v^T tanh(W [s; h_j])
Luong's concat and Bahdanau's additive score are one function (W [s; h] = W_a s + U_a h for W = [W_a U_a]);
the topic checks it by copying Bahdanau's parameters into Luong's concat layer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from ..layers import BahdanauAttention, LuongAttention
from ..viz.static import figure
from ._finding import Finding

if TYPE_CHECKING:
    from matplotlib.figure import Figure

WORDS = ("The", "cat", "sat", "on", "the", "mat")


def additive(*, d: int = 16, d_attn: int = 16, seed: int = 0) -> Finding:
    """Weights of the four score functions for one decoder state over six seeded encoder states."""
    torch.manual_seed(seed)  # the layers initialise from the global generator
    layers = {
        "Bahdanau": BahdanauAttention(d, d, d_attn),
        "Luong dot": LuongAttention(d, d, "dot"),
        "Luong general": LuongAttention(d, d, "general"),
        "Luong concat": LuongAttention(d, d, "concat", d_attn=d_attn),
    }
    gen = torch.Generator().manual_seed(seed)
    h = torch.randn(1, len(WORDS), d, generator=gen)  # (B, S, D) encoder states
    s = h[:, 1] + 0.5 * torch.randn(1, d, generator=gen)  # (B, D) a decoder state near "cat"
    with torch.no_grad():
        weights = {name: layer(s, h)[1][0] for name, layer in layers.items()}  # each (S,)
        concat = layers["Luong concat"]
        bahdanau = layers["Bahdanau"]
        for name in ("w_query", "w_key", "v"):
            getattr(concat, name).copy_(getattr(bahdanau, name))
        same = (concat(s, h)[1][0] - weights["Bahdanau"]).abs().max().item()
    numbers = {
        "weights": {k: w.tolist() for k, w in weights.items()},
        "argmax": {k: WORDS[int(w.argmax())] for k, w in weights.items()},
        "row_sums": {k: w.sum().item() for k, w in weights.items()},
        "concat_equals_additive_max_diff": same,
    }
    verdict = (
        "four score functions, one softmax: on the same inputs (untrained) they weigh the keys differently; "
        f"Luong concat with Bahdanau's parameters equals Bahdanau (max diff {same:.1g})"
    )
    width = max(map(len, weights))
    lines = (
        "«注意力机制可视化原理与代码实战案例讲解» (4.4): Bahdanau is additive, Luong multiplicative "
        "(\"直接计算点积\").",
        "That is Luong's dot score; Luong also has general (s^T W h) and concat (= Bahdanau's additive score).",
        f"One decoder state s (near \"cat\") over six encoder states, d = {d}, untrained seeded layers:",
        f"  {'':{width}}  " + "  ".join(f"{w:>6}" for w in WORDS),
        *(f"  {k:{width}}  " + "  ".join(f"{x:6.3f}" for x in w.tolist()) for k, w in weights.items()),
        f"Luong concat given Bahdanau's W_a, U_a, v: max |difference of weights| = {same:.1g} (the same function).",
        "What is not shown: which works better. The tutorial's \"两种方法的性能相近\" needs trained models; untrained",
        "layers only show that the score function, not the softmax, is what differs. Luong dot is unscaled: with s",
        "close to one key its score stands d-sized above the rest and the softmax saturates (see the scaling topic).",
    )
    return Finding("additive", verdict, numbers, lines, {"additive": lambda: _draw(weights)})


def _draw(weights: dict[str, torch.Tensor]) -> Figure:
    from ..viz import heatmap

    names = list(weights)
    matrix = torch.stack([weights[k] for k in names])  # (4, S)
    fig = figure(7.5, 3.2)
    ax = fig.subplots()
    heatmap(matrix, ax=ax, annotate=True, x_tokens=list(WORDS), y_tokens=names,
            title="one decoder state, four score functions (rows sum to 1)", vmin=0.0)
    ax.set_ylabel("score function")
    ax.set_xlabel("encoder state (key)")
    return fig
