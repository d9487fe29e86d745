"""What heads do, measured: head importance and corpus-scale metrics."""

from .importance import HeadImportance, PruningCurve, head_gates, head_importance, pruning_curve, pruning_figure

__all__ = ["HeadImportance", "PruningCurve", "head_gates", "head_importance", "pruning_curve", "pruning_figure"]
