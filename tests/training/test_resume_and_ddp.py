"""The two promises that need real processes: a run killed with SIGKILL resumes to the same final metrics bit for
bit, and two torchrun ranks compute the same losses as one process with the same global batch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.cli import kill_at_checkpoint, one_and_two_ranks
from safetensors.torch import load_file

TINY = ["--d-model", "12", "--n-heads", "3", "--n-layers", "1", "--d-ff", "20", "--min-frequency", "1",
        "--no-progress"]


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "attnlab.cli", *args]


def train_rows(out: Path) -> list[tuple[object, ...]]:
    """Every metrics row without its timing."""
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return [tuple((k, v) for k, v in sorted(r.items()) if k not in ("samples_per_s", "cpu_s")) for r in rows]


@pytest.mark.slow
def test_sigkill_then_resume_equals_an_uninterrupted_run(tmp_path: Path, reviews: Path, child_env: dict[str, str]
                                                         ) -> None:
    args = ["train", "classify", "--data", str(reviews), "--epochs", "3", "--batch-size", "8", "--dropout", "0.2",
            "--checkpoint-every", "3", "--lr", "3e-3", "--patience", "0", *TINY]
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    subprocess.run(cli(*args, "--out", str(whole)), env=child_env, check=True, capture_output=True, timeout=120)

    killed_at = kill_at_checkpoint(cli(*args, "--out", str(broken)), child_env, broken, 45)  # a step of epoch 2

    done = subprocess.run(cli(*args, "--out", str(broken), "--resume"), env=child_env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"resumed from {killed_at}" in done.stdout

    assert json.loads((broken / "final.json").read_text()) == json.loads((whole / "final.json").read_text())
    assert train_rows(broken) == train_rows(whole)  # every step's loss and accuracy, bit for bit
    a, b = load_file(str(whole / "model.safetensors")), load_file(str(broken / "model.safetensors"))
    assert a.keys() == b.keys() and all(a[k].equal(b[k]) for k in a)


@pytest.mark.slow
def test_two_torchrun_ranks_match_one_process(tmp_path: Path, reviews: Path, child_env: dict[str, str]) -> None:
    args = ["train", "classify", "--data", str(reviews), "--batch-size", "8", "--max-steps", "6", "--dropout", "0",
            "--lr", "3e-3", "--warmup", "0", *TINY]
    one, two = tmp_path / "one", tmp_path / "two"
    stdout = one_and_two_ranks(cli(), args, child_env, one, two)
    assert stdout.count("test accuracy") == 1  # rank 0 alone speaks

    def losses(out: Path) -> list[float]:
        rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
        return [r["loss"] for r in rows if r["split"] == "train"]

    single, ddp = losses(one), losses(two)
    assert len(single) == len(ddp) == 6
    worst = max(abs(a - b) for a, b in zip(single, ddp, strict=True))
    print(f"largest loss difference, 2 ranks vs 1 process over 6 steps: {worst:.3g}")
    assert worst <= 1e-5, (single, ddp)
    assert len(list((two / "checkpoints").glob("step-*"))) >= 1
