"""Capture the attention of any PyTorch model into an :class:`AttentionTrace`."""

from ..trace import KINDS, AttentionRecord, AttentionTrace
from ._core import capture
from ._gates import HeadGates, head_gates
from ._stats import StatsRecord, StatsTrace, capture_stats
from ._trace_text import UnknownTokensWarning, trace_text
from ._translation import trace_translation
from .pretrained import load_model, model_config
from .tokens import attach_tokens, merge_words

__all__ = [
    "KINDS",
    "AttentionRecord",
    "AttentionTrace",
    "HeadGates",
    "StatsRecord",
    "StatsTrace",
    "UnknownTokensWarning",
    "attach_tokens",
    "capture",
    "capture_stats",
    "head_gates",
    "load_model",
    "merge_words",
    "model_config",
    "trace_text",
    "trace_translation",
]
