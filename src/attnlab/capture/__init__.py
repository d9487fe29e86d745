"""Capture the attention of any PyTorch model into an :class:`AttentionTrace`."""

from ..trace import KINDS, AttentionRecord, AttentionTrace
from ._core import capture
from .text import trace_text
from .tokens import attach_tokens, merge_words

__all__ = ["KINDS", "AttentionRecord", "AttentionTrace", "attach_tokens", "capture", "merge_words", "trace_text"]
