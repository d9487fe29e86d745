"""Capture the attention of any PyTorch model into an :class:`AttentionTrace`.

``attnlab.capture`` (the function) is this package's :func:`capture`; the package itself is ``attnlab.capturing``.
Running a model by name (the output the user is told, its warnings and the trace) is :class:`attnlab.Model` and
:func:`attnlab.trace_text`, in :mod:`attnlab.kinds`.  The names that load models (``trace_module``,
``trace_translation``, ``load_model``, ``load_encoder``, ``model_config``) are imported on first use, so ``import
attnlab`` does not import the models and data packages they need.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..trace import KINDS, AttentionRecord, AttentionTrace
from ._core import capture
from ._gates import HeadGates, head_gates
from ._generation import trace_generation
from ._hf import edit_attention, listen_attention
from ._stats import StatsRecord, StatsTrace, capture_stats
from .tokens import attach_tokens, merge_words

if TYPE_CHECKING:
    from ._classifier import attach_classifier_tokens
    from ._trace_text import UnknownTokensWarning, check_text, encode_loaded, token_limit, trace_module
    from ._translation import trace_translation
    from .pretrained import load_encoder, load_model, model_config

_LAZY = {"attach_classifier_tokens": "._classifier", "check_text": "._trace_text", "encode_loaded": "._trace_text",
         "token_limit": "._trace_text", "trace_module": "._trace_text",
         "UnknownTokensWarning": "._trace_text",
         "trace_translation": "._translation", "load_model": ".pretrained",
         "load_encoder": ".pretrained", "model_config": ".pretrained"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "KINDS",
    "AttentionRecord",
    "AttentionTrace",
    "HeadGates",
    "StatsRecord",
    "StatsTrace",
    "UnknownTokensWarning",
    "attach_classifier_tokens",
    "attach_tokens",
    "capture",
    "capture_stats",
    "check_text",
    "edit_attention",
    "encode_loaded",
    "head_gates",
    "listen_attention",
    "load_encoder",
    "load_model",
    "merge_words",
    "model_config",
    "token_limit",
    "trace_generation",
    "trace_module",
    "trace_translation",
]
