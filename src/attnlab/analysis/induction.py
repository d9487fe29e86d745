"""Previous-token, duplicate-token and induction heads of causal models, found the way TransformerLens'
``head_detector`` and Olsson et al. (2022) find them: run the model on random tokens repeated twice,
``[bos] r_1 .. r_T r_1 .. r_T``, where only a head that copies from context can predict the second half.

For each head (weights ``(L, H, Q, K)``, the mean over the batch of such inputs):

* ``previous token``: the mean weight of every query (but the first) on the token just before it;
* ``duplicate token``: the mean weight of each second-half query on the same token in the first half
  (position ``q - T``);
* ``induction``: the mean weight of each second-half query on the token *after* its earlier copy
  (position ``q - T + 1``): the key an induction head reads to predict what comes next.

A random sequence has no other structure, so a high score can only come from the pattern.  The label
threshold (``DETECT`` in :mod:`attnlab.analysis.labels`) is documented there.

:func:`detector_scores` scores the same three patterns exactly as TransformerLens' ``detect_head`` does (its
``"mul"`` measure, no exclusions): per sequence, a 0/1 detection pattern built from the tokens themselves (every
earlier copy of the query's token for ``duplicate token``, the token after every earlier copy for ``induction``),
the score ``sum(A * P) / sum(A)``, averaged over the sequences.  It differs from :func:`causal_scores` by counting
the first query's row in the denominator and accidental repeats of a random token in the pattern; training
(``attnlab train lm``) records it, and a test checks it against TransformerLens to 1e-6.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ..capturing import capture
from ..errors import ShapeError
from ..functional.detectors import DETECTOR_PATTERNS, detection_patterns, detector_scores, repeated_tokens
from .metrics import as_weights

__all__ = ["CAUSAL_PATTERNS", "causal_scores", "detect_causal_heads", "detection_patterns", "detector_scores",
           "head_detector", "repeated_tokens", "text_detector_scores"]

CAUSAL_PATTERNS = DETECTOR_PATTERNS  # the same three names, one definition


def causal_scores(w: Any, length: int, start: int = 0) -> dict[str, np.ndarray]:
    """``{pattern: (L, H)}`` for weights ``(L, H, Q, K)`` on repeated sequences of period ``length``
    that begin at position ``start`` (1 after a BOS token)."""
    a = as_weights(w)
    q, k = a.shape[2], a.shape[3]
    if q != k or q < start + 2 * length:
        raise ShapeError(f"the detectors need self-attention over at least {start + 2 * length} positions "
                         f"(start {start} + 2 x {length}), got {q} x {k}")
    second = np.arange(start + length, start + 2 * length)  # second-half queries
    prev_q = np.arange(max(start, 1), q)
    return {
        "previous token": a[..., prev_q, prev_q - 1].mean(-1),
        "duplicate token": a[..., second, second - length].mean(-1),
        "induction": a[..., second, second - length + 1].mean(-1),
    }


def detect_causal_heads(
    model: nn.Module,
    vocab_size: int,
    *,
    length: int = 20,
    batch: int = 8,
    seed: int = 0,
    bos: int | None = None,
    low: int = 0,
    forward: Callable[[nn.Module, Tensor], Any] | None = None,
) -> dict[str, np.ndarray]:
    """Run ``model`` (under :func:`attnlab.capture`) on :func:`repeated_tokens` and score every head of its
    causal (or, failing that, main) attention stack with :func:`causal_scores`.  ``forward(model, ids)``
    calls the model (default: ``model(ids)``; for Hugging Face, ``lambda m, ids: m(input_ids=ids)``)."""
    ids = repeated_tokens(vocab_size, length, batch, seed=seed, bos=bos, low=low)
    call = forward if forward is not None else (lambda m, x: m(x))
    with torch.no_grad(), capture(model) as trace:
        call(model, ids)
    kind = "causal" if "causal" in trace.kinds else trace.main_kind
    n_b = trace.select(kind=kind)[0].weights.shape[0]
    mean = sum(trace.stack(kind, b).double() for b in range(n_b)) / n_b  # (L, H, Q, K)
    return causal_scores(mean, length, start=1 if bos is not None else 0)


@torch.no_grad()
def head_detector(model: nn.Module, tokens: Tensor,
                  forward: Callable[[nn.Module, Tensor], Any] | None = None) -> dict[str, np.ndarray]:
    """:func:`detector_scores` of ``model``'s causal (or main) attention stack on ``tokens`` ``(N, Q)``, captured
    (the model is put in eval mode for the call and back as it was)."""
    call = forward if forward is not None else (lambda m, x: m(x))
    was_training = model.training
    model.eval()
    try:
        with capture(model) as trace:
            call(model, tokens)
    finally:
        model.train(was_training)
    kind = "causal" if "causal" in trace.kinds else trace.main_kind
    weights = np.stack([trace.stack(kind, b).double().numpy() for b in range(tokens.shape[0])])  # (N, L, H, Q, Q)
    return detector_scores(weights, tokens.numpy())


def text_detector_scores(w: Any, tokens: Sequence[str]) -> dict[str, np.ndarray]:
    """``{pattern: (L, H)}``: TransformerLens' detector (:func:`detector_scores`) on one captured text, weights
    ``(L, H, Q, Q)`` of a causal stack and its ``Q`` tokens (equal strings are the same token).  What a head does on
    *this* text: on a string said twice, an induction head reads the token after the earlier copy of each token.
    A pattern the text cannot show (no token occurs twice: no duplicate-token or induction key; one token: no
    previous one) is NaN for every head, not 0."""
    a = as_weights(w)
    if a.shape[2] != a.shape[3] or len(tokens) != a.shape[3]:
        raise ShapeError(f"the detectors need self-attention over the text's {len(tokens)} tokens, got weights "
                         f"{a.shape[2]} x {a.shape[3]}")
    index: dict[str, int] = {}
    ids = np.array([index.setdefault(t, len(index)) for t in tokens])  # (Q,): one id per distinct token
    scores = detector_scores(a[None], ids[None])
    patterns = detection_patterns(ids)
    return {name: v if patterns[name].any() else np.full_like(v, np.nan) for name, v in scores.items()}
