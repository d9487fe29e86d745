"""Pattern labels for every head, with the evidence for each: the tutorials' local / global /
syntactic table made measurable.

A head gets every label whose test it passes (``evidence``), and one **primary** label for the grid,
the first that applies in this order: positional, induction / duplicate (causal models), sink,
syntactic, broad; ``mixed`` when none applies.  The thresholds and why:

* ``MOSTLY = 0.5`` (positional and sink): more than half of the head's weight, averaged over its
  queries, on one position (previous / next / self) or on the [CLS] / [SEP] / BOS tokens.  Above one
  half that position is, for most queries, the single largest weight, so it is what the head "does";
  it is also the rule of ``attnlab show``'s summary, so the two agree (one constant,
  :data:`attnlab.functional.head_metrics.MOSTLY`).
* ``BAND = 0.8`` within ``BAND_WIDTH = 2`` tokens (a diagonal band): four fifths of the weight on the
  five nearest tokens (self included) when no single offset has half of it.  For a sentence of 12+ tokens
  a uniform head puts under half of its weight there, so this is local, not broad.
* ``BROAD = 0.8`` on the entropy ratio: the effective number of keys ``exp(entropy)`` is at least
  ``n ** 0.8`` of the ``n`` allowed (9 of 16, 29 of 64): the head spreads its weight over most of the
  sentence rather than picking a few tokens.
* ``SYNTACTIC_MARGIN = 0.15`` with at least ``SYNTACTIC_MIN = 5`` arcs: the head's accuracy on a
  relation beats the relation's best fixed-offset baseline by 15 points (Clark et al.'s BERT heads beat
  it by 18 to 47 points on the relations they report; smaller margins are within what a positional head
  scores by chance on a few sentences), counted over at least five arcs so one sentence cannot decide.
* ``DETECT = 0.4`` on the causal detectors' scores (:mod:`attnlab.analysis.induction`): four tenths of
  the weight on the one key the pattern names, over ten times what a uniform causal head gives at the
  detector's lengths (a query sees 20 to 60 keys).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .metrics import BAND_WIDTH, MOSTLY
from .syntax import DependencyCounts

__all__ = [
    "BAND",
    "BAND_WIDTH",
    "BROAD",
    "DETECT",
    "MOSTLY",
    "SYNTACTIC_MARGIN",
    "SYNTACTIC_MIN",
    "HeadLabels",
    "label_heads",
]

BAND = 0.8
BROAD = 0.8
SYNTACTIC_MARGIN = 0.15
SYNTACTIC_MIN = 5
DETECT = 0.4

_POSITIONAL = {"previous": "previous token", "next": "next token", "self": "self"}


@dataclass
class HeadLabels:
    """``primary[layer][head]``: the grid's label; ``evidence[layer][head]``: every label the head earned,
    each with the numbers behind it."""

    primary: list[list[str]]
    evidence: list[list[list[dict[str, Any]]]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"primary": self.primary, "evidence": self.evidence}


def label_heads(
    metrics: dict[str, np.ndarray],
    *,
    dependencies: DependencyCounts | None = None,
    causal_scores: dict[str, np.ndarray] | None = None,
    text_scores: dict[str, np.ndarray] | None = None,
) -> HeadLabels:
    """Label every head from its mean metrics (``{name: (L, H)}`` from :func:`head_metrics` or
    :class:`HeadSums`; ``band`` among them for the band label), dependency counts (from
    :func:`attnlab.analysis.syntax.dependency_counts`) and causal detector scores
    (``{"previous token" | "duplicate token" | "induction": (L, H)}``) on random repeated tokens
    (``causal_scores``, :func:`attnlab.analysis.detect_causal_heads`) or on the text itself (``text_scores``,
    :func:`attnlab.analysis.text_detector_scores`; NaN where the text cannot show the pattern); the evidence says
    which (``"on"``)."""
    n_l, n_h = metrics["entropy"].shape
    evidence: list[list[list[dict[str, Any]]]] = [[[] for _ in range(n_h)] for _ in range(n_l)]

    def add(layer: int, head: int, label: str, kind: str, **numbers: Any) -> None:
        evidence[layer][head].append({"label": label, "kind": kind,
                                      **{k: _round(v) for k, v in numbers.items()}})

    for layer in range(n_l):
        for head in range(n_h):
            pos = {name: float(metrics[name][layer, head]) for name in _POSITIONAL if name in metrics}
            pos = {k: v for k, v in pos.items() if np.isfinite(v)}
            if pos and max(pos.values()) > MOSTLY:
                name = max(pos, key=pos.__getitem__)
                add(layer, head, _POSITIONAL[name], "positional", share=pos[name], threshold=MOSTLY)
            elif "band" in metrics and metrics["band"][layer, head] >= BAND:
                add(layer, head, f"band ±{BAND_WIDTH}", "positional", share=metrics["band"][layer, head],
                    threshold=BAND)
            for name, label in (("cls", "[CLS] sink"), ("sep", "[SEP] sink")):
                if name in metrics and metrics[name][layer, head] > MOSTLY:
                    add(layer, head, label, "sink", share=metrics[name][layer, head], threshold=MOSTLY)
            if "cls" in metrics and "sep" in metrics:
                both = metrics["cls"][layer, head] + metrics["sep"][layer, head]
                if both > MOSTLY and not any(e["kind"] == "sink" for e in evidence[layer][head]):
                    add(layer, head, "[CLS]+[SEP] sink", "sink", share=both, threshold=MOSTLY)
            ratio = metrics["entropy_ratio"][layer, head]
            if np.isfinite(ratio) and ratio >= BROAD:
                add(layer, head, "broad", "broad", entropy_ratio=ratio, threshold=BROAD)
    if dependencies is not None:
        _syntactic(dependencies, add)
    for on, given in (("random repeated tokens", causal_scores), ("this text", text_scores)):
        for label, scores in (given or {}).items():
            for layer, head in zip(*np.nonzero(np.nan_to_num(scores, nan=0.0) > DETECT), strict=True):
                add(int(layer), int(head), f"{label} head", "causal", score=scores[layer, head], threshold=DETECT,
                    on=on)
    order = ("positional", "causal", "sink", "syntactic", "broad")
    primary = []
    for layer in range(n_l):
        row = []
        for head in range(n_h):
            ev = evidence[layer][head]
            ranked = sorted(ev, key=lambda e: (order.index(e["kind"]), -_strength(e)))
            row.append(ranked[0]["label"] if ranked else "mixed")
        primary.append(row)
    return HeadLabels(primary, evidence)


def _syntactic(dependencies: DependencyCounts, add: Any) -> None:
    for rel, n in dependencies.total.items():
        if n < SYNTACTIC_MIN:
            continue
        baseline = max(dependencies.offsets[rel].values()) / n
        for direction in ("dep->head", "head->dep"):
            acc = dependencies.hits[(rel, direction)] / n
            for layer, head in zip(*np.nonzero(acc >= baseline + SYNTACTIC_MARGIN), strict=True):
                add(int(layer), int(head), f"syntactic: {rel}", "syntactic", accuracy=acc[layer, head],
                    baseline=baseline, arcs=n, direction=direction, margin=SYNTACTIC_MARGIN)


def _strength(e: dict[str, Any]) -> float:
    for key in ("share", "score", "accuracy", "entropy_ratio"):
        if key in e:
            return float(e[key]) - float(e.get("baseline", 0.0))
    return 0.0


def _round(v: Any) -> Any:
    if isinstance(v, (float, np.floating)):
        return round(float(v), 4)
    if isinstance(v, np.integer):
        return int(v)
    return v

