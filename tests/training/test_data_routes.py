"""The classifier's data routes: clause crops, extra training texts, distillation from teachers: each adds what it
says to the training split alone, and a run with them resumes exactly."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from attnlab.data import load_data
from attnlab.errors import ConfigError, InputError
from attnlab.training import ClassifyTrainConfig, saved_run, train_classifier
from attnlab.training._classify_run import TEACHERS_FILE, contrast_clauses, extra_texts, training_crops

MODEL = {"d_model": 12, "n_heads": 3, "n_layers": 1, "d_ff": 20, "bigrams": 20, "pooling": "meanmax",
         "embed_norm": True, "positional": "learned"}
TRAIN = {"epochs": 1, "batch_size": 16, "lr": 3e-3, "min_frequency": 1, "checkpoint_every": 7, "patience": 0,
         "ema": 0.9, "fused": True, "bucket": 50}


def test_crops_are_a_seeded_share_of_the_clauses_with_their_texts_label() -> None:
    texts = ["书很好，但是太贵了。", "很好", "快递快，包装好，东西不错！"] * 50
    labels = [0, 1, 1] * 50
    every, y = training_crops(texts, labels, 1.0, seed=0)
    # 书很好， is left out: the clause after it turns the text around (但是), so the text's label is not its own
    assert every[:4] == ["但是太贵了。", "快递快，", "包装好，", "东西不错！"] and y[:4] == [0, 1, 1, 1]
    assert len(every) == 200  # one-clause texts give none
    some, _ = training_crops(texts, labels, 0.3, seed=0)
    assert 40 < len(some) < 80 and some == training_crops(texts, labels, 0.3, seed=0)[0]
    assert some != training_crops(texts, labels, 0.3, seed=1)[0] and set(some) <= set(every)


def test_contrast_clauses_are_every_clause_after_a_contrast_word_with_its_texts_label() -> None:
    texts = ["书很好，但是太贵了。", "很好", "屏幕不错，可是电池不行，不过价格便宜。", "不但便宜，而且好用"]
    clauses, y = contrast_clauses(texts, [0, 1, 1, 1])
    assert clauses == ["但是太贵了。", "可是电池不行，", "不过价格便宜。"] and y == [0, 1, 1]  # 不但 is no contrast
    assert contrast_clauses([], []) == ([], [])


def test_extra_texts_join_training_alone_and_must_share_the_labels(reviews: Path, tmp_path: Path) -> None:
    splits = load_data(reviews)
    extra = tmp_path / "extra.jsonl"
    held = splits.valid.texts[0]
    rows = [{"text": "好极了", "label": "pos"}, {"text": f" {held}！", "label": "neg"},
            {"text": "差劲", "label": "neg"}]
    extra.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    texts, labels = extra_texts(str(extra), splits, "text", "label")
    assert sorted(zip(texts, labels, strict=True)) == [("好极了", 1), ("差劲", 0)]  # a near copy of valid left out
    extra.write_text(json.dumps({"text": "好", "label": "meh"}) + "\n" + json.dumps({"text": "差", "label": "neg"}))
    with pytest.raises(InputError, match=r"labels \['meh'\] that the data has not"):
        extra_texts(str(extra), splits, "text", "label")


def test_bad_route_options() -> None:
    for bad in ({"crops": 1.5}, {"distill": -0.1}, {"teachers": " , "}, {"rdrop": -1.0}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            ClassifyTrainConfig(**bad)  # type: ignore[arg-type]


def test_rdrop_pulls_two_dropout_passes_together_and_is_nothing_without_dropout(reviews: Path, tmp_path: Path,
                                                                                one_thread: None) -> None:
    def weights(name: str, model: dict[str, object], **train: object) -> dict[str, torch.Tensor]:
        train_classifier(reviews, tmp_path / name, model=model, config=ClassifyTrainConfig(**TRAIN, **train),  # type: ignore[arg-type]
                         max_length=24, log=lambda _: None, progress=False)
        return load_file(str(tmp_path / name / "model.safetensors"))

    still = {**MODEL, "dropout": 0.0, "embed_dropout": 0.0, "head_dropout": 0.0}
    plain, twice = weights("plain", still), weights("twice", still, rdrop=1.0)
    assert all(torch.equal(plain[k], twice[k]) for k in plain)  # the same pass twice: the same loss and gradient
    noisy = {**MODEL, "dropout": 0.3}
    a, b = weights("a", noisy), weights("b", noisy, rdrop=1.0)
    assert any(not torch.equal(a[k], b[k]) for k in a)  # two different masks: the KL term moves the weights


@pytest.mark.slow
def test_a_run_with_crops_extra_teachers_and_contrast_clauses_resumes_exactly(
        reviews: Path, tmp_path: Path, one_thread: None, monkeypatch: pytest.MonkeyPatch) -> None:
    teacher = tmp_path / "teacher"
    train_classifier(reviews, teacher, model=MODEL, config=ClassifyTrainConfig(**TRAIN), max_length=24,  # type: ignore[arg-type]
                     log=lambda _: None, progress=False)
    extra = tmp_path / "extra.csv"
    with open(extra, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([["text", "label"], ["好好好", "pos"], ["差差", "neg"], ["abc好，de好", "pos"]])
    texts = [f"ab{'好' if i % 2 else '差'}，cd{'好' if i % 2 else '差'}e" for i in range(40)]
    with open(reviews, "a", newline="", encoding="utf-8") as f:  # multi-clause texts to crop
        csv.writer(f).writerows([[t, "pos" if "好" in t else "neg"] for t in texts])
        csv.writer(f).writerows([[f"ab{i}好，但是cd差", "neg"] for i in range(6)])  # mixed reviews
    monkeypatch.chdir(tmp_path)  # the run is started with relative paths ...
    config = ClassifyTrainConfig(**TRAIN, eval_every=10, crops=0.5, extra="extra.csv", teachers="teacher, teacher",  # type: ignore[arg-type]
                         distill=0.5, contrast_clauses=True)
    lines: list[str] = []
    whole = train_classifier(reviews, tmp_path / "whole", model=MODEL, config=config, max_length=24,
                             log=lines.append, progress=False)
    assert any(line.startswith("crops: ") for line in lines) and any("extra: 3 labelled texts" in line
                                                                       for line in lines)
    assert any("distillation: the mean probability of 2 teacher(s)" in line for line in lines)
    assert any(line.startswith("contrast clauses: ") and not line.startswith("contrast clauses: 0 ")
               for line in lines), lines

    class Stop(Exception):
        pass

    def stop(line: str) -> None:
        if "valid loss" in line:
            raise Stop

    cut = tmp_path / "cut"
    with pytest.raises(Stop):
        train_classifier(reviews, cut, model=MODEL, config=config, max_length=24, log=stop, progress=False)
    assert (cut / "checkpoints" / "latest").read_text() == "step-00000007"  # stopped mid-epoch
    saved = saved_run(cut)
    assert saved is not None and saved["train"]["extra"] == str(extra)
    assert saved["train"]["teachers"] == f"{teacher},{teacher}"
    monkeypatch.chdir(reviews.parent.parent)  # ... and resumed, with the options it saved, from another folder
    resumed = train_classifier(reviews, cut, model=MODEL, config=ClassifyTrainConfig(**saved["train"]), max_length=24,
                               resume=True, log=lambda _: None, progress=False)
    assert resumed == whole
    a, b = (load_file(str(tmp_path / name / "model.safetensors")) for name in ("whole", "cut"))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_distilling_run_writes_its_teachers_probabilities_and_a_run_from_that_file_is_the_same(
        reviews: Path, tmp_path: Path, one_thread: None) -> None:
    def run(name: str, **train: object) -> dict[str, torch.Tensor]:
        train_classifier(reviews, tmp_path / name, model=MODEL, config=ClassifyTrainConfig(**{**TRAIN, **train}),  # type: ignore[arg-type]
                         max_length=24, log=lambda _: None, progress=False)
        return load_file(str(tmp_path / name / "model.safetensors"))

    run("teacher", seed=1)
    run("teacher2", seed=2)
    taught = run("taught", crops=0.5, teachers=f"{tmp_path / 'teacher'},{tmp_path / 'teacher2'}", distill=0.5)
    probs = tmp_path / "taught" / TEACHERS_FILE
    assert load_file(str(probs))["probabilities"].shape[1] == 2
    again = run("again", crops=0.5, teachers=str(probs), distill=0.5)  # no teacher loaded: the same weights
    assert all(torch.equal(taught[k], again[k]) for k in taught)
    assert not (tmp_path / "again" / TEACHERS_FILE).exists()
    extra = tmp_path / "extra.csv"
    extra.write_text("text,label\n好好好,pos\n差差,neg\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"written for \d+ other training items, this run has \d+: the data, crops"):
        run("other", crops=0.5, extra=str(extra), teachers=str(probs))  # two more training items
    (tmp_path / "bad.safetensors").write_bytes(b"not a safetensors file")
    save_file(load_file(str(probs)), str(tmp_path / "nolabels.safetensors"), {"labels": "pos,neg"})
    for bad, match in [(tmp_path / "bad.safetensors", "is not a teachers' probabilities file"),
                       (tmp_path / "missing.safetensors", "which is not a file"),
                       (tmp_path / "nolabels.safetensors", r"for the labels pos,neg, the data has \['neg', 'pos'\]")]:
        with pytest.raises(InputError, match=match):
            run("bad", crops=0.5, teachers=str(bad))


def test_a_run_told_not_to_test_holds_no_test_figure(reviews: Path, tmp_path: Path, one_thread: None) -> None:
    lines: list[str] = []
    final = train_classifier(reviews, tmp_path / "run", model=MODEL, config=ClassifyTrainConfig(**TRAIN),  # type: ignore[arg-type]
                             max_length=24, test=False, log=lines.append, progress=False)
    assert not [k for k in final if k.startswith("test")] and "valid_accuracy" in final
    assert json.loads((tmp_path / "run" / "final.json").read_text()) == final
    assert not any("test accuracy" in line for line in lines) and any("test not scored" in line for line in lines)
    saved = saved_run(tmp_path / "run")  # not a setting of the run: --resume needs no --no-test
    assert saved is not None and "test" not in saved and "test" not in saved["train"]
