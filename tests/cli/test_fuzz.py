"""Hypothesis-generated text into `predict`, `translate`, `generate`, `show`, `analyze`, `patch` (the clean text, as
`--clean=TEXT`) and `evaluate --suite` (the text as a case of a suite file) (each command's `main(argv)` in process,
the text after `--` as a user quotes it): any Unicode, control characters, right-to-left text, lone
surrogates, 0 to 10,000 characters. Each run exits 0, or 2 with one error line (warnings, one line each, may come
before it); never a traceback; and a run that fails leaves no folder and no temporary file behind.

stdout is a strict UTF-8 stream and stderr a backslash-replacing one, as a real process has them in a UTF-8 locale
(a StringIO would take a lone surrogate that a terminal refuses). The number of cases each command ran is printed
(``pytest -s``)."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attnlab.cli import main

ANY = st.characters(codec="utf-8")  # every character (surrogates come below, one in some texts)
CONTROL = st.characters(categories=["Cc", "Cf", "Zl", "Zp"])  # C0/C1 controls, bidi marks, zero widths, separators
RTL = st.sampled_from([*"שלום עולם مرحبا بالعالم", "\u202e", "\u202b", "\u200f", "\u2067", "\u061c"])
SURROGATE = st.characters(categories=["Cs"])
CJK = st.sampled_from([*"这本书写得很好送货太慢了年月日一二三", *"March 5, 2021 Feb 30"])


@st.composite
def texts(draw: st.DrawFn) -> str:
    """A text from 0 to 10,000 characters mixing the kinds above; a long one repeats a short piece."""
    piece = draw(st.lists(st.one_of(ANY, CONTROL, RTL, CJK), max_size=40).map("".join))
    if piece and draw(st.booleans()):
        n = draw(st.integers(0, 10_000))
        piece = (piece * (n // len(piece) + 1))[:n]
    if draw(st.integers(0, 7)) == 3:  # a lone surrogate somewhere (bytes that are not UTF-8, as Python reads them)
        at = draw(st.integers(0, len(piece)))
        piece = piece[:at] + draw(SURROGATE) + piece[at:]
    return piece


def _args(command: str, out: Path) -> list[str]:
    return {
        "predict": ["predict", "--model", "zh-sentiment"],
        "translate": ["translate", "--model", "dates-zh", "--no-viewer", "--out", str(out)],
        "generate": ["generate", "--model", "zh-lm", "--max-tokens", "3", "--out", str(out)],
        "show": ["show", "--no-viewer", "--out", str(out)],
        "analyze": ["analyze", "--out", str(out)],
    }[command]


def _argv(command: str, out: Path, text: str) -> list[str]:
    """The whole command line of ``command`` on ``text``."""
    if command == "patch":  # the text as the clean one, against itself reversed (the same length)
        return ["patch", "--model", "induction-2l", "--out", str(out), f"--clean={text}", f"--corrupt={text[::-1]}"]
    if command == "evaluate":  # the text as the one case of a suite file
        suite = out.parent / "suite.jsonl"
        suite.write_text(json.dumps({"suite": "fuzz", "kind": "classifier", "capabilities": {"any": "any text"}})
                         + "\n" + json.dumps({"capability": "any", "type": "MFT", "input": text,
                                              "expect": {"label": "pos"}}) + "\n", encoding="utf-8")
        return ["evaluate", "--model", "zh-sentiment", "--suite", str(suite)]
    return [*_args(command, out), "--", text]


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.BytesIO(), io.BytesIO()
    stdout = io.TextIOWrapper(out, encoding="utf-8", errors="strict", write_through=True)
    stderr = io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True)
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(argv)
    return code, out.getvalue().decode("utf-8"), err.getvalue().decode("utf-8")


# examples per command: each runs the whole command (model load, figures); analyze and show cost seconds each here
EXAMPLES = {"predict": 40, "generate": 40, "translate": 25, "show": 8, "analyze": 4, "patch": 25, "evaluate": 25}


@pytest.mark.slow
@pytest.mark.parametrize("command", list(EXAMPLES))
def test_any_text_exits_0_or_one_error_line_and_leaves_nothing_half_written(command: str, one_thread: None) -> None:
    seen = {0: 0, 2: 0}
    refusals: Counter[str] = Counter()  # the error lines, cut after their first words
    folders = itertools.count()

    @settings(max_examples=EXAMPLES[command], deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(text=texts())
    def fuzz(text: str) -> None:
        with tempfile.TemporaryDirectory(prefix="attnlab-fuzz-") as tmp:
            out = Path(tmp) / f"out{next(folders)}"
            code, printed, said = _run(_argv(command, out, text))
            assert code in (0, 2), (code, said[-2000:])
            assert "Traceback" not in said, said[-2000:]
            lines = said.splitlines()
            errors = [line for line in lines if line.startswith(f"attnlab {command}: error: ")]
            others = [line for line in lines if line not in errors]
            assert all(line.startswith(f"attnlab {command}: warning: ") for line in others), said[-2000:]
            assert len(errors) == (code == 2), said[-2000:]
            if code == 2:
                assert not out.exists(), sorted(p.name for p in out.rglob("*"))
            left = [p.name for p in Path(tmp).rglob("*") if p.name.startswith(".") or p.name.endswith(".tmp")
                    or (p.name not in ("suite.jsonl", out.name) and p.parent == Path(tmp))]
            assert not left, left  # no staging folder, no temporary file
            seen[code] += 1
            refusals.update(" ".join(e.split()[3:9]) for e in errors)

    fuzz()
    print(f"fuzz {command}: {sum(seen.values())} cases, {seen[0]} exit 0, {seen[2]} exit 2: {dict(refusals)}")
    assert sum(seen.values()) > 0


@pytest.mark.parametrize("command", ["predict", "translate"])
def test_bytes_that_are_not_utf8_on_stdin_or_in_an_argument_are_one_error_line(
        command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the bugs the fuzzing found: a lone surrogate (how Python reads bytes that are not UTF-8) reached the tokenizer
    # ("TypeError: TextInputSequence must be str", a traceback), from an argument or from stdin
    argv = _args(command, tmp_path / "out")[:3]
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO("好\n".encode() + b"ab\xffcd\n"),
                                                     encoding="utf-8", errors="surrogateescape"))
    code, _, said = _run([*argv, "-"])
    assert code == 2 and said == f"attnlab {command}: error: stdin is not UTF-8: byte 0xFF on line 2 (invalid start " \
                                 f"byte); pipe UTF-8 text (iconv -t UTF-8 converts it)\n"
    monkeypatch.setattr("sys.stdin", io.StringIO("好\n\ud800\n"))
    code, _, said = _run([*argv, "-"])
    assert code == 2 and said.splitlines() == [f"attnlab {command}: error: stdin holds a lone surrogate U+D800 on "
                                               f"line 2, which is not a character; pipe UTF-8 text"]
    code, _, said = _run([*argv, "--", "ab\udcffcd"])
    assert code == 2 and said.splitlines() == [f"attnlab {command}: error: argument 5 holds the byte 0xFF, which is "
                                               f"not UTF-8 (at character 3); pass the text in UTF-8 (iconv -t UTF-8 "
                                               f"converts it)"]
