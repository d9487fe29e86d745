"""A printed walk-through of scaled dot-product attention on the tutorials' 4-token example.

Run it with ``python -m attnlab.tour``.  The input is the ``(1, 4, 8)`` tensor
the tutorials use; the projections are seeded so every run prints the same numbers.
"""

from __future__ import annotations

import math

import torch

from .functional import attention

# The tutorials' example input: batch 1, 4 tokens, 8 features.
EXAMPLE = torch.tensor(
    [
        [
            [1.0, 0.5, 0.8, 2.0, 0.1, 1.5, 0.3, 1.2],
            [0.7, 1.2, 0.4, 1.8, 0.9, 0.6, 1.1, 0.2],
            [1.3, 0.3, 1.7, 0.6, 1.4, 0.8, 0.5, 1.9],
            [0.2, 1.5, 1.1, 0.7, 0.3, 1.8, 1.6, 0.4],
        ]
    ]
)


def _fmt(t: torch.Tensor) -> str:
    return "\n".join("    " + "  ".join(f"{x:7.4f}" for x in row) for row in t.tolist())


def main() -> None:
    torch.manual_seed(0)
    x = EXAMPLE  # (B, T, D) = (1, 4, 8)
    d = x.shape[-1]
    w_q, w_k, w_v = (torch.randn(d, d) / math.sqrt(d) for _ in range(3))
    q, k, v = x @ w_q, x @ w_k, x @ w_v  # (1, 4, 8) each
    print("attnlab tour: scaled dot-product attention on the 4-token example\n")
    print(f"x: {tuple(x.shape)}  (batch, tokens, features)")
    print(f"Q = x W_q: {tuple(q.shape)}   K = x W_k: {tuple(k.shape)}   V = x W_v: {tuple(v.shape)}")
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)
    print(f"\nscores = Q K^T / sqrt(d_k), d_k = {d}:  {tuple(scores.shape[-2:])}")
    print(_fmt(scores[0]))
    out, w = attention(q[:, None], k[:, None], v[:, None])  # add a heads axis: (B, H, T, D)
    assert w is not None
    print("\nweights = softmax(scores) (row i: how much token i attends to each token):")
    print(_fmt(w[0, 0]))
    print("row sums:", "  ".join(f"{s:.6f}" for s in w[0, 0].sum(-1).tolist()))
    print(f"\noutput = weights V: {tuple(out[:, 0].shape)}")
    print(_fmt(out[0, 0]))
    _, wc = attention(q[:, None], k[:, None], v[:, None], causal=True)
    assert wc is not None
    print("\ncausal weights (token i sees tokens 0..i; masked entries are exactly 0):")
    print(_fmt(wc[0, 0]))
    # Why scale: with unit-variance q and k, q.k has variance d_k; dividing by sqrt(d_k) brings it to 1.
    g = torch.Generator().manual_seed(1)
    qs, ks = torch.randn(4096, 512, generator=g), torch.randn(4096, 512, generator=g)
    raw = (qs * ks).sum(-1)
    print(
        f"\nwhy scale: for d_k = 512 and unit-variance q, k: var(q.k) = {raw.var():.1f}, "
        f"var(q.k / sqrt(d_k)) = {(raw / math.sqrt(512)).var():.3f}"
    )


if __name__ == "__main__":
    main()
