"""What every head does, measured: per-head metrics, pattern labels with their evidence, syntactic
agreement with dependency parses, causal-model detectors, attention rollout and flow.

Every function is pure and works on ``(layers, heads, q, k)`` arrays (``trace.weights``); metrics come
back per query so that a corpus reduces to sums (:class:`HeadSums`).
"""

from .induction import CAUSAL_PATTERNS, causal_scores, detect_causal_heads, repeated_tokens
from .labels import HeadLabels, label_heads
from .metrics import METRICS, HeadSums, band_mass, head_metrics, js_distances, js_sums, mds, per_query_metrics
from .report import Report, analyze_trace
from .rollout import (
    blank_out_importance,
    flow,
    flow_error_bound,
    residual_attention,
    rollout,
    spearman,
    spearman_agreement,
)
from .syntax import DependencyCounts, Sentence, dependency_counts, parse_text, read_conllu, relation_scores, word_pieces

__all__ = [
    "CAUSAL_PATTERNS",
    "METRICS",
    "DependencyCounts",
    "HeadLabels",
    "HeadSums",
    "Report",
    "Sentence",
    "analyze_trace",
    "band_mass",
    "blank_out_importance",
    "causal_scores",
    "dependency_counts",
    "detect_causal_heads",
    "flow",
    "flow_error_bound",
    "head_metrics",
    "js_distances",
    "js_sums",
    "label_heads",
    "mds",
    "parse_text",
    "per_query_metrics",
    "read_conllu",
    "relation_scores",
    "repeated_tokens",
    "residual_attention",
    "rollout",
    "spearman",
    "spearman_agreement",
    "word_pieces",
]
