"""Held-out figures of a trained classifier: accuracy on a split (:func:`evaluate_model`) and the calibration
temperature fit on valid (:func:`calibrate`, which writes ``calibration.json`` and ``reliability.png`` beside the
model; ``attnlab.trained`` reads it back); and :func:`make_portable`, which a bundle's folder goes through first.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from .._bundled import locate
from .._io import atomic_write_bytes, atomic_write_text, safetensors_bytes
from ..data import load_data
from ..errors import InputError
from ..trained import (
    CALIBRATION_FILE,
    ECE_BINS,
    RELIABILITY_FILE,
    Classifier,
    confidence_of,
    expected_calibration_error,
    fit_temperature,
    load_trained,
    reliability_bins,
    sha256,
)
from ._curves import plot_reliability
from ._runtime import accuracy_stderr

__all__ = ["calibrate", "evaluate_model", "make_portable"]


def _held_out(clf: Classifier, data: str | os.PathLike[str] | None, split: str) -> tuple[str, Any]:
    """``(source, split)``: the ``split`` of ``data`` (default: the data the model was trained on)."""
    run = json.loads(clf.meta.get("run", "{}"))
    source = data if data is not None else run.get("data")
    if source is None:
        raise InputError("the model does not record its training data; pass --data")
    splits = load_data(source, text_column=run.get("text_column", "text"),
                       label_column=run.get("label_column", "label"))
    chosen = getattr(splits, split)
    if tuple(chosen.label_names) != clf.labels:
        raise InputError(f"the data's labels {list(chosen.label_names)} are not the model's {list(clf.labels)}; "
                         f"evaluate on data with the labels the model was trained on")
    if len(chosen) == 0:
        raise InputError(f"the {split} split of {source} is empty; give more labelled texts")
    return str(source), chosen


def evaluate_model(path: str | os.PathLike[str], data: str | os.PathLike[str] | None = None, *,
                   split: str = "test", batch_size: int = 64) -> dict[str, Any]:
    """Accuracy (with its standard error) and mean loss of a trained model on a held-out split.

    ``data`` defaults to the data the model was trained on (its test split is held out by the hash split).  Every
    text is read whole, as every use of the model reads it (``Classifier.read``: a text longer than the model's
    window in overlapping windows); ``windowed`` counts those texts."""
    clf = load_trained(path)
    source, chosen = _held_out(clf, data, split)
    ids, windowed = clf.encode(chosen.texts)
    logits = clf.logits_of_ids(ids, batch_size)  # (N, C)
    y = torch.tensor(list(chosen.labels))  # (N,)
    n = len(y)
    acc = float((logits.argmax(-1) == y).double().mean())
    return {"data": source, "split": split, "n": n, "accuracy": acc, "stderr": accuracy_stderr(acc, n),
            "loss": float(F.cross_entropy(logits.double(), y)), "windowed": windowed}


def calibrate(path: str | os.PathLike[str], *, bins: int = ECE_BINS) -> dict[str, Any]:
    """Fit the temperature of the classifier at ``path`` (a finished run or model folder, or a bundled name) on the
    valid split of its training data, and write ``calibration.json`` (the temperature, the model file's sha256, the
    valid NLL and the test split's ECE, mean confidence and accuracy, before and after) and ``reliability.png``
    beside its model file; returns what ``calibration.json`` holds.  The Makefile's train-zh runs it on the bundle."""
    found = locate(path, "classifier")
    if found.in_progress:
        raise InputError(f"{found.given!r} has no final model yet (its training was stopped or is still running); "
                         f"calibrate the final model once the run has finished")
    clf = load_trained(found.path, calibrated=False)  # a calibration.json there is what this call replaces
    _, valid = _held_out(clf, None, "valid")
    _, test = _held_out(clf, None, "test")
    z_valid, y_valid = clf.logits(valid.texts), torch.tensor(list(valid.labels))  # (N, C), (N,)
    t = fit_temperature(z_valid, y_valid)
    z_test, y_test = clf.logits(test.texts), torch.tensor(list(test.labels))
    figures: dict[str, dict[str, float]] = {}
    panels = {}
    for when, temp in (("before", 1.0), ("after", t)):
        conf, hit = confidence_of(z_test, y_test, temp)
        ece = expected_calibration_error(conf, hit, bins)
        figures[when] = {"ece": ece, "mean_confidence": float(conf.mean()),
                         "valid_nll": float(F.cross_entropy(z_valid.double() / temp, y_valid))}
        panels[f"{when}: T = {temp:.3f}, test ECE {ece:.4f}"] = reliability_bins(conf, hit, bins)
    record = {"temperature": t, "model_sha256": sha256(found.path), "fit_on": f"valid ({len(valid)} texts)",
              "bins": bins, "test_n": len(test), "test_accuracy": float(hit.double().mean()),
              **{f"{k}_{when}": v for when, f in figures.items() for k, v in f.items()}}
    folder = found.path.parent
    plot_reliability(panels, folder / RELIABILITY_FILE,
                     f"reliability on test ({len(test)} texts, {bins} bins); temperature fit on valid")
    atomic_write_text(folder / CALIBRATION_FILE, json.dumps(record, indent=2) + "\n")
    return record


def make_portable(folder: str | os.PathLike[str], root: str | os.PathLike[str]) -> list[str]:
    """Write the absolute paths under ``root`` that a classifier's run folder records (in ``config.json``, in the run
    record of the model file's header, in ``train.log``) relative to ``root``, so that a bundle's bytes do not depend
    on the folder it was trained in: ``make train-zh`` names the composed phrases' file inside the clone, and a run
    records every file it read by its whole path (so that ``--resume`` works from another folder).  The weights are
    not touched.  Returns the paths rewritten (none, and no file written, when there is nothing to rewrite)."""
    from safetensors.torch import load_file

    from ..models import MODEL_FILE, read_model_meta

    folder, base = Path(folder), Path(root).resolve()
    found: dict[str, str] = {}

    def relative(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: relative(v) for k, v in value.items()}
        if isinstance(value, list):
            return [relative(v) for v in value]
        if isinstance(value, str) and value and all(os.path.isabs(p) for p in value.split(",")):  # teachers: a,b
            parts = [Path(p) for p in value.split(",")]
            if all(p.is_relative_to(base) for p in parts):
                found[value] = ",".join(p.relative_to(base).as_posix() for p in parts)
                return found[value]
        return value

    config = folder / "config.json"
    if config.is_file():
        data = json.loads(config.read_text(encoding="utf-8"))
        if (moved := relative(data)) != data:
            atomic_write_text(config, json.dumps(moved, indent=2) + "\n")  # as the run wrote it
    model = folder / MODEL_FILE
    meta = read_model_meta(model)
    run = json.loads(meta.get("run", "{}"))
    if (moved := relative(run)) != run:
        tensors = load_file(str(model))
        atomic_write_bytes(model, safetensors_bytes(tensors, {**meta, "run": json.dumps(moved)}))
    log = folder / "train.log"
    if found and log.is_file():
        text = log.read_text(encoding="utf-8")
        for whole, short in found.items():
            text = text.replace(whole, short)
        atomic_write_text(log, text)
    return list(found)
