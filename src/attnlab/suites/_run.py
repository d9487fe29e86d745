"""Running a behaviour suite: observe each input once (prediction, warning or refusal), check each case, count the
passes per capability.  A model is reached through one function ``observe(texts) -> [Observation]``, so the checks
are pure and a test can hand in any function; :func:`observer` builds it for a classifier or a translator."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._bundled import locate
from .._io import atomic_write_text
from ..errors import InputError, SuiteError
from ._suite import Case, Suite, bundled_suites, read_suite

__all__ = [
    "CaseResult",
    "Observation",
    "SuiteResult",
    "batched",
    "check_case",
    "evaluate_suite",
    "format_report",
    "model_kind",
    "observer",
    "pass_rates",
    "record_pass_rates",
    "run_suite",
    "summary",
]


@dataclass(frozen=True)
class Observation:
    """What a model did with one text."""

    text: str
    output: str | None  # the label (classifier) or the translation; None when the model refused the text
    probs: Mapping[str, float]  # classifier: the probability of each label (both, for two labels); else empty
    warning: str  # the first warning the model gave, or the refusal's message; "" when none
    vector: tuple[float, ...] = ()  # a sentence encoder's embedding of the text (unit length)

    def __str__(self) -> str:
        if self.output is None:
            return f"refused ({self.warning})"
        shown = f"{self.output} {self.probs[self.output]:.4f}" if self.output in self.probs else repr(self.output)
        return f"{shown} (warned: {self.warning})" if self.warning else shown


# the model, as the suites see it: texts -> one Observation each (warnings and refusals are per text)
Observe = Callable[[Sequence[str]], list[Observation]]


@dataclass(frozen=True)
class CaseResult:
    case: Case
    passed: bool
    observations: tuple[Observation, ...]  # one per input, in order

    def describe(self) -> str:
        """One line: what went in, what came out, what was expected."""
        case, obs = self.case, self.observations
        exp = case.expect
        if case.type == "DIR" and "towards" in exp:
            label, tol = exp["towards"], float(exp.get("tolerance", 0.0))
            before, after = (o.probs.get(label) if o.output is not None else None for o in obs)
            got = "; ".join(f"{o.text!r} -> {o} (P({label}) {p:.4f})" if p is not None else f"{o.text!r} -> {o}"
                            for o, p in zip(obs, (before, after), strict=True))
            want = f"P({label}) not below {before - tol:.4f}" if before is not None else "two predictions"
        else:
            got = "; ".join(f"{o.text!r} -> {o}" for o in obs)
            want = ("a warning or a refusal" if "warns" in exp else f"{exp['label']}" if "label" in exp
                    else repr(exp["output"]) if "output" in exp else "different outputs" if "differs" in exp
                    else f"a continuation starting {exp['continues']!r}" if "continues" in exp
                    else "the second less likely than the first" if "lower" in exp
                    else "the first closer to the second than to the third" if "closer" in exp
                    else "one prediction for all")
            if "lower" in exp or "closer" in exp:
                got = "; ".join(f"{o.text!r} -> {o}" for o in obs) + f" ({_measure(case, obs)})"
        return f"[{case.capability}] {case.type} line {case.line}: {got} (expected {want})"


@dataclass(frozen=True)
class SuiteResult:
    suite: Suite
    model: str
    results: tuple[CaseResult, ...]

    @property
    def failures(self) -> tuple[CaseResult, ...]:
        return tuple(r for r in self.results if not r.passed)


def check_case(case: Case, obs: Sequence[Observation]) -> bool:
    """Whether ``obs`` (one observation per input of ``case``) meets the case's expectation."""
    exp = case.expect
    if "warns" in exp:  # MFT: the model says not to believe it
        return all(bool(o.warning) for o in obs)
    if any(o.output is None for o in obs):  # every other expectation needs a prediction
        return False
    if "continues" in exp:  # language model MFT
        return str(obs[0].output).startswith(exp["continues"])
    if "lower" in exp:  # language model DIR
        return obs[1].probs["score"] < obs[0].probs["score"]
    if "closer" in exp:  # sentence encoder MFT
        return _cosine(obs[0], obs[1]) > _cosine(obs[0], obs[2])
    if case.type == "MFT":
        return obs[0].output == exp.get("label", exp.get("output"))
    if case.type == "INV":
        return len({o.output for o in obs}) == 1
    if "differs" in exp:  # translator DIR
        return obs[0].output != obs[1].output
    label, tol = exp["towards"], float(exp.get("tolerance", 0.0))  # classifier DIR
    return obs[1].probs[label] >= obs[0].probs[label] - tol


def _cosine(a: Observation, b: Observation) -> float:
    """The cosine of two observed embeddings."""
    dot = sum(x * y for x, y in zip(a.vector, b.vector, strict=True))
    norm = math.sqrt(sum(x * x for x in a.vector) * sum(y * y for y in b.vector))
    return dot / norm if norm else 0.0


def _measure(case: Case, obs: Sequence[Observation]) -> str:
    """The numbers a language model's or an encoder's case compares, for its line in the report."""
    if "lower" in case.expect:
        return f"log-probability per character {obs[0].probs['score']:.3f} -> {obs[1].probs['score']:.3f}"
    return f"cosine {_cosine(obs[0], obs[1]):.3f} to the second, {_cosine(obs[0], obs[2]):.3f} to the third"


def run_suite(suite: Suite, observe: Observe, model: str = "") -> SuiteResult:
    """Every case of ``suite`` checked against ``observe`` (called once, on every distinct input)."""
    texts = list(dict.fromkeys(t for case in suite.cases for t in case.inputs))
    seen = dict(zip(texts, observe(texts), strict=True))
    results = [CaseResult(case, check_case(case, obs), obs)
               for case in suite.cases for obs in [tuple(seen[t] for t in case.inputs)]]
    return SuiteResult(suite, model, tuple(results))


def pass_rates(result: SuiteResult) -> dict[str, dict[str, Any]]:
    """Per capability (in the header's order): ``passed``, ``n``, ``rate``, the test ``types`` and ``goal`` (False
    for a report-only capability).  A capability without cases is left out."""
    out: dict[str, dict[str, Any]] = {}
    for cap in result.suite.capabilities:
        mine = [r for r in result.results if r.case.capability == cap]
        if mine:
            passed = sum(r.passed for r in mine)
            out[cap] = {"passed": passed, "n": len(mine), "rate": passed / len(mine),
                        "types": sorted({r.case.type for r in mine}, key="MFT INV DIR".index),
                        "goal": cap not in result.suite.report_only}
    return out


def format_report(result: SuiteResult) -> list[str]:
    """The lines ``attnlab evaluate --suite`` prints: the pass rate per capability, then every failing case."""
    suite, rates = result.suite, pass_rates(result)
    passed = sum(r.passed for r in result.results)
    lines = [f"suite {suite.name} ({suite.kind}, {len(result.results)} cases) on {result.model}: {passed}/"
             f"{len(result.results)} passed ({passed / len(result.results):.1%})",
             f"{'capability':<22} {'tests':<12} {'passed':>9} {'rate':>7}  checks"]
    for cap, r in rates.items():
        about = suite.capabilities[cap] + ("" if r["goal"] else " [reported, not a goal]")
        lines.append(f"{cap:<22} {'+'.join(r['types']):<12} {r['passed']:>4}/{r['n']:<4} {r['rate']:>7.1%}  {about}")
    if result.failures:
        lines += ["", f"failing cases ({len(result.failures)}):", *(f"  {r.describe()}" for r in result.failures)]
    return lines


def _watch(call: Callable[[], Any]) -> tuple[Any, str]:
    """``(call(), first warning)``, or ``(None, message)`` when the model refuses the input (an InputError)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = call()
        except InputError as exc:
            return None, str(exc)
    return value, str(caught[0].message) if caught else ""


def batched(predict: Callable[[list[str]], list[Observation]], size: int = 64) -> Observe:
    """An :data:`Observe` that runs ``predict`` on up to ``size`` texts at once; a batch that warns or is refused is
    run again one text at a time, so that each warning or refusal is the text's own."""

    def observe(texts: Sequence[str]) -> list[Observation]:
        out: list[Observation] = []
        for start in range(0, len(texts), size):
            chunk = list(texts[start:start + size])
            got, warning = _watch(lambda c=chunk: predict(c))  # type: ignore[misc]
            if got is not None and not warning:
                out += got
                continue
            for text in chunk:
                one, warning = _watch(lambda t=text: predict([t]))  # type: ignore[misc]
                out.append(Observation(text, None, {}, warning) if one is None
                           else dataclasses.replace(one[0], warning=warning))
        return out

    return observe


# what a language model's suite reads of its continuation: its likeliest characters, unpenalised (attnlab generate
# --greedy --repetition-penalty 1 --no-repeat-ngram 0), so that "continues" asks what the model itself predicts
LM_OBSERVED = {"max_tokens": 8, "greedy": True, "repetition_penalty": 1.0, "no_repeat_ngram": 0}


def observer(model: Any) -> Observe:
    """The :data:`Observe` of a loaded :class:`attnlab.Model`: what :meth:`~attnlab.Model.run_many` returns, the
    output and the first warning of each text, as every surface tells it (a classifier's label and probabilities, a
    translator's greedy translation, a language model's greedy continuation (:data:`LM_OBSERVED`) and how likely it
    finds the text itself,
    a sentence encoder's embedding); a refused text (an :class:`InputError`) is observed as refused."""

    spec = model.spec

    def seen(outcome: Any) -> Observation:
        said = outcome.warnings[0] if outcome.warnings else ""
        answer = outcome.answer
        if answer is None:  # a sentence encoder answers nothing: its embedding is observed
            vector = tuple(float(x) for x in outcome.result) if outcome.result is not None else ()
            return Observation(outcome.text, "", {}, said, vector)
        return Observation(outcome.text, answer, spec.observed(model, outcome), said)

    # a language model's continuation is read greedy and unpenalised (LM_OBSERVED)
    options = LM_OBSERVED if spec.able("sample") else {}

    def predict(texts: list[str]) -> list[Observation]:
        with warnings.catch_warnings():  # each warning is in its outcome; the report shows it with its case
            warnings.simplefilter("ignore")
            return [seen(o) for o in model.run_many(texts, **options)]

    def observe(texts: Sequence[str]) -> list[Observation]:
        out: list[Observation] = []
        for start in range(0, len(texts), 64):
            chunk = list(texts[start:start + 64])
            try:
                out += predict(chunk)
                continue
            except InputError:
                pass
            for text in chunk:  # one of them is refused: find which, each on its own
                try:
                    out += predict([text])
                except InputError as exc:
                    out.append(Observation(text, None, {}, str(exc)))
        return out

    return observe


def model_kind(model: str | os.PathLike[str]) -> str:
    """``"classifier"``, ``"translator"`` or ``"huggingface"``: what :func:`attnlab.locate` says ``model`` is."""
    return locate(model).kind


def _load(model: str | os.PathLike[str], suite: Suite) -> Any:
    from ..kinds import Model

    found = locate(model)
    kind = found.kind
    if kind != suite.kind:
        raise SuiteError(f"the suite {suite.name!r} ({suite.source}) is for a {suite.kind}, but {str(model)!r} is "
                         f"a {kind}; pick a {kind} suite (bundled: {', '.join(bundled_suites())}) or another model")
    loaded = Model.load(found)
    if not suite.labels:  # a suite that names no label (a translator's, a language model's, an encoder's)
        return loaded
    clf = loaded.loaded
    missing = sorted(suite.labels - set(clf.labels))
    if missing:
        raise SuiteError(f"the suite {suite.name!r} expects the labels {missing}, which the classifier "
                         f"{str(model)!r} does not have (its labels: {list(clf.labels)}); the suite is for another "
                         f"classifier: write one with these labels")
    if len(clf.labels) != 2 and any(c.type == "DIR" for c in suite.cases):
        raise SuiteError(f"the suite {suite.name!r} has directional (DIR) cases, which need a classifier with two "
                         f"labels; {str(model)!r} has {len(clf.labels)}: drop the DIR cases")
    return loaded


def evaluate_suite(model: str | os.PathLike[str], suite: str | os.PathLike[str] | Suite) -> SuiteResult:
    """Run ``suite`` (a bundled suite's name, a JSONL file or a :class:`Suite`) on ``model`` (a bundled model's
    name or a model folder).

    Raises:
        SuiteError: the suite is malformed, or is for another kind of model or other labels.
        ModelLoadError: there is no model at ``model``.
    """
    suite = suite if isinstance(suite, Suite) else read_suite(suite)
    return run_suite(suite, observer(_load(model, suite)), str(model))


def summary(result: SuiteResult) -> dict[str, Any]:
    """The pass rates of ``result`` as they go into a bundle's ``final.json``."""
    passed = sum(r.passed for r in result.results)
    return {"cases": len(result.results), "passed": passed,
            "capabilities": {cap: {k: r[k] for k in ("passed", "n", "rate", "goal")}
                             for cap, r in pass_rates(result).items()}}


def record_pass_rates(folder: str | os.PathLike[str], suite: str | os.PathLike[str] | None = None
                      ) -> dict[str, Any]:
    """Run ``suite`` (default: the bundled suite named like the folder) on the model in ``folder`` and write its
    pass rates into ``folder/final.json`` under ``"suites"`` (the rest of the file kept; written atomically).

    ``python -m attnlab.suites FOLDER [SUITE]`` does the same from a shell."""
    folder = Path(folder)
    final_file = folder / "final.json"
    name = suite if suite is not None else bundled_suites().get(folder.name)
    if name is None:
        raise SuiteError(f"no bundled suite is named like {folder.name!r}; pass the suite "
                         f"({', '.join(bundled_suites())} or a .jsonl file)")
    if not final_file.is_file():
        raise SuiteError(f"{str(final_file)!r} does not exist; record pass rates into the folder of a finished run")
    final = json.loads(final_file.read_text(encoding="utf-8"))
    result = evaluate_suite(folder, name)
    final.setdefault("suites", {})[result.suite.name] = summary(result)
    atomic_write_text(final_file, json.dumps(final, indent=2) + "\n")
    return final["suites"][result.suite.name]
