"""Every ```python block of README.md and of every page in docs/ runs as written, on its own, offline.

Each block gets a fresh namespace and an empty working folder, so an example that leans on an earlier
block (a missing import, a variable defined above) fails here. Examples that check something print it;
a printed ``False`` fails the test. Signatures are shown as ```text blocks, which are not run; but every
``$ attnlab predict`` transcript in a ```text block is, and must print what the page shows.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python\n(.*?)^```", flags=re.S | re.M)


def _blocks() -> list[tuple[str, Path, int, str]]:
    out = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            line = text.count("\n", 0, m.start()) + 2  # the block's first line of code
            out.append((f"{page.relative_to(ROOT)}:{line}", page, line, m.group(1)))
    return out


BLOCKS = _blocks()


def test_every_page_is_found_and_has_examples():
    pages = {p for _, p, _, _ in BLOCKS}
    for name in ("README.md", "docs/layers.md", "docs/capture.md", "docs/efficient.md", "docs/figures.md",
                 "docs/viewer.md"):
        assert ROOT / name in pages, f"{name} has no python example (or was not found)"


@pytest.mark.parametrize(("page", "line", "code"), [b[1:] for b in BLOCKS], ids=[b[0] for b in BLOCKS])
@pytest.mark.slow
def test_block_runs(page: Path, line: int, code: str, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    # Pad with blank lines so a traceback points at the right line of the page.
    exec(compile("\n" * (line - 1) + code, str(page), "exec"), {"__name__": "__doc_example__"})
    printed = capsys.readouterr().out
    assert not re.search(r"\bFalse\b", printed), f"{page.name}:{line} printed False:\n{printed}"


TRANSCRIPT = re.compile(r"^```text\n(.*?)^```", flags=re.S | re.M)


def _predict_transcripts() -> list[tuple[str, str, list[str]]]:
    """Each ``$ attnlab predict ...`` command shown in a ```text block of the pages, with the lines shown after it
    (up to the next ``$`` line or the block's end): what a reader is told the command prints."""
    out = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in TRANSCRIPT.finditer(text):
            first = text.count("\n", 0, m.start()) + 2
            lines = m.group(1).splitlines()
            starts = [i for i, line in enumerate(lines) if line.startswith("$ ")] + [len(lines)]
            for i, j in itertools.pairwise(starts):
                if lines[i].startswith("$ attnlab predict "):
                    out.append((f"{page.relative_to(ROOT)}:{first + i}", lines[i][2:], lines[i + 1:j]))
    return out


PREDICTS = _predict_transcripts()


def test_the_pages_show_predict_transcripts() -> None:
    assert {where.split(":")[0] for where, _, _ in PREDICTS} >= {"README.md", "docs/training.md"}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("command", "shown"), [p[1:] for p in PREDICTS], ids=[p[0] for p in PREDICTS])
def test_a_shown_predict_prints_what_the_page_says(command: str, shown: list[str], threads: int, capsys) -> None:
    """The README's and docs' ``attnlab predict`` transcripts (the bundled classifier's labels, probabilities,
    warnings, --explain lines and errors) are what the command prints now: warnings and errors on stderr first,
    then the answers; under one thread and two, whose sums run in another order (a value that rounds to zero once
    printed its sign, which differed between them: it prints none now)."""
    import shlex

    import torch

    from attnlab.cli import main

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        code = main(shlex.split(command)[1:])
    finally:
        torch.set_num_threads(before)
    captured = capsys.readouterr()
    assert captured.err.splitlines() + captured.out.splitlines() == shown, command
    assert code == (2 if any(line.startswith("attnlab predict: error:") for line in shown) else 0)
