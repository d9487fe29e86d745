"""`attnlab train induction`: sequences are [x1..xL, x1..xL] with L drawn per batch and typed as characters; a tiny
run writes what it promises (every head's scores in each validation row, final.json with the change step, the
figure); the change detector finds the step where the repeated-half loss has covered half its fall and only when an
induction score rose; bad options are refused with one line and nothing written; SIGKILL then --resume equals an
uninterrupted run; two runs of `make train-induction` write the same bytes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.models.lm import load_lm
from attnlab.training import InductionTrainConfig, train_induction
from attnlab.training._induction_run import (
    ALPHABET,
    InductionTask,
    change_step,
    induction_vocab,
    repeated_half,
    sequences,
)

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(sys.executable).parent.parent
TIMINGS = {"samples_per_s", "tokens_per_s", "cpu_s"}
TINY = {"max_steps": 6, "eval_every": 3, "checkpoint_every": 3, "batch_size": 4, "eval_per_length": 1,
        "probe_batch": 2, "probe_length": 4, "max_length": 8}


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "attnlab.cli", *args]


def test_the_vocabulary_is_the_64_characters_after_unk() -> None:
    vocab = induction_vocab()
    assert len(ALPHABET) == len(set(ALPHABET)) == 64 and len(vocab) == 65
    assert vocab.vocabulary[0] == "[UNK]" and vocab.decode(range(1, 65)) == ALPHABET
    assert vocab.encode("09azAZ+/") == [1, 10, 11, 36, 37, 62, 63, 64]


def test_a_batch_is_one_length_repeated_and_lengths_vary() -> None:
    task = InductionTask.__new__(InductionTask)
    task.config = InductionTrainConfig()
    lengths = set()
    for index in range(60):
        items = task.batch(0, index)
        assert items == task.batch(0, index) and len(items) == 32  # fixed by (seed, epoch, index)
        ids = sequences(items)  # (B, 2L)
        length = ids.shape[1] // 2
        lengths.add(length)
        assert 4 <= length <= 31 and torch.equal(ids[:, :length], ids[:, length:])
        assert int(ids.min()) >= 1 and int(ids.max()) <= 64  # [UNK] never drawn
        assert len({tuple(r) for r in ids.tolist()}) == 32  # every sequence its own
    assert len(lengths) >= 15, sorted(lengths)
    assert repeated_half(5) == slice(5, 9)  # positions 5..8 predict x2..x5 of the second copy


def rows(losses: list[float], induction: list[float]) -> list[dict[str, object]]:
    return [{"step": 10 * (i + 1), "loss": v, "heads": {"induction": [[0.0, 0.0], [0.01, s]]}}
            for i, (v, s) in enumerate(zip(losses, induction, strict=True))]


def test_the_change_is_where_half_the_fall_is_covered_and_only_with_an_induction_head() -> None:
    losses = [4.2, 4.1, 4.0, 3.0, 1.5, 0.3, 0.2]  # fall 4.2 -> 0.2: half covered at 2.2, first at 1.5
    found = change_step(rows(losses, [0.03, 0.03, 0.05, 0.2, 0.35, 0.45, 0.46]))
    assert found["step"] == 50 and found["head"] == [1, 1]
    assert found["induction_rise"] == pytest.approx(0.43) and found["loss_end"] == 0.2
    assert change_step(rows(losses, [0.03, 0.03, 0.05, 0.2, 0.3, 0.31, 0.32]))["step"] is None  # rose 0.29
    assert change_step(rows([4.2, 4.2, 4.2], [0.0, 0.5, 0.6]))["step"] is None  # no fall
    assert change_step([])["step"] is None


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("induction") / "run"
    train_induction(out, config=InductionTrainConfig(**TINY), progress=False, log=lambda _: None)
    return out


@pytest.mark.slow
def test_a_tiny_run_writes_the_scores_the_change_and_the_figure(tiny_run: Path) -> None:
    for name in ("model.safetensors", "config.json", "tokenizer.json", "sampling.json", "run.json", "final.json",
                 "metrics.jsonl", "curves.png", "phase.png", "train.log"):
        assert (tiny_run / name).is_file(), name
    model, meta = load_lm(tiny_run)
    assert (model.config.n_layers, model.config.n_heads, model.config.d_model, model.config.vocab_size,
            model.config.context, model.config.mlp, model.config.norm) == (2, 4, 64, 65, 64, False, False)
    from attnlab.data import CharTokenizer
    from attnlab.trained import SAMPLING, load_language_model

    assert CharTokenizer.from_json(meta["tokenizer"]).vocabulary[1:] == tuple(ALPHABET)
    assert load_language_model(tiny_run).defaults == {**SAMPLING, "greedy": True, "repetition_penalty": 1.0,
                                                      "no_repeat_ngram": 0}  # it copies by default
    valid = [json.loads(line) for line in (tiny_run / "metrics.jsonl").read_text().splitlines()
             if '"valid"' in line]
    assert [r["step"] for r in valid] == [3, 6]
    for r in valid:
        assert set(r["heads"]) == {"previous token", "induction"}
        assert all(len(layer) == 4 for layer in r["heads"]["induction"]) and len(r["heads"]["induction"]) == 2
        assert 0 <= r["repeat_accuracy"] <= 1 and r["loss"] > 3  # untrained: near ln 64
    final = json.loads((tiny_run / "final.json").read_text())
    assert final["change_step"] is None  # 6 steps form no induction head
    assert final["change"]["induction_rise"] <= 0.3
    assert sorted(map(int, final["per_length"])) == list(range(4, 9))
    assert json.loads(meta["metrics"])["repeat_loss"] == final["repeat_loss"]
    best = [r for r in valid if r["step"] == final["best_step"]]
    assert best and best[0]["loss"] == pytest.approx(final["repeat_loss"], abs=1e-6)  # the kept model is the best


@pytest.mark.parametrize("args, words", [
    (["--max-length", "40"], "max_length=40 makes sequences of 80 tokens"),
    (["--min-length", "9", "--max-length", "8"], "min_length <= max_length"),
    (["--max-steps", "0"], "max_steps must be"),
])
def test_bad_options_are_one_line_and_write_nothing(tmp_path: Path, child_env: dict[str, str], args: list[str],
                                                     words: str) -> None:
    out = tmp_path / "run"
    done = subprocess.run(cli("train", "induction", "--out", str(out), *args, "--no-progress"), env=child_env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert words in done.stderr and not out.exists()


def test_the_config_is_checked() -> None:
    with pytest.raises(ConfigError, match="probe_length must be at least 2"):
        InductionTrainConfig(probe_length=1)
    with pytest.raises(ConfigError, match="vocab_size is fixed"):
        train_induction("unused", model={"vocab_size": 3})


def tiny_args() -> list[str]:
    return ["train", "induction", *[f"--{k.replace('_', '-')}={v}" for k, v in {**TINY, "max_steps": 9}.items()
                                    if k not in ("probe_batch", "probe_length")], "--no-progress"]


def without_timings(out: Path) -> tuple[list[dict[str, object]], dict[str, object]]:
    rows = [{k: v for k, v in json.loads(line).items() if k not in TIMINGS}
            for line in (out / "metrics.jsonl").read_text().splitlines()]
    final = {k: v for k, v in json.loads((out / "final.json").read_text()).items()
             if k not in ("train_cpu_s", "train_wall_s")}
    return rows, final


@pytest.mark.slow
def test_sigkill_then_resume_equals_an_uninterrupted_run(tmp_path: Path, child_env: dict[str, str]) -> None:
    from helpers.cli import kill_at_checkpoint

    whole, broken = tmp_path / "whole", tmp_path / "broken"
    subprocess.run(cli(*tiny_args(), "--out", str(whole)), env=child_env, check=True, capture_output=True,
                   timeout=120)
    killed_at = kill_at_checkpoint(cli(*tiny_args(), "--out", str(broken)), child_env, broken, 3)
    done = subprocess.run(cli("train", "induction", "--out", str(broken), "--resume", "--no-progress"),
                          env=child_env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"resumed from {killed_at}" in done.stdout
    assert without_timings(broken) == without_timings(whole)  # every step, every probe, the change, bit for bit
    assert (broken / "model.safetensors").read_bytes() == (whole / "model.safetensors").read_bytes()


@pytest.mark.slow
def test_two_runs_of_make_train_induction_write_the_same_bytes(tmp_path: Path, child_env: dict[str, str]) -> None:
    config = tmp_path / "tiny.json"
    config.write_text(json.dumps({"train": {**TINY, "max_steps": 4}}), encoding="utf-8")
    bundles = []
    for name, threads, seed in (("a", "2", "1"), ("b", "3", "2")):  # the target overrides both
        env = {**child_env, "OMP_NUM_THREADS": threads, "PYTHONHASHSEED": seed}
        out = tmp_path / name
        command = ["make", "-s", "-C", str(ROOT), "-o", str(VENV / ".attnlab-installed"), "train-induction",
                   f"VENV={VENV}", f"INDUCTION_CONFIG={config}", f"INDUCTION_OUT={out}",
                   f"INDUCTION_BUNDLED={out}-bundle"]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        bundles.append(Path(f"{out}-bundle"))
    a, b = bundles
    for name in ("model.safetensors", "config.json", "tokenizer.json", "run.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert without_timings(a) == without_timings(b)
