"""A tiny generated dataset and a subprocess environment for the training tests."""

from __future__ import annotations

import csv
import os
import random
from pathlib import Path

import pytest

import attnlab


def write_reviews(path: Path, n: int, seed: int = 0) -> Path:
    """``n`` short texts of random letters with one sentiment character (好 positive, 差 negative) inside."""
    r = random.Random(seed)
    with open(path, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["text", "label"])
        for _ in range(n):
            positive = r.random() < 0.5
            chars = [r.choice("abcdefghijk") for _ in range(r.randint(3, 14))]
            chars.insert(r.randint(0, len(chars)), "好" if positive else "差")
            out.writerow(["".join(chars), "pos" if positive else "neg"])
    return path


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
