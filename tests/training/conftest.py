"""A tiny generated dataset and a subprocess environment for the training tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from review_helpers import write_reviews

import attnlab


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
