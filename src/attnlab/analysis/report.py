"""One analysis of one trace: every metric, the labels, head distances and their MDS embedding,
rollout and flow, syntactic scores, gathered into a :class:`Report` that prints a table, serialises to
JSON and writes ``trace.meta["heads"]`` for the viewer."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError, ShapeError
from ..trace import AttentionTrace, Kind
from .induction import text_detector_scores
from .labels import HeadLabels, label_heads
from .metrics import METRICS, TOKEN_METRICS, head_metrics, js_distances, mds
from .rollout import flow, flow_error_bound, rollout
from .syntax import Sentence, dependency_counts, relation_scores, word_pieces

__all__ = ["CAUSAL_COLUMNS", "FLOW_ALL_UP_TO", "SINK_COLUMNS", "TABLE_METRICS", "Report", "analyze_trace"]

FLOW_ALL_UP_TO = 64  # all-pairs flow up to this many tokens (seconds); beyond it, flow into the first and last token
TABLE_METRICS = ("entropy_ratio", "cls", "sep", "punct", "self", "previous", "next", "distance")
# a causal stack's own columns: TransformerLens' detector on the text itself (``previous`` is already a metric)
CAUSAL_COLUMNS = ("duplicate token", "induction")
# the attention-sink columns, last: the share of attention on the first token (a metric) and what that token's value
# writes per unit of attention, ||v_0 W_O|| over the other positions' mean (given by the caller, who has the model)
SINK_COLUMNS = ("first", "value_norm_ratio")
_SHORT = {"entropy_ratio": "H/Hmax", "distance": "dist", "duplicate token": "dup-tok", "induction": "induct",
          "value_norm_ratio": "v0 ratio"}
_TITLES = {"duplicate token": "duplicate-token score on this text", "induction": "induction score on this text",
           "value_norm_ratio": "first token's ||v W_O|| / the others'"}


@dataclass
class Report:
    """What :func:`analyze_trace` found.  Arrays are ``(layers, heads)`` unless said otherwise."""

    kind: Kind
    tokens: list[str]
    metrics: dict[str, np.ndarray]
    labels: HeadLabels
    js: np.ndarray  # (L*H, L*H) Jensen-Shannon distances, layer-major
    embedding: np.ndarray  # (L*H, 2) classical MDS of js
    rollout: np.ndarray  # (n, n) after the last layer
    flow: np.ndarray | None  # (len(flow_targets), n)
    flow_targets: list[int]
    syntax: list[dict[str, Any]] | None = None
    causal: dict[str, np.ndarray] | None = None  # the detectors on random repeated tokens (a model's property)
    notes: list[str] = field(default_factory=list)
    detectors: dict[str, np.ndarray] | None = None  # causal: the detectors on this text (text_detector_scores)
    # ||v_0 W_O|| over the other positions' mean, per head (attnlab.circuits.value_norms), and why it is missing
    value_norm_ratio: np.ndarray | None = None
    value_norm_missing: str | None = None

    @property
    def shape(self) -> tuple[int, int]:
        n_l, n_h = self.metrics["entropy"].shape
        return int(n_l), int(n_h)

    def heads_meta(self) -> dict[str, Any]:
        """``trace.meta["heads"]`` as the viewer reads it: labels and metrics per layer and head (the value-norm
        ratio among them when known)."""
        metrics = dict(self.metrics)
        if self.value_norm_ratio is not None:
            metrics["value_norm_ratio"] = self.value_norm_ratio
        return {"kind": self.kind, "labels": self.labels.primary,
                "metrics": {name: _nested(v) for name, v in metrics.items()}}

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "tokens": self.tokens,
            "labels": self.labels.to_json(),
            "metrics": {name: _nested(v) for name, v in self.metrics.items()},
            "js_distance": _nested(self.js),
            "mds": _nested(self.embedding),
            "rollout": _nested(self.rollout),
            "flow": None if self.flow is None else {"targets": self.flow_targets, "values": _nested(self.flow),
                                                     "error_bound": flow_error_bound(*self._flow_size())},
            "syntax": self.syntax,
            "causal": None if self.causal is None else {k: _nested(v) for k, v in self.causal.items()},
            "detectors_on_text": None if self.detectors is None else {k: _nested(v) for k, v in self.detectors.items()},
            "sinks": {"first": _nested(self.metrics["first"]) if "first" in self.metrics else None,
                      "value_norm_ratio": None if self.value_norm_ratio is None else _nested(self.value_norm_ratio),
                      "value_norm_missing": self.value_norm_missing},
            "notes": self.notes,
        }

    def _flow_size(self) -> tuple[int, int]:
        return self.shape[0], len(self.tokens)

    def columns(self) -> dict[str, np.ndarray]:
        """The per-head numbers the table and the metric figure show, ``{name: (L, H)}``, in order: the metrics of
        :data:`TABLE_METRICS` less those that are 0 by construction here (a start or end token the text does not
        hold; the next token, which a causal query never sees), then for a causal stack the detectors of
        :data:`CAUSAL_COLUMNS` on this text, then the sink columns (:data:`SINK_COLUMNS`): the first token's share,
        and the value-norm ratio when it was given or said missing (NaN then: an empty column, the note says why)."""
        blind = {"next"} if self.kind == "causal" else set()
        for name in TABLE_METRICS:
            keep = METRICS[name].keep
            if name in ("cls", "sep") and keep is not None and not any(keep(t) for t in self.tokens):
                blind.add(name)
        out = {name: self.metrics[name] for name in TABLE_METRICS if name in self.metrics and name not in blind}
        if self.detectors is not None:
            out |= {name: self.detectors[name] for name in CAUSAL_COLUMNS}
        if "first" in self.metrics:
            out["first"] = self.metrics["first"]
        if self.value_norm_ratio is not None:
            out["value_norm_ratio"] = self.value_norm_ratio
        elif self.value_norm_missing is not None:
            out["value_norm_ratio"] = np.full(self.shape, np.nan)
        return out

    @staticmethod
    def title(name: str) -> str:
        """A column's title in the figures."""
        return _TITLES[name] if name in _TITLES else METRICS[name].title

    def table(self) -> str:
        """One line per head: its label and its key metrics (:meth:`columns`)."""
        columns = self.columns()
        head = f"{'L':>2} {'H':>2}  {'label':<22}" + "".join(f"{_SHORT.get(c, c):>9}" for c in columns)
        lines = [head]
        n_l, n_h = self.shape
        for layer in range(n_l):
            for h in range(n_h):
                vals = "".join(_cell(v[layer, h]) for v in columns.values())
                lines.append(f"{layer:>2} {h:>2}  {self.labels.primary[layer][h][:22]:<22}{vals}")
        if self.causal is not None:
            best = []
            for name, v in self.causal.items():
                top_layer, top_head = np.unravel_index(int(np.argmax(v)), v.shape)
                best.append(f"{name} L{top_layer} H{top_head} {float(v[top_layer, top_head]):.2f}")
            lines.append("")
            lines.append("on random tokens said twice (detect_causal_heads), the best head per pattern: "
                         + ", ".join(best))
        if self.syntax:
            lines.append("")
            lines.append(f"{'relation':<12}{'arcs':>6}{'best head':>11}{'accuracy':>10}{'baseline':>10}  direction")
            for row in self.syntax:
                where = f"L{row['layer']} H{row['head']}"
                lines.append(f"{row['relation']:<12}{row['count']:>6}{where:>11}"
                             f"{row['accuracy']:>10.1%}{row['baseline']:>10.1%}  {row['direction']} "
                             f"(baseline offset {row['baseline_offset']:+d})")
        lines.extend(self.notes)
        return "\n".join(lines)


def _cell(v: float) -> str:
    return f"{'-':>9}" if not np.isfinite(v) else f"{v:>9.2f}"


def _nested(a: np.ndarray) -> Any:
    """A JSON-ready nested list (NaN and inf as None)."""
    return [_nested(x) for x in a] if np.ndim(a) > 0 else (float(a) if math.isfinite(float(a)) else None)


def head_notes(trace: AttentionTrace, kind: Kind | None = None, *,
               value_norm_ratio: np.ndarray | None = None) -> dict[str, Any]:
    """``trace.meta["heads"]`` as the viewer reads it, from the per-head metrics and labels alone: what
    :func:`analyze_trace` gives without its costlier parts (head distances, rollout, flow, syntax); with
    ``value_norm_ratio`` ``(L, H)`` (:func:`attnlab.circuits.value_norms` on the run) among the metrics."""
    kind = kind or trace.main_kind
    metrics = head_metrics(trace.stack(kind).double().numpy(), trace.select(kind=kind)[0].key_tokens,
                           causal=kind == "causal")
    labels = label_heads(metrics).primary
    if value_norm_ratio is not None:
        metrics["value_norm_ratio"] = np.asarray(value_norm_ratio, dtype=np.float64)
    return {"kind": kind, "labels": labels, "metrics": {name: _nested(v) for name, v in metrics.items()}}


def analyze_trace(
    trace: AttentionTrace,
    *,
    kind: Kind | None = None,
    sentences: Sequence[Sentence] | None = None,
    causal_scores: dict[str, np.ndarray] | None = None,
    flow_targets: Sequence[int] | None = None,
    value_norm_ratio: np.ndarray | None = None,
    value_norm_missing: str | None = None,
) -> Report:
    """Analyse the ``kind`` stack (default: the main one) of a single-input trace.

    Token metrics ([CLS], [SEP], punctuation) need the trace's tokens; ``sentences`` (a parse of the
    trace's text) adds the syntactic scores; ``causal_scores`` (from
    :func:`attnlab.analysis.detect_causal_heads`, on random tokens) the causal labels; a causal stack is also
    scored by TransformerLens' detector on its own text (:func:`attnlab.analysis.text_detector_scores`), which
    labels a head too (an induction head on a string said twice).  Flow goes into ``flow_targets``
    (default: every token up to :data:`FLOW_ALL_UP_TO` tokens, else the first and the last).  ``value_norm_ratio``
    ``(L, H)``: what the first token's value writes over what the others' do (:func:`attnlab.circuits.value_norms`,
    on the run that made the trace), or ``value_norm_missing``: why it is not known (one note under the table)."""
    if not trace.records:
        raise InputError("the trace is empty: nothing was captured, so there is nothing to analyse")
    kind = kind or trace.main_kind
    tokens = trace.select(kind=kind)[0].key_tokens
    if tokens is None:
        raise InputError(
            f"the trace's {kind} attention has no tokens, and the {', '.join(TOKEN_METRICS)} metrics need them; "
            f"capture with attnlab.trace_text (or attnlab analyze TEXT), or attach them with "
            f"attnlab.capturing.attach_tokens(trace, tokens)"
        )
    w = trace.stack(kind).double().numpy()  # (L, H, Q, K)
    metrics = head_metrics(w, tokens, causal=kind == "causal")
    deps, syntax = None, None
    if sentences is not None:
        pieces = word_pieces(sentences, tokens)
        deps = dependency_counts(w, sentences, pieces)
        syntax = relation_scores(deps)
    detectors = None
    if kind == "causal" and w.shape[-2] == w.shape[-1]:
        detectors = text_detector_scores(w, tokens)
    labels = label_heads(metrics, dependencies=deps, causal_scores=causal_scores, text_scores=detectors)
    js = js_distances(w)
    n = w.shape[-1]
    square = w.shape[-2] == n
    targets = list(flow_targets) if flow_targets is not None else (
        list(range(n)) if n <= FLOW_ALL_UP_TO else sorted({0, n - 1}))
    notes = []
    if not square:
        notes.append("rollout and flow skipped: they need self-attention (as many queries as keys)")
    if value_norm_ratio is not None:
        value_norm_ratio = np.asarray(value_norm_ratio, dtype=np.float64)
        if value_norm_ratio.shape != metrics["first"].shape:
            raise ShapeError(f"value_norm_ratio is {value_norm_ratio.shape}; the trace has "
                             f"{metrics['first'].shape} (layers, heads)")
    elif value_norm_missing is not None:
        notes.append(f"v0 ratio is empty: {value_norm_missing}")
    if detectors is not None and np.isnan(detectors["induction"]).all():
        notes.append("dup-tok and induct are not measurable on this text (no token occurs twice); give a text that "
                     "repeats itself, such as a sentence said twice")
    return Report(
        kind=kind, tokens=list(tokens), metrics=metrics, labels=labels, js=js, embedding=mds(js),
        rollout=rollout(w)[-1] if square else np.zeros((0, 0)),
        flow=flow(w, targets=targets) if square else None, flow_targets=targets if square else [],
        syntax=syntax, causal=causal_scores, notes=notes, detectors=detectors, value_norm_ratio=value_norm_ratio,
        value_norm_missing=value_norm_missing if value_norm_ratio is None else None,
    )
