"""Masks (掩码), and two bugs in the tutorials' own code that are worth teaching.

1. «万字深度解析注意力机制全景» builds a decoder self-attention (解码器自注意力, "带掩码") by passing
   ``create_mask(n)`` to its ``MultiHeadAttention``, whose ``forward(Q, K, V, mask=None)`` never hands the
   mask on.  The "masked" decoder sees the future: change the last token and position 0's output moves.
2. «第二章：注意力机制的数学原理» builds its causal mask as True = blocked
   (``torch.triu(ones, diagonal=1).bool()``, "上三角为True（需要掩蔽）") and its attention blocks where
   ``mask == 0``.  Together they block the past and the diagonal and allow only the future: row 0 puts
   all its weight on later tokens, and the last row, with nothing allowed, spreads evenly over everything.

attnlab's convention: a boolean mask is True = may attend; ``causal=True`` needs no mask at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from .. import masks as M
from ..functional import attention
from ..layers import MultiHeadAttention
from ..viz.static import figure
from ._finding import Finding
from ._tutorial_code import (
    PanoramaMultiHeadAttention,
    math_generate_square_subsequent_mask,
    math_scaled_dot_product_attention,
    panorama_create_mask,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _future_share(w: torch.Tensor) -> torch.Tensor:
    """Per query row of ``(L, L)`` weights, the weight on keys after it."""
    n = w.shape[-1]
    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    return (w * future).sum(-1)


def _edit_last(n: int, d: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(1, n, d, generator=gen)  # (B, T, D)
    edited = x.clone()
    edited[:, -1] = torch.randn(d, generator=gen) * 3  # a different last token
    return x, edited


def masking(*, n: int = 6, d_model: int = 8, n_heads: int = 2, seed: int = 0) -> Finding:
    """Run both tutorial bugs and attnlab's convention on the same seeded inputs; see the module docstring."""
    gen = torch.Generator().manual_seed(seed)
    x, edited = _edit_last(n, d_model, gen)

    # Bug 1: the panorama tutorial's decoder self-attention, called exactly as the tutorial calls it.
    torch.manual_seed(seed)  # the tutorial's nn.Linear layers draw from the global generator
    theirs = PanoramaMultiHeadAttention(d_model, n_heads)
    mask = panorama_create_mask(n)
    with torch.no_grad():
        moved_theirs = (theirs(edited, edited, edited, mask)[0] - theirs(x, x, x, mask)[0])[0].abs().amax(-1)  # (T,)
        ours = MultiHeadAttention(d_model, n_heads)
        moved_ours = (ours(edited, causal=True)[0] - ours(x, causal=True)[0])[0].abs().amax(-1)  # (T,)

    # Bug 2: the math chapter's True = blocked mask into its own "0 = blocked" attention.
    q, k, v = (torch.randn(1, 1, n, d_model, generator=gen) for _ in range(3))  # (B, H, T, D)
    blocked = math_generate_square_subsequent_mask(n)
    _, w_theirs = math_scaled_dot_product_attention(q, k, v, blocked)
    _, w_causal = attention(q, k, v, causal=True)
    _, w_mask = attention(q, k, v, mask=M.causal())
    _, w_inverted = attention(q, k, v, mask=~blocked)
    _, w_as_given = attention(q, k, v, mask=blocked)  # the same mistake made against attnlab's convention
    assert w_causal is not None and w_mask is not None and w_inverted is not None and w_as_given is not None
    fut = {name: _future_share(w[0, 0]) for name, w in (
        ("tutorial", w_theirs), ("attnlab_causal", w_causal), ("attnlab_mask", w_mask),
        ("attnlab_inverted", w_inverted), ("attnlab_given_blocked", w_as_given))}
    numbers = {
        "tutorial_mha_pos0_change": moved_theirs[0].item(),
        "tutorial_mha_change": moved_theirs.tolist(),
        "attnlab_mha_pos0_change": moved_ours[0].item(),
        "attnlab_mha_change": moved_ours.tolist(),
        "anti_causal_row0_future": fut["tutorial"][0].item(),
        "anti_causal_last_row": w_theirs[0, 0, -1].tolist(),
        "anti_causal_future_share": fut["tutorial"].tolist(),
        "attnlab_future_share": max(fut[k].max().item() for k in ("attnlab_causal", "attnlab_mask",
                                                                    "attnlab_inverted")),
        "attnlab_given_blocked_row0_future": fut["attnlab_given_blocked"][0].item(),
    }
    verdict = (
        f"two tutorial bugs reproduced: the 'masked' MHA ignores its mask (position 0 moves by "
        f"{numbers['tutorial_mha_pos0_change']:.3f} when the last token changes; attnlab causal: "
        f"{numbers['attnlab_mha_pos0_change']:.1g}); True = blocked into mask == 0 is anti-causal (row 0 puts "
        f"{numbers['anti_causal_row0_future']:.0%} on the future)"
    )
    lines = (
        "1. «万字深度解析注意力机制全景», 解码器自注意力(带掩码): decoder_self_attn(tgt, tgt, tgt, create_mask(n)).",
        "   Its MultiHeadAttention.forward(Q, K, V, mask=None) calls scaled_dot_product_attention(Q, K, V): the",
        "   mask is dropped. Largest change of each position's output when only the last token changes:",
        "   position         " + " ".join(f"{i:7d}" for i in range(n)),
        "   tutorial MHA     " + " ".join(f"{v:7.4f}" for v in numbers["tutorial_mha_change"]),
        "   attnlab causal   " + " ".join(f"{v:7.4f}" for v in numbers["attnlab_mha_change"]),
        "   (attnlab: MultiHeadAttention(d_model, n_heads)(x, causal=True); only the last position may move.)",
        "",
        "2. «第二章：注意力机制的数学原理», 掩码注意力: generate_square_subsequent_mask = triu(ones, 1).bool(),",
        "   \"True = 需要掩蔽\", fed to its own attention that blocks where mask == 0. Weight on future keys per row:",
        "   row              " + " ".join(f"{i:7d}" for i in range(n)),
        "   tutorial         " + " ".join(f"{v:7.4f}" for v in numbers["anti_causal_future_share"]),
        f"   row 0 puts {numbers['anti_causal_row0_future']:.4f} of its weight on later tokens; the last row has no",
        "   allowed key, so -1e9 everywhere gives it uniform weights "
        f"{[round(v, 3) for v in numbers['anti_causal_last_row']]}.",
        f"   attnlab causal=True, mask=masks.causal() or mask=~that_mask: at most {numbers['attnlab_future_share']:.1g}"
        " on the future.",
        "   Beware: attnlab's boolean masks are True = may attend (as torch's scaled_dot_product_attention), so",
        f"   passing the tutorial's True = blocked mask to attnlab unchanged is the same bug (row 0: "
        f"{numbers['attnlab_given_blocked_row0_future']:.0%} on the future).",
        "   torch.nn.MultiheadAttention uses True = blocked: convert once at the boundary "
        "(attnlab.layers.from_torch_masks).",
    )
    weights = {
        "tutorial: triu mask into mask == 0": w_theirs[0, 0],
        "attnlab: causal=True": w_causal[0, 0],
    }
    return Finding("masks", verdict, numbers, lines, {"masks": lambda: _draw(weights, numbers, n)})


def _draw(weights: dict[str, torch.Tensor], numbers: dict, n: int) -> Figure:
    from ..viz import heatmap

    fig = figure(13.0, 3.9)
    axes = fig.subplots(1, 3)
    for ax, (title, w) in zip(axes[:2], weights.items(), strict=True):
        heatmap(w, ax=ax, annotate=True, title=title, vmin=0.0, vmax=1.0)
    ax = axes[2]
    pos = range(n - 1)  # the positions before the edited token: a causal decoder must not move them
    ax.bar([p - 0.2 for p in pos], numbers["tutorial_mha_change"][:-1], width=0.4, color="#c44e52",
           label="tutorial MHA + create_mask")
    ax.bar([p + 0.2 for p in pos], numbers["attnlab_mha_change"][:-1], width=0.4, color="#55a868",
           label="attnlab MHA, causal=True (all 0)")
    ax.set(xlabel=f"position (before the edited token {n - 1})", ylabel="max |change of output|",
           title="last token edited: do outputs move?")
    ax.set_xticks(list(pos))
    ax.set_ylim(0, 1.35 * max(numbers["tutorial_mha_change"][:-1]))  # room for the legend
    ax.legend(fontsize=8)
    return fig
