"""The models ``attnlab analyze`` reads, run for analysis: which kind a name is, its attention on a text (a
Hugging Face encoder, an attnlab classifier or a character language model), and its heads scored by the causal
detectors on random repeated tokens.  Loading goes through :func:`attnlab.capturing.load_encoder` (attnlab's own
BERT encoder for a plain BERT folder) and :func:`attnlab.trained.load_language_model`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._bundled import ModelKind, locate
from ..errors import InputError, TooLongError
from ..trace import AttentionTrace

__all__ = [
    "ANALYZED_KINDS",
    "LM_TEXT",
    "causal_head_scores",
    "is_language_model",
    "sentence_tracer",
    "trace_for_analysis",
    "trace_language_model",
]

# what locate() may answer for a model analyze reads
ANALYZED_KINDS: tuple[ModelKind, ...] = ("huggingface", "classifier", "lm")
# what a language model reads when no text is given: a sentence of People's Daily twice, so that its induction heads
# have something to copy (the viewer shows them reading the first copy while they predict the second)
LM_TEXT = "迈向充满希望的新世纪——一九九八年新年讲话。" * 2


def is_language_model(model: str) -> bool:
    """Whether ``model`` (a name or folder) is a character language model; a model analyze does not read (a
    translator) is refused here, in one line naming the command that reads it."""
    return locate(model, *ANALYZED_KINDS).kind == "lm"


def trace_language_model(lm: Any, text: str) -> AttentionTrace:
    """The attention of the language model ``lm`` (:class:`attnlab.trained.LanguageModel`) on ``text`` (at most its
    context; unknown characters as [UNK]), with its characters as tokens."""
    import torch

    from ..capturing import capture

    ids = lm.encode_prompt(text)
    with torch.no_grad(), capture(lm.model) as trace:
        lm.model(torch.tensor([ids]))
    return trace.with_tokens([lm.vocab.vocabulary[i] for i in ids])


def trace_for_analysis(text: str, model: str, max_length: int | None = None) -> AttentionTrace:
    """``model``'s attention on ``text``, one trace, refused in one line when it is too long or has no attention
    attnlab can capture.  A language model reads at most its context (the default :data:`LM_TEXT` is cut to it);
    any other model runs through :func:`attnlab.trace_text`."""
    if is_language_model(model):
        from ..trained import load_language_model

        lm = load_language_model(model)
        limit = min(lm.context, max_length or lm.context)
        if text == LM_TEXT:  # the default text, cut to a short context
            text = text[:limit]
        if len(text) > limit:
            raise InputError(f"the input is {len(text)} characters long but the model takes at most {limit}; shorten "
                             f"the text")
        return trace_language_model(lm, text)
    from ..capturing import Model

    loaded = Model.load(model)
    options: dict[str, Any] = {}
    if max_length is not None:
        options["max_length"] = max_length
    no_attention = InputError(f"the model {model!r} ran but recorded no attention: it has no attention layers attnlab "
                              f"can capture, so there are no heads to analyse")
    try:
        trace = loaded.run(text, **options).traced  # the run every surface makes (a classifier reads it whole)
    except TooLongError as exc:
        raise InputError(f"the input is {exc.n_tokens} tokens long but the model takes at most {exc.limit}; "
                         f"shorten the text") from None
    except InputError as exc:
        if "nothing was captured" in str(exc):  # trace_text found no attention call to attach tokens to
            raise no_attention from None
        raise
    if not trace.records:
        raise no_attention
    return trace


def sentence_tracer(model: str) -> tuple[int, Callable[[str], AttentionTrace]]:
    """``(most characters, trace of a text)`` for running ``model`` sentence after sentence (``analyze
    --segmented``): a language model reads its context, any other model 120 characters, cut with a warning."""
    if is_language_model(model):
        from ..trained import load_language_model

        lm = load_language_model(model)
        return lm.context, lambda text: trace_language_model(lm, text)
    from ..capturing import Model

    loaded = Model.load(model)
    options = {"truncate": True} if loaded.kind == "huggingface" else {}  # a classifier reads a long text whole
    return 120, lambda text: loaded.run(text, **options).traced


def causal_head_scores(model: str) -> dict[str, np.ndarray]:
    """The previous-token, duplicate-token and induction scores of every head of a causal ``model``
    (:func:`attnlab.analysis.detect_causal_heads` on random tokens said twice), ``{pattern: (L, H)}``."""
    from .induction import detect_causal_heads

    if is_language_model(model):
        from ..trained import load_language_model

        lm = load_language_model(model)  # random characters, [UNK] (id 0) left out
        return detect_causal_heads(lm.model, len(lm.vocab), length=min(20, lm.context // 2), low=1)
    from ..capturing import load_encoder

    net, tokenizer, _ = load_encoder(model)  # attnlab's BertEncoder for a plain BERT folder, else transformers
    starts = [i for i in (tokenizer.bos_token_id, tokenizer.cls_token_id) if i is not None]
    # random ids above the first 1000, where BERT-style vocabularies keep their special and unused tokens
    return detect_causal_heads(net, tokenizer.vocab_size, bos=starts[0] if starts else None,
                               low=min(1000, tokenizer.vocab_size // 2), forward=lambda m, ids: m(input_ids=ids))
