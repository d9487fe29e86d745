"""``attnlab serve``: the live attention lab on 127.0.0.1 (see docs/serve.md).  The app is :mod:`attnlab.serve`."""

from __future__ import annotations

import argparse
import sys

from ..errors import InputError

DEFAULT_PORT = 8765


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "serve",
        help="the live attention lab in the browser (offline, on 127.0.0.1)",
        description="Serve the attention lab: pick a model, type, see its output and attention redraw, compare two "
                    "texts. Binds 127.0.0.1 unless --host says otherwise. Stop it with Ctrl-C (or SIGTERM).",
    )
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"the port (default: {DEFAULT_PORT}; 0: any free "
                   "one)")
    p.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1, this machine "
                   "only); any other lets everyone who can reach the port use the server")
    p.add_argument("--model", metavar="NAME_OR_FOLDER", action="append", default=[],
                   help="one more model to offer (repeatable): a Hugging Face folder, a classifier or translator run")
    p.add_argument("--no-bundled", action="store_true", help="offer only the --model folders, not the bundled models")
    p.add_argument("--cache", type=int, default=4, metavar="N", help="models kept loaded at once (default: 4)")
    p.add_argument("--max-chars", type=int, default=10_000, metavar="N",
                   help="the most characters of one text (default: 10000; each model's token limit applies too)")
    p.add_argument("--queue", type=int, default=8, metavar="N",
                   help="runs waiting or running at once; more are answered 503 (default: 8)")
    p.add_argument("--timeout", type=float, default=30.0, metavar="S",
                   help="seconds a request may wait and run (default: 30)")
    p.add_argument("--threads", type=int, default=1, metavar="N",
                   help="CPU threads of one model run (default: 1; more helps long texts on an idle machine)")
    p.add_argument("--allow-host", metavar="NAME", action="append", default=[],
                   help="one more name the browser may use for this server in its Host header (with --host)")
    p.set_defaults(run=run)
    return p


def run(args: argparse.Namespace) -> int:
    from .._extras import require

    for library in ("fastapi", "uvicorn"):  # the `serve` extra: said before anything binds or loads
        require(library, "attnlab serve")
    from ..serve import Lab, Limits, bind, catalogue, is_loopback, serve

    for option, value in (("--cache", args.cache), ("--threads", args.threads)):
        if value < 1:
            raise InputError(f"{option} must be 1 or more, got {value}")
    limits = Limits(max_chars=args.max_chars, queue=args.queue, timeout_s=args.timeout)  # checks them
    if args.no_bundled and not args.model:
        raise InputError("--no-bundled leaves no model: name one with --model FOLDER")
    lab = Lab(catalogue(args.model, bundled=not args.no_bundled), cache=args.cache)
    sock = bind(args.host, args.port)  # a port in use is refused here, before anything loads
    if not is_loopback(args.host):
        print(f"attnlab serve: warning: listening on {args.host}: anyone who can reach port "
              f"{sock.getsockname()[1]} can use this server and run its models", file=sys.stderr)
    import torch

    torch.set_num_threads(args.threads)

    def ready(url: str) -> None:
        print(f"attnlab serve: {url}  ({len(lab.entries)} models: {', '.join(lab.entries)}; Ctrl-C stops)",
              flush=True)

    serve(lab, host=args.host, limits=limits, allow_hosts=args.allow_host, sock=sock, ready=ready)
    print("attnlab serve: stopped", flush=True)
    return 0

