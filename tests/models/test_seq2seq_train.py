"""Teacher-forced training works: a small Bahdanau model learns to reverse 5-digit strings in a few hundred steps."""

from __future__ import annotations

import pytest
import torch
from torch import Tensor
from torch.nn import functional as F

from attnlab.models import Seq2Seq, Seq2SeqConfig

BOS, EOS = 2, 3
DIGITS = range(4, 14)  # ids of the ten digits


def reversal(n: int, g: torch.Generator) -> tuple[Tensor, Tensor, Tensor]:
    """``n`` 5-digit sources (digits, EOS), decoder inputs (BOS, reversed digits), outputs (reversed digits, EOS)."""
    digits = torch.randint(DIGITS.start, DIGITS.stop, (n, 5), generator=g)  # (n, 5)
    rev = digits.flip(1)
    src = torch.cat([digits, torch.full((n, 1), EOS)], dim=1)
    return src, torch.cat([torch.full((n, 1), BOS), rev], dim=1), torch.cat([rev, torch.full((n, 1), EOS)], dim=1)


@pytest.mark.slow
def test_a_bahdanau_model_learns_to_reverse_digits() -> None:
    model = Seq2Seq(Seq2SeqConfig(14, 14, d_embed=16, d_hidden=32, dropout=0.0, max_length=8))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(1)
    losses = []
    for _ in range(160):
        src, tgt_in, tgt_out = reversal(64, g)
        loss = F.cross_entropy(model(src, tgt_in).flatten(0, 1), tgt_out.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] / 20
    src, _, tgt_out = reversal(200, torch.Generator().manual_seed(99))  # (almost surely) unseen strings
    gen = model.generate(src, max_length=7)
    exact = sum(gen.tokens[i] == tgt_out[i, :5].tolist() for i in range(200)) / 200
    assert exact >= 0.98
    # the alignment of a reversal is the anti-diagonal: output digit t attends to source digit 4 - t
    peaks = torch.stack([a.argmax(dim=1) for a in gen.alignment if a.shape[0] == 5])  # (n, 5)
    assert (peaks == torch.arange(4, -1, -1)).float().mean() >= 0.9
