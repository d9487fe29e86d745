"""The head detector of TransformerLens (``transformer_lens.head_detector.detect_head``, its ``"mul"`` measure and
no exclusions) as pure functions of attention weights and tokens: per sequence, a 0/1 detection pattern built from
the tokens themselves, and per head the share of its attention that falls on it, ``sum(A * P) / sum(A)``, averaged
over the sequences.  Training reads it every few steps (``attnlab train lm``), ``attnlab.analysis.induction`` over
a captured model; a test checks it against TransformerLens to 1e-6.

* ``previous token``: ones at ``(i, i - 1)``;
* ``duplicate token``: ones at every ``(i, j)``, ``j < i``, where token ``j`` equals token ``i``;
* ``induction``: ones at ``(i, j + 1)`` for every such ``j``: the key after an earlier copy of the query's token.

Letters: N sequences, L layers, H heads, Q positions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from ..errors import InputError, ShapeError

__all__ = ["DETECTOR_PATTERNS", "detection_patterns", "detector_scores", "repeated_tokens"]

DETECTOR_PATTERNS = ("previous token", "duplicate token", "induction")


def detection_patterns(tokens: Any) -> dict[str, np.ndarray]:
    """``{pattern: (Q, Q)}`` 0/1 lower-triangular matrices for one sequence of ``Q`` token ids, as TransformerLens'
    ``get_*_detection_pattern``: the key just before each query; every earlier key with the query's token; the key
    after every earlier key with the query's token."""
    t = np.asarray(tokens).reshape(-1)  # (Q,)
    q = len(t)
    previous = np.eye(q, k=-1)  # (Q, Q), ones at (i, i - 1)
    duplicate = np.tril((t[:, None] == t[None, :]).astype(np.float64), k=-1)  # (Q, Q), j < i with t_j = t_i
    induction = np.zeros((q, q))
    induction[:, 1:] = duplicate[:, :-1]  # the key after each earlier copy
    return {"previous token": previous, "duplicate token": duplicate, "induction": np.tril(induction)}


def detector_scores(weights: Any, tokens: Any) -> dict[str, np.ndarray]:
    """``{pattern: (L, H)}`` for ``weights`` ``(N, L, H, Q, Q)`` of ``N`` sequences ``tokens`` ``(N, Q)``: the
    mean over the sequences of ``sum(A * P) / sum(A)`` per head (TransformerLens' ``detect_head``, ``"mul"``)."""
    a = np.asarray(weights, dtype=np.float64)
    t = np.asarray(tokens)
    if a.ndim != 5 or t.shape != (a.shape[0], a.shape[3]) or a.shape[3] != a.shape[4]:
        raise ShapeError(f"need weights (N, L, H, Q, Q) and tokens (N, Q), got {a.shape} and {t.shape}")
    out = {name: np.zeros(a.shape[1:3]) for name in DETECTOR_PATTERNS}
    for n in range(a.shape[0]):
        total = a[n].sum((-2, -1))  # (L, H)
        for name, pattern in detection_patterns(t[n]).items():
            out[name] += (a[n] * pattern).sum((-2, -1)) / total
    return {name: v / a.shape[0] for name, v in out.items()}


def repeated_tokens(vocab_size: int, length: int, batch: int, *, seed: int = 0, bos: int | None = None,
                    low: int = 0) -> Tensor:
    """``(batch, 2 * length [+ 1])`` int64: random tokens from ``low .. vocab_size - 1``, repeated
    twice, after ``bos`` when one is given.  ``low`` keeps special ids (padding, BOS) out."""
    if length < 2 or batch < 1 or vocab_size - low < 2:
        raise InputError(f"need length >= 2, batch >= 1 and two or more token ids to draw from; got length={length}, "
                         f"batch={batch}, ids {low}..{vocab_size - 1}")
    gen = torch.Generator().manual_seed(seed)
    r = torch.randint(low, vocab_size, (batch, length), generator=gen)  # (B, T)
    parts = [r, r]
    if bos is not None:
        parts.insert(0, torch.full((batch, 1), bos, dtype=torch.long))
    return torch.cat(parts, dim=1)  # (B, 2T [+1])

