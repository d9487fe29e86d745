"""The training options of the snownlp recipe: length buckets, EMA of the weights, label smoothing, fused AdamW, bigram
and trigram embeddings: each does what it says, and a run using them all resumes exactly."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from attnlab.errors import ConfigError
from attnlab.models import load_classifier
from attnlab.training import ClassifyTrainConfig, train_classifier
from attnlab.training._classify_run import data_order

MODEL = {"d_model": 12, "n_heads": 3, "n_layers": 1, "d_ff": 20, "dropout": 0.1, "bigrams": 30, "trigrams": 20,
         "pooling": "meanmax", "embed_norm": True, "positional": "learned"}
OPTIONS = {"epochs": 2, "batch_size": 16, "lr": 3e-3, "min_frequency": 1, "checkpoint_every": 7, "patience": 0,
           "eval_every": 38,
           "label_smoothing": 0.1, "ema": 0.9, "fused": True, "bucket": 50}


def test_buckets_are_a_permutation_of_similar_lengths() -> None:
    ids = [[0] * n for n in torch.randint(1, 60, (203,), generator=torch.Generator().manual_seed(1)).tolist()]
    order = data_order(ids, 5, 10, bucket=50)
    assert sorted(order) == list(range(203)) and order == data_order(ids, 5, 10, bucket=50)
    assert order != data_order(ids, 6, 10, bucket=50)
    batches = sorted(sorted(len(ids[i]) for i in order[b: b + 10]) for b in range(0, 200, 10))
    for a, b in itertools.pairwise(batches):  # one chunk here: batches are slices of the sorted lengths
        assert a[-1] <= b[0]
    assert data_order(ids, 5, 10, bucket=0) == torch.randperm(203, generator=torch.Generator().manual_seed(5)
                                                                   ).tolist()


def test_bad_options() -> None:
    for bad in ({"ema": 1.0}, {"label_smoothing": -0.1}, {"fused": 1}, {"bucket": True}, {"bucket": -1}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            ClassifyTrainConfig(**bad)  # type: ignore[arg-type]


class Stop(Exception):
    pass


@pytest.mark.slow
def test_a_run_with_every_option_resumes_exactly(reviews: Path, tmp_path: Path, one_thread: None) -> None:
    """EMA + buckets + smoothing + fused AdamW + bigrams and trigrams; stopped at the one validation
    (step 38, after the step-35 checkpoint), resumed: the same final metrics and weights as a run that never stopped."""
    config = ClassifyTrainConfig(**OPTIONS)  # type: ignore[arg-type]
    whole = train_classifier(reviews, tmp_path / "whole", model=MODEL, config=config, max_length=24,
                             log=lambda _: None, progress=False)

    def stop_at_validation(line: str) -> None:
        if "valid loss" in line:
            raise Stop

    with pytest.raises(Stop):
        train_classifier(reviews, tmp_path / "cut", model=MODEL, config=config, max_length=24,
                         log=stop_at_validation, progress=False)
    assert (tmp_path / "cut" / "checkpoints" / "latest").read_text() == "step-00000035"
    assert (tmp_path / "cut" / "checkpoints" / "step-00000035" / "extra.safetensors").is_file()  # the EMA
    resumed = train_classifier(reviews, tmp_path / "cut", model=MODEL, config=config, max_length=24, resume=True,
                               log=lambda _: None, progress=False)
    assert resumed == whole
    a, b = (load_file(str(tmp_path / name / "model.safetensors")) for name in ("whole", "cut"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    keys = a["bigram_keys"]
    assert len(keys) == 30 and bool((keys[1:] > keys[:-1]).all())  # the 30 kept pairs, sorted
    vocab = load_classifier(tmp_path / "whole" / "model.safetensors")[0].config.vocab_size
    triples = a["trigram_keys"]  # the 20 most frequent triples of the training split: real ones (< V**3)
    assert len(triples) == 20 and bool((triples[1:] > triples[:-1]).all()) and int(triples[-1]) < vocab**3

    # what was saved is the moving average of step 38, not the live weights of that step
    last = tmp_path / "whole" / "checkpoints" / "step-00000038"
    live, ema = load_file(str(last / "model.safetensors")), load_file(str(last / "extra.safetensors"))
    assert whole["best_step"] == 38 and not torch.equal(live["head.weight"], a["head.weight"])
    assert all(torch.equal(ema[f"ema.{k}"], a[k]) for k in ema_names(a, ema))


def ema_names(saved: dict[str, torch.Tensor], ema: dict[str, torch.Tensor]) -> list[str]:
    names = [k for k in saved if f"ema.{k}" in ema]
    assert len(names) == len(ema) > 5
    return names


@pytest.mark.slow
def test_the_cli_takes_the_options(reviews: Path, tmp_path: Path, one_thread: None) -> None:
    from attnlab.cli import main

    out = tmp_path / "cli"
    assert main(["train", "classify", "--data", str(reviews), "--out", str(out), "--d-model", "12", "--n-heads", "3",
                 "--n-layers", "1", "--min-frequency", "1", "--batch-size", "16", "--max-steps", "3", "--no-progress",
                 "--bigrams", "20", "--trigrams", "10", "--pooling", "meanmax", "--embed-norm",
                 "--embed-dropout", "0.2",
                 "--head-dropout", "0.3", "--label-smoothing", "0.1", "--ema", "0.9", "--fused", "--bucket", "50",
                 "--crops", "0.4", "--distill", "0.3"]) == 0
    saved = json.loads((out / "config.json").read_text())
    assert {k: saved["model"][k] for k in ("bigrams", "trigrams", "pooling", "embed_norm", "embed_dropout",
                                           "head_dropout")} == {
        "bigrams": 20, "trigrams": 10, "pooling": "meanmax", "embed_norm": True, "embed_dropout": 0.2,
        "head_dropout": 0.3}
    train = saved["train"]
    assert (train["label_smoothing"], train["ema"], train["fused"], train["bucket"]) == (0.1, 0.9, True, 50)
    assert (train["crops"], train["distill"]) == (0.4, 0.3)
    assert not {"pretrain_epochs", "pretrain_lr", "mask_rate", "pretrain_data"} & set(train)  # removed
