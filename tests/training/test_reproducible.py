"""`make train-zh` is bit-for-bit reproducible: the target pins what the weights depend on besides the config and
its seed (the thread count, Python's string hashing), so two runs of it write the same bytes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import attnlab

ROOT = Path(attnlab.__file__).resolve().parents[2]
VENV = Path(sys.executable).parent.parent  # the venv running the tests (not resolved: bin/python is a link)
TIMINGS = {"samples_per_s", "tokens_per_s", "cpu_s"}  # cpu_s: the CPU seconds so far, in validation rows

TINY_CONFIG = {
    "model": {"d_model": 12, "n_heads": 3, "n_layers": 1, "d_ff": 20, "dropout": 0.1, "bigrams": 30,
              "pooling": "meanmax"},
    "train": {"tokenizer": "char", "min_frequency": 1, "epochs": 2, "batch_size": 8, "lr": 0.005, "warmup": 0.1,
              "label_smoothing": 0.1, "ema": 0.9, "fused": True, "bucket": True, "eval_every": 10,
              "checkpoint_every": 10, "seed": 0, "crops": 0.5},
}


def make_train_zh(config: Path, out: Path, env: dict[str, str]) -> None:
    """Run the Makefile's ``train-zh`` target on ``config`` into ``out`` (bundle copied to ``out``-bundle); the
    venv's install stamp is taken as up to date, so the target never reinstalls the package."""
    stamp = VENV / ".attnlab-installed"
    command = ["make", "-s", "-C", str(ROOT), "-o", str(stamp), "train-zh", f"VENV={VENV}", f"ZH_CONFIG={config}",
               f"ZH_OUT={out}", f"ZH_BUNDLED={out}-bundle"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def without_timings(path: Path) -> list[dict[str, object]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [{k: v for k, v in row.items() if k not in TIMINGS} for row in rows]


def test_the_target_pins_threads_and_hashing() -> None:
    done = subprocess.run(["make", "-n", "-C", str(ROOT), "-o", str(VENV / ".attnlab-installed"), "train-zh",
                           f"VENV={VENV}"], capture_output=True, text=True, timeout=60, check=True)
    run = next(line for line in done.stdout.splitlines() if "train classify" in line)
    for pin in ("OMP_NUM_THREADS=1", "MKL_NUM_THREADS=1", "PYTHONHASHSEED=0"):
        assert pin in run, run


@pytest.mark.slow
def test_two_runs_of_the_target_write_the_same_bytes(reviews: Path, child_env: dict[str, str],
                                                      tmp_path: Path) -> None:
    with open(reviews, "a", encoding="utf-8") as f:  # texts of several clauses, for the crops
        f.writelines(f"ab{c}cd{i}，ef{c}，g{c}h,{'pos' if c == '好' else 'neg'}\n" for i in range(20) for c in "好差")
    config = tmp_path / "tiny.json"
    config.write_text(json.dumps({"data": str(reviews), **TINY_CONFIG}), encoding="utf-8")
    runs = [tmp_path / "a", tmp_path / "b"]
    for run, threads, hash_seed in zip(runs, ("2", "3"), ("1", "2"), strict=True):  # the target overrides these
        env = {**child_env, "OMP_NUM_THREADS": threads, "PYTHONHASHSEED": hash_seed}
        env.pop("MKL_NUM_THREADS", None)
        make_train_zh(config, run, env)
    a, b = runs
    for name in ("model.safetensors", "tokenizer.json", "config.json", "final.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        assert (Path(f"{a}-bundle") / name).read_bytes() == (a / name).read_bytes(), name
    assert without_timings(a / "metrics.jsonl") == without_timings(b / "metrics.jsonl")
    for name in ("calibration.json", "reliability.png", "final.json"):  # the target's last steps, on the bundle
        assert Path(f"{a}-bundle", name).read_bytes() == Path(f"{b}-bundle", name).read_bytes(), name
    bundled = json.loads(Path(f"{a}-bundle", "final.json").read_text(encoding="utf-8"))
    suite = bundled.pop("suites")["zh-sentiment"]  # the behaviour suite's pass rates, recorded by the target
    assert suite["cases"] == sum(c["n"] for c in suite["capabilities"].values()) > 400
    assert bundled == json.loads((a / "final.json").read_text(encoding="utf-8"))  # the run's, with them added
    assert len(without_timings(a / "metrics.jsonl")) > 10
    assert "crops: " in (a / "train.log").read_text(encoding="utf-8")  # the bundled recipe's crops, reproduced
