"""Shared test settings and fixtures: deterministic seeds, a hypothesis profile sized for a 2-core machine, a tiny
generated review set and the environment of a child ``python -m attnlab.cli``."""

from __future__ import annotations

import os
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


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


@pytest.fixture
def reviews(tmp_path: Path) -> Path:
    return write_reviews(tmp_path / "reviews.csv", 400)


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
