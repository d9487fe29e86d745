"""train_translator: a run killed with SIGKILL resumes to the same metrics and weights bit for bit, two torchrun
ranks compute one process's losses, and a run writes what it promises (final.json per set and per tag, with
standard errors)."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.cli import kill_at_checkpoint, one_and_two_ranks
from safetensors.torch import load_file

from attnlab.data import Pairs, PairSplits
from attnlab.errors import ConfigError, InputError
from attnlab.training import TranslateTrainConfig, load_translator, train_translator

TINY = ["--d-embed", "8", "--d-hidden", "12", "--max-length", "8", "--no-progress"]
TIMINGS = ("samples_per_s", "tokens_per_s", "cpu_s")  # cpu_s: the CPU seconds so far, in validation rows


def write_pairs(path: Path, n: int, seed: int = 0) -> Path:
    """``n`` words of the letters a-e and their reversal in capitals: an alignment that crosses."""
    r = random.Random(seed)
    words = ["".join(r.choice("abcde") for _ in range(r.randint(2, 6))) for _ in range(n)]
    path.write_text("".join(f"{w}\t{w[::-1].upper()}\n" for w in words), encoding="utf-8")
    return path


def tagged_splits(n: int, seed: int = 0) -> PairSplits:
    r = random.Random(seed)

    def pairs(k: int, longest: int = 5) -> Pairs:
        words = ["".join(r.choice("abc") for _ in range(r.randint(1, longest))) for _ in range(k)]
        return Pairs.of((w, w[::-1].upper(), "short" if len(w) < 3 else "long") for w in words)

    return PairSplits(pairs(n), pairs(20), pairs(30), "reversal", {"longer": pairs(10, 7)})


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "attnlab.cli", *args]


def rows(out: Path) -> list[dict[str, object]]:
    return [{k: v for k, v in json.loads(line).items() if k not in TIMINGS}
            for line in (out / "metrics.jsonl").read_text().splitlines()]


def final(out: Path) -> dict[str, object]:
    data = json.loads((out / "final.json").read_text())
    return {k: v for k, v in data.items() if k not in ("train_cpu_s", "train_wall_s")}


@pytest.mark.slow
def test_sigkill_then_resume_equals_an_uninterrupted_run(tmp_path: Path, child_env: dict[str, str]) -> None:
    data = write_pairs(tmp_path / "pairs.tsv", 120)
    args = ["train", "translate", "--data", str(data), "--arch", "luong", "--score", "general", "--epochs", "3",
            "--batch-size", "8", "--dropout", "0.2", "--checkpoint-every", "3", "--lr", "1e-2", "--patience", "0",
            *TINY]
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    subprocess.run(cli(*args, "--out", str(whole)), env=child_env, check=True, capture_output=True, timeout=120)
    steps = max(r["step"] for r in rows(whole))  # type: ignore[type-var]

    killed_at = kill_at_checkpoint(cli(*args, "--out", str(broken)), child_env, broken, steps // 2)  # epoch 2

    # --resume alone: the run's saved options, not retyped
    done = subprocess.run(cli("train", "translate", "--out", str(broken), "--resume", "--no-progress"), env=child_env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"resumed from {killed_at}" in done.stdout
    assert rows(broken) == rows(whole)  # every step's loss and token accuracy, every validation, bit for bit
    assert final(broken) == final(whole)
    a, b = load_file(str(whole / "model.safetensors")), load_file(str(broken / "model.safetensors"))
    assert a.keys() == b.keys() and all(a[k].equal(b[k]) for k in a)


@pytest.mark.slow
def test_two_torchrun_ranks_match_one_process(tmp_path: Path, child_env: dict[str, str]) -> None:
    data = write_pairs(tmp_path / "pairs.tsv", 120)
    args = ["train", "translate", "--data", str(data), "--batch-size", "8", "--max-steps", "5", "--dropout", "0",
            "--lr", "1e-2", "--warmup", "0", *TINY]
    one, two = tmp_path / "one", tmp_path / "two"
    stdout = one_and_two_ranks(cli(), args, child_env, one, two)
    assert stdout.count("test exact match") == 1  # rank 0 alone speaks

    def losses(out: Path) -> list[float]:
        return [float(r["loss"]) for r in rows(out) if r["split"] == "train"]  # type: ignore[arg-type]

    single, ddp = losses(one), losses(two)
    assert len(single) == len(ddp) == 5
    worst = max(abs(a - b) for a, b in zip(single, ddp, strict=True))
    print(f"largest loss difference, 2 ranks vs 1 process over 5 steps: {worst:.3g}")
    assert worst <= 1e-5, (single, ddp)
    assert final(one)["test_n"] == final(two)["test_n"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, object]]]:
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("translate") / "run"
    config = TranslateTrainConfig(epochs=4, batch_size=10, lr=1e-2, warmup=0.1, checkpoint_every=7, patience=0,
                             label_smoothing=0.1)
    try:
        result = train_translator(tagged_splits(160), out, arch="bahdanau", model={"d_embed": 8, "d_hidden": 16},
                                  config=config, max_length=10, progress=False, log=lambda _: None)
    finally:
        torch.set_num_threads(threads)
    yield out, result


@pytest.mark.slow
def test_a_run_writes_its_files_and_the_figures_per_set_and_tag(run: tuple[Path, dict[str, object]]) -> None:
    out, result = run
    for name in ("model.safetensors", "config.json", "tokenizer.json", "run.json", "metrics.jsonl", "curves.png",
                 "final.json", "train.log"):
        assert (out / name).is_file(), name
    assert json.loads((out / "final.json").read_text()) == result
    sets = result["sets"]
    assert isinstance(sets, dict) and set(sets) == {"test", "longer"}
    for name, res in sets.items():
        p, n = res["exact_match"], res["n"]
        assert n == (30 if name == "test" else 10) and 0 <= p <= 1
        assert res["stderr"] == pytest.approx(math.sqrt(p * (1 - p) / n))
        tags = res["by_tag"]
        assert sum(t["n"] for t in tags.values()) == n
        assert sum(t["exact_match"] * t["n"] for t in tags.values()) == pytest.approx(p * n)
        assert len(res["errors"]) == min(20, round((1 - p) * n))
    assert result["test_exact_match"] == sets["test"]["exact_match"]
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in metrics if r["split"] == "valid"] == [16, 32, 48, 64]
    assert all(r["loss"] > 0 and r["tokens_per_s"] > 0 for r in metrics if r["split"] == "train")
    assert "exact match" in (out / "train.log").read_text()

    translator = load_translator(out)  # the best model, as `attnlab translate --model DIR` reads it
    (t,) = translator.translate(["abc"])
    assert t.alignment.shape == (len(t.target_tokens), len(t.source_tokens))
    assert t.source_tokens == ["a", "b", "c", "[EOS]"]
    assert t.alignment.sum(-1).sub(1).abs().max() < 1e-5  # each generated token's weights sum to one


@pytest.mark.slow
def test_a_finished_run_is_not_overwritten_and_resume_keeps_its_settings(run: tuple[Path, dict[str, object]]
                                                                           ) -> None:
    out, _ = run
    before = (out / "final.json").read_bytes()
    with pytest.raises(InputError, match="already holds a run"):
        train_translator(tagged_splits(160), out, arch="bahdanau", model={"d_embed": 8, "d_hidden": 16},
                         max_length=10, progress=False, log=lambda _: None)
    with pytest.raises(ConfigError, match=r"arch \('bahdanau' then, 'luong' now\)"):
        train_translator(tagged_splits(160), out, arch="luong", model={"d_embed": 8, "d_hidden": 16},
                         max_length=10, resume=True, progress=False, log=lambda _: None)
    assert (out / "final.json").read_bytes() == before


def test_options_the_model_does_not_have_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not options of the bahdanau model"):
        train_translator("dates", tmp_path / "x", arch="bahdanau", model={"n_heads": 4})
    with pytest.raises(ConfigError, match="fixed by the data"):
        train_translator("dates", tmp_path / "x", arch="luong", model={"src_vocab": 4})
    with pytest.raises(ConfigError, match="label_smoothing"):
        TranslateTrainConfig(label_smoothing=1.5)
    assert not (tmp_path / "x").exists()


def test_the_cli_passes_positions_to_the_transformer_and_refuses_it_for_a_gru(tmp_path: Path, capsys) -> None:
    from attnlab.cli import main

    data = write_pairs(tmp_path / "pairs.tsv", 40)
    out = tmp_path / "rot"
    assert main(["train", "translate", "--data", str(data), "--arch", "transformer", "--positions", "rotary",
                 "--d-model", "16", "--n-heads", "2", "--n-encoder-layers", "1", "--n-decoder-layers", "1",
                 "--max-steps", "2", "--max-length", "8", "--batch-size", "8", "--no-progress", "--out", str(out)]) == 0
    assert load_translator(out).model.config.positions == "rotary"
    assert main(["train", "translate", "--data", str(data), "--arch", "bahdanau", "--positions", "rotary",
                 "--out", str(tmp_path / "gru")]) == 2
    assert "['positions'] are not options of the bahdanau model" in capsys.readouterr().err
    assert not (tmp_path / "gru").exists()


def test_calibrate_translator_stores_the_threshold_and_the_rates_it_measured(
    run: tuple[Path, dict[str, object]], tmp_path: Path
) -> None:
    import shutil

    from attnlab.training import calibrate_translator, choose_threshold

    folder = tmp_path / "run"
    shutil.copytree(run[0], folder)
    assert load_translator(folder).threshold is None  # none chosen yet: no low-confidence warning
    record = calibrate_translator(folder, n_negatives=30, seed=2, data=tagged_splits(160))
    translator = load_translator(folder)
    assert translator.threshold == record["threshold"]
    assert record == calibrate_translator(folder, n_negatives=30, seed=2, data=tagged_splits(160))  # deterministic
    valid = [t.confidence for t in translator.translate(list(tagged_splits(160).valid.source), warn=False)]
    assert record["n_valid"] == 20 and record["n_negatives"] == 30
    assert record["valid_warned"] == choose_threshold(valid, [0.0])["valid_warned"] <= 0.01
    assert 0 <= record["negatives_warned"] <= 1 and set(record["negatives_warned_by_kind"]) == {"garbled", "non_date"}
    long_ones = record["refused_negatives"]  # too long for its 10 tokens, or nothing it knows: refused, so warned
    assert record["negatives_warned"] >= long_ones / 30 and long_ones > 0
