"""``attnlab`` command line.  It only orchestrates: every subcommand lives in
``attnlab._commands.<name>`` with ``add_parser(subparsers)`` and ``run(args) -> int``.

Bad input (any :class:`attnlab.errors.AttnLabError`, a missing file, an unwritable folder) prints
one line on stderr and exits 2, with no traceback and no partial output file.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

COMMANDS = ("show", "bench", "explain")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="attnlab",
        description="Build, capture, see and measure attention. Runs offline.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"attnlab._commands.{name}").add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from .errors import AttnLabError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except AttnLabError as exc:
        print(f"attnlab {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `attnlab show ... | head`: the reader left; stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush does not fail again
        return 1
    except OSError as exc:  # unwritable folder, disk full, ...
        where = f" {exc.filename!r}" if exc.filename else ""
        print(f"attnlab {args.command}: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"attnlab {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
