"""Three small claims: softmax([10, 8, 2]), "the dot product is cosine similarity", temperature.

Each is computed in float64 when it runs; nothing is a stored answer."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import torch

from ..functional import attention
from ..viz.static import figure
from ._finding import Finding

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SCORES = (10.0, 8.0, 2.0)
PRINTED = (0.88, 0.11, 0.01)  # what «LLM 的“聚光灯”» prints for softmax([10, 8, 2])
TAUS = (0.5, 1.0, 2.0)


# ----- softmax ------------------------------------------------------------------------------------
def softmax() -> Finding:
    """softmax([10, 8, 2]) computed in float64, against the tutorial's printed [0.88, 0.11, 0.01]."""
    p = torch.softmax(torch.tensor(SCORES, dtype=torch.float64), dim=0).tolist()
    wrong = [i for i, (x, y) in enumerate(zip(p, PRINTED, strict=True)) if round(x, 2) != y]
    numbers = {"softmax": p, "printed": list(PRINTED), "wrong_entries": wrong, "ratio_third": PRINTED[2] / p[2]}
    shown = ", ".join(f"{x:.4f}" for x in p)
    verdict = (
        f"the tutorial's [0.88, 0.11, 0.01] is wrong: softmax([10, 8, 2]) = [{shown}]"
        if wrong
        else f"the tutorial's [0.88, 0.11, 0.01] is right to two decimals: [{shown}]"
    )
    lines = (
        "«LLM 的“聚光灯”» (Softmax = 归一化与聚焦): softmax([10, 8, 2]) = [0.88, 0.11, 0.01].",
        f"computed (float64): [{', '.join(f'{x:.6f}' for x in p)}]",
        f"to two decimals:    [{', '.join(f'{x:.2f}' for x in p)}]  (entries {wrong} differ from the print)",
        f"the third weight is e^-8 / (1 + e^-2 + e^-8) = {p[2]:.6f}: the print's 0.01 is {numbers['ratio_third']:.0f}x "
        "too large.",
        "The point the tutorial makes stands (a gap of 2 in the scores already gives 88% to the first), but",
        "a gap of 8 leaves almost nothing: softmax is exponential, not proportional.",
    )
    return Finding("softmax", verdict, numbers, lines, {"softmax": lambda: _draw_softmax(p)})


def _draw_softmax(p: list[float]) -> Figure:
    fig = figure(5.5, 3.2)
    ax = fig.subplots()
    xs = range(len(p))
    ax.bar([x - 0.2 for x in xs], p, width=0.4, label="softmax([10, 8, 2]), computed", color="#4c72b0")
    ax.bar([x + 0.2 for x in xs], PRINTED, width=0.4, label="the tutorial's print", color="#dd8452")
    for x, (a, b) in enumerate(zip(p, PRINTED, strict=True)):
        ax.text(x - 0.2, a + 0.02, f"{a:.4f}", ha="center", fontsize=8)
        ax.text(x + 0.2, b + 0.02, f"{b:.2f}", ha="center", fontsize=8)
    ax.set_xticks(list(xs), [f"score {s:g}" for s in SCORES])
    ax.set(ylim=(0, 1.05), ylabel="weight", title="softmax([10, 8, 2])")
    ax.legend(fontsize=8)
    return fig


# ----- cosine -------------------------------------------------------------------------------------
def cosine() -> Finding:
    """The dot product equals cosine similarity only for unit vectors: a query and two keys where the dot
    product and the cosine rank the keys in opposite orders, and the equality once all three are normalised."""
    q = torch.tensor([1.0, 0.0], dtype=torch.float64)
    k1 = torch.tensor([1.0, 0.2], dtype=torch.float64)  # nearly the query's direction, short
    k2 = torch.tensor([3.0, 3.0], dtype=torch.float64)  # 45 degrees away, long

    def cos(a: torch.Tensor, b: torch.Tensor) -> float:
        return float(a @ b / (a.norm() * b.norm()))

    dots = [float(q @ k1), float(q @ k2)]
    coss = [cos(q, k1), cos(q, k2)]
    unit = [float((q / q.norm()) @ (k / k.norm())) for k in (k1, k2)]
    numbers = {"dot": dots, "cosine": coss, "unit_dot": unit, "rank_flips": (dots[0] < dots[1]) != (coss[0] < coss[1])}
    verdict = (
        f"false as stated: q·k1 = {dots[0]:.2f} < q·k2 = {dots[1]:.2f} but cos = {coss[0]:.3f} > {coss[1]:.3f}; "
        "equal only for unit vectors"
    )
    lines = (
        "«LLM 的“聚光灯”» (点积 = 相似度): the dot product \"本质上是在计算 Cos相似度\".",
        "q = (1, 0), k1 = (1, 0.2), k2 = (3, 3):",
        f"  dot:    q·k1 = {dots[0]:.3f}   q·k2 = {dots[1]:.3f}   -> the dot product prefers k2",
        f"  cosine: {coss[0]:.3f}          {coss[1]:.3f}         -> the cosine prefers k1",
        f"  after normalising q, k1, k2 to unit length the dot products are {unit[0]:.3f} and {unit[1]:.3f}:",
        "  equal to the cosines. q·k = |q||k| cos(q, k): the length of the key counts as much as its direction,",
        "  which is also why the scores grow with d_k (see `attnlab explain scaling`).",
    )
    return Finding("cosine", verdict, numbers, lines, {"cosine": lambda: _draw_cosine(q, k1, k2, dots, coss)})


def _draw_cosine(q: torch.Tensor, k1: torch.Tensor, k2: torch.Tensor, dots: list[float], coss: list[float]) -> Figure:
    fig = figure(4.6, 4.0)
    ax = fig.subplots()
    for v, name, colour in ((q, "q", "black"), (k1, "k1", "#4c72b0"), (k2, "k2", "#c44e52")):
        ax.annotate("", xy=(float(v[0]), float(v[1])), xytext=(0, 0), arrowprops={"arrowstyle": "->", "color": colour})
        ax.text(float(v[0]) + 0.05, float(v[1]) + 0.08, name, color=colour)
    ax.set(xlim=(-0.3, 3.6), ylim=(-0.5, 3.6), aspect="equal", title="dot product ≠ cosine")
    ax.text(1.2, 1.0, f"q·k1 = {dots[0]:.2f}, cos = {coss[0]:.2f}", color="#4c72b0", fontsize=8)
    ax.text(0.1, 3.3, f"q·k2 = {dots[1]:.2f}, cos = {coss[1]:.2f}", color="#c44e52", fontsize=8)
    ax.grid(alpha=0.3)
    return fig


# ----- temperature --------------------------------------------------------------------------------
def temperature(*, rows: int = 2000, keys: int = 16, d_k: int = 64, seed: int = 0) -> Finding:
    """Mean largest weight of scaled dot-product attention at temperatures tau = 0.5, 1, 2 (softmax(s / tau)),
    through attnlab's ``attention(..., temperature=tau)`` on seeded N(0, 1) queries and keys."""
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(1, 1, rows, d_k, generator=gen, dtype=torch.float64)  # (B, H, L, D)
    k = torch.randn(1, 1, keys, d_k, generator=gen, dtype=torch.float64)  # (B, H, S, D)
    v = torch.randn(1, 1, keys, 1, generator=gen, dtype=torch.float64)
    top: dict[float, float] = {}
    example: dict[float, list[float]] = {}
    for tau in TAUS:
        _, w = attention(q, k, v, temperature=tau)
        assert w is not None
        top[tau] = w.amax(-1).mean().item()
        example[tau] = w[0, 0, 0].tolist()
    sharper = all(top[a] > top[b] for a, b in itertools.pairwise(TAUS))
    numbers = {"mean_max_weight": top, "sharpens_below_one": sharper, "uniform": 1 / keys}
    verdict = (
        ("true: " if sharper else "not seen: ")
        + "mean largest weight "
        + ", ".join(f"{top[t]:.3f} at τ = {t:g}" for t in TAUS)
        + (" (τ < 1 sharpens, τ > 1 flattens)" if sharper else "")
    )
    lines = (
        "«第二章：注意力机制的数学原理» (能量模型, 温度 τ): α_i = softmax(q·k_i / τ); τ controls how sharp it is.",
        f"{rows} queries, {keys} keys, d_k = {d_k}, scores scaled by sqrt(d_k), then divided by τ:",
        *(f"  τ = {t:<4g} mean largest weight {top[t]:.3f}" for t in TAUS),
        f"  (uniform would be {1 / keys:.4f}).  In attnlab: attention(q, k, v, temperature=τ).",
        "Note: dividing by sqrt(d_k) is itself a temperature τ = sqrt(d_k) on the raw dot product.",
    )
    return Finding("temperature", verdict, numbers, lines, {"temperature": lambda: _draw_temperature(example, keys)})


def _draw_temperature(example: dict[float, list[float]], keys: int) -> Figure:
    fig = figure(6.5, 3.2)
    ax = fig.subplots()
    width = 0.8 / len(example)
    for i, (tau, w) in enumerate(example.items()):
        order = sorted(range(keys), key=lambda j: -example[1.0][j])
        ax.bar([j + (i - 1) * width for j in range(keys)], [w[j] for j in order], width=width, label=f"τ = {tau:g}")
    ax.set(xlabel="key (sorted by the τ = 1 weight)", ylabel="weight",
           title="one query's weights at three temperatures")
    ax.set_xticks([])
    ax.legend()
    return fig


__all__ = ["cosine", "softmax", "temperature"]
