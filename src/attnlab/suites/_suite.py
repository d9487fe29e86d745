"""A behaviour suite as data: read and validate a JSONL file (a header line, then one case per line).

The first non-blank line is the header::

    {"suite": "zh-sentiment", "kind": "classifier", "description": "...",
     "capabilities": {"negation": "what it checks", ...}, "report_only": ["sarcasm"]}

every other non-blank line one case::

    {"capability": "negation", "type": "MFT", "input": "这本书不好", "expect": {"label": "neg"}}
    {"capability": "punctuation", "type": "INV", "inputs": ["这本书很好", "这本书很好！"]}
    {"capability": "degree", "type": "DIR", "inputs": ["很好", "非常好"], "expect": {"towards": "pos"}}

What each test type and kind of model expects is in :data:`EXPECT_KEYS`; docs/training.md documents the format.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._bundled import KINDS, MODELS  # KINDS: the kinds a suite may be for (attnlab.kinds.register adds to it)
from ..errors import SuiteError

__all__ = [
    "BUNDLED_SUITES",
    "EXPECT_KEYS",
    "FLOORS",
    "KINDS",
    "TEST_TYPES",
    "Case",
    "Suite",
    "bundled_suites",
    "parse_suite",
    "read_suite",
    "suite_inputs",
    "suite_path",
]

HERE = Path(__file__).resolve().parent / "data"
TEST_TYPES = ("MFT", "INV", "DIR")  # minimum functionality, invariance, directional (Ribeiro et al., 2020)


def bundled_suites() -> dict[str, str]:
    """The suite each bundled model is chosen on, by the model's name and by its folder's name, read from the one
    table of bundled models (``attnlab.MODELS``)."""
    return {key: m.suites[0] for name, m in MODELS.items() if m.suites
            for key in dict.fromkeys((name, name.rsplit("/", 1)[-1]))}


BUNDLED_SUITES: dict[str, str] = bundled_suites()  # as the package was installed

# suite -> capability -> the least pass rate the bundled model of that name must reach (tests/suites check it on every
# CI run; benchmarks/classify/classify_routes.py checks each candidate against it before one is chosen), and why
FLOORS: dict[str, dict[str, float]] = {
    # the tokenizer maps full-width forms to half-width (NFKC) before the model sees them
    "zh-sentiment": {"width": 1.0, "whitespace": 0.9,
                     # the clause crops put short phrases about books into training (the 书 accident, issue 19);
                     # the second edition passes 18 of 20 (错别字太多了 and 故事情节很老套 read as praise)
                     "books": 0.9,
                     # the composed phrases of issue 30 (degree, negation, the contrast family) teach these two
                     "negation": 0.9, "contrast": 0.9,
                     # text in another script is warned about (attnlab.data.script_units), brand names are not
                     "other_languages": 1.0},
    # in the task's distribution (test exact match 1.0): every locale and CLDR format, and runs of spaces, which the
    # task's own cleaning collapses
    "dates-zh": {"locales_formats": 1.0, "extra_spaces": 1.0,
                 # 30% of the training sources are in upper, lower or title case (make_dates(cases=0.3))
                 "case": 1.0,
                 # the input, calendar and ambiguity checks warn on every one (attnlab.data.input_problem, ambiguity)
                 "invalid_dates": 1.0, "ambiguous_numeric": 1.0},
    # words outside the lexicon are read as [UNK] with a warning
    "tutorial-en-zh": {"outside_grammar": 1.0},
}


# (kind, type) -> (the keys of "expect" that one of must be given, optional keys)
EXPECT_KEYS: dict[tuple[str, str], tuple[tuple[str, ...], tuple[str, ...]]] = {
    ("classifier", "MFT"): (("label", "warns"), ()),  # the label; or: the model warns or refuses the input
    ("translator", "MFT"): (("output", "warns"), ()),  # the exact output; or: the model warns or refuses
    ("classifier", "INV"): ((), ()),  # every input gets the same label
    ("translator", "INV"): ((), ()),  # every input gets the same output
    ("classifier", "DIR"): (("towards",), ("tolerance",)),  # P(towards) of the 2nd input >= the 1st's - tolerance
    ("translator", "DIR"): (("differs",), ()),  # the two outputs differ
    ("lm", "MFT"): (("continues", "warns"), ()),  # the continuation starts so; or: the model warns or refuses
    ("lm", "DIR"): (("lower",), ()),  # the model finds the 2nd input (the 1st, changed) less likely per character
    ("huggingface", "MFT"): (("closer",), ()),  # inputs [a, b, c]: a's embedding is closer to b's than to c's
}
# how many inputs a case of each type takes (a sentence encoder's MFT compares three sentences)
INPUTS: dict[tuple[str, str], int] = {("huggingface", "MFT"): 3}


def _suites_as(kind: str) -> str:
    """Whose cases a kind's suite holds: its own, or those of the kind it reads as (a kind added with
    attnlab.kinds.register says which)."""
    if any(k == kind for k, _ in EXPECT_KEYS):
        return kind
    from ..kinds import KIND

    spec = KIND.get(kind)  # type: ignore[call-overload]
    return spec.suites_as if spec is not None else kind


HEADER_KEYS = {"suite", "kind", "description", "capabilities", "report_only"}
CASE_KEYS = {"capability", "type", "input", "inputs", "expect", "note"}


@dataclass(frozen=True)
class Case:
    """One test: ``inputs`` (one for MFT, two or more for INV, exactly two for DIR: before and after the change)."""

    capability: str
    type: str
    inputs: tuple[str, ...]
    expect: Mapping[str, Any]
    note: str
    line: int  # its line in the suite file (1-based), for messages


@dataclass(frozen=True)
class Suite:
    """A named list of :class:`Case`\\ s for one kind of model, with what each capability checks."""

    name: str
    kind: str  # "classifier" | "translator" | "lm" | "huggingface" (a sentence encoder)
    description: str
    capabilities: Mapping[str, str]  # name -> what it checks, in the header's order
    report_only: frozenset[str]  # capabilities reported but not a goal (the classifier's sarcasm)
    cases: tuple[Case, ...]
    source: str  # the file it was read from

    @property
    def labels(self) -> set[str]:
        """The labels a classifier suite names (in MFT expectations and DIR directions)."""
        return {str(c.expect.get("label", c.expect.get("towards"))) for c in self.cases
                if "label" in c.expect or "towards" in c.expect}


def suite_path(suite: str | os.PathLike[str]) -> Path:
    """The file of a bundled suite's name (``"dates-zh"``), else ``suite`` as a path.  The name wins over a file
    of the same name in the working directory (pass ``./NAME`` for that), as for the bundled models."""
    name = str(suite)
    if isinstance(suite, str) and "/" not in name and (HERE / f"{name}.jsonl").is_file():
        return HERE / f"{name}.jsonl"
    path = Path(suite)
    if not path.is_file():
        bundled = ", ".join(sorted(p.stem for p in HERE.glob("*.jsonl")))
        raise SuiteError(f"no suite {name!r}: it is neither a bundled suite ({bundled}) nor a file; pass one of "
                         f"those names or the path of a .jsonl suite (its format: the guide's Training page, "
                         f"'Behaviour suites')")
    return path


def read_suite(suite: str | os.PathLike[str]) -> Suite:
    """The suite a bundled name or a JSONL file holds, validated (:func:`parse_suite`)."""
    path = suite_path(suite)
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte-order mark (Windows editors) is not part of line 1
    except UnicodeDecodeError as exc:
        raise SuiteError(f"{str(path)!r} is not UTF-8 text ({exc.reason} at byte {exc.start}); save it as "
                         f"UTF-8") from None
    return parse_suite(text, str(path))


def suite_inputs(*suites: str | os.PathLike[str]) -> list[str]:
    """Every input text of the cases of ``suites`` (bundled names or files), in file order: what training data
    must not hold (``make train-zh`` leaves the zh-sentiment suites' inputs out of its composed phrases)."""
    return [text for suite in suites for case in read_suite(suite).cases for text in case.inputs]


def _fail(source: str, line: int, what: str) -> SuiteError:
    return SuiteError(f"{source}, line {line}: {what}")


def _text(value: object, source: str, line: int, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _fail(source, line, f"{what} must be a non-empty string, got {value!r}")
    return value


def _header(obj: Any, source: str, line: int) -> tuple[str, str, str, dict[str, str], frozenset[str]]:
    if not isinstance(obj, dict) or "suite" not in obj:
        raise _fail(source, line, 'the first line must be the header {"suite": NAME, "kind": "classifier" | '
                    '"translator", "capabilities": {NAME: WHAT_IT_CHECKS, ...}}, got ' + _short(obj))
    unknown = sorted(set(obj) - HEADER_KEYS)
    if unknown:
        raise _fail(source, line, f"unknown header keys {unknown}; the header takes {sorted(HEADER_KEYS)}")
    name = _text(obj["suite"], source, line, '"suite"')
    kind = obj.get("kind")
    if kind not in KINDS:
        raise _fail(source, line, f'"kind" must be one of {list(KINDS)}, got {kind!r}')
    caps = obj.get("capabilities")
    if not isinstance(caps, dict) or not caps or not all(isinstance(k, str) and k and isinstance(v, str)
                                                          for k, v in caps.items()):
        raise _fail(source, line, f'"capabilities" must map each capability name to what it checks (a non-empty '
                    f'object of strings), got {_short(caps)}')
    report_only = obj.get("report_only", [])
    if not isinstance(report_only, list) or not set(report_only) <= set(caps):
        raise _fail(source, line, f'"report_only" must list capabilities of the header, got {report_only!r}')
    return name, kind, str(obj.get("description", "")), dict(caps), frozenset(report_only)


def _short(obj: object) -> str:
    text = json.dumps(obj, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


def _case(obj: Any, kind: str, caps: Mapping[str, str], source: str, line: int) -> Case:
    if not isinstance(obj, dict):
        raise _fail(source, line, f"a case must be a JSON object, got {_short(obj)}")
    unknown = sorted(set(obj) - CASE_KEYS)
    if unknown:
        raise _fail(source, line, f"unknown keys {unknown}; a case takes {sorted(CASE_KEYS)}")
    cap = obj.get("capability")
    if cap not in caps:
        raise _fail(source, line, f"unknown capability {cap!r}; the header declares {sorted(caps)} (add it there "
                    f"with what it checks, or fix the name)")
    kind_type = (_suites_as(kind), obj.get("type"))
    if kind_type not in EXPECT_KEYS:
        raise _fail(source, line, f'unknown test type {obj.get("type")!r}; "type" is one of {list(TEST_TYPES)}')
    test = str(kind_type[1])
    if ("input" in obj) == ("inputs" in obj):
        raise _fail(source, line, 'give either "input" (one text) or "inputs" (a list of texts), not both or neither')
    raw = [obj["input"]] if "input" in obj else obj["inputs"]
    if not isinstance(raw, list):
        raise _fail(source, line, f'"inputs" must be a list of texts, got {_short(raw)}')
    inputs = tuple(_text(t, source, line, "every input") for t in raw)
    exact = INPUTS.get((_suites_as(kind), test), {"MFT": 1, "DIR": 2}.get(test))
    wanted = "at least 2" if exact is None else f"exactly {exact}"
    if len(inputs) < 2 if exact is None else len(inputs) != exact:
        raise _fail(source, line, f"a {test} case takes {wanted} input(s), got {len(inputs)}")
    expect = obj.get("expect", {})
    if not isinstance(expect, dict):
        raise _fail(source, line, f'"expect" must be an object, got {_short(expect)}')
    _check_expect(expect, kind, test, source, line)
    note = obj.get("note", "")
    if not isinstance(note, str):
        raise _fail(source, line, f'"note" must be a string, got {note!r}')
    return Case(str(cap), test, inputs, expect, note, line)


def _check_expect(expect: Mapping[str, Any], kind: str, test: str, source: str, line: int) -> None:
    one_of, optional = EXPECT_KEYS[(_suites_as(kind), test)]
    given = set(expect)
    if not given <= set(one_of) | set(optional) or (one_of and len(given & set(one_of)) != 1):
        allowed = " | ".join(one_of) if one_of else "nothing"
        extra = f" (optional: {', '.join(optional)})" if optional else ""
        raise _fail(source, line, f'a {kind} {test} case expects {allowed}{extra}, got "expect": {_short(expect)}')
    for key in ("label", "output", "towards", "continues"):
        if key in expect:
            _text(expect[key], source, line, f'"expect"\'s {key!r}')
    for key in ("warns", "differs", "lower", "closer"):
        if key in expect and expect[key] is not True:
            raise _fail(source, line, f'"expect"\'s {key!r} can only be true, got {expect[key]!r}')
    tol = expect.get("tolerance", 0.0)
    if isinstance(tol, bool) or not isinstance(tol, int | float) or not math.isfinite(tol) or not 0 <= tol < 1:
        raise _fail(source, line, f'"tolerance" must be a number in [0, 1), got {tol!r}')


def parse_suite(text: str, source: str = "<suite>") -> Suite:
    """A :class:`Suite` from the JSONL ``text`` (blank lines skipped); ``source`` names it in messages.

    Raises:
        SuiteError: naming ``source`` and the line: a line that is not JSON, a header or case that is malformed,
            an unknown capability (not declared in the header) or test type, no cases.
    """
    header: tuple[str, str, str, dict[str, str], frozenset[str]] | None = None
    cases: list[Case] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise _fail(source, number, f"not valid JSON ({exc.msg} at column {exc.colno}): "
                        f"{raw.strip()[:60]!r}; each line is one JSON object") from None
        if header is None:
            header = _header(obj, source, number)
        else:
            cases.append(_case(obj, header[1], header[3], source, number))
    if header is None or not cases:
        raise SuiteError(f"{source} holds no {'header' if header is None else 'case'}; a suite is a header line "
                         f"and one case per line (the guide's Training page, 'Behaviour suites')")
    name, kind, description, caps, report_only = header
    return Suite(name, kind, description, caps, report_only, tuple(cases), source)
