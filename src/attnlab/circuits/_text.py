"""Circuits on texts, by model name: what ``attnlab patch`` and ``attnlab circuit`` run (and the lab may).

A model is a bundled name or a folder (:func:`attnlab.locate`) of a kind that can be patched
(:meth:`attnlab.kinds.Kind.able`): its kind builds the :class:`TextModel` these functions read (a language model's
texts are characters, a classifier's go through its tokenizer and its outputs are label names).  Other kinds are
refused with the kinds that can.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch
from torch import Tensor, nn

from ..errors import InputError
from ..kinds import TextModel
from ._lens import Composition
from ._model import anatomy, edited
from ._patch import Patching, PathPatching, attribution_patching, logit_diff, patch_heads, patch_resid, path_patch

__all__ = ["WHATS", "TextModel", "TextPatching", "ablate_text", "circuit_json", "composition_baseline",
           "load_text_model", "parse_head", "patch_texts", "text_model"]

WHATS = ("resid", "heads", "pattern", "path")
WEAK_GAP = 0.1  # a clean-vs-corrupted gap below this share of the larger |logit difference| (or of 1) is called weak


def text_model(model: Any, name: str | None = None) -> TextModel:
    """The :class:`TextModel` of a loaded :class:`attnlab.Model` (what the lab holds), named ``name`` (default: as
    the model was given); a kind without hook points is an :class:`InputError` naming the kinds that have them."""
    spec = model.spec
    spec.require("patch", name or model.found.given, "a circuit (patching, ablating a head)")
    tm = spec.text_model(model)
    return tm if name is None else dataclasses.replace(tm, name=name)


def ablate_text(tm: TextModel, text: str, layer: int, head: int, *, top: int = 5) -> dict[str, Any]:
    """The model's output on ``text`` before and after zero-ablating head ``layer.head`` (its output ``z`` at every
    position, in every window of a long text): the ``top`` likeliest next characters of a language model or every
    label of a classifier, with their probabilities before and after, and the total variation distance between the
    two distributions.  "Before" is what every surface tells (a classifier reads the whole text)."""
    ids, tokens = tm.encode(text, "given", whole=True)
    a = anatomy(tm.model)
    if not (0 <= layer < a.n_layers and 0 <= head < a.n_heads):
        raise InputError(f"head {layer}.{head} does not exist; {tm.name} has layers 0-{a.n_layers - 1} and heads "
                         f"0-{a.n_heads - 1}")

    def zero(x: Tensor) -> Tensor:
        y = x.clone()
        y[:, :, head] = 0
        return y

    row = [int(i) for i in ids[0]]
    with torch.no_grad():
        before = tm.read(row)
        with edited(tm.model, {f"blocks.{layer}.attn.hook_z": zero}):
            after = tm.read(row)
    # (V,) or (C,): a classifier's calibrated probabilities, as every surface tells
    p, q = ((o / tm.temperature).double().softmax(-1) for o in (before, after))
    shown = p.argsort(descending=True)[:min(top, tm.top)] if tm.top is not None else torch.arange(len(p))
    rows = [{"token": tm.outputs[int(i)], "before": round(float(p[i]), 4), "after": round(float(q[i]), 4)}
            for i in shown]
    return {"model": tm.name, "layer": layer, "head": head, "tokens": tokens, "outputs": rows, "output": tm.output_noun,
            "total_variation": round(float((p - q).abs().sum() / 2), 4)}


def load_text_model(model: str) -> TextModel:
    """The model named ``model`` (bundled name or folder) with its texts' encoder; kinds without hook points are
    refused with the kinds that have them."""
    from ..kinds import KIND, Model

    kinds = [k for k, spec in KIND.items() if spec.able("patch")]
    return text_model(Model.load(model, *kinds))  # the one way a model is loaded (kinds without hooks refused)


def parse_head(text: str, option: str) -> tuple[int, int]:
    """``"1.2"`` -> ``(1, 2)`` (layer 1, head 2)."""
    parts = text.split(".")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise InputError(f"{option} takes a head as LAYER.HEAD, e.g. 1.2, got {text!r}")
    return int(parts[0]), int(parts[1])


@dataclass(frozen=True)
class TextPatching:
    """One ``attnlab patch`` run: the inputs, the metric, and the sweep's result."""

    model: str
    what: str
    clean: str
    corrupt: str
    tokens: list[str]
    corrupt_tokens: list[str]
    target: str
    distractor: str
    result: Patching | PathPatching
    extra: dict[str, Any] = field(default_factory=dict)

    def top(self) -> tuple[int, ...]:
        """The cell that restores the largest share of the clean behaviour (the most positive; a cell that moves the
        metric further from clean is never the headline)."""
        values = np.nan_to_num(np.asarray(self.result.restored, dtype=np.float64), nan=-np.inf)
        return tuple(int(i) for i in np.unravel_index(int(np.argmax(values)), values.shape))

    def caveat(self) -> str | None:
        """Why the shares say little, or None: the two runs agree (no difference to restore), barely differ (less
        than :data:`WEAK_GAP` of the larger), or the corrupted text favours the target more than the clean one."""
        r = self.result
        gap = r.clean - r.corrupted
        if gap == 0:
            return (f"the clean and corrupted runs give the same logit difference ({r.clean:.3f}), so there is "
                    f"nothing to restore; choose a corrupted text that changes the prediction")
        if gap < 0:
            return (f"the corrupted text favours {self.target!r} over {self.distractor!r} more than the clean one "
                    f"({r.corrupted:.3f} against {r.clean:.3f}); swap --clean and --corrupt, or pick another --target")
        if gap < WEAK_GAP * max(abs(r.clean), abs(r.corrupted), 1.0):
            return (f"the clean and corrupted runs barely differ ({r.clean:.3f} against {r.corrupted:.3f}, "
                    f"{gap:.3f} apart), so shares of that difference are mostly noise; choose a corrupted text that "
                    f"changes the prediction more")
        return None

    def summary(self) -> str:
        """One line: the metric on both runs and the cell that restores most (or why there is none to name)."""
        r = self.result
        head = (f"{self.what}: logit difference {self.target!r} - {self.distractor!r}: clean {r.clean:.3f}, "
                f"corrupted {r.corrupted:.3f}; ")
        said = self.caveat()
        if said is not None and r.clean <= r.corrupted:
            return head + said
        cell = self.top()
        share = float(np.asarray(r.restored)[cell])
        if not share > 0:
            return head + "no single cell restores any of the difference (every share is 0 or below)"
        where = (f"layer {cell[0]} position {cell[1]} ({self.tokens[cell[1]]!r})" if self.what == "resid"
                 else f"head {cell[0]}.{cell[1]}")
        line = head + f"{where} restores {share:.2f} of the difference (the largest share)"
        return line if said is None else f"{line}; but {said}"

    def to_json(self) -> dict[str, Any]:
        r = self.result

        def listed(a: np.ndarray) -> Any:
            return [None if not np.isfinite(v) else float(v) for v in a.ravel()] if a.ndim == 1 else [
                listed(row) for row in a]

        axes = ["layer", "head"] if isinstance(r, PathPatching) else list(r.axes)
        return {"model": self.model, "what": self.what, "clean": self.clean, "corrupt": self.corrupt,
                "tokens": self.tokens, "corrupt_tokens": self.corrupt_tokens,
                "metric": {"name": "logit difference", "target": self.target, "distractor": self.distractor,
                           "clean": r.clean, "corrupted": r.corrupted},
                "site": r.receiver if isinstance(r, PathPatching) else r.site, "axes": axes,
                "values": listed(np.asarray(r.values)), "restored": listed(np.asarray(r.restored)),
                "top": {"index": list(self.top()), "restored": _finite(np.asarray(r.restored)[self.top()])},
                "caveat": self.caveat(),
                **self.extra}


def composition_baseline(model: nn.Module) -> float:
    """What random matrices of ``model``'s shapes score as composition (its d_model and per-head sizes;
    :func:`attnlab.circuits.random_composition_baseline`)."""
    from .induction import random_composition_baseline

    q = anatomy(model).layers[0].attn  # (its q_proj weight is (H * D, M))
    d_model, d_head = int(q.q_proj.weight.shape[1]), int(q.q_proj.weight.shape[0]) // int(q.n_heads)
    return random_composition_baseline(d_model, d_head)


def _finite(x: Any) -> float | None:
    return float(x) if np.isfinite(x) else None


def patch_texts(tm: TextModel, clean: str, corrupt: str, *, target: str | None = None,
                distractor: str | None = None, what: Literal["resid", "heads", "pattern", "path"] = "heads",
                receiver: tuple[int, int] | None = None, into: Literal["q", "k", "v"] = "k",
                sender: tuple[int, int] | None = None) -> TextPatching:
    """Patch ``clean`` into ``corrupt`` (the same number of tokens) on the metric ``logit[target] -
    logit[distractor]`` at the last position (a classifier: its class logits).  Default target: the clean run's
    top output; default distractor: the corrupted run's top output, or the clean run's second when they agree.
    ``what``: the residual stream (layer x position), heads' outputs or patterns (layer x head), or path patching
    from every head below ``receiver``'s layer (or ``sender`` alone) to its ``into`` (to the logits without
    ``receiver``)."""
    if what not in WHATS:
        raise InputError(f"--what must be one of {', '.join(WHATS)}, got {what!r}")
    ids, tokens = tm.encode(clean, "clean")
    bad, corrupt_tokens = tm.encode(corrupt, "corrupted")
    if ids.shape != bad.shape:
        raise InputError(f"the clean text is {ids.shape[1]} tokens and the corrupted text {bad.shape[1]}; patching "
                         f"pairs them position by position, so make the corrupted text {ids.shape[1]} tokens long")
    with torch.no_grad():
        top_clean, top_bad = tm.last(tm.model(ids)), tm.last(tm.model(bad))  # (V,) or (C,)
    order = [int(i) for i in top_clean.argsort(descending=True) if int(i) != tm.skip]
    t = tm.output_id(target, "--target") if target is not None else order[0]
    if distractor is not None:
        d = tm.output_id(distractor, "--distractor")
    else:
        d = int(top_bad.argmax())
        if d == t or d == tm.skip:
            d = next(i for i in order if i != t)
    if t == d:
        raise InputError(f"the target and the distractor are both {tm.outputs[t]!r}; give two different outputs")
    metric = logit_diff(t, d)
    extra: dict[str, Any] = {}
    result: Patching | PathPatching
    if what == "resid":
        result = patch_resid(tm.model, ids, bad, metric)
    elif what == "heads":
        result = patch_heads(tm.model, ids, bad, metric, "z")
        ap = attribution_patching(tm.model, ids, bad, metric)
        extra["attribution_patching"] = {"estimate": ap.estimate.tolist(), "spearman": _finite(ap.spearman)}
    elif what == "pattern":
        result = patch_heads(tm.model, ids, bad, metric, "pattern")
    else:
        result = path_patch(tm.model, ids, bad, metric, receiver=receiver, into=into,
                            senders=None if sender is None else [sender])
        extra["receiver"] = "logits" if receiver is None else f"{receiver[0]}.{receiver[1]} {into}"
    return TextPatching(tm.name, what, clean, corrupt, tokens, corrupt_tokens, tm.outputs[t], tm.outputs[d],
                        result, extra)


def circuit_json(name: str, comp: Composition, top: int, baseline: float | None = None) -> dict[str, Any]:
    """The composition scores of every pair and the ``top`` strongest edges, as JSON, with the score random matrices
    of the model's shapes get (``baseline``, :func:`composition_baseline`): an edge means something only above it."""
    return {"model": name, "random_baseline": baseline, "scores": {m: comp.of(m).tolist() for m in "qkv"},
            "axes": ["sender layer", "sender head", "receiver layer", "receiver head"],
            "strongest": [{"mode": m.upper(), "sender": f"{s[0]}.{s[1]}", "receiver": f"{r[0]}.{r[1]}", "score": v}
                          for m, s, r, v in comp.strongest(top)]}
