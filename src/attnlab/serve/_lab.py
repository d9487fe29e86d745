"""The lab's models and what one run returns: :meth:`attnlab.Model.run`, the one way every surface runs a model (so a
text gets the answer here that ``predict``, ``translate``, ``generate`` and ``show`` give), the head labels and
metrics of :mod:`attnlab.analysis`, and the viewer's payload (:func:`attnlab.viz.html.payload`).

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

from .._bundled import MODELS, Located, ModelKind, bundled_folder, locate
from ..errors import InputError, ModelLoadError, TooLongError
from ..kinds import KIND, Budget, Kind, TooCostlyError

__all__ = ["SAMPLING_FIELDS", "Lab", "ModelEntry", "UnknownModelError", "lm_settings"]

# what a run's "sampling" object may set for a language model (attnlab generate's options; the rest keep the defaults)
CONTINUATION = 20  # characters a language model writes after the text (attnlab.trained.SHOWN_SAMPLING's)
SAMPLING_FIELDS = ("temperature", "top_k", "top_p", "repetition_penalty", "no_repeat_ngram", "greedy", "seed")
ROUND = 5  # decimals of the numbers a run returns (weights in the viewer payload have their own 8-bit codes)


class UnknownModelError(InputError):
    """A run names a model the lab does not offer."""


@dataclass(frozen=True)
class ModelEntry:
    """One model of the catalogue: the ``name`` clients use, its kind, languages, and what to load (never sent)."""

    name: str
    kind: ModelKind  # locate's kind: "huggingface", "classifier", "translator" or "lm"
    languages: tuple[str, ...]
    source: str  # the bundled name or the folder, as given on the command line
    found: Located  # what locate found for it (resolved once, when the catalogue is made)

    def describe(self) -> dict[str, Any]:
        example = MODELS[self.source].example if self.source == self.name else None  # bundled models only
        spec = self.spec
        out: dict[str, Any] = {"name": self.name, "kind": spec.api, "languages": list(self.languages),
                               "example": example, "can": sorted(spec.can)}
        if spec.able("sample"):  # the page's sampling controls start at the model's defaults
            from ..trained import sampling_defaults

            out["sampling"] = lm_settings(None, sampling_defaults(self.found.path))
        return out

    @property
    def spec(self) -> Kind:
        return KIND[self.kind]


def catalogue(folders: Sequence[str | os.PathLike[str]] = (), *, bundled: bool = True) -> list[ModelEntry]:
    """The bundled models present in this installation, then each folder (a Hugging Face model, or a classifier,
    translator or language model run), named by its folder name (``-2``, ``-3`` ... when two share one).  A folder
    that is not a model raises :class:`attnlab.errors.ModelLoadError` naming it."""
    entries = []
    if bundled:
        for name, bundled_model in MODELS.items():
            if bundled_model.lab and bundled_folder(name) is not None:
                entries.append(ModelEntry(name, bundled_model.kind, bundled_model.languages, name, locate(name)))
    for folder in folders:
        found = locate(folder)
        if found.bundled is not None:
            entries.append(ModelEntry(found.bundled, found.kind, MODELS[found.bundled].languages, found.bundled,
                                      found))
            continue
        base = Path(os.path.abspath(folder)).name or "model"
        name, n = base, 1
        while any(e.name == name for e in entries):
            n += 1
            name = f"{base}-{n}"
        entries.append(ModelEntry(name, found.kind, (), str(folder), found))
    seen: dict[str, ModelEntry] = {}
    for e in entries:  # a bundled name given again on the command line is offered once
        seen.setdefault(e.name, e)
    return list(seen.values())


class Lab:
    """The catalogue of models with a cache of the loaded ones (at most ``cache`` at a time), and :meth:`run`.

    Not thread-safe: the server runs one model call at a time (a model call uses every core it is given)."""

    def __init__(self, entries: Sequence[ModelEntry], *, cache: int = 4, budget: Budget | None = None) -> None:
        if isinstance(cache, bool) or not isinstance(cache, int) or cache < 1:
            raise InputError(f"the model cache holds at least 1 model, got {cache!r}; pass --cache 1 or more")
        if not entries:
            raise ModelLoadError("the lab has no model to offer: the bundled models are missing and no folder was "
                                 "given; name a model folder (attnlab serve --model FOLDER)")
        self.entries = {e.name: e for e in entries}
        self.cache_size = cache
        self.budget = budget or Budget(how="shorten the text")  # what one run may keep for the page
        self._loaded: OrderedDict[str, Any] = OrderedDict()
        # the last run made (model, text, compare) -> its runs: what the page's downloads ask for, so a download
        # reuses it instead of running the model again; one only (a 512-token MiniLM trace is 75 MB of weights)
        self._last: tuple[tuple[str, str, str | None, str], list[_Run]] | None = None
        self.model_calls = 0  # runs of a model on a text (or two) since the lab started

    def models(self) -> list[dict[str, Any]]:
        return [e.describe() for e in self.entries.values()]

    def entry(self, name: object) -> ModelEntry:
        if name is None:
            raise InputError(f'the body names no "model"; name one the lab offers: {", ".join(self.entries)}')
        if not isinstance(name, str) or name not in self.entries:
            json_type = {bool: "boolean", int: "number", float: "number", list: "array", dict: "object"}
            shown = repr(name) if isinstance(name, str) else f"a JSON {json_type.get(type(name), 'value')}"
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

    def _runs(self, model: str, text: str, compare: str | None, sampling: Any = None
              ) -> tuple[ModelEntry, list[_Run], list[str]]:
        """The run of ``text`` (and of ``compare``), each trace with its head notes, and the warnings they gave;
        ``sampling`` (a language model's settings, :func:`lm_settings`) is refused for another kind of model."""
        from ..analysis import head_notes

        entry = self.entry(model)
        if sampling is not None and not entry.spec.able("sample"):
            raise InputError(f'"sampling" sets how a language model writes; {entry.name} is a '
                             f"{entry.spec.api}: leave it out")
        loaded = self.loaded(entry)
        settings = lm_settings(sampling, loaded.loaded.defaults) if entry.spec.able("sample") else None
        texts = [t for t in (text, compare) if t is not None]
        for t in texts:  # what each run would keep, refused before any runs
            _check_cost(loaded, entry, t, settings, self.budget)
        self.model_calls += 1
        with warnings.catch_warnings():  # each run's warnings are in its outcome
            warnings.simplefilter("ignore")
            runs = [_run(loaded, entry, t, settings) for t in texts]
        for r in runs:
            r.trace.meta["heads"] = head_notes(r.trace, value_norm_ratio=r.value_norm_ratio)
        doubts = {d for r in runs for d in (r.output or {}).get("doubts", ())}  # in the output already
        said = dict.fromkeys(w for r in runs for w in r.warnings)
        return entry, runs, [m for m in said if m not in doubts]

    def traces(self, model: str, text: str, compare: str | None = None, sampling: Any = None) -> list[Any]:
        """The traces of a run (one, or two with ``compare``), with head notes: what the downloads hold.  The run
        :meth:`run` made last for the same model, texts and sampling is reused (the page downloads what it shows);
        any other is run now."""
        key = (self.entry(model).name, text, compare, repr(sampling))
        if self._last is not None and self._last[0] == key:
            return [r.trace for r in self._last[1]]
        return [r.trace for r in self._runs(model, text, compare, sampling)[1]]

    def run(self, model: str, text: str, *, compare: str | None = None, layer: int | None = None,
            head: int | None = None, sampling: Any = None) -> dict[str, Any]:
        """One run of the API: the task output, tokens, head notes and viewer payload of ``text`` (and of
        ``compare`` beside it, with the difference of the two attentions), plus the server time in ms.
        ``sampling``: a language model's settings (:func:`lm_settings`), None for the defaults."""
        from ..viz.html import payload

        start = time.perf_counter()
        entry, runs, caught = self._runs(model, text, compare, sampling)
        self._last = ((entry.name, text, compare, repr(sampling)), runs)
        first = runs[0]
        result: dict[str, Any] = {
            "model": entry.name,
            "kind": entry.spec.api,
            "text": text,
            "tokens": first.tokens,
            "output": first.output,
            "labels": first.trace.meta["heads"],
            "view": _view(first.trace, layer, head, runs[1].trace if len(runs) == 2 else None),
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
        entry.spec.require("ablate", entry.name, "ablating a head", api=True)
        # no trace is kept: a long classifier text is read in windows, in memory linear in its length
        result = ablate_text(text_model(self.loaded(entry), entry.name), text, layer, head)
        result["server_ms"] = round((time.perf_counter() - start) * 1000, 2)
        return result

    def qk(self, model: str, text: str, layer: int, head: int, query: int, key: int) -> dict[str, Any]:
        """Why head ``layer.head`` looks from token ``query`` to token ``key`` of ``text``: its attention score there
        split exactly into query-side source x key-side source terms (:func:`attnlab.circuits.qk_attribution`; the
        sources are the embeddings, every earlier head and MLP, and ``bias``), as its JSON gives them (``table``,
        ``score``, ``query_side``, ``key_side``, ``top``, ...), with the text's tokens, the two tokens and the server
        time.  The positions are the tokens of the text read in one pass (``tokens``); a causal model's key is at most
        its query.  Refused before running: a kind that cannot (by its ``can``), a head or position out of range, and
        a run that would keep more than the lab's :class:`~attnlab.kinds.Budget` (every source's output at every
        position)."""
        import math

        import numpy as np

        from ..circuits import anatomy, qk_attribution, text_model

        start = time.perf_counter()
        entry = self.entry(model)
        entry.spec.require("qk", entry.name, "QK attribution (why a head looks where it looks)", api=True)
        tm = text_model(self.loaded(entry), entry.name)
        a = anatomy(tm.model)
        if not (0 <= layer < a.n_layers and 0 <= head < a.n_heads):
            raise InputError(f"head {layer}.{head} does not exist; {entry.name} has layers 0-{a.n_layers - 1} and "
                             f"heads 0-{a.n_heads - 1}")
        ids, tokens = tm.encode(text, "given", whole=True)
        n = int(ids.shape[1])
        if n > tm.window:
            raise TooLongError(f"the text is {n} tokens long but {entry.name} reads at most {tm.window} in one pass, "
                               f"and QK attribution splits a score of one pass; shorten the text", n, tm.window)
        for name, at in (("query", query), ("key", key)):
            if not 0 <= at < n:
                raise InputError(f'"{name}" {at} is not a position of the text: its {n} tokens are 0-{n - 1} '
                                 f"(tokens as {entry.name} reads them, special ones included)")
        if a.unembed is not None and key > query:  # a language model is causal: a query reads the keys up to itself
            raise InputError(f"query {query} does not see key {key}: {entry.name} is causal, so a query reads the keys "
                             f"up to its own position; give a key of at most {query}")
        d_model = int(a.layers[0].attn.out_proj.weight.shape[0])
        per_token = (1 + a.n_layers * (a.n_heads + 1)) * d_model  # the embeddings, every head and MLP's output
        if n * per_token > self.budget.kept:
            raise TooCostlyError(
                f"QK attribution on {n} tokens keeps every head's and MLP's output at every position, "
                f"{n * per_token:,} numbers ({4 * n * per_token / 1e6:,.0f} MB), over the {self.budget.kept:,} this "
                f"lab allows; {self.budget.how}", n, max(1, self.budget.kept // per_token))
        found = qk_attribution(tm.model, ids, layer, head, query, key).to_json()
        if not (np.isfinite(found["table"]).all() and math.isfinite(found["score"] + found["mask_bias"])):
            raise InputError(f"head {layer}.{head}'s score from {query} to {key} is not finite; no split to show")
        return {"model": entry.name, "tokens": tokens, "query_token": tokens[query], "key_token": tokens[key],
                **found, "server_ms": round((time.perf_counter() - start) * 1000, 2)}

    def attribute(self, model: str, text: str, sampling: Any = None) -> dict[str, Any]:
        """Which tokens each output token used, for the run of ``text`` (the one :meth:`run` made last for the same
        model, text and sampling, or one made now): a language model's generated characters over the characters it
        read, a translator's output tokens over the source and the output before them.  ``rows`` the output tokens,
        ``columns`` what they read (``split`` of them the prompt or the source), ``methods`` each method's signed
        scores (rows x columns, null where the token was not read), ``agreement`` the mean Spearman correlation of
        the two methods (null when only one applies); plus the server time."""
        import numpy as np

        from ..analysis import attribute_generation, attribute_translation

        start = time.perf_counter()
        entry = self.entry(model)
        entry.spec.require("attribute", entry.name, "attribution of output tokens (a classifier's is attnlab analyze "
                                                    "--attribution)", api=True)
        key = (entry.name, text, None, repr(sampling))
        runs = self._last[1] if self._last is not None and self._last[0] == key else self._runs(
            model, text, None, sampling)[1]
        got, loaded = runs[0].result, self.loaded(entry).loaded
        if entry.spec.able("sample"):  # a language model: its generated characters over what it read
            lm = attribute_generation(loaded.model, got.prompt_ids, got.ids)
            chars = loaded.characters()
            rows, columns, split = [chars[i] for i in lm.generated], [chars[i] for i in lm.sources], lm.n_prompt
            methods = {"ALTI-Logit": lm.alti_logit, "gradient x input": lm.grad_x_input}
            methods = {k: m for k, m in methods.items() if not np.isnan(m).all()}  # (a Hugging Face LM: no ALTI)
            agreement = lm.agreement()
            reading = f"the prompt | the {entry.spec.unit}s generated before"
        else:
            if not got.ids:
                raise InputError(f"the translation of {text[:40]!r} is empty, so there is nothing to attribute")
            (source_ids,) = loaded.encode([text])
            tr = attribute_translation(loaded.model, source_ids, got.ids)
            rows, split = list(got.target_tokens), len(got.source_tokens)
            columns = [*got.source_tokens, "[BOS]", *rows[:-1]]
            methods = {"gradient x input": np.hstack([tr.grad_source, tr.grad_target])}
            if tr.alti_source is not None and tr.alti_target is not None:
                methods = {"ALTI-Logit": np.hstack([tr.alti_source, tr.alti_target]), **methods}
            agreement = tr.agreement()
            reading = "the source | the output before"

        def cells(matrix: Any) -> list[list[float | None]]:
            return [[None if x != x else round(float(x), ROUND) for x in row] for row in matrix]

        return {"model": entry.name, "kind": entry.spec.api, "rows": rows, "columns": columns, "split": split,
                "reading": reading,
                "methods": {name: cells(m) for name, m in methods.items()},
                "agreement": None if agreement != agreement else round(float(agreement), 4),
                "server_ms": round((time.perf_counter() - start) * 1000, 2)}


@dataclass
class _Run:
    trace: Any  # AttentionTrace
    tokens: list[str]
    output: dict[str, Any] | None
    warnings: tuple[str, ...] = ()
    result: Any = None  # the runner's own result (a Generation, a Translation): what attribution replays
    # (L, H): what the first token's value writes over the others', read in the run (None where circuits cannot)
    value_norm_ratio: Any = None


def _load(entry: ModelEntry) -> Any:
    from ..kinds import Model

    return Model.load(entry.found, cached=False)  # the lab's cache is the only one (serve --cache N holds N)


def _check_cost(model: Any, entry: ModelEntry, text: str, settings: dict[str, Any] | None, budget: Budget) -> None:
    """Refuse, before running, a text the model cannot continue in one window, or whose run would keep more
    attention than ``budget`` allows (a :class:`~attnlab.errors.TooLongError`, answered 413)."""
    if settings is not None:  # a language model: the page shows one window of attention, so the window may not slide
        model.spec.check_window(model, entry.name, text, CONTINUATION)
    options = {"max_tokens": CONTINUATION} if settings is not None else {}
    budget.check(model.cost(text, **options), entry.name, model.spec.whole)  # model.cost refuses a non-string


def _run(model: Any, entry: ModelEntry, text: str, settings: dict[str, Any] | None = None) -> _Run:
    """One run of ``model`` (an :class:`attnlab.Model`) on ``text`` and the part of its output the page shows; a
    language model's with the request's sampling settings (:func:`lm_settings`), writing :data:`CONTINUATION`."""
    from ..circuits import model_value_norms

    options = {"max_tokens": CONTINUATION, **settings} if settings is not None else {}
    with model_value_norms(model, text) as kept:  # the sink column's values, read in the same run
        outcome = model.run(text, **options)
    outcome.trace.meta["model"] = entry.name
    output = model.spec.shown(model, outcome, settings=settings)
    try:
        trace = outcome.traced
        ratio = kept.first_value_ratio(int(trace.select(kind=trace.main_kind)[0].weights.shape[-1]))
    except InputError:  # not a model circuits read, or a text read in windows: the notes go without it
        ratio = None
    return _Run(outcome.trace, model.spec.shown_tokens(outcome), output, outcome.warnings, outcome.result, ratio)


def lm_settings(sampling: Any, defaults: dict[str, Any] | None = None) -> dict[str, Any]:
    """A language model's settings for one run: ``sampling`` (a dict of :data:`SAMPLING_FIELDS`, or None) over the
    model's ``defaults`` (``LanguageModel.defaults``; None: the library's, ``attnlab.trained.SAMPLING``, not greedy),
    seed 0, checked as ``attnlab generate`` checks its options."""
    from ..trained import SAMPLING, check_sampling

    if sampling is None:
        sampling = {}
    if not isinstance(sampling, dict):
        raise InputError(f'"sampling" must be an object such as {{"temperature": 0.8, "top_p": 0.9, "seed": 0}}, got '
                         f"a {type(sampling).__name__}")
    unknown = sorted(set(sampling) - set(SAMPLING_FIELDS))
    if unknown:
        raise InputError(f'unknown "sampling" field(s) {", ".join(map(repr, unknown))[:100]}; the fields are '
                         f"{', '.join(SAMPLING_FIELDS)}")
    settings = {**(defaults if defaults is not None else {**SAMPLING, "greedy": False}), "seed": 0, **sampling}
    check_sampling(CONTINUATION, settings["temperature"], settings["top_k"], settings["top_p"],
                   settings["repetition_penalty"], settings["no_repeat_ngram"], style="json")
    if not isinstance(settings["greedy"], bool):
        raise InputError(f'"greedy" must be true or false, got {settings["greedy"]!r}')
    seed = settings["seed"]
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise InputError(f'"seed" must be an integer from 0, got {seed!r}; the same seed gives the same text')
    return settings




def _main_tokens(trace: Any) -> list[str]:
    return list(trace.select(kind=trace.main_kind)[0].key_tokens or [])


def difference(a: Any, b: Any) -> dict[str, Any]:
    """How far apart the attention of two texts is, per layer and head (:func:`attnlab.viz.difference`: the total
    variation between their rows, averaged over the queries; ``tv`` None with a ``reason`` when they differ in
    shape)."""
    from ..viz import difference as tv

    return tv(a, b)


def _view(trace: Any, layer: int | None, head: int | None, other: Any = None) -> dict[str, Any]:
    """The layer and head the page opens on: the request's, else the first view of every surface
    (:func:`attnlab.viz.first_view`: the last layer, the mean of its heads; with a second text, the layer where the
    two differ most)."""
    from ..viz import first_view

    n_layers, n_heads = trace.n_layers, trace.n_heads
    if layer is not None and not -n_layers <= layer < n_layers:
        raise InputError(f"layer {layer} is out of range: the model has {n_layers} layers (0..{n_layers - 1}, or "
                         f"negative from the end)")
    if head is not None and not 0 <= head < n_heads:
        raise InputError(f"head {head} is out of range: the model has {n_heads} heads (0..{n_heads - 1})")
    first = first_view(trace, other)
    layers = [r.layer for r in trace.select(kind=first["kind"])]
    shown = layer % n_layers if layer is not None else layers.index(first["layer"])
    return {"layer": shown, "head": first["head"] if head is None else head, "n_layers": n_layers, "n_heads": n_heads}


def _one_line(message: object) -> str:
    return " ".join(str(message).split())
