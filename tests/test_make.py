"""The Makefile's venvs refuse an interpreter older than 3.11 with one line, before anything is created."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# a make of its own, not a sub-make of `make test`'s (whose MAKEFLAGS and MAKELEVEL would change what make prints)
ENV = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}


def old_python(tmp_path: Path) -> Path:
    """A stand-in for a Python 3.10 interpreter: the real one, told that its version is (3, 10)."""
    script = tmp_path / "python3.10"
    told = "import sys; sys.version_info = (3, 10)"
    script.write_text(f"#!/bin/sh\nif [ \"$1\" = -V ]; then echo 'Python 3.10.13'; exit 0; fi\n"
                      f"if [ \"$1\" = -c ]; then exec {sys.executable} -c \"{told}; $2\"; fi\n"
                      f"exec {sys.executable} \"$@\"\n")
    script.chmod(0o755)
    return script


@pytest.mark.parametrize("target,venv", [("install", "VENV"), ("docs", "DOCS_VENV"), ("test-floor", "FLOOR_VENV")])
def test_a_venv_from_python_3_10_is_refused_in_one_line(tmp_path: Path, target: str, venv: str) -> None:
    made = tmp_path / "venv"
    done = subprocess.run(["make", "-s", "-C", str(ROOT), target, f"{venv}={made}", f"PYTHON={old_python(tmp_path)}"],
                          capture_output=True, text=True, timeout=60, env=ENV)
    assert done.returncode == 2
    said = [line for line in done.stderr.splitlines() if not line.startswith("make: ***")]
    assert said == [f"make: the venvs need Python 3.11 or newer (the test tools need it), but PYTHON="
                    f"{tmp_path / 'python3.10'} is Python 3.10.13; run make with PYTHON=python3.11 (or newer)"]
    assert not made.exists()  # nothing created


def test_the_python_that_runs_the_tests_passes_the_check(tmp_path: Path) -> None:
    """The same check on this interpreter (3.11+, or the suite could not run): make goes on to create the venv (here
    a dry run, -n, prints the venv command instead of running it)."""
    done = subprocess.run(["make", "-n", "-C", str(ROOT), "install", f"VENV={tmp_path / 'venv'}",
                           f"PYTHON={sys.executable}"], capture_output=True, text=True, timeout=60, env=ENV)
    assert done.returncode == 0, done.stderr
    assert f"{sys.executable} -m venv {tmp_path / 'venv'}" in done.stdout
