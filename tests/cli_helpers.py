"""What the command-line tests check again and again (importable: pytest puts tests/ on the path)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest


def fingerprint(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with a hash of its bytes: equal fingerprints mean nothing was written."""
    return {str(p.relative_to(folder)): hashlib.sha1(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def one_error_line(capsys: pytest.CaptureFixture[str], command: str) -> str:
    """The one line ``attnlab COMMAND: error: ...`` the command printed on stderr (and nothing else)."""
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(f"attnlab {command}: error: "), err
    return err
