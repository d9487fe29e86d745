"""What heads do, measured: head importance and corpus-scale metrics."""

from .corpus import METRICS, CorpusMetrics, corpus_metrics, head_sums
from .importance import HeadImportance, PruningCurve, head_gates, head_importance, pruning_curve, pruning_figure

__all__ = [
    "METRICS",
    "CorpusMetrics",
    "HeadImportance",
    "PruningCurve",
    "corpus_metrics",
    "head_gates",
    "head_importance",
    "head_sums",
    "pruning_curve",
    "pruning_figure",
]
