"""Tiny attnlab models the analysis tests train or build by hand (seconds on a CPU)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from attnlab.layers import MultiHeadAttention


class AttentionOnly(nn.Module):
    """A causal attention-only transformer (Elhage et al. 2021): token and position embeddings, then
    ``layers`` residual multi-head attention blocks, then an unembedding.  No MLPs, no layer norm."""

    def __init__(self, vocab: int, d_model: int, n_heads: int, layers: int, max_len: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(MultiHeadAttention(d_model, n_heads) for _ in range(layers))
        self.unembed = nn.Linear(d_model, vocab)

    def forward(self, ids: Tensor) -> Tensor:
        x = self.embed(ids) + self.pos(torch.arange(ids.shape[1]))  # (B, T, M)
        for block in self.blocks:
            x = x + block(x, causal=True)[0]
        return self.unembed(x)  # (B, T, V)


def train_induction(vocab: int = 24, max_len: int = 20, steps: int = 400, seed: int = 0) -> AttentionOnly:
    """A 2-layer attention-only model trained to continue random sequences repeated with a period that
    changes every step (3 to 10 tokens).  A fixed period could be predicted by a purely positional head
    (attend ``period - 1`` tokens back); a changing one needs an induction head (fed by a previous-token
    head), the circuit a 2-layer attention-only model learns (Olsson et al. 2022)."""
    torch.manual_seed(seed)
    model = AttentionOnly(vocab, d_model=32, n_heads=2, layers=2, max_len=max_len)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        period = int(torch.randint(3, 11, (1,), generator=gen))
        r = torch.randint(0, vocab, (64, period), generator=gen)
        ids = r.repeat(1, max_len // period + 2)[:, : max_len + 1]  # (B, max_len + 1)
        logits = model(ids[:, :-1])  # (B, max_len, V)
        target = ids[:, 1:]
        loss = nn.functional.cross_entropy(logits[:, period - 1:].reshape(-1, vocab),
                                           target[:, period - 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()
