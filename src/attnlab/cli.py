"""``attnlab`` command line.  It only orchestrates: every subcommand lives in
``attnlab._commands.<name>`` with ``add_parser(subparsers)`` and ``run(args) -> int``.

Bad input (any :class:`attnlab.errors.AttnLabError`, a missing file, an unwritable folder, a library of an
optional extra that is not installed: ``pip install 'attnlab[serve]'``) prints one line on stderr and exits 2,
with no traceback and no partial output file.  Warnings print as one
line too (``attnlab show: warning: ...``), never with a source path.  SIGINT (exit 130) and SIGTERM
(exit 143) unwind the command like an exception, so its temporary files are removed.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import re
import signal
import sys
import warnings
from collections.abc import Iterator, Sequence
from types import FrameType

# One entry per command module (attnlab._commands.<name>); each is imported only to add its options, so a module
# imports nothing heavy at its top (tests/cli/test_cold_start.py checks `--version` and `--help`).
COMMANDS = ("show", "bench", "explain", "analyze", "train", "evaluate", "predict", "translate", "serve",
            "generate", "patch", "circuit")


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="attnlab",
        description="Build, capture, see and measure attention. Runs offline.",
    )
    parser.add_argument("--version", action="version", version=f"attnlab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"attnlab._commands.{name}").add_parser(sub)
    return parser


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that ``finally`` blocks (temporary folders) run."""


def _not_text(argv: Sequence[str]) -> str | None:
    """What is wrong with the first argument that is not Unicode text (it holds a lone surrogate: bytes that were
    not UTF-8, which Python reads as U+DC80..U+DCFF, or a surrogate given through ``main(argv)``), or None. No
    tokenizer, file name or terminal takes one."""
    for i, arg in enumerate(argv):
        at = next((j for j, c in enumerate(arg) if "\ud800" <= c <= "\udfff"), None)
        if at is None:
            continue
        code = ord(arg[at])
        what = (f"the byte 0x{code - 0xDC00:02X}, which is not UTF-8" if 0xDC80 <= code <= 0xDCFF
                else f"a lone surrogate U+{code:04X}, which is not a character")
        return (f"argument {i + 1} holds {what} (at character {at + 1}); pass the text in UTF-8 (iconv -t UTF-8 "
                f"converts it)")
    return None


def _one_line(text: object) -> str:
    return re.sub(r"\s*\n\s*", " ", str(text)).strip()


@contextlib.contextmanager
def _cli_behaviour(command: str, received: list[BaseException] | None = None) -> Iterator[None]:
    """For the length of a command: SIGTERM raises :class:`Terminated` and SIGINT ``KeyboardInterrupt`` (both held
    while a staging folder is being made: ``_output.interrupt``), each also appended to ``received``; warnings print
    as one line."""
    from ._commands import interrupt

    seen = received if received is not None else []

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        seen.append(Terminated())
        interrupt(seen[-1])

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        seen.append(KeyboardInterrupt())
        interrupt(seen[-1])

    def show_warning(message: Warning | str, category: type[Warning], *rest: object, **kw: object) -> None:
        print(f"attnlab {command}: warning: {_one_line(message)}", file=sys.stderr)

    previous = signal.signal(signal.SIGTERM, on_sigterm), signal.signal(signal.SIGINT, on_sigint)
    try:
        with warnings.catch_warnings():  # restores the filters and showwarning afterwards
            warnings.simplefilter("default")  # what the user should know (truncation, unknown tokens), once
            # but not libraries' notes to their own developers (a dependency's deprecated calls)
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", PendingDeprecationWarning)
            # nor the interpreter's: a SIGTERM that lands while an import reads a .pyc leaves that file to the
            # garbage collector, and its ResourceWarning is no news to the user (Python hides it by default too)
            warnings.simplefilter("ignore", ResourceWarning)
            warnings.showwarning = show_warning
            yield
    finally:
        signal.signal(signal.SIGTERM, previous[0])
        signal.signal(signal.SIGINT, previous[1])


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    problem = _not_text(sys.argv[1:] if argv is None else argv)
    if problem:
        print(f"attnlab {args.command}: error: {problem}", file=sys.stderr)
        return 2
    received: list[BaseException] = []
    try:
        with _cli_behaviour(args.command, received):
            return int(args.run(args) or 0)
    except BaseException as exc:
        # A signal stops the command however its exception comes out: as itself, wrapped by a hook (class creation's
        # __set_name__ raises a RuntimeError from it: a SIGTERM during an import), or replaced by a library that
        # calls back into Python and reports its own error (safetensors' loader: a ValueError about storage). The
        # handlers record every signal, so the first one recorded is the answer for any error that follows it.
        stopped = (exc if isinstance(exc, (KeyboardInterrupt, Terminated))
                   else received[0] if received and isinstance(exc, Exception) else None)
        if stopped is not None:
            return _signalled(args.command, stopped)
        code = _reported(args.command, exc)
        if code is None:
            raise
        return code


def _reported(command: str, exc: BaseException) -> int | None:
    """The exit code after one line on stderr for what a user can fix, or None for a bug (its traceback shows)."""
    from .errors import AttnLabError

    if isinstance(exc, AttnLabError):
        print(f"attnlab {command}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    if isinstance(exc, ModuleNotFoundError):  # a library of an extra that is not installed (attnlab._extras)
        from ._extras import missing_extra

        missing = missing_extra(exc, "this command")
        if missing is None:
            return None
        print(f"attnlab {command}: error: {_one_line(missing)}", file=sys.stderr)
        return 2
    if isinstance(exc, BrokenPipeError):  # `attnlab show ... | head`: the reader left; stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush does not fail again
        return 1
    if isinstance(exc, OSError):  # unwritable folder, disk full, ...
        where = f" {exc.filename!r}" if exc.filename else ""
        print(f"attnlab {command}: error: {_one_line(exc.strerror or exc)}{where}", file=sys.stderr)
        return 2
    return None


def _signalled(command: str, exc: BaseException) -> int:
    """One line and the shell's exit code for a command stopped by SIGINT (130) or SIGTERM (143)."""
    if isinstance(exc, KeyboardInterrupt):
        print(f"attnlab {command}: interrupted", file=sys.stderr)
        return 130
    print(f"attnlab {command}: terminated", file=sys.stderr)
    return 128 + signal.SIGTERM


if __name__ == "__main__":
    sys.exit(main())
