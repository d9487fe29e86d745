"""The lab's models and what one run returns: the same library calls as the CLI (``trace_text`` for an encoder,
a trained classifier's calibrated ``predict``, a translator's ``trace_translation``, a language model's
``trace_generation`` as ``attnlab generate`` calls it, greedy), the head labels and metrics of
:mod:`attnlab.analysis`, and the viewer's payload (:func:`attnlab.viz.html.payload`).

Models are named, never given as paths by a client: the catalogue holds the bundled models and the folders named when
the server started, and loads each on first use into a bounded least-recently-used cache.
"""

from __future__ import annotations

import os
import time
import warnings
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._bundled import MINILM, MODELS, bundled_folder, locate
from ..errors import InputError, ModelLoadError

__all__ = ["KIND_NAMES", "Lab", "ModelEntry", "UnknownModelError"]

# how the API names each kind of model (locate's "huggingface" is an encoder such as MiniLM)
KIND_NAMES = {"huggingface": "encoder", "classifier": "classifier", "translator": "translator", "lm": "lm"}
# the bundled models the lab offers (dates-zh/luong is a study variant, left to the CLI) and their languages
BUNDLED_LANGUAGES: dict[str, list[str]] = {
    MINILM: ["en"],
    "zh-sentiment": ["zh"],
    "dates-zh": ["en", "fr", "de", "es", "zh"],
    "tutorial-en-zh": ["en", "zh"],
    "zh-lm": ["zh"],
}
# the text the page puts in the box for each bundled model (in its language and task); a folder has none
EXAMPLES: dict[str, str] = {
    MINILM: "The cat sat on the mat because it was tired.",
    "zh-sentiment": "这本书写得很好",
    "dates-zh": "Friday, March 5, 2021",
    "tutorial-en-zh": "The cat sat on the mat.",
    "zh-lm": "中国",
}
CONTINUATION = 20  # characters a language model writes after the text (greedy: the likeliest each time)
ROUND = 5  # decimals of the numbers a run returns (weights in the viewer payload have their own 8-bit codes)


class UnknownModelError(InputError):
    """A run names a model the lab does not offer."""


@dataclass(frozen=True)
class ModelEntry:
    """One model of the catalogue: the ``name`` clients use, its kind, languages, and what to load (never sent)."""

    name: str
    kind: str  # locate's kind: "huggingface", "classifier", "translator" or "lm"
    languages: tuple[str, ...]
    source: str  # the bundled name or the folder, as given on the command line

    def describe(self) -> dict[str, Any]:
        example = EXAMPLES.get(self.source) if self.source == self.name else None  # bundled models only
        return {"name": self.name, "kind": KIND_NAMES[self.kind], "languages": list(self.languages),
                "example": example}


def catalogue(folders: Sequence[str | os.PathLike[str]] = (), *, bundled: bool = True) -> list[ModelEntry]:
    """The bundled models present in this installation, then each folder (a Hugging Face model, or a classifier,
    translator or language model run), named by its folder name (``-2``, ``-3`` ... when two share one).  A folder
    that is not a model raises :class:`attnlab.errors.ModelLoadError` naming it."""
    entries = []
    if bundled:
        for name, languages in BUNDLED_LANGUAGES.items():
            if bundled_folder(name) is not None:
                entries.append(ModelEntry(name, MODELS[name][0], tuple(languages), name))
    for folder in folders:
        found = locate(folder)
        if found.bundled is not None:
            entries.append(ModelEntry(found.bundled, found.kind, tuple(BUNDLED_LANGUAGES.get(found.bundled, ())),
                                      found.bundled))
            continue
        base = Path(os.path.abspath(folder)).name or "model"
        name, n = base, 1
        while any(e.name == name for e in entries):
            n += 1
            name = f"{base}-{n}"
        entries.append(ModelEntry(name, found.kind, (), str(folder)))
    seen: dict[str, ModelEntry] = {}
    for e in entries:  # a bundled name given again on the command line is offered once
        seen.setdefault(e.name, e)
    return list(seen.values())


class Lab:
    """The catalogue of models with a cache of the loaded ones (at most ``cache`` at a time), and :meth:`run`.

    Not thread-safe: the server runs one model call at a time (a model call uses every core it is given)."""

    def __init__(self, entries: Sequence[ModelEntry], *, cache: int = 4) -> None:
        if isinstance(cache, bool) or not isinstance(cache, int) or cache < 1:
            raise InputError(f"the model cache holds at least 1 model, got {cache!r}; pass --cache 1 or more")
        if not entries:
            raise ModelLoadError("the lab has no model to offer: the bundled models are missing and no folder was "
                                 "given; name a model folder (attnlab serve --model FOLDER)")
        self.entries = {e.name: e for e in entries}
        self.cache_size = cache
        self._loaded: OrderedDict[str, Any] = OrderedDict()

    def models(self) -> list[dict[str, Any]]:
        return [e.describe() for e in self.entries.values()]

    def entry(self, name: object) -> ModelEntry:
        if not isinstance(name, str) or name not in self.entries:
            shown = repr(name) if isinstance(name, str) else f"a {type(name).__name__}"
            raise UnknownModelError(f"unknown model {shown[:80]}; the lab offers {', '.join(self.entries)}")
        return self.entries[name]

    def loaded(self, entry: ModelEntry) -> Any:
        """The loaded model of ``entry``, from the cache or loaded now (the least recently used one leaves)."""
        if entry.name in self._loaded:
            self._loaded.move_to_end(entry.name)
            return self._loaded[entry.name]
        model = _load(entry)
        self._loaded[entry.name] = model
        while len(self._loaded) > self.cache_size:
            self._loaded.popitem(last=False)
        return model

    @property
    def cached(self) -> list[str]:
        return list(self._loaded)

    def _runs(self, model: str, text: str, compare: str | None) -> tuple[ModelEntry, list[_Run], list[str]]:
        """The run of ``text`` (and of ``compare``), each trace with its head notes, and the warnings they gave."""
        from ..analysis import head_notes

        entry = self.entry(model)
        loaded = self.loaded(entry)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            runs = [_RUNS[entry.kind](loaded, entry, t) for t in (text, compare) if t is not None]
        for r in runs:
            r.trace.meta["heads"] = head_notes(r.trace)
        doubts = {d for r in runs for d in (r.output or {}).get("doubts", ())}  # in the output already
        return entry, runs, [m for m in dict.fromkeys(_one_line(w.message) for w in caught) if m not in doubts]

    def traces(self, model: str, text: str, compare: str | None = None) -> list[Any]:
        """The traces of a run (one, or two with ``compare``), with head notes: what the downloads hold."""
        return [r.trace for r in self._runs(model, text, compare)[1]]

    def run(self, model: str, text: str, *, compare: str | None = None, layer: int | None = None,
            head: int | None = None) -> dict[str, Any]:
        """One run of the API: the task output, tokens, head notes and viewer payload of ``text`` (and of
        ``compare`` beside it, with the difference of the two attentions), plus the server time in ms."""
        from ..viz.html import payload

        start = time.perf_counter()
        entry, runs, caught = self._runs(model, text, compare)
        first = runs[0]
        result: dict[str, Any] = {
            "model": entry.name,
            "kind": KIND_NAMES[entry.kind],
            "text": text,
            "tokens": first.tokens,
            "output": first.output,
            "labels": first.trace.meta["heads"],
            "view": _view(first.trace, layer, head),
            # gzip level 1: 7 times faster than the file's level 6 (0.8 s of a 512-token run), 30 % more bytes
            "viewer": payload([r.trace for r in runs] if len(runs) == 2 else first.trace, compresslevel=1),
            "warnings": caught,
        }
        if len(runs) == 2:
            second = runs[1]
            result["compare"] = {"text": compare, "tokens": second.tokens, "output": second.output,
                                 "labels": second.trace.meta["heads"]}
            result["difference"] = difference(first.trace, second.trace)
        result["server_ms"] = round((time.perf_counter() - start) * 1000, 2)
        return result


    def ablate(self, model: str, text: str, layer: int, head: int) -> dict[str, Any]:
        """The output of ``text`` before and after zero-ablating head ``layer.head`` (its output at every position;
        :func:`attnlab.circuits.ablate_text`): a language model's likeliest next characters, a classifier's labels,
        with their probabilities and the total variation between the two distributions; plus the server time."""
        from ..circuits import ablate_text, text_model

        start = time.perf_counter()
        entry = self.entry(model)
        if entry.kind not in ("lm", "classifier"):
            kind = KIND_NAMES[entry.kind]
            raise InputError(f"{entry.name} is {'an' if kind[0] in 'aeiou' else 'a'} {kind}; ablating a head needs a "
                             f"language model or a classifier (attnlab.circuits has hook points on their heads)")
        result = ablate_text(text_model(self.loaded(entry), entry.name), text, layer, head)
        result["server_ms"] = round((time.perf_counter() - start) * 1000, 2)
        return result


@dataclass
class _Run:
    trace: Any  # AttentionTrace
    tokens: list[str]
    output: dict[str, Any] | None


def _load(entry: ModelEntry) -> Any:
    if entry.kind == "huggingface":
        from ..capturing import load_encoder

        return load_encoder(entry.source)
    if entry.kind == "classifier":
        from ..trained import load_trained

        return load_trained(entry.source)
    if entry.kind == "lm":
        from ..trained import load_language_model

        return load_language_model(entry.source)
    from ..trained import load_translator

    return load_translator(entry.source)


def _run_encoder(loaded: Any, entry: ModelEntry, text: str) -> _Run:
    from ..capturing import trace_text

    hf_model, tokenizer, name = loaded
    trace = trace_text(text, hf_model, tokenizer=tokenizer)
    trace.meta["model"] = entry.name
    return _Run(trace, _main_tokens(trace), None)


def _run_classifier(clf: Any, entry: ModelEntry, text: str) -> _Run:
    """The calibrated prediction, captured; a text over the model's length is refused, not cut."""
    import torch

    from ..capturing import attach_classifier_tokens, capture
    from ..data import encode
    from ..errors import TooLongError

    if not isinstance(text, str) or not text.strip():
        raise InputError(f"the text to classify is empty (got {text!r}); give some text")
    ids = encode(clf.tokenizer, [text], 10**9).ids[0]
    limit = int(clf.model.config.max_length)
    if len(ids) > limit:
        raise TooLongError(f"the input is {len(ids)} tokens long ([CLS] included) but {entry.name} takes at most "
                           f"{limit}; shorten the text", len(ids), limit)
    with torch.no_grad(), capture(clf.model) as trace:
        [(label, probability)] = clf.predict([text])
    trace = attach_classifier_tokens(trace, clf.tokenizer, ids)
    trace.meta.update(model=entry.name, text=text, label=label, probability=probability)
    output = {"label": label, "probability": round(probability, ROUND), "temperature": clf.temperature,
              "calibrated": clf.temperature != 1.0}
    return _Run(trace, _main_tokens(trace), output)


def _run_translator(translator: Any, entry: ModelEntry, text: str) -> _Run:
    """The greedy translation with its confidence, doubts and alignment, its decoding steps captured."""
    from ..capturing import trace_translation

    translation, trace = trace_translation(translator, text)
    trace.meta.update(model=entry.name, text=text, translation=translation.text)
    output = {
        "translation": translation.text,
        "confidence": round(float(translation.confidence), ROUND),
        "doubts": list(translation.warnings),
        "source_tokens": list(translation.source_tokens),
        "target_tokens": list(translation.target_tokens),
        "alignment": [[round(float(x), ROUND) for x in row] for row in translation.alignment.tolist()],  # (T, S)
    }
    return _Run(trace, list(translation.source_tokens), output)


def _run_lm(lm: Any, entry: ModelEntry, text: str) -> _Run:
    """The greedy continuation of ``text`` (:data:`CONTINUATION` characters, ``attnlab generate --top-k 1``) with
    the attention of the text and its continuation; a text that would push the window past the model's context is
    refused, not cut."""
    from ..capturing import trace_generation
    from ..errors import TooLongError

    limit = lm.context - CONTINUATION
    if len(text) > limit:
        raise TooLongError(f"the text is {len(text)} characters long but {entry.name} continues at most {limit} (its "
                           f"context of {lm.context} less the {CONTINUATION} it writes); shorten the text",
                           len(text), limit)
    generated, trace = trace_generation(lm, text, max_tokens=CONTINUATION, top_k=1)
    trace.meta["model"] = entry.name
    chars = lm.characters()
    output = {"continuation": "".join(chars[i] for i in generated.ids),
              "log_probability": round(sum(generated.model_log_probs) / len(generated.model_log_probs), ROUND)}
    return _Run(trace, [chars[i] for i in generated.prompt_ids], output)


_RUNS = {"huggingface": _run_encoder, "classifier": _run_classifier, "translator": _run_translator, "lm": _run_lm}


def _main_tokens(trace: Any) -> list[str]:
    return list(trace.select(kind=trace.main_kind)[0].key_tokens or [])


def difference(a: Any, b: Any) -> dict[str, Any]:
    """How far apart the attention of two texts is, per layer and head of the main kind: the total variation
    distance between their rows, ``0.5 * sum_k |a - b|``, averaged over the queries (0: the same, 1: disjoint).
    Defined when both texts have as many tokens; otherwise ``tv`` is None and ``reason`` says why."""
    kind = a.main_kind
    wa, wb = a.stack(kind), b.stack(kind)  # (L, H, Q, K) each
    if wa.shape != wb.shape:
        return {"kind": kind, "tv": None, "reason": f"the texts have {wa.shape[-1]} and {wb.shape[-1]} tokens; the "
                f"difference is drawn when both have as many (change one word for another)"}
    tv = 0.5 * (wa - wb).abs().sum(-1).mean(-1)  # (L, H)
    return {"kind": kind, "tv": [[round(float(x), ROUND) for x in row] for row in tv.tolist()], "reason": None}


def _view(trace: Any, layer: int | None, head: int | None) -> dict[str, Any]:
    """The layer and head the page opens on (the request's, else the last layer and the mean of its heads)."""
    n_layers, n_heads = trace.n_layers, trace.n_heads
    if layer is not None and not -n_layers <= layer < n_layers:
        raise InputError(f"layer {layer} is out of range: the model has {n_layers} layers (0..{n_layers - 1}, or "
                         f"negative from the end)")
    if head is not None and not 0 <= head < n_heads:
        raise InputError(f"head {head} is out of range: the model has {n_heads} heads (0..{n_heads - 1})")
    return {"layer": (layer if layer is not None else -1) % n_layers, "head": -1 if head is None else head,
            "n_layers": n_layers, "n_heads": n_heads}


def _one_line(message: object) -> str:
    return " ".join(str(message).split())
