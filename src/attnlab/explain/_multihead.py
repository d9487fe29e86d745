"""Multi-head attention (多头注意力): the parameter count, and d_k != d_v."""

from __future__ import annotations

import torch

from ..layers import MultiHeadAttention
from ._finding import Finding


def _count(module: torch.nn.Module) -> tuple[int, int]:
    """(weights, biases): parameters with two or more dims, and vectors."""
    weights = sum(p.numel() for p in module.parameters() if p.ndim >= 2)
    biases = sum(p.numel() for p in module.parameters() if p.ndim < 2)
    return weights, biases


def multihead(*, d_model: int = 512, n_heads: int = 8, seed: int = 0) -> Finding:
    """Count the parameters of attnlab's MultiHeadAttention with ``n_heads`` heads and with one head at the
    same ``d_model``; run a layer whose per-head d_v differs from d_k."""
    multi, single = MultiHeadAttention(d_model, n_heads), MultiHeadAttention(d_model, 1)
    (wm, bm), (ws, bs) = _count(multi), _count(single)
    d_k = d_model // n_heads
    formula = 3 * n_heads * d_model * d_k + n_heads * d_k * d_model  # the tutorial's table, d_k = d_v = d_model / h

    gen = torch.Generator().manual_seed(seed)
    odd = MultiHeadAttention(24, 3, d_k=5, d_v=11)
    x = torch.randn(2, 7, 24, generator=gen)  # (B, T, D)
    with torch.no_grad():
        out, w = odd(x, return_weights=True)
    assert w is not None
    numbers = {
        "weights_multi": wm, "biases_multi": bm, "weights_single": ws, "biases_single": bs,
        "tutorial_formula": formula, "equal": (wm, bm) == (ws, bs),
        "dk_ne_dv_output": tuple(out.shape), "dk_ne_dv_weights": tuple(w.shape),
        "dk_ne_dv_value_proj": tuple(odd.v_proj.weight.shape), "dk_ne_dv_query_proj": tuple(odd.q_proj.weight.shape),
    }
    verdict = (
        f"{'true' if numbers['equal'] else 'false'}: {n_heads} heads and 1 head at d_model = {d_model} both have "
        f"{wm:,} weights + {bm:,} biases; d_k != d_v works"
    )
    lines = (
        "«第二章：注意力机制的数学原理» (2.3.2 参数量分析): with d_k = d_v = d_model / h the total equals single-head.",
        f"  MultiHeadAttention({d_model}, {n_heads}): {wm:,} weights + {bm:,} biases",
        f"  MultiHeadAttention({d_model}, 1):  {ws:,} weights + {bs:,} biases",
        f"  the tutorial's table, 3·h·d_model·d_k + h·d_v·d_model = {formula:,} (biases not counted there)",
        "  Heads split the same d_model into h subspaces (拼接 Concat, then W_O); they add no parameters.",
        "d_k != d_v: MultiHeadAttention(24, 3, d_k=5, d_v=11)",
        f"  W_Q {numbers['dk_ne_dv_query_proj']}, W_V {numbers['dk_ne_dv_value_proj']}, weights "
        f"{numbers['dk_ne_dv_weights']} (B, H, L, S), output {numbers['dk_ne_dv_output']}",
        "  Scores need d_k only (q·k); the values' width d_v only sets the output's width before W_O.",
    )
    return Finding("multihead", verdict, numbers, lines)
