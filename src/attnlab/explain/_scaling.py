"""Why scale by sqrt(d_k) (缩放点积注意力): variance, softmax saturation and the gradient, measured.

The experiment (one seeded generator, float64):
    For each d_k, draw ``rows`` independent queries q (d_k,) and, per query, ``keys`` keys k_j and values
    v_j (d_k,), every entry i.i.d. N(0, 1).  Scores are s_j = q·k_j (unscaled) or q·k_j / sqrt(d_k)
    (scaled); weights w = softmax(s); output o = sum_j w_j v_j.  The loss is L = o·u with u (d_k,) ~ N(0, 1)
    drawn per row (a random upstream gradient), and g = dL/dq, by autograd.

Measured:
    * var(q·k) / d_k over all rows and keys (the tutorials: Var(q·k) = d_k, so the ratio is 1);
    * the share of rows whose largest weight exceeds 0.99 (a saturated softmax, one-hot in all but name);
    * the median of |g| (a typical query's gradient) and the mean of |g|^2 (dominated by the tail).

Reading: without scaling, as d_k grows the typical row saturates and its gradient vanishes (the median
falls), while the few rows whose top two scores are close get gradients of size ~|k| ~ sqrt(d_k) times the
score gap's slope, so mean |g|^2 explodes.  Both halves of the tutorials' "gradient problem" (梯度消失 and
"梯度方差会爆炸性增长") are true at once; scaling keeps the rows unsaturated and the tail ratio
mean|g|^2 / median|g|^2 near 1.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

from ..viz.static import figure
from ._finding import Finding

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SATURATED = 0.99
D_KS = (8, 16, 32, 64, 128, 256, 512)
VAR_D_KS = (8, 64, 512)


def _run(d_k: int, rows: int, keys: int, scaled: bool, gen: torch.Generator) -> dict[str, float]:
    q = torch.randn(rows, 1, d_k, generator=gen, dtype=torch.float64).requires_grad_()  # (R, 1, D)
    k = torch.randn(rows, keys, d_k, generator=gen, dtype=torch.float64)  # (R, S, D)
    v = torch.randn(rows, keys, d_k, generator=gen, dtype=torch.float64)  # (R, S, D)
    u = torch.randn(rows, 1, d_k, generator=gen, dtype=torch.float64)  # (R, 1, D) upstream gradient
    raw = q @ k.transpose(-2, -1)  # (R, 1, S)
    w = torch.softmax(raw / math.sqrt(d_k) if scaled else raw, dim=-1)  # (R, 1, S)
    ((w @ v) * u).sum().backward()
    assert q.grad is not None
    g = q.grad.norm(dim=-1).flatten()  # (R,)
    return {
        "var_ratio": raw.detach().var().item() / d_k,
        "saturated": (w.detach().amax(-1) > SATURATED).double().mean().item(),
        "median_grad": g.median().item(),
        "mean_sq_grad": (g**2).mean().item(),
    }


def scaling(*, rows: int = 2000, keys: int = 16, seed: int = 0) -> Finding:
    """Var(q·k) = d_k; unscaled softmax saturates; unscaled gradients vanish in the median and explode in the
    tail.  See the module docstring for the exact experiment."""
    gen = torch.Generator().manual_seed(seed)
    runs = {(d, s): _run(d, rows, keys, s, gen) for s in (False, True) for d in D_KS}
    unscaled = {d: runs[d, False] for d in D_KS}
    scaled = {d: runs[d, True] for d in D_KS}
    var = {d: unscaled[d]["var_ratio"] for d in VAR_D_KS}
    small, big = D_KS[0], D_KS[-1]
    peak = max(D_KS, key=lambda d: unscaled[d]["median_grad"])
    med = {d: unscaled[d]["median_grad"] for d in D_KS}
    msq = {d: unscaled[d]["mean_sq_grad"] for d in D_KS}
    numbers = {
        "var_over_d_k": var,
        "saturated_unscaled": unscaled[big]["saturated"],
        "saturated_scaled": scaled[big]["saturated"],
        "median_grad_unscaled": med,
        "mean_sq_grad_unscaled": msq,
        "median_grad_scaled": {d: scaled[d]["median_grad"] for d in D_KS},
        "mean_sq_grad_scaled": {d: scaled[d]["mean_sq_grad"] for d in D_KS},
        "tail_ratio_unscaled": msq[big] / med[big] ** 2,
        "tail_ratio_scaled": scaled[big]["mean_sq_grad"] / scaled[big]["median_grad"] ** 2,
        "d_k_peak": peak,
        "d_k_small": small,
        "d_k_big": big,
    }
    verdict = (
        f"true: var(q·k)/d_k = {', '.join(f'{var[d]:.3f}' for d in VAR_D_KS)} at d_k = "
        f"{', '.join(map(str, VAR_D_KS))}; unscaled, {unscaled[big]['saturated']:.0%} of rows saturate at d_k = {big} "
        f"(scaled: {scaled[big]['saturated']:.0%}); gradients both vanish (median) and explode (mean |g|²)"
    )
    lines = [
        "The tutorials (缩放点积注意力): Var(q·k) = d_k, so divide by sqrt(d_k); unscaled, softmax saturates and",
        "the gradient vanishes (梯度消失) -- one tutorial says its variance explodes instead. Both are true:",
        "",
        "  d_k   var(q·k)/d_k",
        *(f"  {d:4d}  {var[d]:8.3f}" for d in VAR_D_KS),
        "",
        f"softmax saturation at d_k = {big} ({keys} keys): share of rows with max weight > {SATURATED}:",
        f"  unscaled {unscaled[big]['saturated']:.3f}    scaled {scaled[big]['saturated']:.3f}",
        "",
        f"gradient of a random loss w.r.t. the query ({rows} rows, {keys} keys each):",
        "  d_k   median |g| unscaled   mean |g|² unscaled   median |g| scaled   mean |g|² scaled",
        *(
            f"  {d:4d}  {med[d]:18.3f}  {msq[d]:19.1f}  {scaled[d]['median_grad']:18.3f}  "
            f"{scaled[d]['mean_sq_grad']:16.1f}"
            for d in D_KS
        ),
        f"  unscaled: the median falls from {med[peak]:.2f} (d_k = {peak}) to {med[big]:.3f} (d_k = {big}): the "
        "typical",
        f"  gradient vanishes; mean |g|² rises from {msq[small]:.1f} to {msq[big]:.0f}: the tail explodes",
        f"  (mean|g|²/median² = {numbers['tail_ratio_unscaled']:.0f} unscaled, "
        f"{numbers['tail_ratio_scaled']:.1f} scaled).",
        f"  At d_k = {big} the median is {scaled[big]['median_grad']:.2f} scaled against {med[big]:.3f} unscaled.",
    ]
    return Finding("scaling", verdict, numbers, tuple(lines), {"scaling": lambda: _draw(numbers)})


def _draw(n: dict) -> Figure:
    fig = figure(12.5, 3.6)
    a, b, c = fig.subplots(1, 3)
    ds = list(n["var_over_d_k"])
    a.bar([str(d) for d in ds], [n["var_over_d_k"][d] for d in ds], color="#4c72b0")
    a.axhline(1.0, color="black", lw=1, ls="--", label="1: the claim")
    a.set(title="Var(q·k) / d_k", xlabel="d_k", ylabel="measured variance / d_k", ylim=(0, 1.4))
    a.legend(loc="lower right")
    b.bar(["unscaled", "scaled"], [n["saturated_unscaled"], n["saturated_scaled"]], color=["#c44e52", "#55a868"])
    b.set(title=f"rows with max weight > {SATURATED}, d_k = {n['d_k_big']}", ylabel="share of rows", ylim=(0, 1))
    for x, y in enumerate([n["saturated_unscaled"], n["saturated_scaled"]]):
        b.text(x, y + 0.02, f"{y:.0%}", ha="center")
    d_all = list(n["median_grad_unscaled"])
    c.plot(d_all, list(n["median_grad_unscaled"].values()), "o-", color="#c44e52", label="median |g|, unscaled")
    c.plot(d_all, list(n["mean_sq_grad_unscaled"].values()), "s--", color="#c44e52", label="mean |g|², unscaled")
    c.plot(d_all, list(n["median_grad_scaled"].values()), "o-", color="#55a868", label="median |g|, scaled")
    c.plot(d_all, list(n["mean_sq_grad_scaled"].values()), "s--", color="#55a868", label="mean |g|², scaled")
    c.set(xscale="log", yscale="log", title="query gradient: typical vs tail", xlabel="d_k")
    c.set_xticks(d_all, [str(d) for d in d_all])
    c.legend(fontsize=7)
    return fig
