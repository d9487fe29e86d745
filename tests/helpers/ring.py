"""The float64 dense reference ring attention is compared with: scores, mask, log-sum-exp, output."""

from __future__ import annotations

import torch
from torch import Tensor


def dense(q: Tensor, k: Tensor, v: Tensor, *, causal: bool = False, mask: Tensor | None = None,
          scale: float | None = None) -> tuple[Tensor, Tensor]:
    """``(output, lse)`` of exact attention in float64; ``mask`` ``(B, N)`` True = real key; empty rows: 0, -inf."""
    q64, k64, v64 = q.double(), k.double(), v.double()
    n = q.shape[-2]
    s = q64 @ k64.transpose(-2, -1) * (scale if scale is not None else q.shape[-1] ** -0.5)  # (B, H, N, N)
    keep = torch.ones(n, n, dtype=torch.bool).tril() if causal else torch.ones(n, n, dtype=torch.bool)
    keep = keep.expand(*s.shape)
    if mask is not None:
        keep = keep & mask[:, None, None, :]
    s = s.masked_fill(~keep, float("-inf"))
    lse = torch.logsumexp(s, dim=-1)  # (B, H, N)
    p = torch.exp(s - torch.where(torch.isfinite(lse), lse, torch.zeros_like(lse))[..., None])
    return p @ v64, lse


class TinyLM(torch.nn.Module):
    """A tiny causal language model from attnlab's own layers: token + learned position embeddings, two pre-norm
    encoder layers under a causal mask (the second with rotary positions), a linear head."""

    def __init__(self, kernel: str, vocab: int = 11, max_len: int = 64):
        super().__init__()
        from attnlab.layers import TransformerEncoderLayer

        self.tokens = torch.nn.Embedding(vocab, 16)
        self.positions = torch.nn.Embedding(max_len, 16)
        self.layers = torch.nn.ModuleList([
            TransformerEncoderLayer(16, 2, 24, norm_first=True, kernel=kernel),
            TransformerEncoderLayer(16, 2, 24, norm_first=True, kernel=kernel, rotary=True),
        ])
        self.head = torch.nn.Linear(16, vocab)

    def forward(self, x: Tensor, positions: Tensor) -> Tensor:
        h = self.tokens(x) + self.positions(positions)  # (B, n, 16)
        for layer in self.layers:
            h = layer(h, causal=True)
        return self.head(h)  # (B, n, vocab)


def train_steps(tokens: Tensor, steps: int, *, kernel: str, layout: str | None) -> list[float]:
    """The all-ranks mean loss of each of ``steps`` Adam steps on ``tokens`` (B, N + 1): one process over the whole
    sequence (``layout=None``), or sequence-parallel over the ranks of the default group."""
    from contextlib import nullcontext

    import torch.nn.functional as F

    from attnlab.parallel import all_reduce_gradients, sequence_parallel, token_mean

    torch.manual_seed(0)
    model = TinyLM(kernel)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]  # (B, N) each: position t predicts token t + 1
    n = inputs.shape[1]
    losses = []
    with (sequence_parallel(n, layout=layout) if layout else nullcontext()) as sp:  # type: ignore[arg-type]
        x = sp.shard(inputs) if sp else inputs  # (B, n)
        y = sp.shard(targets, fill=-100) if sp else targets  # padding is no target
        pos = sp.positions() if sp else torch.arange(n)  # (n,)
        for _ in range(steps):
            opt.zero_grad()
            logits = model(x, pos)  # (B, n, vocab)
            loss_sum = F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=-100, reduction="sum")
            loss, mean = token_mean(loss_sum, int((y != -100).sum()))
            loss.backward()
            all_reduce_gradients(model.parameters())
            opt.step()
            losses.append(float(mean))
    return losses
