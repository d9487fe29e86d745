"""``attnlab serve`` as a user runs it: a child process that prints its URL, answers on loopback, refuses a port in
use and a folder that is not a model with one line and exit 2, warns for a non-loopback host, and on SIGTERM finishes
the request it is running and exits 0."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from attnlab.cli import main

pytestmark = pytest.mark.slow


def start(child_env: dict[str, str], *args: str) -> tuple[subprocess.Popen[str], str]:
    """A running ``attnlab serve`` and its URL (read from its first line of output)."""
    proc = subprocess.Popen([sys.executable, "-m", "attnlab.cli", "serve", "--port", "0", *args], env=child_env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "http://" not in line:
        proc.kill()
        raise AssertionError(f"no URL printed: {line!r} {proc.communicate()[1]!r}")
    return proc, line.split()[2]


def finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


def test_a_port_in_use_is_one_line_and_exit_2(child_env: dict[str, str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "attnlab.cli", "serve", "--port", str(port)], env=child_env,
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        f"attnlab serve: error: port {port} on 127.0.0.1 is in use by another program; choose another with --port "
        f"(or --port 0 for any free one)"]


@pytest.mark.parametrize("make", ["empty", "file", "missing"])
def test_a_folder_that_is_not_a_model_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                             make: str) -> None:
    target = tmp_path / "notes"
    if make == "empty":
        target.mkdir()
    elif make == "file":
        target.write_text("hello")
    assert main(["serve", "--port", "0", "--model", str(target)]) == 2  # in process: refused before any socket
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("attnlab serve: error: ")
    assert "notes" in lines[0]


@pytest.mark.parametrize(("args", "says"), [
    (["--max-chars", "0"], "--max-chars (Limits.max_chars) must be 1 or more, got 0"),
    (["--queue", "-1"], "--queue (Limits.queue) must be 1 or more, got -1"),
    (["--timeout", "0"], "--timeout (Limits.timeout_s) must be a number of seconds > 0"),
    (["--cache", "0"], "--cache must be 1 or more, got 0"),
    (["--no-bundled"], "--no-bundled leaves no model"),
    (["--port", "70000"], "--port must be 0 to 65535"),
])
def test_bad_options_are_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], args: list[str], says: str) -> None:
    assert main(["serve", *args]) == 2  # in process: refused before any socket or model
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1


def test_sigterm_finishes_the_running_request_and_exits_0(child_env: dict[str, str]) -> None:
    proc, url = start(child_env)
    try:
        assert url.startswith("http://127.0.0.1:")
        assert httpx.get(url + "healthz").json()["status"] == "ok"
        page = httpx.get(url)
        assert page.status_code == 200 and "attnlab-lab" in page.text
        got: dict[str, Any] = {}

        def post() -> None:  # the first MiniLM run loads the model: seconds, long enough to signal during it
            got["r"] = httpx.post(url + "api/run", json={"model": "minilm", "text": "The cat sat."}, timeout=120)

        client = threading.Thread(target=post)
        client.start()
        for _ in range(200):  # wait until the server has the request
            if httpx.get(url + "healthz").json()["busy"]:
                break
            threading.Event().wait(0.05)
        proc.send_signal(signal.SIGTERM)
        client.join(120)
        code, out, err = finish(proc)
    finally:
        proc.kill()
    assert got["r"].status_code == 200 and got["r"].json()["tokens"][1] == "the"
    assert code == 0, err
    assert out.strip().endswith("attnlab serve: stopped") and "Traceback" not in err


def test_another_host_than_loopback_prints_a_warning(child_env: dict[str, str]) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "attnlab.cli", "serve", "--port", "0", "--host", "0.0.0.0",
                             "--no-bundled", "--model", "zh-sentiment"], env=child_env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and "http://" in proc.stdout.readline()
        proc.send_signal(signal.SIGTERM)
        code, _, err = finish(proc)
    finally:
        proc.kill()
    assert code == 0
    assert "warning: listening on 0.0.0.0: anyone who can reach port" in err


def test_the_listening_socket_sends_at_once() -> None:
    """TCP_NODELAY on the listening socket (accepted connections inherit it): without it every response written in
    two parts waited about 40 ms for the client's delayed ACK (the lab's /healthz took 44 ms at p50, now 1 ms)."""
    from attnlab.serve import bind

    sock = bind("127.0.0.1", 0)
    try:
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
        client = socket.create_connection(sock.getsockname()[:2])
        accepted, _ = sock.accept()
        assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1  # inherited by the connection
        accepted.close()
        client.close()
    finally:
        sock.close()


def test_a_host_name_that_does_not_resolve_is_named_as_such() -> None:
    from attnlab.errors import InputError
    from attnlab.serve import bind

    with pytest.raises(InputError, match="is not an address of this machine"):  # was 'cannot listen on ...'
        bind("no-such-host.invalid", 0)
