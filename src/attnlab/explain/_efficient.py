"""The panorama tutorial's "efficient attention" (高效注意力实现) and Shen et al.'s, which attnlab implements.

The tutorial computes ``Q (softmax_pos(K)^T V)``: the keys are normalised over positions, the queries not
at all.  Its implied attention matrix ``A = Q softmax_pos(K)^T`` (so that output = A V) has rows summing to
``sum_e Q[i, e]`` and negative entries: not attention weights.  Shen et al. (2021) also normalise each
query over its features, ``A = softmax_feat(Q) softmax_pos(K)^T``: non-negative rows that sum to 1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from ..functional import efficient_attention
from ..viz.static import figure
from ._finding import Finding
from ._tutorial_code import EXAMPLE_X, PanoramaEfficientAttention

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def efficient(*, inits: int = 8, seed: int = 0) -> Finding:
    """Run the tutorial's ``EfficientAttention(embed_size=8)`` on its own 4-token ``x`` for ``inits`` seeded
    initialisations (each run of the tutorial draws new random weights), recover its implied weights, and
    compare with :func:`attnlab.functional.efficient_attention` on the same projections."""
    x = EXAMPLE_X  # (1, N, E) = (1, 4, 8), the tutorials' input
    a_t, a_s, gaps, shen_gaps = [], [], [], []
    for i in range(inits):
        torch.manual_seed(seed + i)  # the tutorial's nn.Linear layers draw from the global generator
        module = PanoramaEfficientAttention(x.shape[-1])
        with torch.no_grad():
            out = module(x)  # (1, N, E), the tutorial's forward, unchanged
            q, k, v = module.to_query(x), module.to_key(x), module.to_value(x)  # (1, N, E) each
            a_tutorial = q @ k.softmax(dim=1).transpose(1, 2)  # (1, N, N): out = A V
            a_shen = q.softmax(dim=-1) @ k.softmax(dim=1).transpose(1, 2)  # (1, N, N)
            shen_out = efficient_attention(q[:, None], k[:, None], v[:, None])[:, 0]  # add/drop a heads axis
        a_t.append(a_tutorial[0])
        a_s.append(a_shen[0])
        gaps.append((a_tutorial @ v - out).abs().max().item())
        shen_gaps.append((a_shen @ v - shen_out).abs().max().item())
    a_tutorial, a_shen = torch.stack(a_t), torch.stack(a_s)  # (inits, N, N)
    n, batch, embed_size = x.shape[1], inits, x.shape[-1]
    rows_t, rows_s = a_tutorial.sum(-1), a_shen.sum(-1)  # (B, N)
    numbers = {
        "implied_matches_output": max(gaps),
        "shen_implied_matches_attnlab": max(shen_gaps),
        "tutorial_row_sum_min": rows_t.min().item(), "tutorial_row_sum_max": rows_t.max().item(),
        "tutorial_negative_share": (a_tutorial < 0).double().mean().item(),
        "shen_row_sum_max_error": (rows_s - 1).abs().max().item(), "shen_min_weight": a_shen.min().item(),
    }
    verdict = (
        f"the tutorial's snippet is unnormalised: implied rows sum from {numbers['tutorial_row_sum_min']:.2f} to "
        f"{numbers['tutorial_row_sum_max']:.2f}, {numbers['tutorial_negative_share']:.0%} of weights negative; "
        "Shen et al.'s (attnlab) rows sum to 1"
    )
    lines = (
        "«万字深度解析注意力机制全景» 5.3 高效注意力实现: K = K.softmax(dim=1); output = Q (K^T V), \"线性复杂度\".",
        "The linear cost is right (O(n d²), no n x n matrix); the weights are not weights. With A = Q softmax_pos(K)^T",
        f"(output = A V, checked: max diff {numbers['implied_matches_output']:.1g}), on the tutorials' x "
        f"({n} tokens, embed_size {embed_size}) with {batch} seeded initialisations:",
        f"  tutorial: row sums from {numbers['tutorial_row_sum_min']:.3f} to {numbers['tutorial_row_sum_max']:.3f}, "
        f"{numbers['tutorial_negative_share']:.1%} of entries negative",
        f"  Shen et al. (attnlab.functional.efficient_attention, kernel=\"efficient\"): rows sum to 1 within "
        f"{numbers['shen_row_sum_max_error']:.1g}, smallest weight {numbers['shen_min_weight']:.2g} >= 0",
        "  (attnlab's output equals softmax_feat(Q) softmax_pos(K)^T V within "
        f"{numbers['shen_implied_matches_attnlab']:.1g})",
        "Each row of the tutorial's A sums to sum_e Q[i, e]: the fix is one softmax over the query's features.",
    )
    return Finding("efficient", verdict, numbers, lines, {"efficient": lambda: _draw(a_tutorial[0], a_shen[0])})


def _draw(a_tutorial: torch.Tensor, a_shen: torch.Tensor) -> Figure:
    from matplotlib.colors import TwoSlopeNorm

    fig = figure(11.5, 3.4)
    left, mid, right = fig.subplots(1, 3, width_ratios=[1, 1, 0.8])
    lim = a_tutorial.abs().max().item()
    im = left.imshow(a_tutorial.numpy(), cmap="RdBu_r", norm=TwoSlopeNorm(0.0, -lim, lim))
    left.set(title="tutorial: Q softmax_pos(K)ᵀ", xlabel="key", ylabel="query")
    fig.colorbar(im, ax=left, shrink=0.8, label="implied weight (red > 0, blue < 0)")
    im = mid.imshow(a_shen.numpy(), cmap="viridis", vmin=0.0)
    mid.set(title="Shen et al.: softmax_feat(Q) softmax_pos(K)ᵀ", xlabel="key", ylabel="query")
    fig.colorbar(im, ax=mid, shrink=0.8, label="weight")
    rows = range(a_tutorial.shape[0])
    for ax in (left, mid):
        ax.set_xticks(list(rows))
        ax.set_yticks(list(rows))
    right.set_yticks(list(rows))
    right.barh(list(rows), a_tutorial.sum(-1).tolist(), color="#c44e52", label="tutorial")
    right.plot(a_shen.sum(-1).tolist(), list(rows), "o", color="#55a868", label="Shen et al.")
    right.axvline(1.0, color="black", lw=0.8, ls="--")
    right.invert_yaxis()
    right.set(title="row sums (should be 1)", xlabel="sum of the row's weights", ylabel="query")
    right.legend(fontsize=8)
    return fig
