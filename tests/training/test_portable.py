"""make_portable: a bundle's bytes do not depend on the folder it was trained in (make train-zh names the composed
phrases' file inside the clone, and a run records every file it read by its whole path)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file

from attnlab.models import read_model_meta
from attnlab.training import ClassifyTrainConfig, load_trained, make_portable, train_classifier

MODEL = {"d_model": 12, "n_heads": 3, "n_layers": 1, "d_ff": 20, "pooling": "meanmax"}
TRAIN = {"epochs": 1, "batch_size": 16, "lr": 3e-3, "min_frequency": 1, "checkpoint_every": 50, "patience": 0,
         "seed": 0}


def test_two_clones_bundle_the_same_bytes(reviews: Path, tmp_path: Path, one_thread: None) -> None:
    runs = []
    for clone in ("a", "deeper/b"):
        root = tmp_path / clone
        root.mkdir(parents=True)
        (root / "extra.jsonl").write_text('{"text": "好好好", "label": "pos"}\n{"text": "差差", "label": "neg"}\n',
                                          encoding="utf-8")
        run = root / "run"
        config = ClassifyTrainConfig(**TRAIN, extra=str(root / "extra.jsonl"))  # type: ignore[arg-type]
        train_classifier(reviews, run, model=MODEL, config=config, max_length=24, log=lambda _: None, progress=False)
        assert str(root / "extra.jsonl") in (run / "train.log").read_text(encoding="utf-8")  # the run's own log
        runs.append((root, run))
    (root_a, run_a), (root_b, run_b) = runs
    assert (run_a / "model.safetensors").read_bytes() != (run_b / "model.safetensors").read_bytes()  # the paths differ
    before = load_file(str(run_a / "model.safetensors"))
    bundles = []
    for root, run in runs:
        bundle = root / "bundle"
        shutil.copytree(run, bundle, ignore=shutil.ignore_patterns("checkpoints"))
        assert make_portable(bundle, root) == [str(root / "extra.jsonl")]
        bundles.append(bundle)
    a, b = bundles
    for name in ("model.safetensors", "config.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name

    def extra_lines(bundle: Path) -> list[str]:  # the log's timings differ from run to run; its extra line must not
        return [line for line in (bundle / "train.log").read_text(encoding="utf-8").splitlines()
                if line.startswith("extra: ")]

    assert extra_lines(a) == extra_lines(b) == [line.replace(f"{root_a}/", "") for line in extra_lines(run_a)]
    assert str(root_a) not in (a / "train.log").read_text(encoding="utf-8")
    assert json.loads((a / "config.json").read_text())["train"]["extra"] == "extra.jsonl"
    assert json.loads(read_model_meta(a / "model.safetensors")["run"])["train"]["extra"] == "extra.jsonl"
    assert "from extra.jsonl added" in extra_lines(a)[0]
    after = load_file(str(a / "model.safetensors"))
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)  # weights untouched
    text = reviews.read_text(encoding="utf-8").splitlines()[1].rsplit(",", 1)[0]  # a training review
    assert load_trained(a).predict([text]) == load_trained(run_a).predict([text])
    # the data file outside the clone keeps its whole path; a second pass finds nothing and writes nothing
    assert json.loads((a / "config.json").read_text())["data"] == str(reviews)
    stamp = (a / "model.safetensors").stat().st_mtime_ns
    assert make_portable(a, root_a) == [] and (a / "model.safetensors").stat().st_mtime_ns == stamp
