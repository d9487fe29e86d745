"""``trace_text`` and ``attnlab show`` on a classifier trained by ``attnlab train``: a folder holding
``model.safetensors`` (or that file itself), with its tokenizer and labels in the file's header."""

from __future__ import annotations

import functools
import json
import warnings
from pathlib import Path
from typing import Any

import torch

from ..data import encode, tokenizer_from_json
from ..errors import InputError, TooLongError
from ..models import load_classifier, read_model_meta
from ..trace import AttentionTrace
from ._core import capture
from .tokens import attach_tokens

__all__ = ["attach_classifier_tokens", "classifier_config", "trace_classifier"]

POOL_TOKEN = "[pool]"  # the query of the attention pooling: a learned vector, not a token of the text


def classifier_config(path: Path) -> dict[str, Any]:
    """What ``attnlab show`` checks its arguments against, in the keys of a Hugging Face config."""
    config = json.loads(read_model_meta(path)["config"])
    described: dict[str, Any] = {"model_type": "attnlab-classifier", "max_position_embeddings": config["max_length"]}
    if config["n_layers"]:  # the encoder layers: kind "self"
        described.update(encoder_layers=config["n_layers"], encoder_attention_heads=config["n_heads"])
    if config["pooling"] == "attention":  # the pooling query over the tokens: one "cross" record with one head
        described.update(is_encoder_decoder=True, decoder_layers=1, decoder_attention_heads=1)
    return described


def attach_classifier_tokens(trace: AttentionTrace, tokenizer: Any, ids: list[int]) -> AttentionTrace:
    """A classifier's captured ``trace`` with the tokens of ``ids`` (its input) attached; the attention pooling's
    query (a learned vector, not a token) is named :data:`POOL_TOKEN`."""
    trace = attach_tokens(trace, [tokenizer.token_of(i) for i in ids])
    for r in trace.records:
        if r.kind == "cross":  # the pooling query attends over the tokens
            r.query_tokens = [POOL_TOKEN]
    return trace


@functools.lru_cache(maxsize=4)
def _classifier(path: str, stamp: tuple[int, int]) -> tuple[Any, Any, list[str]]:
    """``(model, tokenizer, labels)`` of the classifier file ``path``, read once per version of the file (``stamp``:
    its modification time and size), so that a loop of :func:`trace_classifier` calls reads it once."""
    model, meta = load_classifier(Path(path))
    return model, tokenizer_from_json(meta["tokenizer"]), json.loads(meta.get("labels", "[]"))


def trace_classifier(text: str, path: Path, *, max_length: int | None = None, truncate: bool = False) -> AttentionTrace:
    """Run the classifier on ``text`` under :func:`capture`; tokens attached, the prediction in ``meta``."""
    stat = Path(path).stat()
    model, tokenizer, labels = _classifier(str(path), (stat.st_mtime_ns, stat.st_size))
    limit = model.config.max_length if max_length is None else min(max_length, model.config.max_length)
    ids = encode(tokenizer, [text], 10**9).ids[0]
    if len(ids) > limit:
        if not truncate:
            raise TooLongError(f"the input is {len(ids)} tokens long ([CLS] included) but the model takes at most "
                               f"{limit}; shorten the text, or pass truncate=True to keep the first {limit}",
                               len(ids), limit)
        warnings.warn(f"the input is {len(ids)} tokens long; truncated to the first {limit} tokens", stacklevel=3)
        ids = ids[:limit]
    if len(ids) < 2:
        raise InputError(f"the text {text!r} gives no token the model knows; give some text")
    with torch.no_grad(), capture(model) as trace:
        probs = torch.softmax(model(torch.tensor([ids])).float(), dim=-1)[0]  # (C,)
    trace = attach_classifier_tokens(trace, tokenizer, ids)
    best = int(probs.argmax())
    trace.meta = {"model": str(path), "text": text, "text_pair": None, "n_layers": model.config.n_layers,
                  "n_heads": model.config.n_heads, "n_tokens": len(ids), "merge": None,
                  "label": labels[best] if labels else best, "probability": float(probs[best])}
    return trace
