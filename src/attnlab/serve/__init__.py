"""The live attention lab: an ASGI app (FastAPI under uvicorn) over the same library calls as the CLI.

    >>> from attnlab.serve import Lab, Limits, catalogue, create_app
    >>> app = create_app(Lab(catalogue()), Limits(max_chars=2000))     # any ASGI server or test client runs it
    >>> serve(Lab(catalogue(["runs/my-classifier"])), port=8765)       # `attnlab serve` (blocks until stopped)

The page, the JSON API and its limits are described in docs/serve.md.
"""

from __future__ import annotations

import errno
import ipaddress
import signal
import socket
from collections.abc import Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ._lab import Lab, ModelEntry, UnknownModelError, catalogue, difference

if TYPE_CHECKING:
    from ._app import Limits, create_app

__all__ = ["Lab", "Limits", "ModelEntry", "UnknownModelError", "bind", "catalogue", "create_app",
           "difference", "is_loopback", "serve"]


def __getattr__(name: str) -> Any:  # the app needs FastAPI; the rest of the package does not
    if name in ("Limits", "create_app"):
        from . import _app

        return getattr(_app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine only (127.0.0.0/8, ::1 or ``localhost``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``; a port in use, a host that is not this machine's or a port out of range
    is an :class:`attnlab.errors.InputError` that says so."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise InputError(f"--port must be 0 to 65535 (0: any free port), got {port!r}")
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
    except OSError as exc:
        raise InputError(f"cannot open a socket for {host!r}: {exc.strerror}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # accepted connections inherit it (Linux): without it a response written in two parts waits for the client's
        # delayed ACK (Nagle's algorithm), about 40 ms added to every request on loopback
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(128)
    except (socket.gaierror, UnicodeError) as exc:  # before OSError: gaierror is one
        sock.close()
        raise InputError(f"--host {host!r} is not an address of this machine ({exc}); e.g. --host 127.0.0.1") from None
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise InputError(f"port {port} on {host} is in use by another program; choose another with --port "
                             f"(or --port 0 for any free one)") from None
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; check --host and --port") from None
    sock.set_inheritable(True)
    return sock


def serve(lab: Lab, *, host: str = "127.0.0.1", port: int = 8765, limits: Limits | None = None,
          allow_hosts: Sequence[str] = (), sock: socket.socket | None = None, ready: Any = None) -> None:
    """Serve the lab until SIGINT or SIGTERM; running requests finish first (uvicorn's graceful shutdown).

    ``sock`` is a socket from :func:`bind` (made here when None); ``ready(url)`` is called once the server listens."""
    import uvicorn

    from ._app import create_app

    sock = sock or bind(host, port)
    port = sock.getsockname()[1]
    names = ["127.0.0.1", "localhost", "[::1]"] if is_loopback(host) else [host]
    app = create_app(lab, limits, hosts=[*names, *allow_hosts], port=port)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=30,
                            server_header=False, date_header=False)
    server = uvicorn.Server(config)
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    url = f"http://{'127.0.0.1' if shown == '0.0.0.0' else shown}:{port}/"

    # uvicorn sets its own SIGINT/SIGTERM handlers while it serves and, once stopped, raises the signal again for the
    # handler it found; the one found here only notes it, so a SIGTERM ends the command with exit 0.
    stopped: list[int] = []

    def note(signum: int, frame: FrameType | None) -> None:
        stopped.append(signum)

    previous = {s: signal.signal(s, note) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        if ready is not None:
            server_started = server.startup

            async def startup(sockets: Any = None) -> None:
                await server_started(sockets)
                ready(url)

            server.startup = startup  # type: ignore[method-assign]
        server.run(sockets=[sock])
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        sock.close()
        app.state.queue.shutdown()
    if not server.started and not stopped:
        raise InputError(f"the server did not start on {url}; see uvicorn's message above")
