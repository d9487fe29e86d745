"""Shared test settings and fixtures: deterministic seeds, a hypothesis profile sized for a 2-core machine, a tiny
generated review set and the environment of a child ``python -m attnlab.cli``."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import torch
from helpers.reviews import write_reviews
from hypothesis import HealthCheck, settings

import attnlab
import attnlab.parallel  # (registers the kernel "ring": every test module sees the same KERNELS)

settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.register_profile("dev", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

torch.set_num_threads(1)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--durations-file", metavar="PATH", default=None,
                     help="write the slowest tests' durations (setup + call + teardown) into PATH, for a reviewer to "
                          "diff (`make test` writes tests/durations.txt)")


_DURATIONS: dict[str, float] = {}  # test id -> seconds, on the controller (xdist relays every worker's reports)
SLOWEST = 40


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _DURATIONS[report.nodeid] = _DURATIONS.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    path = session.config.getoption("--durations-file")
    if not path or hasattr(session.config, "workerinput"):  # an xdist worker: its controller writes the file
        return
    ranked = sorted(_DURATIONS.items(), key=lambda item: (-item[1], item[0]))
    lines = [f"# the {min(SLOWEST, len(ranked))} slowest of {len(ranked)} tests (setup + call + teardown, seconds; "
             f"{sum(_DURATIONS.values()):.0f} s in all), written by tests/conftest.py for `make test`",
             *(f"{seconds:7.1f}  {name}" for name, seconds in ranked[:SLOWEST])]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


@pytest.fixture
def reviews(tmp_path: Path) -> Path:
    return write_reviews(tmp_path / "reviews.csv", 400)


TINY_CLASSIFIER = ["--d-model", "12", "--n-heads", "3", "--n-layers", "1", "--d-ff", "20", "--min-frequency", "1",
                   "--batch-size", "8", "--no-progress", "--checkpoint-every", "10", "--epochs", "2", "--lr", "5e-3"]


@pytest.fixture(scope="session")
def _tiny_classifier_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``attnlab train classify`` with TINY_CLASSIFIER on 400 generated reviews, trained once a session (once per
    xdist worker): ``(the reviews, the run folder)``. Never handed out itself: see :func:`tiny_classifier`."""
    from attnlab.cli import main

    folder = tmp_path_factory.mktemp("tiny-classifier")
    data = write_reviews(folder / "reviews.csv", 400)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.manual_seed(0)
        assert main(["train", "classify", "--data", str(data), "--out", str(folder / "run"), *TINY_CLASSIFIER]) == 0
    finally:
        torch.set_num_threads(before)
    return data, folder / "run"


@pytest.fixture
def tiny_classifier(_tiny_classifier_run: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    """``(reviews, run folder)`` of a tiny trained classifier: this test's own copy of the session's one run (tests
    corrupt, calibrate and resume it), so the model is trained once, not once per test that needs one."""
    data, run = _tiny_classifier_run
    return data, Path(shutil.copytree(run, tmp_path / "out"))


@pytest.fixture
def child_env() -> dict[str, str]:
    """The environment of a child ``python -m attnlab.cli``: this checkout's attnlab, one thread per process."""
    src = str(Path(attnlab.__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([src, *filter(None, [env.get("PYTHONPATH")])])
    env["OMP_NUM_THREADS"] = "1"
    return env


@pytest.fixture
def one_thread():  # type: ignore[no-untyped-def]
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
