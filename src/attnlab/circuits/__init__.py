"""Circuits: intervening on attnlab's own models to show what a head *does*, not only where it looks.

Named hook points on every activation (TransformerLens's names where the parts are the same), a cache of a run
(:func:`run_with_cache`) and edits that replace any activation (:func:`run_with_hooks`); activation patching of
the residual stream and of heads' outputs, queries, keys, values and patterns (:func:`patch_resid`,
:func:`patch_heads`); path patching (:func:`path_patch`); ablation (:func:`ablate`); attribution patching against
exact patching (:func:`attribution_patching`); direct logit attribution, the logit lens and composition scores
(:func:`direct_logit_attribution`, :func:`logit_lens`, :func:`composition_scores`); metrics
(:func:`logit_diff`, :func:`target_prob`, :func:`loss_on`); figures in :mod:`attnlab.circuits.figures`.
Discovery on the edge graph (:func:`graph_of`): exact edge patching, EAP, EAP-IG and ACDC
(:func:`exact_edge_patching`, :func:`eap`, :func:`eap_ig`, :func:`acdc`), faithfulness curves with bootstrap
intervals (:func:`faithfulness_curve`) over tasks of prompt pairs (:class:`Task`); QK attribution
(:func:`qk_attribution`) and attention sinks (:func:`attention_sinks`; :func:`value_norms` keeps what each
value writes from any run).

The models: :class:`attnlab.models.CausalLM` (with or without feed-forward sublayers and LayerNorms), the encoder
of :class:`attnlab.models.AttentionClassifier` and :class:`attnlab.models.bert.BertEncoder` (patching, ablation
and composition on all three; the logit lens and direct logit attribution need the language model's
unembedding).  docs/circuits.md has the reference and a walk-through.
"""

from ._discover import (
    ABLATIONS,
    ACDCResult,
    Discovery,
    EdgeScores,
    Faithfulness,
    acdc,
    acdc_roc,
    compare_scores,
    discover,
    eap,
    eap_ig,
    edge_auc,
    exact_edge_patching,
    faithfulness_curve,
    manifest,
    model_digest,
)
from ._graph import Edge, Graph, Node, graph_of, masked_forward, sender_outputs
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
from ._qk import QKAttribution, qk_attribution
from ._sinks import SinkRow, ValueNorms, attention_sinks, model_value_norms, value_norms
from ._tasks import (
    TASKS,
    PromptPairs,
    Task,
    induction_task,
    logit_diff_per_prompt,
    task_named,
    zh_contrast_task,
    zh_induction_task,
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
    "ABLATIONS",
    "TASKS",
    "WHATS",
    "ACDCResult",
    "Ablation",
    "ActivationCache",
    "Anatomy",
    "AttributionPatching",
    "Composition",
    "DirectLogitAttribution",
    "Discovery",
    "Edge",
    "EdgeScores",
    "Edit",
    "Faithfulness",
    "Graph",
    "Layer",
    "LogitLens",
    "Metric",
    "Node",
    "Patching",
    "PathPatching",
    "PromptPairs",
    "QKAttribution",
    "SinkRow",
    "Task",
    "TextModel",
    "TextPatching",
    "ValueNorms",
    "ablate",
    "ablate_text",
    "acdc",
    "acdc_roc",
    "anatomy",
    "attention_sinks",
    "attribution_patching",
    "circuit_json",
    "compare_scores",
    "composition_baseline",
    "composition_scores",
    "direct_logit_attribution",
    "discover",
    "eap",
    "eap_ig",
    "edge_auc",
    "exact_edge_patching",
    "faithfulness_curve",
    "graph_of",
    "head_weights",
    "hook_names",
    "induction_task",
    "load_text_model",
    "logit_diff",
    "logit_diff_per_prompt",
    "logit_lens",
    "loss_on",
    "manifest",
    "masked_forward",
    "model_digest",
    "model_value_norms",
    "parse_head",
    "patch_heads",
    "patch_resid",
    "patch_texts",
    "path_patch",
    "qk_attribution",
    "restored",
    "run_with_cache",
    "run_with_hooks",
    "sender_outputs",
    "target_prob",
    "task_named",
    "text_model",
    "value_norms",
    "zh_contrast_task",
    "zh_induction_task",
]
