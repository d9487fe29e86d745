"""Capture the attention of any PyTorch model into an :class:`AttentionTrace`."""

from ..trace import KINDS, AttentionRecord, AttentionTrace
from ._core import capture
from ._stats import StatsRecord, StatsTrace, capture_stats
from ._translation import trace_translation
from .text import trace_text
from .tokens import attach_tokens, merge_words

__all__ = [
    "KINDS",
    "AttentionRecord",
    "AttentionTrace",
    "StatsRecord",
    "StatsTrace",
    "attach_tokens",
    "capture",
    "capture_stats",
    "merge_words",
    "trace_text",
    "trace_translation",
]
