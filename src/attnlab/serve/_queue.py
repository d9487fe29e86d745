"""The lab's run queue: one model call at a time, in order of arrival, on one worker thread, within the server's
limits (runs waiting or running at once, seconds a request may wait and run).

A model call uses every core it is given, so runs never overlap; a request whose client left while it waited is
skipped, never run, and one whose client leaves mid-run costs that run only.  A run that passes the time limit is
cancelled: the worker's next module call raises :class:`RunCancelled` (a forward pre-hook on every module, active
in the worker thread only while a run is marked cancelled), so the worker is free for the next request within one
layer's time instead of running on.  The queue raises :class:`ApiError` (503 with Retry-After when full, 504 past
the time limit, 499 for a client that left), which the app answers as JSON.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

__all__ = ["ApiError", "RunCancelled", "RunQueue", "cancellable"]


class RunCancelled(Exception):
    """A run stopped in the middle because its request passed the time limit."""


@contextlib.contextmanager
def cancellable(cancel: threading.Event) -> Iterator[None]:
    """Within the block, every ``torch.nn.Module`` call in this thread raises :class:`RunCancelled` once ``cancel``
    is set (a global forward pre-hook, removed on exit; other threads are not touched)."""
    import torch

    thread = threading.get_ident()

    def check(module: Any, args: Any) -> None:
        if cancel.is_set() and threading.get_ident() == thread:
            raise RunCancelled("the run passed its time limit and was stopped")

    handle = torch.nn.modules.module.register_module_forward_pre_hook(check)
    try:
        yield
    finally:
        handle.remove()


class ApiError(Exception):
    """An error the API answers with ``status`` and ``{"error": message}`` (and extra headers)."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


class Client(Protocol):
    """What the queue asks of a request: whether its client is still there (Starlette's ``Request`` is one)."""

    async def is_disconnected(self) -> bool: ...


class RunQueue:
    """Runs ``fn`` of each :meth:`call` on one worker thread, first come first served, at most ``size`` waiting or
    running, each request within ``timeout_s``; :meth:`counts` says how many wait or run, ran and were skipped."""

    def __init__(self, size: int, timeout_s: float) -> None:
        self.size, self.timeout_s = size, timeout_s
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="attnlab-run")
        self.busy = self.runs = self.skipped = self.cancelled = 0  # waiting or running; made; skipped; stopped
        self._lock = asyncio.Lock()

    def counts(self) -> dict[str, int]:
        return {"busy": self.busy, "runs": self.runs, "skipped": self.skipped, "cancelled": self.cancelled}

    async def call(self, client: Client, fn: Callable[[], Any]) -> Any:
        """``fn()`` on the worker in its turn; a full queue is a 503, a request past ``timeout_s`` a 504."""
        if self.busy >= self.size:
            raise ApiError(503, f"the server is busy ({self.busy} runs waiting or running, the limit is "
                           f"{self.size}); try again in a second", {"Retry-After": "1"})
        self.busy += 1  # the event loop is one thread: no lock needed
        future: asyncio.Future[Any] | None = None
        cancel = threading.Event()

        def run() -> Any:
            with cancellable(cancel):
                return fn()

        async def turn() -> Any:
            nonlocal future
            async with self._lock:
                if await client.is_disconnected():
                    self.skipped += 1
                    raise ApiError(499, "the client closed the request before its turn")
                self.runs += 1
                future = asyncio.get_running_loop().run_in_executor(self.worker, run)
                return await asyncio.shield(future)

        try:
            return await asyncio.wait_for(turn(), timeout=self.timeout_s)
        except asyncio.TimeoutError:  # not the builtin TimeoutError on Python 3.10 (one class from 3.11)
            cancel.set()  # the run stops at its next module call
            self.cancelled += 1
            raise ApiError(504, f"the run took longer than {self.timeout_s:g} s and was stopped; try a shorter "
                           f"text") from None
        finally:  # the slot is free when the model call is over (a cancelled one within a layer's time)
            if future is not None and not future.done():
                future.add_done_callback(self._finished)
            else:
                self._release()

    def _finished(self, future: asyncio.Future[Any]) -> None:
        """The slot of a run answered 504 is free once it ends; its result or RunCancelled is nobody's now."""
        if not future.cancelled():
            future.exception()  # retrieved, so that asyncio does not log it as lost
        self._release()

    def _release(self) -> None:
        self.busy -= 1

    def shutdown(self) -> None:
        """Stop the worker: queued calls are cancelled, a running one finishes."""
        self.worker.shutdown(wait=False, cancel_futures=True)
