"""Circuits on texts, by model name: what ``attnlab patch`` and ``attnlab circuit`` run (and the lab may).

A model is a bundled name or a folder (:func:`attnlab.locate`) of a kind with hook points: a language model
(``lm``: its texts are characters) or a classifier (its texts go through its tokenizer; target and distractor are
label names).  Other kinds are refused by the resolver with the command that reads them.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch
from torch import Tensor, nn

from ..errors import InputError
from ._lens import Composition
from ._model import anatomy, run_with_hooks
from ._patch import Patching, PathPatching, attribution_patching, logit_diff, patch_heads, patch_resid, path_patch

__all__ = ["WHATS", "TextModel", "TextPatching", "ablate_text", "circuit_json", "load_text_model", "parse_head",
           "patch_texts", "text_model"]

WHATS = ("resid", "heads", "pattern", "path")


@dataclass(frozen=True)
class TextModel:
    """A model with hook points, how to turn its texts into ids and what its outputs are called."""

    name: str
    kind: str  # "lm" or "classifier"
    model: nn.Module
    encoder: Any  # the model's tokenizer (attnlab.data.CharTokenizer for an lm)
    outputs: tuple[str, ...]  # the lm's characters by id, or the classifier's labels
    temperature: float = 1.0  # a classifier's calibration: its probabilities are softmax(logits / T), as told

    def encode(self, text: str, what: str) -> tuple[Tensor, list[str]]:
        """``(ids (1, T), tokens)`` of ``text``; an empty text or one of only unknown characters is refused."""
        if not text:
            raise InputError(f"the {what} text is empty; give a text")
        from ..trained import unknown_warning

        units = self.encoder.units(text)  # the one rule: warn on any unknown character, refuse when all are
        try:
            said = unknown_warning([p for p, _ in units], [u for _, u in units], text=text, model=self.name)
        except InputError as exc:
            raise InputError(f"the {what} text: {exc}") from None
        if said:
            warnings.warn(f"the {what} text: {said}", UserWarning, stacklevel=3)
        if self.kind == "lm":
            ids = [int(i) for i in self.encoder.encode(text)]
            tokens = list(text)
        else:
            ids, tokens = self.encoder.encode(text), self.encoder.tokens(text)
            config: Any = self.model.config
            limit = int(config.max_length)
            ids, tokens = ids[:limit], tokens[:limit]
        return torch.tensor([ids], dtype=torch.long), tokens

    def output_id(self, token: str, what: str) -> int:
        """The id of the output ``token`` (a character of an lm's vocabulary, a classifier's label)."""
        if token in self.outputs and not (self.kind == "lm" and token == self.outputs[0]):
            return self.outputs.index(token)
        known = (f"one character it knows ({len(self.outputs) - 1} in its vocabulary)" if self.kind == "lm"
                 else f"one of its labels {list(self.outputs)}")
        raise InputError(f"{what} {token!r} is not an output of {self.name}; give {known}")


def text_model(loaded: Any, name: str) -> TextModel:
    """The :class:`TextModel` of an already loaded :class:`attnlab.trained.LanguageModel` or
    :class:`attnlab.trained.Classifier` (what the lab holds); other kinds are an :class:`InputError`."""
    from ..trained import Classifier, LanguageModel

    if isinstance(loaded, LanguageModel):
        return TextModel(name, "lm", loaded.model, loaded.vocab, tuple(loaded.vocab.vocabulary))
    if isinstance(loaded, Classifier):
        return TextModel(name, "classifier", loaded.model, loaded.tokenizer, tuple(loaded.labels),
                         loaded.temperature)
    raise InputError(f"{name} has no hook points to ablate a head through; ablation runs on a language model or a "
                     f"classifier")


def ablate_text(tm: TextModel, text: str, layer: int, head: int, *, top: int = 5) -> dict[str, Any]:
    """The model's output on ``text`` before and after zero-ablating head ``layer.head`` (its output ``z`` at every
    position): the ``top`` likeliest next characters of a language model or every label of a classifier, with
    their probabilities before and after, and the total variation distance between the two distributions."""
    ids, tokens = tm.encode(text, "given")
    a = anatomy(tm.model)
    if not (0 <= layer < a.n_layers and 0 <= head < a.n_heads):
        raise InputError(f"head {layer}.{head} does not exist; {tm.name} has layers 0-{a.n_layers - 1} and heads "
                         f"0-{a.n_heads - 1}")

    def zero(x: Tensor) -> Tensor:
        y = x.clone()
        y[:, :, head] = 0
        return y

    before, _ = run_with_hooks(tm.model, ids)
    after, _ = run_with_hooks(tm.model, ids, {f"blocks.{layer}.attn.hook_z": zero})
    p, q = ((o[0, -1] if tm.kind == "lm" else o[0] / tm.temperature).double().softmax(-1)
            for o in (before, after))  # (V,) or (C,): a classifier's calibrated probabilities, as every surface tells
    shown = p.argsort(descending=True)[:top] if tm.kind == "lm" else torch.arange(len(p))
    rows = [{"token": tm.outputs[int(i)], "before": round(float(p[i]), 4), "after": round(float(q[i]), 4)}
            for i in shown]
    return {"model": tm.name, "layer": layer, "head": head, "tokens": tokens, "outputs": rows,
            "total_variation": round(float((p - q).abs().sum() / 2), 4)}


def load_text_model(model: str) -> TextModel:
    """The model named ``model`` (bundled name or folder) with its texts' encoder; kinds without hook points are
    refused by :func:`attnlab.locate` with the command that reads them."""
    from ..capturing import Model

    loaded = Model.load(model, "lm", "classifier")  # the one way a model is loaded (kinds without hooks refused)
    return text_model(loaded.loaded, loaded.found.given)


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
        values = np.nan_to_num(np.abs(self.result.restored), nan=-1.0)
        return tuple(int(i) for i in np.unravel_index(int(np.argmax(values)), values.shape))

    def summary(self) -> str:
        """One line: the metric on both runs and the cell that restores most."""
        r = self.result
        cell = self.top()
        where = (f"layer {cell[0]} position {cell[1]} ({self.tokens[cell[1]]!r})" if self.what == "resid"
                 else f"head {cell[0]}.{cell[1]}")
        return (f"{self.what}: logit difference {self.target!r} - {self.distractor!r}: clean {r.clean:.3f}, "
                f"corrupted {r.corrupted:.3f}; {where} restores {float(r.restored[cell]):.2f} of the difference "
                f"(the largest share in size)")

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
                "top": {"index": list(self.top()), "restored": float(np.asarray(r.restored)[self.top()])},
                **self.extra}


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
        top_clean = tm.model(ids)[0, -1] if tm.kind == "lm" else tm.model(ids)[0]  # (V,) or (C,)
        top_bad = tm.model(bad)[0, -1] if tm.kind == "lm" else tm.model(bad)[0]
    order = [int(i) for i in top_clean.argsort(descending=True) if not (tm.kind == "lm" and int(i) == 0)]
    t = tm.output_id(target, "--target") if target is not None else order[0]
    if distractor is not None:
        d = tm.output_id(distractor, "--distractor")
    else:
        d = int(top_bad.argmax())
        if d == t or (tm.kind == "lm" and d == 0):
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
        extra["attribution_patching"] = {"estimate": ap.estimate.tolist(), "spearman": ap.spearman}
    elif what == "pattern":
        result = patch_heads(tm.model, ids, bad, metric, "pattern")
    else:
        result = path_patch(tm.model, ids, bad, metric, receiver=receiver, into=into,
                            senders=None if sender is None else [sender])
        extra["receiver"] = "logits" if receiver is None else f"{receiver[0]}.{receiver[1]} {into}"
    return TextPatching(tm.name, what, clean, corrupt, tokens, corrupt_tokens, tm.outputs[t], tm.outputs[d],
                        result, extra)


def circuit_json(name: str, comp: Composition, top: int) -> dict[str, Any]:
    """The composition scores of every pair and the ``top`` strongest edges, as JSON."""
    return {"model": name, "scores": {m: comp.of(m).tolist() for m in "qkv"},
            "axes": ["sender layer", "sender head", "receiver layer", "receiver head"],
            "strongest": [{"mode": m.upper(), "sender": f"{s[0]}.{s[1]}", "receiver": f"{r[0]}.{r[1]}", "score": v}
                          for m, s, r, v in comp.strongest(top)]}
