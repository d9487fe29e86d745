"""What every kind of model is asked: :class:`Kind`, the object one module per kind implements, and what a request
costs (:class:`Cost`) against what a surface allows (:class:`Budget`).

:class:`Model` loads a model once and runs it through its kind; :class:`Outcome` is one run.  A kind is the one
place that knows what a model reads, how it runs (one text and many), which options are its own,
what it can do (:data:`CAPABILITIES`), what a request costs before it runs, how its output is told (the headline
answer and score, the line a command prints, the lab's JSON) and the view circuits take of it.  No surface compares
kind names: it asks the kind (``model.spec.can("ablate")``, ``model.spec.told(outcome)``).
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from .._bundled import KINDS, KindInfo, Located, ModelKind, locate
from ..errors import InputError, TooLongError
from ..trace import AttentionTrace

if TYPE_CHECKING:
    from ._hooked import TextModel

__all__ = ["CAPABILITIES", "KIND", "Budget", "Cost", "Forward", "Kind", "Model", "Outcome", "TooCostlyError",
           "nonempty"]

# What a kind may be able to do, and who asks.
CAPABILITIES: dict[str, str] = {
    "analyze": "attnlab analyze reads its attention (labels, rollout, metrics)",
    "sample": "it writes text under sampling settings (temperature, top_k, ...; the lab's sampling controls)",
    "ablate": "a head can be zero-ablated on a text (the lab's ablate, attnlab.circuits.ablate_text)",
    "patch": "attnlab patch and attnlab circuit run on it (named hook points)",
    "qk": "a head's score at one query and key splits into source terms (attnlab.circuits.qk_attribution; the lab's "
          "click on an attention cell)",
    "attribute": "its output tokens are attributed to what they read (the lab's attribute)",
    "explain": "its input tokens are attributed for what it reads (attnlab analyze --attribution)",
    "batch": "run_many batches its texts",
    "heads": "attnlab circuit --discover patches its heads one by one (a transformer translator: --task dates-year)",
}


class TooCostlyError(TooLongError):
    """A request would cost more than the surface allows (:class:`Budget`); refused before the model runs."""


@dataclass(frozen=True)
class Cost:
    """What one run costs, known before it runs.

    Attributes:
        tokens: the tokens the model reads (special tokens included).
        windows: the forward windows a long text is read in (1 when it fits).
        kept: attention weights a trace keeps for display (0 without a trace).
    """

    tokens: int
    windows: int = 1
    kept: int = 0

    @property
    def kept_bytes(self) -> int:
        return 4 * self.kept  # float32


@dataclass(frozen=True)
class Budget:
    """What one surface lets a run keep: ``kept`` attention weights at most (float32, 4 bytes each), and how a user
    raises it (``how``, said in the refusal)."""

    kept: int = 20_000_000  # 80 MB of weights: MiniLM's 512 tokens (6 x 12 x 512 x 512 = 18.9 M) fit
    how: str = "pass a shorter text"

    def check(self, cost: Cost, model: str, what: str) -> None:
        if cost.kept > self.kept:
            raise TooCostlyError(
                f"the text is {cost.tokens} tokens ({cost.windows} window(s)); showing {model}'s attention on it "
                f"would keep {cost.kept:,} weights ({cost.kept_bytes / 1e6:,.0f} MB), over the {self.kept:,} this "
                f"surface allows; {self.how}, or {what}", cost.tokens, self._most(cost))

    def _most(self, cost: Cost) -> int:
        """About how many tokens fit the budget (the weights kept grow with the square of the length)."""
        if cost.kept == 0:
            return cost.tokens
        return max(1, int(cost.tokens * (self.kept / cost.kept) ** 0.5))


UNBOUNDED = Budget(kept=2**62)

# The one table of kinds, keyed like attnlab.KINDS: attnlab.kinds fills it with one object per kind module (and
# register() adds to it); Model and Outcome read it here.
KIND: dict[ModelKind, Kind] = {}


@dataclass(frozen=True)
class Forward:
    """The forward pass analysis replays on one text (:meth:`Kind.forward`): ``net`` and ``run(k)``, its output on
    the text repeated ``k`` times; for a model whose answer is attributed too (a classifier), its ``ids`` ``(1, n)``
    and ``labels``."""

    net: Any
    run: Callable[[int], Any]
    ids: Any = None
    labels: tuple[str, ...] = ()


class Kind:
    """One kind of model.  A subclass sets :attr:`name`, :attr:`can` and :attr:`options` and implements
    :meth:`load` and :meth:`run`; the rest have defaults a kind overrides where it differs."""

    name: ClassVar[ModelKind]
    can: ClassVar[frozenset[str]] = frozenset()
    options: ClassVar[tuple[str, ...]] = ()  # Model.run's keyword options of this kind
    whole: ClassVar[str] = "pass a shorter text"  # how to read a text too long to show (the refusal's last words)
    # a text longer than its window is refused or cut (--truncate), never read in windows (show checks --tokens
    # against the window before the model loads)
    cut: ClassVar[bool] = False
    # whose behaviour-suite cases it reads (attnlab.suites.EXPECT_KEYS: what a case of each type expects)
    suites_as: ClassVar[str] = ""
    unit: ClassVar[str] = "character"  # what one token of its text is, in messages ("character", "token")

    @property
    def info(self) -> KindInfo:
        return KINDS[self.name]

    @property
    def noun(self) -> str:
        return self.info.noun

    @property
    def api(self) -> str:
        return self.info.api

    def __repr__(self) -> str:
        return f"<kind {self.name}: {self.noun}>"

    def able(self, capability: str) -> bool:
        """Whether this kind can do ``capability`` (one of :data:`CAPABILITIES`)."""
        if capability not in CAPABILITIES:
            raise KeyError(f"unknown capability {capability!r}; the capabilities are {', '.join(CAPABILITIES)}")
        return capability in self.can

    def require(self, capability: str, model: str, doing: str, *, api: bool = False) -> None:
        """An :class:`InputError` when this kind cannot do ``capability``, naming the kinds that can (as the lab's
        API names kinds with ``api``, else as messages do)."""
        if self.able(capability):
            return
        def named(kind: Kind) -> str:
            word = kind.api if api else kind.noun
            return f"{'an' if word[0] in 'aeiouAEIOU' else 'a'} {word}"

        able = [named(k) for k in KIND.values() if capability in k.can]
        raise InputError(f"{model} is {named(self)}; {doing} needs {' or '.join(able) or 'a kind attnlab lacks'}")

    def refuse(self, options: dict[str, Any]) -> None:
        """An :class:`InputError` naming any option that is not this kind's (None and False count as not given)."""
        extra = sorted(k for k, v in options.items() if k not in self.options and v is not None and v is not False)
        if extra:
            own = ", ".join(self.options) if self.options else "none"
            raise InputError(f"{', '.join(extra)} do(es) not apply to a {self.noun} (its options: {own}); leave "
                             f"{'it' if len(extra) == 1 else 'them'} out")

    # ----- loading -----------------------------------------------------------------------------------------------
    def load(self, found: Located) -> Any:
        """The kind's own loaded object for the model :func:`attnlab.locate` found."""
        raise NotImplementedError

    def config(self, found: Located) -> dict[str, Any] | None:
        """What the model's files say of its attention in a Hugging Face config's keys, read without loading it
        (``attnlab show`` checks --layer, --head and --kind against it first); None when this kind's cannot."""
        return None

    def display_name(self, found: Located, loaded: Any) -> str:
        """How outputs and traces name the model: the bundled name, or the folder as given."""
        return found.bundled or found.given

    # ----- running -----------------------------------------------------------------------------------------------
    def cost(self, model: Model, text: str, *, trace: bool = True, **options: Any) -> Cost:
        """What running ``text`` costs, before it runs (tokens, windows, weights kept)."""
        return Cost(len(text))

    def run(self, model: Model, text: str, *, trace: bool = True, **options: Any) -> Outcome:
        raise NotImplementedError

    def run_many(self, model: Model, texts: Sequence[str], **options: Any) -> list[Outcome]:
        """The outcomes of ``texts`` without traces, batched, each carrying its own warnings: a kind that can
        ``"batch"`` implements it (:meth:`Model.run_many` runs the others text by text)."""
        raise NotImplementedError

    def check_prompt(self, model: Model, text: str, max_tokens: int) -> None:
        """An :class:`InputError` for a prompt this kind cannot continue (before a command writes anything)."""
        self.require("sample", model.name, "continuing a text")

    def check_window(self, model: Model, name: str, text: str, writes: int) -> None:
        """A :class:`TooLongError` when ``text`` and the ``writes`` tokens after it do not fit one window of the
        model (the lab shows one window of attention, so its continuation may not slide)."""

    # ----- telling -----------------------------------------------------------------------------------------------
    def answer(self, outcome: Outcome) -> str | None:
        """The headline answer: a label, a translation, a continuation; None for a kind that answers nothing."""
        return None

    def score(self, outcome: Outcome) -> float | None:
        """How sure the model is of its answer: a probability, a confidence, a mean log-probability."""
        return None

    def told(self, outcome: Outcome) -> str | None:
        """The line a command prints first for the output (None: nothing to tell but the attention)."""
        return None

    def shown(self, model: Model, outcome: Outcome, **context: Any) -> dict[str, Any] | None:
        """The output as the lab's API returns it (JSON-ready)."""
        return None

    def shown_tokens(self, outcome: Outcome) -> list[str]:
        """The tokens the lab shows beside the output."""
        return list(outcome.tokens)

    def observed(self, model: Model, outcome: Outcome) -> dict[str, float]:
        """The scores a behaviour suite reads of an outcome (a classifier's label probabilities)."""
        return {}

    # ----- what other packages take of it --------------------------------------------------------------------------
    def text_model(self, model: Model) -> TextModel:
        """The view :mod:`attnlab.circuits` takes of the model (hook points, how texts become ids)."""
        self.require("patch", model.name, "a circuit (patching, ablation)")
        raise NotImplementedError

    def forward(self, model: Model, text: str) -> Forward:
        """The forward pass attribution replays (``attnlab analyze --attribution``)."""
        self.require("explain", model.found.given, "attributing its input (--attribution)")
        raise NotImplementedError

    def analysis_text(self, model: Model) -> str | None:
        """The text ``attnlab analyze`` reads when none is given (None: the command needs one)."""
        return None

    def analysis_trace(self, model: Model, text: str, max_length: int | None = None) -> AttentionTrace:
        """The model's attention on ``text`` as ``attnlab analyze`` reads it: the run every surface makes (a
        classifier reads a long text whole), refused in one line when too long or when nothing was captured."""
        options: dict[str, Any] = {} if max_length is None else {"max_length": max_length}
        options["budget"] = Budget(how="shorten the text")  # every head is measured on the n x n attention it keeps
        no_attention = InputError(f"the model {model.found.given!r} ran but recorded no attention: it has no "
                                  f"attention layers attnlab can capture, so there are no heads to analyse")
        try:
            trace = model.run(text, **options).traced
        except TooCostlyError as exc:
            raise InputError(str(exc)) from None
        except TooLongError as exc:
            raise InputError(f"the input is {exc.n_tokens} tokens long but the model takes at most {exc.limit}; "
                             f"shorten the text") from None
        except InputError as exc:
            if "nothing was captured" in str(exc):  # trace_text found no attention call to attach tokens to
                raise no_attention from None
            raise
        if not trace.records:
            raise no_attention
        return trace

    def sentence_tracer(self, model: Model) -> tuple[int, Callable[[str], AttentionTrace]]:
        """``(most characters, trace of a text)`` for running the model sentence after sentence (``analyze
        --segmented``): 120 characters by default."""
        return 120, lambda text: model.run(text).traced

    def causal_probe(self, model: Model) -> dict[str, Any]:
        """How the causal head detectors (:func:`attnlab.analysis.detect_causal_heads`: random tokens said twice)
        run this model: the keyword arguments they take (``model``, ``vocab_size`` and the rest)."""
        raise InputError(f"{model.found.given} is a {self.noun}; the causal head detectors read causal models")

@dataclass
class Outcome:
    """One run of a model on one text.

    Attributes:
        model: the model as the user named it (a bundled name, or the folder as given).
        kind: ``"huggingface"``, ``"classifier"``, ``"translator"`` or ``"lm"`` (:attr:`spec` is the kind itself).
        text: the input.
        output: what the user is told, JSON-ready: a classifier's ``label``, calibrated ``probability``,
            ``probabilities`` (every label's), ``temperature``, ``calibrated`` and ``windows`` (how many windows a
            long text was read in); a translator's ``translation``, ``confidence``, ``source_tokens``,
            ``target_tokens`` and ``alignment``; a language model's ``continuation`` and ``log_probability`` (the
            model's own mean per character); an encoder's ``n_tokens``.  :attr:`answer`, :attr:`score` and
            :meth:`told` read it the kind's way.
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
    def spec(self) -> Kind:
        return KIND[self.kind]

    @property
    def traced(self) -> AttentionTrace:
        """The trace of a run made with ``trace=True`` (the default)."""
        if self.trace is None:
            raise InputError("this outcome was run with trace=False; run the model again with trace=True")
        return self.trace

    @property
    def answer(self) -> str | None:
        """The headline answer (a label, a translation, a continuation; None for an encoder)."""
        return self.spec.answer(self)

    @property
    def score(self) -> float | None:
        """How sure the model is of :attr:`answer` (a calibrated probability, a confidence, a mean log-probability
        per character)."""
        return self.spec.score(self)

    def told(self) -> str | None:
        """The line a command prints for the output (None for an encoder: it answers nothing)."""
        return self.spec.told(self)


class Model:
    """A model loaded once, to run on text after text (:meth:`run`, :meth:`run_many`).

    ``Model.load("zh-sentiment")``, ``Model.load("minilm")``, ``Model.load("./my-run")``; ``accept`` limits the kinds
    a caller reads (``Model.load(name, "classifier")`` for ``attnlab predict``), refusing another kind with the command
    that reads it.  ``loaded`` is the kind's own object: ``attnlab.trained.Classifier``, ``Translator`` or
    ``LanguageModel``, or ``(model, tokenizer, name)`` of an encoder; ``spec`` the :class:`~attnlab.kinds.Kind`."""

    def __init__(self, found: Located, loaded: Any) -> None:
        self.found = found
        self.loaded = loaded
        self.spec: Kind = KIND[found.kind]

    @property
    def kind(self) -> ModelKind:
        return self.found.kind

    @property
    def name(self) -> str:
        """How outputs and traces name the model: the bundled name, or the folder as given; an encoder as its loader
        names it (the bundled MiniLM as all-MiniLM-L6-v2, as ``trace_text`` always has)."""
        return self.spec.display_name(self.found, self.loaded)

    @classmethod
    def load(cls, model: str | os.PathLike[str] | Located, *accept: ModelKind, cached: bool = True) -> Model:
        """The model ``model`` names (a name, a folder, or what :func:`attnlab.locate` already found).  With
        ``cached`` (the default) a second load of an unchanged model file in the same process is free (the last
        four are kept); a caller that keeps its own cache (the lab) passes ``cached=False``, so that its size is the
        only bound."""
        found = model if isinstance(model, Located) else locate(model, *accept)
        if found.in_progress:
            checkpoint = (found.path.parent if found.path.is_file() else found.path).name
            warnings.warn(f"{found.given!r} has no final model (its training was stopped or is still running): using "
                          f"its last checkpoint, {checkpoint}, not the final model", UserWarning, stacklevel=2)
        stat = found.path.stat()
        stamp = (stat.st_mtime_ns, stat.st_size)
        loaded = _cached_load(found, stamp) if cached else _load(found)
        return cls(found, loaded)

    def cost(self, text: str, *, trace: bool = True, **options: Any) -> Cost:
        """What :meth:`run` would cost on ``text``, known before running (:class:`~attnlab.kinds.Cost`)."""
        unicode_text(text)
        self.spec.refuse(options)
        return self.spec.cost(self, text, trace=trace, **options)

    def run(self, text: str, *, trace: bool = True, budget: Budget | None = None, **options: Any) -> Outcome:
        """Run the model on ``text``: see :class:`Outcome`.  ``options`` are the kind's own: an encoder's
        ``text_pair``, ``merge``, ``max_length``, ``truncate``; a translator's ``beam``; a language model's
        ``max_tokens``, ``temperature``, ``top_k``, ``top_p``, ``repetition_penalty``, ``no_repeat_ngram``,
        ``greedy``, ``seed``, ``on_text``.  An option of another kind is an
        :class:`~attnlab.errors.InputError` naming the kind's own.  ``budget``: what the trace may keep
        (:class:`~attnlab.kinds.Budget`; default: unbounded), checked before the model runs."""
        unicode_text(text)
        self.spec.refuse(options)
        if trace and budget is not None and budget is not UNBOUNDED:
            budget.check(self.spec.cost(self, text, trace=True, **options), self.name, self.spec.whole)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            outcome = self.spec.run(self, text, trace=trace, **options)
        return _settle(outcome, caught)

    def run_many(self, texts: Sequence[str], **options: Any) -> list[Outcome]:
        """:meth:`run` on each text without traces, batched where the kind allows (a classifier's texts, a
        translator's); the outputs equal :meth:`run`'s one by one (to float rounding)."""
        for text in texts:
            unicode_text(text)
        self.spec.refuse(options)
        if not self.spec.able("batch"):
            return [self.run(t, trace=False, **options) for t in texts]
        outcomes = self.spec.run_many(self, list(texts), **options)  # each carries its own warnings
        return [_settle(o, []) for o in outcomes]


def _load(found: Located) -> Any:
    return KIND[found.kind].load(found)


@functools.lru_cache(maxsize=4)
def _cached_load(found: Located, stamp: tuple[int, int]) -> Any:
    """:func:`_load`, kept per process (``stamp``: the model file's modification time and size, so a retrained model
    is read again)."""
    return _load(found)


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


def unicode_text(text: object) -> str:
    """``text`` when it is a string of characters; a lone surrogate (``\\ud800`` without its pair: how Python holds
    bytes that were not UTF-8, or a JSON escape) is an :class:`InputError` naming where it is."""
    if not isinstance(text, str):
        raise InputError(f"the text must be a string, got {type(text).__name__}")
    for i, c in enumerate(text):
        if "\ud800" <= c <= "\udfff":
            raise InputError(f"the text holds a lone surrogate U+{ord(c):04X} at character {i + 1}, which is not a "
                             f"character (no UTF-8 encodes it); pass valid Unicode")
    return text


def nonempty(text: object, what: str) -> str:
    """``text`` when it holds more than white space, else an :class:`InputError`."""
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"the text {what} is empty (got {text!r}); give some text")
    return text
