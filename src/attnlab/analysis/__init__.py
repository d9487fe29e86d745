"""What every head does, measured: per-head metrics, pattern labels with their evidence, syntactic
agreement with dependency parses, Chinese word and part-of-speech labels from a segmented corpus, causal-model
detectors, attention rollout and flow, attribution beyond attention weights (norm-based attention, ALTI,
ALTI-Logit, value zeroing, gradient x input), head importance (Michel et al.'s gates) and corpus-scale metrics
streamed as per-head sums.

Every function is pure and works on ``(layers, heads, q, k)`` arrays (``trace.weights``); metrics come
back per query so that a corpus reduces to sums (:class:`HeadSums`).
"""

from ._lm_attribution import (
    GenerationAttribution,
    LMLogitAttribution,
    attribute_generation,
    generation_windows,
    lm_alti_logit,
    lm_gradient_x_input,
    lm_logit_directions,
)
from ._lm_attribution import attribution_figure as generation_attribution_figure
from .attribution import (
    LayerRun,
    LogitAttribution,
    NormAttention,
    TextAttribution,
    alti,
    alti_contributions,
    alti_logit,
    alti_vectors,
    attention_vectors,
    attribute_text,
    embedding_contributions,
    embedding_vectors,
    gradient_x_input,
    layer_parts,
    logit_directions,
    norm_attention,
    norm_contributions,
    pooling_reader,
    run_layers,
    value_outputs,
    value_zeroing,
    value_zeroing_scores,
)
from .chinese import CharCounts, SegmentedSentence, chinese_counts, chinese_scores, default_segmented, read_segmented
from .corpus import METRICS as CORPUS_METRICS
from .corpus import CorpusMetrics, corpus_metrics, head_sums
from .importance import HeadImportance, PruningCurve, head_gates, head_importance, pruning_curve, pruning_figure
from .induction import CAUSAL_PATTERNS, causal_scores, detect_causal_heads, repeated_tokens
from .labels import HeadLabels, label_heads
from .metrics import METRICS, HeadSums, band_mass, head_metrics, js_distances, js_sums, mds, per_query_metrics
from .report import Report, analyze_trace, head_notes
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
    "CharCounts",
    "CorpusMetrics",
    "DependencyCounts",
    "GenerationAttribution",
    "HeadImportance",
    "HeadLabels",
    "HeadSums",
    "LMLogitAttribution",
    "LayerRun",
    "LogitAttribution",
    "NormAttention",
    "PruningCurve",
    "Report",
    "SegmentedSentence",
    "Sentence",
    "TextAttribution",
    "alti",
    "alti_contributions",
    "alti_logit",
    "alti_vectors",
    "analyze_trace",
    "attention_vectors",
    "attribute_generation",
    "attribute_text",
    "band_mass",
    "blank_out_importance",
    "causal_scores",
    "chinese_counts",
    "chinese_scores",
    "corpus_metrics",
    "default_segmented",
    "dependency_counts",
    "detect_causal_heads",
    "embedding_contributions",
    "embedding_vectors",
    "flow",
    "flow_error_bound",
    "generation_attribution_figure",
    "generation_windows",
    "gradient_x_input",
    "head_gates",
    "head_importance",
    "head_metrics",
    "head_notes",
    "head_sums",
    "js_distances",
    "js_sums",
    "label_heads",
    "layer_parts",
    "lm_alti_logit",
    "lm_gradient_x_input",
    "lm_logit_directions",
    "logit_directions",
    "mds",
    "norm_attention",
    "norm_contributions",
    "parse_text",
    "per_query_metrics",
    "pooling_reader",
    "pruning_curve",
    "pruning_figure",
    "read_conllu",
    "read_segmented",
    "relation_scores",
    "repeated_tokens",
    "residual_attention",
    "rollout",
    "run_layers",
    "spearman",
    "spearman_agreement",
    "value_outputs",
    "value_zeroing",
    "value_zeroing_scores",
    "word_pieces",
]
