"""Seeing attention (注意力可视化): the heatmap, the heads grid and the layers x heads grid of a real model,
with what they show and what they do not.

The model is the bundled all-MiniLM-L6-v2 (6 layers x 12 heads), run offline by :func:`attnlab.trace_text`.
The tutorials' own subject, a trained attention classifier (文本分类), is bundled as ``zh-sentiment``; it (or one
trained with ``attnlab train classify``, by its folder) is read too when passed as ``classifier``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import torch

from ..functional.head_metrics import END_TOKENS, START_TOKENS
from ..kinds import trace_text
from ..viz.summary import layer_summaries, pattern_scores, summarize
from ._finding import Finding

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..trace import AttentionTrace

TEXT = "The cat sat on the mat because it was tired."
REVIEW = "这本书写得很好，但是结尾太差了。"  # a mixed review for a Chinese sentiment classifier
SPECIAL = START_TOKENS | END_TOKENS  # the head metrics' own: [CLS]/[SEP], <s>/</s>, ...


def seeing(
    text: str = TEXT, *, model: str | os.PathLike[str] = "minilm", layer: int = 2, head: int = 0,
    classifier: str | os.PathLike[str] | None = None,
) -> Finding:
    """Capture ``model`` on ``text`` and read its attention honestly.

    Args:
        classifier: the folder of a classifier trained with ``attnlab train classify`` (e.g. the small
            Chinese one in benchmarks/results/zh-trained); its attention on :data:`REVIEW` is read too."""
    trace = trace_text(text, model=model)
    w = trace.weights  # (layers, heads, q, k)
    tokens = trace.tokens
    assert tokens is not None, "trace_text attaches the tokens"
    special = [j for j, t in enumerate(tokens) if t in SPECIAL]
    on_special = w[..., special].sum(-1).mean(dim=(1, 2))  # (layers,): share of attention on [CLS]/[SEP]
    per_head = torch.tensor([[pattern_scores(w[li, h], tokens).get("previous token", 0.0)
                              for h in range(w.shape[1])] for li in range(w.shape[0])])  # (layers, heads)
    entropy = -(w.clamp_min(1e-12).log() * w).sum(-1).mean(dim=(1, 2))  # (layers,) mean row entropy, nats
    flat = int(per_head.argmax())
    best = {"layer": flat // w.shape[1], "head": flat % w.shape[1], "share": per_head.max().item()}
    patterned = sum(len(hs) for s in layer_summaries(trace) for hs in s.patterns.values())
    numbers: dict[str, Any] = {
        "n_layers": trace.n_layers, "n_heads": trace.n_heads, "tokens": tokens,
        "special_share": on_special.tolist(),
        "previous_token_best": best,
        "mean_entropy_nats": entropy.tolist(),
        "uniform_entropy_nats": float(torch.log(torch.tensor(float(len(tokens))))),
        "heads_with_a_simple_pattern": patterned,
        "classifier_available": classifier is not None,
    }
    top = int(on_special.argmax())
    verdict = (
        f"the figures show where each head reads from ({on_special[top]:.0%} of layer {top}'s attention sits on "
        "[CLS]/[SEP]); not why, and not what the model uses"
    )
    classifier_lines: tuple[str, ...] = ()
    if classifier is not None:
        ctrace = trace_text(REVIEW, model=classifier)
        keys = ctrace.weights.mean(dim=(1, 2))  # (layers, keys): share of each key over heads and queries
        read = [ctrace.tokens[int(j)] for j in keys[-1].argsort(descending=True)[:3]] if ctrace.tokens else []
        numbers["classifier_last_layer_top_keys"] = read
        verdict += f"; the trained classifier's last layer reads most from {' '.join(read)} in a mixed review"
        classifier_lines = ("", f"A trained classifier ({classifier}) on «{REVIEW}»:",
                            *("  " + line for line in summarize(ctrace).splitlines()))
    lines = (
        f"The bundled model ({trace.meta.get('model', model)}), offline: {trace.n_layers} layers x "
        f"{trace.n_heads} heads, {len(tokens)} tokens:",
        *("  " + line for line in summarize(trace).splitlines()),
        "",
        "  layer  share on [CLS]/[SEP]   mean row entropy (nats; uniform = "
        f"{numbers['uniform_entropy_nats']:.2f})",
        *(f"  {li:5d}  {s:20.0%}   {e:.2f}" for li, (s, e) in enumerate(zip(on_special.tolist(), entropy.tolist(),
                                                                            strict=True))),
        f"  the most 'previous token' head: layer {best['layer']} head {best['head']} ({best['share']:.0%} of each "
        "row on the previous token)",
        "",
        "What the figures show: for each head, how each token's output mixes the value vectors of the others.",
        "Some heads follow simple positional patterns (previous token, next token, self), others put most of",
        "their weight on [CLS] or [SEP].",
        "What they do not show: (1) a large weight on [CLS]/[SEP] is often a no-op, a place to park attention",
        "(Clark et al. 2019, \"What does BERT look at?\"): weight is not importance; (2) the values being mixed",
        "differ in size, so weight x |value| can rank keys differently (Kobayashi et al. 2020); (3) after layer 0",
        "a position is already a mixture of every token, so 'head h attends to \"cat\"' is about a position, not",
        "the word; (4) other weights can give the same prediction (Jain & Wallace 2019): attention is not an",
        "explanation by itself. Reading heads as 语法头/语义头 (the tutorials' example) needs tests such as",
        "ablation or probing, not pictures alone.",
        "The tutorials' subject, a trained attention classifier (文本分类), is bundled: pass seeing(classifier=",
        "\"zh-sentiment\") (attnlab explain seeing --classifier zh-sentiment), or the folder of one you trained.",
        *classifier_lines,
    )
    figures = {
        "heatmap": lambda: _heatmap(trace, layer, head),
        "heads": lambda: _heads(trace, layer),
        "model": lambda: _model(trace),
    }
    return Finding("seeing", verdict, numbers, lines, figures)


def _heatmap(trace: AttentionTrace, layer: int, head: int) -> Figure:
    from ..viz import heatmap

    return heatmap(trace, layer=layer, head=head, annotate=True)


def _heads(trace: AttentionTrace, layer: int) -> Figure:
    from ..viz import heads

    return heads(trace, layer=layer)


def _model(trace: AttentionTrace) -> Figure:
    from ..viz import model_grid

    return model_grid(trace)
