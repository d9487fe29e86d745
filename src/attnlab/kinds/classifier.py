"""A classifier trained by ``attnlab train classify`` (the bundled zh-sentiment): it reads a text of any length whole
(in overlapping windows past its ``max_length``) and answers a label with its calibrated probability."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import torch

from .._bundled import Located
from ..errors import InputError
from ..trace import AttentionRecord, AttentionTrace
from ._base import Cost, Forward, Kind, Model, Outcome, nonempty
from ._hooked import TextModel

__all__ = ["ClassifierKind"]


class ClassifierKind(Kind):
    name = "classifier"
    suites_as = "classifier"
    can = frozenset({"analyze", "explain", "ablate", "patch", "batch", "qk"})
    whole = "attnlab predict reads it whole without showing its attention"

    def load(self, found: Located) -> Any:
        from ..trained import load_trained

        # found once (and Model.load warned already of a run still training): its model file, not located again
        clf = load_trained(dataclasses.replace(found, in_progress=False))
        clf.name = found.given
        return clf

    def config(self, found: Located) -> dict[str, Any] | None:
        from ..capturing import model_config

        return model_config(found)  # (found once: not located again)

    def cost(self, model: Model, text: str, *, trace: bool = True, **options: Any) -> Cost:
        from ..trained import windows

        clf = model.loaded
        [ids], _ = clf.encode([text])
        n = len(ids)
        config = clf.model.config
        n_windows = len(windows(n, config.max_length).starts)
        # a trace keeps every encoder layer's weights over the whole text, (1, H, N, N) (windows stitched)
        return Cost(n, n_windows, config.n_layers * config.n_heads * n * n + n if trace else 0)

    def run(self, model: Model, text: str, *, trace: bool = True, **options: Any) -> Outcome:
        from ..capturing import capture

        clf = model.loaded
        [ids], _ = clf.encode([nonempty(text, "to classify")])
        if len(ids) < 2:
            raise InputError(f"the text {text!r} gives no token the model knows; give some text")
        doubt = clf.doubt(text)
        if trace:
            with torch.no_grad(), capture(clf.model) as captured:
                logits, plan = clf.read(ids)
        else:
            logits, plan = clf.read(ids)
        output = _classified(clf, logits[0], len(plan.starts))
        tokens = [clf.tokenizer.token_of(i) for i in ids]
        kept = None
        if trace:
            from ..capturing import attach_classifier_tokens

            kept = attach_classifier_tokens(_stitched(captured, plan) if len(plan.starts) > 1 else captured,
                                            clf.tokenizer, ids)
            kept.meta.update(n_layers=clf.model.config.n_layers, n_heads=clf.model.config.n_heads,
                             n_tokens=len(ids), text_pair=None, merge=None)
        return Outcome(model.name, self.name, text, output, (doubt,) if doubt else (), tokens, kept)

    def run_many(self, model: Model, texts: Sequence[str], **options: Any) -> list[Outcome]:
        from ..trained import windows

        clf = model.loaded
        for t in texts:
            nonempty(t, "to classify")
        ids, _ = clf.encode(list(texts))
        logits = clf.logits_of_ids(ids)  # (N, C)
        limit = clf.model.config.max_length
        out = []
        for text, row, z in zip(texts, ids, logits, strict=True):
            doubt = clf.doubt(text)
            n_windows = len(windows(len(row), limit).starts)
            out.append(Outcome(model.name, self.name, text, _classified(clf, z, n_windows), (doubt,) if doubt else (),
                               [clf.tokenizer.token_of(i) for i in row]))
        return out

    def answer(self, outcome: Outcome) -> str | None:
        return str(outcome.output["label"])

    def score(self, outcome: Outcome) -> float | None:
        return float(outcome.output["probability"])

    def told(self, outcome: Outcome) -> str | None:
        o = outcome.output
        read = f"; read in {o['windows']} overlapping windows" if o["windows"] > 1 else ""
        return f"prediction: {o['label']} {o['probability']:.2f} (calibrated probability{read})"

    def shown(self, model: Model, outcome: Outcome, **context: Any) -> dict[str, Any] | None:
        o = outcome.output
        return {"label": o["label"], "probability": o["probability"], "temperature": o["temperature"],
                "calibrated": o["calibrated"], "windows": o["windows"]}

    def shown_tokens(self, outcome: Outcome) -> list[str]:
        trace = outcome.traced
        return list(trace.select(kind=trace.main_kind)[0].key_tokens or [])

    def observed(self, model: Model, outcome: Outcome) -> dict[str, float]:
        return dict(outcome.output.get("probabilities", {}))

    def forward(self, model: Model, text: str) -> Forward:
        import warnings

        clf = model.loaded
        net = clf.model.eval()
        encoded, cut = clf.encode([text])
        x = torch.tensor([encoded[0][: net.config.max_length]])  # (1, n)
        if cut:
            warnings.warn(f"the attribution reads the first {x.shape[1]} tokens of the text, as many as the model "
                          f"reads at once; the prediction reads all of it", stacklevel=3)
        return Forward(net, lambda k: net(x.repeat(k, 1)), x, tuple(clf.labels))

    def text_model(self, model: Model) -> Any:
        clf = model.loaded
        config = clf.model.config

        def read(ids: list[int]) -> torch.Tensor:  # the logits (C,) of one text of any length, as every surface
            return clf.read(ids)[0][0]

        return TextModel(model.found.given, clf.model, clf.tokenizer, tuple(clf.labels),
                         tokens=lambda text: clf.tokenizer.tokens(text), window=int(config.max_length),
                         last=lambda out: out[0], read=read, temperature=clf.temperature, skip=None, top=None,
                         output_noun="label", outputs_said=f"one of its labels {list(clf.labels)}")


def _classified(clf: Any, logits: torch.Tensor, n_windows: int) -> dict[str, Any]:
    """A classifier's output from its logits ``(C,)``: the calibrated probabilities."""
    probs = clf.calibrated(logits)  # (C,)
    best = int(probs.argmax())
    return {"label": clf.labels[best], "probability": float(probs[best]),
            "probabilities": {lb: float(p) for lb, p in zip(clf.labels, probs, strict=True)},
            "temperature": clf.temperature, "calibrated": clf.temperature != 1.0, "windows": n_windows}


def _stitched(trace: AttentionTrace, plan: Any) -> AttentionTrace:
    """The trace of a text read in windows as one text: each encoder layer's weights ``(W, H, L, L)`` over the
    windows become ``(1, H, N, N)`` over the whole text, each query's row taken from the window whose state it kept
    (the keys of that window at their places in the text, ``[CLS]`` at 0, zeros elsewhere: rows still sum to one)."""
    n = plan.n
    out = []
    for r in trace.records:
        if r.kind != "self":
            out.append(r)
            continue
        w = r.weights  # (W, H, L, L)
        full = torch.zeros(1, w.shape[1], n, n, dtype=w.dtype)  # (1, H, N, N)
        for query in range(n):
            window = 0 if query == 0 else plan.owner[query - 1]
            start = plan.starts[window]
            row = 0 if query == 0 else query - start  # its row in its window ([CLS] is row 0 of every window)
            full[0, :, query, 0] = w[window, :, row, 0]
            full[0, :, query, 1 + start: 1 + start + plan.width] = w[window, :, row, 1:]
        out.append(AttentionRecord(r.name, r.kind, r.layer, full, step=r.step, scale=r.scale))
    return AttentionTrace(out, dict(trace.meta))
