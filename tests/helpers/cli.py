"""What the command-line tests check again and again (importable: pytest puts tests/ on the path)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
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


def descendants(pid: int) -> list[int]:
    """The process ids of ``pid``'s children, their children, and so on (Linux /proc)."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
        for c in children:
            found += [c, *descendants(c)]
    return found


def kill_at_checkpoint(command: list[str], env: dict[str, str], out: Path, step: int) -> str:
    """Run a training ``command`` writing to ``out`` and SIGKILL it (and every process it started: torchrun's
    ranks) as soon as it has a checkpoint of step ``step`` or later; the name of the checkpoint ``latest`` pointed
    to when it died."""
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    latest = out / "checkpoints" / "latest"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and child.poll() is None:
        if latest.is_file() and int(latest.read_text().strip().split("-")[1]) >= step:
            for pid in [child.pid, *descendants(child.pid)]:  # torchrun's ranks too (each in a session of its own)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            break
        time.sleep(0.002)
    assert child.wait(timeout=60) == -signal.SIGKILL, "the run finished before it could be killed"
    assert not (out / "final.json").exists()
    return latest.read_text().strip()


def one_and_two_ranks(command: list[str], args: list[str], env: dict[str, str], one: Path, two: Path,
                      ranks_only: Sequence[str] = ()) -> str:
    """Run ``attnlab ARGS`` once as one process (``command`` + args, into ``one``) and once under torchrun with 2
    ranks (into ``two``, with ``ranks_only`` added); torchrun's stdout, after checking that it succeeded and that 2
    processes ran."""
    subprocess.run([*command, *args, "--out", str(one)], env=env, check=True, capture_output=True, timeout=120)
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                "-m", "attnlab.cli", *args, *ranks_only, "--out", str(two)]
    done = subprocess.run(torchrun, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "on 2 process(es)" in done.stdout
    return done.stdout


@contextmanager
def lab_server(*args: str) -> Iterator[str]:
    """A real ``attnlab serve --port 0 ARGS`` of this checkout; its address while the block runs, then SIGTERM and a
    clean exit (0)."""
    import attnlab as al

    env = {**os.environ, "PYTHONPATH": str(Path(al.__file__).resolve().parents[1])}
    proc = subprocess.Popen([sys.executable, "-m", "attnlab.cli", "serve", "--port", "0", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert "http://127.0.0.1:" in line, (line, proc.stderr.read() if proc.stderr else "")
    yield line.split()[2]
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 0
