"""One way to run a model: :class:`Model` loads any kind once (a bundled name or a folder, :func:`attnlab.locate`),
and :meth:`Model.run` runs it on a text and returns an :class:`Outcome`: the output the user is told (the calibrated
probability, the translation and its confidence, the continuation), the warnings, and the attention captured while
the model computed that very output.  Every surface calls it: ``trace_text``, ``attnlab show``, ``predict`` (and
``--explain``), ``translate``, ``generate``, ``analyze``, the behaviour suites and the lab's ``POST /api/run``; so one
text gives one answer everywhere.

What each kind runs is one entry of :data:`RUNNERS`, keyed like :data:`attnlab.KINDS`.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from .._bundled import KINDS, Located, ModelKind, locate
from ..errors import InputError
from ..trace import AttentionRecord, AttentionTrace
from ._core import capture

__all__ = ["RUNNERS", "Model", "Outcome"]


@dataclass
class Outcome:
    """One run of a model on one text.

    Attributes:
        model: the model as the user named it (a bundled name, or the folder as given).
        kind: ``"huggingface"``, ``"classifier"``, ``"translator"`` or ``"lm"``.
        text: the input.
        output: what the user is told, JSON-ready: a classifier's ``label``, calibrated ``probability``,
            ``probabilities`` (every label's), ``temperature``, ``calibrated`` and ``windows`` (how many windows a
            long text was read in); a translator's ``translation``, ``confidence``, ``source_tokens``,
            ``target_tokens`` and ``alignment``; a language model's ``continuation`` and ``log_probability`` (the
            model's own mean per character); an encoder's ``n_tokens``.
        warnings: why not to believe the output (each once, one line each), also issued as ``UserWarning``.
        tokens: the input's tokens as the model read them.
        trace: the attention captured while the model computed ``output`` (None with ``trace=False``); its
            ``meta`` holds the output and the warnings too.
        result: the kind's own result object (``Translation``, ``Generated``; an encoder's unit-length mean-pooled
            sentence embedding ``(M,)``), for callers that draw more.
    """

    model: str
    kind: ModelKind
    text: str
    output: dict[str, Any]
    warnings: tuple[str, ...] = ()
    tokens: list[str] = field(default_factory=list)
    trace: AttentionTrace | None = None
    result: Any = None

    @property
    def traced(self) -> AttentionTrace:
        """The trace of a run made with ``trace=True`` (the default)."""
        if self.trace is None:
            raise InputError("this outcome was run with trace=False; run the model again with trace=True")
        return self.trace


Runner = Callable[..., Outcome]


class Model:
    """A model loaded once, to run on text after text (:meth:`run`, :meth:`run_many`).

    ``Model.load("zh-sentiment")``, ``Model.load("minilm")``, ``Model.load("./my-run")``; ``accept`` limits the kinds
    a caller reads (``Model.load(name, "classifier")`` for ``attnlab predict``), refusing another kind with the command
    that reads it.  ``loaded`` is the kind's own object: ``attnlab.trained.Classifier``, ``Translator`` or
    ``LanguageModel``, or ``(model, tokenizer, name)`` of an encoder."""

    def __init__(self, found: Located, loaded: Any) -> None:
        self.found = found
        self.loaded = loaded

    @property
    def kind(self) -> ModelKind:
        return self.found.kind

    @property
    def name(self) -> str:
        """How outputs and traces name the model: the bundled name, or the folder as given; an encoder as its loader
        names it (the bundled MiniLM as all-MiniLM-L6-v2, as ``trace_text`` always has)."""
        if self.kind == "huggingface":
            return str(self.loaded[2])
        return self.found.bundled or self.found.given

    @classmethod
    def load(cls, model: str | os.PathLike[str], *accept: ModelKind) -> Model:
        """The model ``model`` names (cached per process: a second load of an unchanged model file is free)."""
        found = locate(model, *accept)
        if found.in_progress:
            checkpoint = (found.path.parent if found.path.is_file() else found.path).name
            warnings.warn(f"{found.given!r} has no final model (its training was stopped or is still running): using "
                          f"its last checkpoint, {checkpoint}, not the final model", UserWarning, stacklevel=2)
        stat = found.path.stat()
        return cls(found, _load(found.kind, str(found.path), found.given, (stat.st_mtime_ns, stat.st_size)))

    def run(self, text: str, *, trace: bool = True, **options: Any) -> Outcome:
        """Run the model on ``text``: see :class:`Outcome`.  ``options`` are the kind's own: an encoder's
        ``text_pair``, ``merge``, ``max_length``, ``truncate``; a translator's ``beam``; a language model's
        ``max_tokens``, ``temperature``, ``top_k``, ``seed``, ``on_text``.  An option of another kind is an
        :class:`~attnlab.errors.InputError` naming the kind's own."""
        if not isinstance(text, str):
            raise InputError(f"the text must be a string, got {type(text).__name__}")
        runner = RUNNERS[self.kind]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            outcome = runner(self, text, trace=trace, **options)
        return _settle(outcome, caught)

    def run_many(self, texts: Sequence[str], **options: Any) -> list[Outcome]:
        """:meth:`run` on each text without traces, batched where the kind allows (a classifier's texts, a
        translator's); the outputs equal :meth:`run`'s one by one (to float rounding)."""
        many = MANY.get(self.kind)
        if many is None:
            return [self.run(t, trace=False, **options) for t in texts]
        outcomes = many(self, list(texts), **options)  # each carries its own warnings
        return [_settle(o, []) for o in outcomes]


@functools.lru_cache(maxsize=4)
def _load(kind: ModelKind, path: str, given: str, stamp: tuple[int, int]) -> Any:
    """The kind's own loaded object for the model at ``path`` (``stamp``: its modification time and size, so a
    retrained model is read again)."""
    if kind == "huggingface":
        from .pretrained import load_encoder

        return load_encoder(given)
    from .. import trained

    if kind == "classifier":
        clf = trained.load_trained(path)
        clf.name = given
        return clf
    if kind == "translator":
        translator = trained.load_translator(path)
        translator.name = given
        return translator
    lm = trained.load_language_model(path)
    lm.name = given
    return lm


def _settle(outcome: Outcome, caught: list[warnings.WarningMessage]) -> Outcome:
    """The outcome with every warning of its run, each once (its own first), issued again to the caller (in its own
    category: ``UnknownTokensWarning`` stays one); the trace's meta carries the output and the warnings."""
    category: dict[str, type[Warning]] = {}
    for w in caught:
        category.setdefault(_one_line(w.message), w.category)
    said = list(dict.fromkeys([*outcome.warnings, *category]))
    outcome.warnings = tuple(said)
    for message in said:
        warnings.warn(message, category.get(message, UserWarning), stacklevel=3)
    if outcome.trace is not None:  # the output as the user is told it (the per-token lists stay in the output)
        shown = {k: v for k, v in outcome.output.items() if k not in _NOT_IN_META}
        outcome.trace.meta.update(shown, model=outcome.model, text=outcome.text, warnings=list(said))
    return outcome


_NOT_IN_META = ("alignment", "source_tokens", "target_tokens")


def _one_line(message: object) -> str:
    return " ".join(str(message).split())


def _refuse(kind: ModelKind, options: dict[str, Any], allowed: Sequence[str]) -> None:
    extra = sorted(k for k, v in options.items() if k not in allowed and v not in (None, False))
    if extra:
        own = ", ".join(allowed) if allowed else "none"
        raise InputError(f"{', '.join(extra)} do(es) not apply to a {KINDS[kind].noun} (its options: {own}); leave "
                         f"{'it' if len(extra) == 1 else 'them'} out")


# ----- an encoder (a Hugging Face folder, MiniLM) ---------------------------------------------------------------------
def _run_encoder(m: Model, text: str, *, trace: bool = True, text_pair: str | None = None,
                 merge: str | None = None, max_length: int | None = None, truncate: bool = False) -> Outcome:
    from ._trace_text import encode_loaded

    hf_model, tokenizer, name = m.loaded
    captured, embedding = encode_loaded(text, hf_model, tokenizer, name, text_pair=text_pair, merge=merge,
                                        max_length=max_length, truncate=truncate)
    tokens = list(captured.select(kind=captured.main_kind)[0].key_tokens or [])
    return Outcome(m.name, m.kind, text, {"n_tokens": captured.meta["n_tokens"]}, (), tokens,
                   captured if trace else None, embedding)


# ----- a classifier ---------------------------------------------------------------------------------------------------
def _run_classifier(m: Model, text: str, *, trace: bool = True, **options: Any) -> Outcome:
    from ..trained import Classifier

    _refuse(m.kind, options, ())
    clf: Classifier = m.loaded
    [ids], _ = clf.encode([_text(text, "to classify")])
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
        from ._classifier import attach_classifier_tokens

        kept = attach_classifier_tokens(_stitched(captured, plan) if len(plan.starts) > 1 else captured,
                                        clf.tokenizer, ids)
        kept.meta.update(n_layers=clf.model.config.n_layers, n_heads=clf.model.config.n_heads, n_tokens=len(ids),
                         text_pair=None, merge=None)
    return Outcome(m.name, m.kind, text, output, (doubt,) if doubt else (), tokens, kept)


def _classified(clf: Any, logits: torch.Tensor, n_windows: int) -> dict[str, Any]:
    """A classifier's output from its logits ``(C,)``: the calibrated probabilities."""
    probs = clf.calibrated(logits)  # (C,)
    best = int(probs.argmax())
    return {"label": clf.labels[best], "probability": float(probs[best]),
            "probabilities": {lb: float(p) for lb, p in zip(clf.labels, probs, strict=True)},
            "temperature": clf.temperature, "calibrated": clf.temperature != 1.0, "windows": n_windows}


def _many_classifier(m: Model, texts: list[str], **options: Any) -> list[Outcome]:
    from ..trained import windows

    _refuse(m.kind, options, ())
    clf = m.loaded
    for t in texts:
        _text(t, "to classify")
    ids, _ = clf.encode(texts)
    logits = clf.logits_of_ids(ids)  # (N, C)
    limit = clf.model.config.max_length
    out = []
    for text, row, z in zip(texts, ids, logits, strict=True):
        doubt = clf.doubt(text)
        n_windows = len(windows(len(row), limit).starts)
        out.append(Outcome(m.name, m.kind, text, _classified(clf, z, n_windows), (doubt,) if doubt else (),
                           [clf.tokenizer.token_of(i) for i in row]))
    return out


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


# ----- a translator ---------------------------------------------------------------------------------------------------
def _run_translator(m: Model, text: str, *, trace: bool = True, beam: int = 1, **options: Any) -> Outcome:
    from ._translation import trace_translation

    _refuse(m.kind, options, ("beam",))
    translator = m.loaded
    _text(text, "to translate")
    if trace:
        translation, captured = trace_translation(translator, text, beam)
    else:
        (translation,) = translator.translate([text], beam=beam)
        captured = None
    return Outcome(m.name, m.kind, text, _translated(translation), tuple(translation.warnings),
                   list(translation.source_tokens), captured, translation)


def _translated(translation: Any) -> dict[str, Any]:
    return {"translation": translation.text, "confidence": float(translation.confidence),
            "source_tokens": list(translation.source_tokens), "target_tokens": list(translation.target_tokens),
            "alignment": translation.alignment.tolist()}  # (T, S)


BATCH = 256  # texts a translator decodes at once


def _many_translator(m: Model, texts: list[str], *, beam: int = 1, **options: Any) -> list[Outcome]:
    _refuse(m.kind, options, ("beam",))
    out = []
    for start in range(0, len(texts), BATCH):
        for t in m.loaded.translate(texts[start:start + BATCH], beam=beam, warn=False):
            out.append(Outcome(m.name, m.kind, t.source, _translated(t), tuple(t.warnings), list(t.source_tokens),
                               None, t))
    return out


# ----- a language model -----------------------------------------------------------------------------------------------
def _run_lm(m: Model, text: str, *, trace: bool = True, **sampling: Any) -> Outcome:
    """The continuation of ``text``: ``sampling`` as ``LanguageModel.generate`` takes it over the model's own
    defaults (``LanguageModel.defaults``), by default the one shown run of every surface
    (``attnlab.trained.SHOWN_SAMPLING``)."""
    from ..trained import SHOWN_SAMPLING
    from ._generation import trace_generation

    lm = m.loaded
    sampling = {**lm.defaults, **(sampling or SHOWN_SAMPLING)}  # the model's own defaults (sampling.json) beneath
    if trace:
        generated, captured = trace_generation(lm, text, **sampling)
    else:
        generated, captured = lm.generate(text, **sampling), None
    chars = lm.characters()
    scored = generated.model_log_probs
    output = {"continuation": "".join(chars[i] for i in generated.ids),
              "log_probability": sum(scored) / len(scored) if scored else 0.0, "slid": bool(generated.slid)}
    return Outcome(m.name, m.kind, text, output, (), [chars[i] for i in generated.prompt_ids], captured, generated)


def _text(text: object, what: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"the text {what} is empty (got {text!r}); give some text")
    return text


RUNNERS: dict[ModelKind, Runner] = {"huggingface": _run_encoder, "classifier": _run_classifier,
                                    "translator": _run_translator, "lm": _run_lm}
MANY: dict[ModelKind, Callable[..., list[Outcome]]] = {"classifier": _many_classifier,
                                                       "translator": _many_translator}
