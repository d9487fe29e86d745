"""`python -m attnlab.tour`: what it prints is the tutorials' example computed right (checked against float64)."""

from __future__ import annotations

import math
import re
import subprocess
import sys

import pytest
import torch

from attnlab import tour


def blocks(text: str) -> dict[str, torch.Tensor]:
    """The printed matrices, by the first word of the line above each."""
    found: dict[str, torch.Tensor] = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        rows = []
        for below in lines[i + 1:]:
            if not below.startswith("    "):
                break
            rows.append([float(x) for x in below.split()])
        if rows and line and not line.startswith("    "):
            found[line.split()[0]] = torch.tensor(rows, dtype=torch.float64)
    return found


@pytest.fixture(scope="module")
def printed() -> str:
    done = subprocess.run([sys.executable, "-m", "attnlab.tour"], capture_output=True, text=True, timeout=120,
                          check=True)
    return done.stdout


@pytest.mark.slow
def test_the_tour_prints_the_example_computed_in_float64(printed: str) -> None:
    torch.manual_seed(0)  # the tour's projections, recomputed here in float64
    x = tour.EXAMPLE[0].double()  # (T, D)
    d = x.shape[-1]
    w_q, w_k, w_v = (torch.randn(d, d).double() / math.sqrt(d) for _ in range(3))
    q, k, v = x @ w_q, x @ w_k, x @ w_v  # (T, D)
    scores = q @ k.T / math.sqrt(d)  # (T, T)
    weights = scores.softmax(-1)
    causal = scores.masked_fill(torch.ones(4, 4, dtype=torch.bool).triu(1), -math.inf).softmax(-1)
    got = blocks(printed)
    assert set(got) >= {"scores", "weights", "output", "causal"}, sorted(got)
    for name, want in (("scores", scores), ("weights", weights), ("output", weights @ v), ("causal", causal)):
        assert got[name].shape == want.shape, name
        worst = float((got[name] - want).abs().max())
        assert worst <= 5.1e-5, f"{name}: printed values differ from float64 by {worst:.2e}"
    assert (got["causal"].triu(1) == 0).all()  # masked entries are exactly zero
    sums = [float(s) for s in re.search(r"row sums: (.*)", printed).group(1).split()]  # type: ignore[union-attr]
    assert sums == pytest.approx([1.0] * 4, abs=1e-6)


@pytest.mark.slow
def test_the_tour_shows_why_scores_are_scaled(printed: str) -> None:
    m = re.search(r"var\(q\.k\) = ([\d.]+), var\(q\.k / sqrt\(d_k\)\) = ([\d.]+)", printed)
    assert m, printed
    raw, scaled = float(m.group(1)), float(m.group(2))
    assert 480 < raw < 545 and 0.93 < scaled < 1.07  # d_k = 512 and 1, within sampling error of 4,096 draws
    assert scaled == pytest.approx(raw / 512, abs=1e-3)
