"""Every Python example in docs/layers.md runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "layers.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_doc_has_examples():
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_example_runs(code, capsys):
    exec(compile(code, str(DOC), "exec"), {})
    printed = capsys.readouterr().out
    assert "False" not in printed, printed  # the examples print True for their checks
