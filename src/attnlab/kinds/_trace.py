"""``attnlab.trace_text``: run any model attnlab reads on a text, offline, and return its attention with readable
tokens (the bundled all-MiniLM-L6-v2 by default, a bundled or trained classifier, translator or language model, any
local Hugging Face folder; or a Hugging Face model already loaded)."""

from __future__ import annotations

import os
from typing import Any

from torch import nn

from ..capturing import check_text, trace_module
from ..capturing.pretrained import BUNDLED
from ..errors import InputError
from ..trace import AttentionTrace
from ._base import Model

__all__ = ["trace_text"]


def trace_text(
    text: str,
    model: str | os.PathLike[str] | nn.Module = BUNDLED,
    text_pair: str | None = None,
    *,
    tokenizer: Any = None,
    merge: str | None = None,
    max_length: int | None = None,
    truncate: bool = False,
) -> AttentionTrace:
    """Run a pretrained model on ``text`` offline and return all its attention, with readable tokens.

    Args:
        text: the input text (for an encoder-decoder model, the encoder's input).
        model: any model :class:`attnlab.Model` loads: ``"minilm"`` (bundled all-MiniLM-L6-v2), a local Hugging Face
            model folder, a bundled or trained classifier (``"zh-sentiment"``: ``meta`` then has its ``label`` and
            calibrated ``probability``, as ``attnlab predict`` prints them), translator (``"dates-zh"``: its
            attention while it translates) or language model (``"zh-lm"``: while it writes the default continuation);
            or a Hugging Face model already loaded (then pass its ``tokenizer`` too), which runs in eval mode on
            its own device and is put back in the mode it was in.  ``meta["warnings"]`` holds what the user is warned
            of; :meth:`attnlab.Model.run` gives the output and the trace together.
        tokenizer: the tokenizer of a loaded ``model`` (a folder brings its own).
        text_pair: a second sentence (BERT's sentence pairs, with ``token_type_ids``); for an
            encoder-decoder model, the decoder's text (default: ``text``).
        merge: ``"words"`` merges sub-word pieces into words (sum over a word's key pieces, mean over
            its query pieces; rows still sum to one).
        max_length: the most tokens to take, special tokens included (default: the model's maximum).
        truncate: cut a longer input to ``max_length`` tokens with a warning instead of raising (encoders; a
            classifier reads a long text whole, in overlapping windows).

    Returns:
        An :class:`AttentionTrace` with ``meta`` ``model``, ``text``, ``text_pair``, ``n_layers``, ``n_heads``,
        ``n_tokens`` and ``merge``.

    Raises:
        InputError: empty text, or a text longer than the limit without ``truncate=True``.
        ModelLoadError: a missing folder or one that is not a model.
    """
    check_text("text", text)
    if not isinstance(model, (str, os.PathLike, nn.Module)):
        raise InputError(f"model must be {BUNDLED!r}, a folder path or a loaded Hugging Face model (with tokenizer=), "
                         f"got {type(model).__name__}")
    if isinstance(model, nn.Module):
        return trace_module(text, model, tokenizer, text_pair=text_pair, merge=merge, max_length=max_length,
                            truncate=truncate)
    if tokenizer is not None:
        raise InputError(
            "tokenizer= goes with a loaded model (model=<a transformers model object>); a model folder or "
            "'minilm' brings its own tokenizer: leave tokenizer= out"
        )
    loaded = Model.load(model)
    options: dict[str, Any] = {"text_pair": text_pair, "merge": merge, "max_length": max_length, "truncate": truncate}
    given = [k for k, v in options.items() if v not in (None, False) and k not in loaded.spec.options]
    if given:
        raise InputError(f"{', '.join(given)} apply to Hugging Face encoders, not to the {loaded.kind} "
                         f"{str(model)!r}; leave them out")
    trace = loaded.run(text, **{k: v for k, v in options.items() if k in loaded.spec.options}).trace
    assert trace is not None
    return trace
