"""The one place a progress bar is made. On a terminal it is tqdm's bar, redrawn in place; anywhere else (a file, a
pipe into ``tail``, a CI log) the carriage returns that redraw it would pile up into one enormous line, so there it is
plain lines instead: one each time another ``every`` percent is done, and one at the end, each complete and ending
in a newline. Lines written through the bar (a validation result) print as they are, in both cases."""

from __future__ import annotations

import sys
import time
from typing import IO, Any

__all__ = ["LineProgress", "progress_bar"]


def progress_bar(total: int, *, initial: int = 0, shown: bool = True, unit: str = "it", desc: str = "",
                 file: IO[str] | None = None, every: float = 5.0) -> Any:
    """A progress bar of ``total`` units on ``file`` (stderr by default): tqdm's on a terminal, plain lines every
    ``every`` percent elsewhere; ``shown`` False gives one that draws nothing. Either takes ``update(n)``,
    ``set_postfix(**values)``, ``write(line)`` and ``close()`` and is a context manager."""
    stream = sys.stderr if file is None else file
    if shown and not _is_terminal(stream):
        return LineProgress(total, initial=initial, unit=unit, desc=desc, file=stream, every=every)
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, disable=not shown, unit=unit, desc=desc or None, file=stream,
                mininterval=0.5, dynamic_ncols=True)


def _is_terminal(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class LineProgress:
    """A progress bar for a stream that is not a terminal: a plain line at each ``every`` percent and at the end,
    e.g. ``corpus metrics: 120/400 text (30%), 41.2 text/s, 7 s``; never a carriage return."""

    def __init__(self, total: int, *, initial: int = 0, unit: str = "it", desc: str = "", file: IO[str],
                 every: float = 5.0) -> None:
        self.total, self.n, self.unit, self.desc, self.file = total, initial, unit, desc, file
        self.every = max(float(every), 1e-9)
        self.start_n, self.started = initial, time.perf_counter()
        self.postfix = ""
        self.shown = self._bucket(initial)  # the last multiple of ``every`` percent printed
        self.printed: int | None = None  # the count of the last line printed
        self.closed = False

    def _bucket(self, n: int) -> int:
        return int(100.0 * n / self.total // self.every) if self.total > 0 else 0

    def update(self, n: int = 1) -> None:
        self.n += n
        bucket = self._bucket(self.n)
        if bucket > self.shown:
            self.shown = bucket
            self._line()

    def set_postfix(self, refresh: bool = True, **values: Any) -> None:
        self.postfix = ", ".join(f"{k}={v}" for k, v in values.items())

    def write(self, line: str) -> None:
        """``line`` on stdout, as tqdm's ``write`` puts it (so a run's log lines go where they go without a bar)."""
        print(line, flush=True)

    def _line(self) -> None:
        seconds = time.perf_counter() - self.started
        done = self.n - self.start_n
        share = f" ({100.0 * self.n / self.total:.0f}%)" if self.total > 0 else ""
        rate = f", {done / seconds:.1f} {self.unit}/s" if seconds > 0 and done > 0 else ""
        head = f"{self.desc}: " if self.desc else ""
        tail = f", {self.postfix}" if self.postfix else ""
        print(f"{head}{self.n}/{self.total} {self.unit}{share}{rate}, {seconds:.0f} s{tail}", file=self.file,
              flush=True)
        self.printed = self.n

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.printed != self.n:  # the end, unless its line is the last printed
            self._line()

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
