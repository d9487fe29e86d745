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


def stand_in(tmp_path: Path, version: tuple[int, int]) -> Path:
    """A stand-in interpreter of ``version``: the real one, told that its version is that, whose ``-m venv DIR`` only
    leaves a mark in DIR and fails (so that make stops there instead of installing)."""
    script = tmp_path / f"python{version[0]}.{version[1]}"
    told = f"import sys; sys.version_info = {version}"
    script.write_text(f"#!/bin/sh\nif [ \"$1\" = -V ]; then echo 'Python {version[0]}.{version[1]}.13'; exit 0; fi\n"
                      f"if [ \"$1\" = -c ]; then exec {sys.executable} -c \"{told}; $2\"; fi\n"
                      f"if [ \"$1 $2\" = \"-m venv\" ]; then mkdir -p \"$3\" && touch \"$3/marked\"; exit 3; fi\n"
                      f"exec {sys.executable} \"$@\"\n")
    script.chmod(0o755)
    return script


def make(tmp_path: Path, target: str, venv: str, version: tuple[int, int]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "-s", "-C", str(ROOT), target, f"{venv}={tmp_path / 'venv'}",
                           f"PYTHON={stand_in(tmp_path, version)}"],
                          capture_output=True, text=True, timeout=60, env=ENV)


@pytest.mark.parametrize("target,venv", [("install", "VENV"), ("docs", "DOCS_VENV"), ("test-floor", "FLOOR_VENV")])
def test_a_venv_from_python_3_10_is_refused_in_one_line(tmp_path: Path, target: str, venv: str) -> None:
    done = make(tmp_path, target, venv, (3, 10))
    assert done.returncode == 2
    said = [line for line in done.stderr.splitlines() if not line.startswith("make: ***")]
    assert said == [f"make: the venvs need Python 3.11 or newer (the test tools need it), but PYTHON="
                    f"{tmp_path / 'python3.10'} is Python 3.10.13; run make with PYTHON=python3.11 (or newer)"]
    assert not (tmp_path / "venv").exists()  # nothing created


@pytest.mark.parametrize("version", [(3, 11), (3, 13)])
def test_python_3_11_and_newer_go_on_to_make_the_venv(tmp_path: Path, version: tuple[int, int]) -> None:
    done = make(tmp_path, "install", "VENV", version)
    assert (tmp_path / "venv" / "marked").exists(), done.stderr  # the check passed and `PYTHON -m venv` ran
    assert "need Python 3.11" not in done.stderr
