"""Tiny translation models and sources for the seq2seq tests (odd sizes, float64 where exactness is checked)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from attnlab.models import Seq2Seq, Seq2SeqConfig, TransformerSeq2Seq, TransformerSeq2SeqConfig

PAD, UNK, BOS, EOS = 0, 1, 2, 3
SRC_VOCAB, TGT_VOCAB = 11, 9

Model = Seq2Seq | TransformerSeq2Seq


def gru(vocab: int = TGT_VOCAB, **options: object) -> Seq2Seq:
    return Seq2Seq(Seq2SeqConfig(SRC_VOCAB, vocab, d_embed=6, d_hidden=10, dropout=0.0, max_length=12,
                                 **options))  # type: ignore[arg-type]


def transformer(vocab: int = TGT_VOCAB, **options: object) -> TransformerSeq2Seq:
    return TransformerSeq2Seq(TransformerSeq2SeqConfig(SRC_VOCAB, vocab, d_model=12, n_heads=3, d_ff=20, dropout=0.0,
                                                       max_length=12, **options))  # type: ignore[arg-type]


# every decoder variant: Bahdanau, Luong with each score and with/without input feeding, the transformer
FACTORIES: dict[str, Callable[..., Model]] = {
    "bahdanau": lambda vocab=TGT_VOCAB: gru(vocab),
    "luong-concat": lambda vocab=TGT_VOCAB: gru(vocab, attention="luong", score="concat"),
    "luong-dot": lambda vocab=TGT_VOCAB: gru(vocab, attention="luong", score="dot", input_feeding=False),
    "luong-general": lambda vocab=TGT_VOCAB: gru(vocab, attention="luong", score="general"),
    "luong-location": lambda vocab=TGT_VOCAB: gru(vocab, attention="luong", score="location"),
    "transformer": lambda vocab=TGT_VOCAB: transformer(vocab),
}


def make(name: str, vocab: int = TGT_VOCAB, eos_bias: float = 0.0) -> Model:
    """A float64 model in eval mode whose EOS logit is raised by ``eos_bias`` (so hypotheses end at varied
    lengths) and whose weights are scaled up (so its distributions are peaked enough to matter)."""
    model = FACTORIES[name](vocab).double().eval()
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(2.0)
        model.out.bias[EOS] += eos_bias
    return model


def sources(lengths: list[int], width: int | None = None, seed: int = 0) -> Tensor:
    """Right-padded ``(B, width)`` source ids: ``lengths[i] - 1`` random tokens then EOS, then PAD."""
    g = torch.Generator().manual_seed(seed)
    width = max(lengths) if width is None else width
    src = torch.full((len(lengths), width), PAD, dtype=torch.long)
    for i, n in enumerate(lengths):
        src[i, : n - 1] = torch.randint(4, SRC_VOCAB, (n - 1,), generator=g)
        src[i, n - 1] = EOS
    return src


def targets(lengths: list[int], width: int | None = None, seed: int = 1) -> Tensor:
    """Right-padded decoder inputs ``(B, width)``: BOS then ``lengths[i] - 1`` random tokens, then PAD."""
    g = torch.Generator().manual_seed(seed)
    width = max(lengths) if width is None else width
    tgt = torch.full((len(lengths), width), PAD, dtype=torch.long)
    for i, n in enumerate(lengths):
        tgt[i, 0] = BOS
        tgt[i, 1:n] = torch.randint(4, TGT_VOCAB, (n - 1,), generator=g)
    return tgt


def sequence_log_prob(model: Model, src: Tensor, tokens: list[int], ended: bool) -> float:
    """log p(tokens [+ EOS] | src) by teacher forcing one source (``src`` ``(1, S)``), float64."""
    out = tokens + ([EOS] if ended else [])
    tgt_in = torch.tensor([[BOS, *out[:-1]]])
    with torch.no_grad():
        logp = torch.log_softmax(model(src, tgt_in).double(), dim=-1)[0]  # (T, V)
    return float(sum(logp[t, y] for t, y in enumerate(out)))
