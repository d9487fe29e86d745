"""Capture the attention of any PyTorch model into an :class:`AttentionTrace`."""

from ..trace import KINDS, AttentionRecord, AttentionTrace
from ._core import capture
from ._gates import HeadGates, head_gates
from ._stats import StatsRecord, StatsTrace, capture_stats
from .text import trace_text
from .tokens import attach_tokens, merge_words

__all__ = [
    "KINDS",
    "AttentionRecord",
    "AttentionTrace",
    "HeadGates",
    "StatsRecord",
    "StatsTrace",
    "attach_tokens",
    "capture",
    "capture_stats",
    "head_gates",
    "merge_words",
    "trace_text",
]
