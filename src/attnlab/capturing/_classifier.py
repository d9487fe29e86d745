"""What capture needs of a classifier trained by ``attnlab train`` (``model.safetensors``, its tokenizer and labels in
the file's header): its config in a Hugging Face config's keys, and its tokens attached to a captured trace.  Running
it is its kind's (:mod:`attnlab.kinds.classifier`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..models import read_model_meta
from ..trace import AttentionTrace
from .tokens import attach_tokens

__all__ = ["attach_classifier_tokens", "classifier_config"]

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
