"""Every attribution of one text on a model named as the commands name it (:func:`attribute_text`).

Letters: L layers, H heads, n tokens, M d_model, Dv per-head value size, B batch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from ._alti import alti
from ._classifier import embedding_contributions, pooling_reader
from ._gradient import gradient_x_input
from ._logit import alti_logit, pre_norm
from ._norm import norm_attention
from ._value_zeroing import value_zeroing

__all__ = ["TextAttribution", "attribute_text"]


@dataclass(frozen=True)
class TextAttribution:
    """The attributions of one text: ``norm`` ``(L, n, n)`` (Kobayashi's per-layer norms, rows renormalised to sum
    to one), ``value_zeroing`` ``(L, n, n)``, ``alti`` ``(L, n, n)``, and for a classifier ``grad_x_input`` ``(n,)``
    of the predicted class's probability, ``reader`` ``(n,)`` what its pooling reads of the last layer's rows
    (:func:`pooling_reader`) and ``embedding`` ``(n, n)`` its embedding layer's token mixing
    (:func:`embedding_contributions`; the identity without n-gram embeddings) (those three None for an encoder
    without a head), and for a pre-norm classifier ``alti_logit`` ``(n,)``, each input position's signed share
    of the predicted class's logit (:func:`alti_logit`'s ``tokens``; None otherwise).  ``prediction`` is what
    ``attnlab predict`` tells of the text, ``(label, calibrated probability)`` (None for an encoder); the attributions
    explain the class ``label`` on the tokens the model reads at once (a text longer than the model's length warns
    that its first window is read)."""

    norm: np.ndarray
    value_zeroing: np.ndarray
    alti: np.ndarray
    grad_x_input: np.ndarray | None
    label: str | None
    reader: np.ndarray | None = None
    embedding: np.ndarray | None = None
    alti_logit: np.ndarray | None = None
    prediction: tuple[str, float] | None = None


def attribute_text(text: str, model: str = "minilm") -> TextAttribution:
    """Norm-based attention, value zeroing, ALTI and (for a classifier) gradient x input and ALTI-Logit of ``text``
    on a bundled model, a local Hugging Face folder or an ``attnlab train classify`` folder, tokenised as
    :func:`attnlab.trace_text` does (the tokens of its trace line up with these matrices)."""
    from ...kinds import KIND, Model

    loaded = Model.load(model, *(k for k, spec in KIND.items() if spec.able("explain")))
    f = loaded.spec.forward(loaded, text)
    net, forward = f.net, f.run
    score: Callable[[], Tensor] | None = None
    label = reader = embedding = logit = None
    prediction: tuple[str, float] | None = None
    if f.ids is not None:  # a model with an answer (a classifier): its prediction is attributed too
        x = f.ids
        told = loaded.run(text, trace=False)  # the prediction as every surface tells it
        prediction = (str(told.answer), float(told.score or 0.0))
        with torch.no_grad():
            k = int(net(x).argmax(-1))
        label = str(f.labels[k])
        reader = pooling_reader(net, x)
        embedding = embedding_contributions(net, x)
        if pre_norm(net) is not None:  # ALTI-Logit reads a pre-norm residual stream
            logit = alti_logit(net, x, k).tokens

        def score() -> Tensor:
            return torch.softmax(net(x).double(), -1)[0, k]
    norms = norm_attention(net, forward).per_layer
    total = norms.sum(-1, keepdims=True)
    return TextAttribution(np.divide(norms, total, out=np.zeros_like(norms), where=total > 0),
                           value_zeroing(net, forward), alti(net, forward),
                           None if score is None else gradient_x_input(net, score), label, reader, embedding,
                           logit, prediction)
