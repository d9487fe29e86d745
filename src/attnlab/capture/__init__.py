"""Capture the attention of any PyTorch model into an :class:`AttentionTrace`."""

from .trace import KINDS, AttentionRecord, AttentionTrace

__all__ = ["KINDS", "AttentionRecord", "AttentionTrace"]
