"""Circuits: intervening on attnlab's own models to show what a head *does*, not only where it looks.

Named hook points on every activation (TransformerLens's names where the parts are the same), a cache of a run
(:func:`run_with_cache`) and edits that replace any activation (:func:`run_with_hooks`); activation patching of
the residual stream and of heads' outputs, queries, keys, values and patterns (:func:`patch_resid`,
:func:`patch_heads`); path patching (:func:`path_patch`); ablation (:func:`ablate`); attribution patching against
exact patching (:func:`attribution_patching`); direct logit attribution, the logit lens and composition scores
(:func:`direct_logit_attribution`, :func:`logit_lens`, :func:`composition_scores`); metrics
(:func:`logit_diff`, :func:`target_prob`, :func:`loss_on`); figures in :mod:`attnlab.circuits.figures`.

The models: :class:`attnlab.models.CausalLM` (with or without feed-forward sublayers and LayerNorms), the encoder
of :class:`attnlab.models.AttentionClassifier` and :class:`attnlab.models.bert.BertEncoder` (patching, ablation
and composition on all three; the logit lens and direct logit attribution need the language model's
unembedding).  docs/circuits.md has the reference and a walk-through.
"""

from ._lens import (
    Composition,
    DirectLogitAttribution,
    LogitLens,
    composition_scores,
    direct_logit_attribution,
    head_weights,
    logit_lens,
)
from ._model import ActivationCache, Anatomy, Edit, Layer, anatomy, hook_names, run_with_cache, run_with_hooks
from ._patch import (
    Ablation,
    AttributionPatching,
    Metric,
    Patching,
    PathPatching,
    ablate,
    attribution_patching,
    logit_diff,
    loss_on,
    patch_heads,
    patch_resid,
    path_patch,
    restored,
    target_prob,
)
from ._text import (
    WHATS,
    TextModel,
    TextPatching,
    ablate_text,
    circuit_json,
    composition_baseline,
    load_text_model,
    parse_head,
    patch_texts,
    text_model,
)

__all__ = [
    "WHATS",
    "Ablation",
    "ActivationCache",
    "Anatomy",
    "AttributionPatching",
    "Composition",
    "DirectLogitAttribution",
    "Edit",
    "Layer",
    "LogitLens",
    "Metric",
    "Patching",
    "PathPatching",
    "TextModel",
    "TextPatching",
    "ablate",
    "ablate_text",
    "anatomy",
    "attribution_patching",
    "circuit_json",
    "composition_baseline",
    "composition_scores",
    "direct_logit_attribution",
    "head_weights",
    "hook_names",
    "load_text_model",
    "logit_diff",
    "logit_lens",
    "loss_on",
    "parse_head",
    "patch_heads",
    "patch_resid",
    "patch_texts",
    "path_patch",
    "restored",
    "run_with_cache",
    "run_with_hooks",
    "target_prob",
    "text_model",
]
