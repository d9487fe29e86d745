"""The models ``attnlab analyze`` reads, run for analysis through their kind (:mod:`attnlab.kinds`): a model's
attention on a text, sentence after sentence, and its heads scored by the causal detectors on random repeated
tokens.  Each function takes a name or folder (loaded once, refused in one line when its kind is not analysed: a
translator) or an already loaded :class:`attnlab.Model`."""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

from .._bundled import ModelKind
from ..kinds import KIND, Model
from ..kinds.lm import LM_TEXT, trace_language_model
from ..trace import AttentionTrace

__all__ = [
    "LM_TEXT",
    "analyzed",
    "analyzed_kinds",
    "causal_head_scores",
    "sentence_tracer",
    "trace_for_analysis",
    "trace_language_model",
]

def analyzed_kinds() -> tuple[ModelKind, ...]:
    """The kinds analyze reads: what their kind says they can (asked each time: a kind may be registered later)."""
    return tuple(name for name, spec in KIND.items() if spec.able("analyze"))


def analyzed(model: str | os.PathLike[str] | Model) -> Model:
    """``model`` loaded for analysis (:meth:`attnlab.Model.load`'s cache keeps it); a kind analyze does not read (a
    translator) is refused in one line naming the command that reads it."""
    return model if isinstance(model, Model) else Model.load(model, *analyzed_kinds())


def trace_for_analysis(text: str, model: str | os.PathLike[str] | Model,
                       max_length: int | None = None) -> AttentionTrace:
    """``model``'s attention on ``text``, one trace, refused in one line when it is too long or has no attention
    attnlab can capture (:meth:`attnlab.kinds.Kind.analysis_trace`: a language model reads at most its context in
    one pass; any other model runs as every surface runs it)."""
    m = analyzed(model)
    return m.spec.analysis_trace(m, text, max_length)


def sentence_tracer(model: str | os.PathLike[str] | Model) -> tuple[int, Callable[[str], AttentionTrace]]:
    """``(most characters, trace of a text)`` for running ``model`` sentence after sentence (``analyze
    --segmented``): a language model reads its context, any other model 120 characters (an encoder cuts with a
    warning)."""
    m = analyzed(model)
    return m.spec.sentence_tracer(m)


def causal_head_scores(model: str | os.PathLike[str] | Model) -> dict[str, np.ndarray]:
    """The previous-token, duplicate-token and induction scores of every head of a causal ``model``
    (:func:`attnlab.analysis.detect_causal_heads` on random tokens said twice), ``{pattern: (L, H)}``."""
    from .induction import detect_causal_heads

    m = analyzed(model)
    return detect_causal_heads(**m.spec.causal_probe(m))
