"""`make test` writes its slowest tests into tests/durations.txt (tests/conftest.py's --durations-file): here a
2-worker xdist run of a few fast tests writes every one of them once, slowest first, from the controller only."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_an_xdist_run_writes_each_test_once_slowest_first(tmp_path: Path, child_env: dict[str, str]) -> None:
    out = tmp_path / "durations.txt"
    done = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-p", "no:cacheprovider", "-q",
                           "tests/test_progress.py", "-k", "not training", "--durations-file", str(out)],
                          cwd=ROOT, env=child_env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    header, *rows = out.read_text(encoding="utf-8").splitlines()
    parsed = [re.fullmatch(r" *(\d+\.\d)  (tests/test_progress\.py::\S+)", row) for row in rows]
    assert all(parsed), rows
    names = [m[2] for m in parsed]  # type: ignore[index]
    seconds = [float(m[1]) for m in parsed]  # type: ignore[index]
    assert len(names) == len(set(names)) == 5  # 3 + 1 + 1 tests, none twice (the workers write nothing)
    assert seconds == sorted(seconds, reverse=True)
    assert header.startswith("# the 5 slowest of 5 tests")
