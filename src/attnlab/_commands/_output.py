"""What every command that writes a folder shares: the file names, the default folder name of a run, and the
all-or-nothing write.

A command checks ``--out`` first (:func:`check_out`), computes everything into a temporary folder next to it
(:func:`staging`, on the same file system, so each move is a rename) and moves the finished files into place at
the end (:func:`publish`).  Bad input, an error or a signal half-way leaves no partial file behind and overwrites
nothing.  Commands import this module, never each other (an import-linter contract checks it).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..errors import InputError

__all__ = ["DEFAULT_OUT", "TRACE_FILE", "VIEWER_FILE", "check_out", "parse_int", "publish", "read_stdin_lines",
           "run_name", "staging", "trace_run_name"]

DEFAULT_OUT = "attnlab-out"  # show and translate write into DEFAULT_OUT/<run name> when --out is not given
TRACE_FILE = "trace.attn"  # the captured trace (`attnlab show --trace` redraws it)
VIEWER_FILE = "viewer.html"  # the offline viewer of that trace


def run_name(text: str, key: str) -> str:
    """A folder name of its own for each input: the first words of ``text`` (about 40 characters) and a hash of
    ``key``, everything that changes the result, so two inputs never share a folder and the same input reuses its
    own."""
    slug = ""
    for word in re.findall(r"\w+", text.lower()):  # whole words, up to about 40 characters
        if slug and len(slug) + len(word) >= 40:
            break
        slug = f"{slug}-{word[:40]}" if slug else word[:40]
    return f"{slug or 'input'}-{hashlib.sha1(key.encode()).hexdigest()[:6]}"


def trace_run_name(path: Path, trace: Any) -> str:
    """:func:`run_name` for a saved trace redrawn or reanalysed: its text (else the file's name) and its path."""
    return run_name(str(trace.meta.get("text") or Path(path).stem), f"trace {Path(path).resolve()}")


def read_stdin_lines() -> list[str]:
    """The lines of stdin, read as UTF-8 whatever the locale; bytes that are not UTF-8 are refused with their place
    (read by the locale's codec, they became lone surrogates that no tokenizer takes, or a traceback)."""
    raw = getattr(sys.stdin, "buffer", None)
    if raw is None:  # a text stream put in place of stdin (tests, embedding): already decoded
        text = sys.stdin.read()
    else:
        data = raw.read()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[:exc.start].count(b"\n") + 1
            raise InputError(f"stdin is not UTF-8: byte 0x{data[exc.start]:02X} on line {line} ({exc.reason}); pipe "
                             f"UTF-8 text (iconv -t UTF-8 converts it)") from None
    bad = next((i for i, c in enumerate(text) if "\ud800" <= c <= "\udfff"), None)
    if bad is not None:
        line = text[:bad].count("\n") + 1
        raise InputError(f"stdin holds a lone surrogate U+{ord(text[bad]):04X} on line {line}, which is not a "
                         f"character; pipe UTF-8 text")
    return text.splitlines()


def parse_int(value: str, option: str, alternative: str = "") -> int:
    """An integer option given as text (``--layer -1``); ``alternative`` names what else it takes (``" or 'mean'"``)."""
    try:
        return int(value)
    except ValueError:
        raise InputError(f"{option} takes an integer{alternative}, got {value!r}") from None


def check_out(out: Path) -> tuple[Path, Path]:
    """The absolute output folder and its nearest existing ancestor (or itself), after checking that it
    is (or can become) a writable folder."""
    out = Path(os.path.abspath(out))
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {str(out)!r} is a file, not a folder; give a folder path")
    base = out if out.exists() else out.parent
    while not base.exists():
        base = base.parent
    if not base.is_dir():
        raise InputError(f"cannot create the folder {str(out)!r}: {str(base)!r} is a file")
    if not os.access(base, os.W_OK | os.X_OK):
        raise InputError(f"cannot write into {str(base)!r}: permission denied; choose another --out")
    return out, base


# Signals the CLI turns into exceptions (SIGTERM -> Terminated, SIGINT -> KeyboardInterrupt) wait while a block
# makes a staging folder: a process-directed signal can be handled at any bytecode of the main thread (masking
# it in one thread does not hold it: another thread receives it), so the hold is kept here, where the handler looks.
_held: list[int] = []
_pending: list[BaseException] = []


def interrupt(exc: BaseException) -> None:
    """Raise ``exc`` now or, while a staging folder is being made, once it is safe (the CLI's signal handlers call
    this)."""
    if _held:
        _pending.append(exc)
        return
    raise exc


def _hold() -> None:
    _held.append(1)


def _release() -> None:
    """End a hold; raise the first interrupt that came during it."""
    _held.pop()
    if not _held and _pending:
        exc = _pending[0]
        _pending.clear()
        raise exc


@contextlib.contextmanager
def staging(out: Path, base: Path) -> Iterator[Path]:
    """A temporary folder in ``base`` (from :func:`check_out`), on the same file system as ``out`` (so moving files
    is a rename); removed at the end, however the block ends.

    An interrupt (SIGTERM, Ctrl-C) is held while the folder is made and raised only inside the ``try`` that removes
    it: one that lands between ``mkdtemp`` and the ``try`` (the moment the folder appears, which is when a
    supervisor watching for it sends its signal) would otherwise leave the folder behind."""
    _hold()
    try:
        stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=base))
    except OSError as exc:  # read-only or special file systems (/proc), where access() said yes to root
        _release()
        why = {errno.ENOENT: "it takes no new files (a special file system such as /proc)",
               errno.EROFS: "it is on a read-only file system"}.get(exc.errno or 0, exc.strerror)
        raise InputError(f"cannot create {str(out)!r} in {str(base)!r}: {why}; choose another --out") from None
    try:
        _release()  # an interrupt held meanwhile is raised here, where the folder is removed
        yield stage
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def publish(stage: Path, out: Path, names: Iterable[str], owned: Iterable[str] = ()) -> None:
    """Move the finished files ``names`` from ``stage`` into ``out`` (each move an atomic rename), then remove the
    files of ``owned`` (every file the command may write) that this run did not write, so a folder never mixes two
    runs."""
    names = list(names)
    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        os.replace(stage / name, out / name)
    for stale in set(owned) - set(names):  # an earlier run's files that this run does not replace
        (out / stale).unlink(missing_ok=True)
