"""What every head does, measured: per-head metrics, pattern labels with their evidence, syntactic
agreement with dependency parses, causal-model detectors, attention rollout and flow, head importance
(Michel et al.'s gates) and corpus-scale metrics streamed as per-head sums.

Every function is pure and works on ``(layers, heads, q, k)`` arrays (``trace.weights``); metrics come
back per query so that a corpus reduces to sums (:class:`HeadSums`).
"""

from .corpus import METRICS as CORPUS_METRICS
from .corpus import CorpusMetrics, corpus_metrics, head_sums
from .importance import HeadImportance, PruningCurve, head_gates, head_importance, pruning_curve, pruning_figure
from .induction import CAUSAL_PATTERNS, causal_scores, detect_causal_heads, repeated_tokens
from .labels import HeadLabels, label_heads
from .metrics import METRICS, HeadSums, band_mass, head_metrics, js_distances, js_sums, mds, per_query_metrics
from .report import Report, analyze_trace
from .rollout import (
    SOLVERS,
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
    "CORPUS_METRICS",
    "METRICS",
    "SOLVERS",
    "CorpusMetrics",
    "DependencyCounts",
    "HeadImportance",
    "HeadLabels",
    "HeadSums",
    "PruningCurve",
    "Report",
    "Sentence",
    "analyze_trace",
    "band_mass",
    "blank_out_importance",
    "causal_scores",
    "corpus_metrics",
    "dependency_counts",
    "detect_causal_heads",
    "flow",
    "flow_error_bound",
    "head_gates",
    "head_importance",
    "head_metrics",
    "head_sums",
    "js_distances",
    "js_sums",
    "label_heads",
    "mds",
    "parse_text",
    "per_query_metrics",
    "pruning_curve",
    "pruning_figure",
    "read_conllu",
    "relation_scores",
    "repeated_tokens",
    "residual_attention",
    "rollout",
    "spearman",
    "spearman_agreement",
    "word_pieces",
]
