"""Using a trained classifier: load it from a run folder, predict, evaluate on held-out data."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .._bundled import locate
from ..data import encode, load_data, tokenizer_from_json
from ..errors import InputError, ModelLoadError
from ..models import AttentionClassifier, load_classifier
from ._classify_run import evaluate_ids
from ._distributed import World
from ._runtime import accuracy_stderr, collate

__all__ = ["Classifier", "evaluate_model", "load_trained", "model_file"]


@dataclass
class Classifier:
    """A trained model with its tokenizer and label names."""

    model: AttentionClassifier
    tokenizer: Any
    labels: tuple[str, ...]
    meta: dict[str, str]

    def encode(self, texts: Sequence[str]) -> tuple[list[list[int]], int]:
        enc = encode(self.tokenizer, texts, self.model.config.max_length)
        return enc.ids, enc.truncated

    @torch.no_grad()
    def predict(self, texts: Sequence[str]) -> list[tuple[str, float]]:
        """``(label, probability)`` per text."""
        for t in texts:
            if not isinstance(t, str) or not t.strip():
                raise InputError(f"the text to classify is empty (got {t!r}); give some text")
        ids, _ = self.encode(texts)
        probs = torch.softmax(self.model(collate(ids, torch.device("cpu"))).float(), dim=-1)  # (B, C)
        p, k = probs.max(-1)
        return [(self.labels[int(i)], float(q)) for i, q in zip(k, p, strict=True)]


def model_file(path: str | os.PathLike[str]) -> Path:
    """The model file of a classifier: a bundled name's (``"zh-sentiment"``), a run folder's best model (else its
    latest checkpoint's), a checkpoint folder's, or a model file itself; :func:`attnlab.locate` decides, and refuses
    anything that is not a classifier."""
    return locate(path, "classifier").path


def load_trained(path: str | os.PathLike[str]) -> Classifier:
    """A :class:`Classifier` from a run folder, checkpoint folder or model file (CPU, eval mode)."""
    model, meta = load_classifier(model_file(path))
    try:
        labels = tuple(json.loads(meta["labels"]))
        tokenizer = tokenizer_from_json(meta["tokenizer"])
    except (KeyError, ValueError) as exc:
        raise ModelLoadError(f"the model at {str(path)!r} lacks its tokenizer or labels ({exc}); train again") from None
    return Classifier(model, tokenizer, labels, meta)


def evaluate_model(path: str | os.PathLike[str], data: str | os.PathLike[str] | None = None, *,
                   split: str = "test", batch_size: int = 64) -> dict[str, Any]:
    """Accuracy (with its standard error) and mean loss of a trained model on a held-out split.

    ``data`` defaults to the data the model was trained on (its test split is held out by the hash split)."""
    clf = load_trained(path)
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
    ids, cut = clf.encode(chosen.texts)
    loss, acc, n = evaluate_ids(clf.model, ids, chosen.labels, batch_size, World(0, 1, torch.device("cpu")))
    return {"data": str(source), "split": split, "n": n, "accuracy": acc, "stderr": accuracy_stderr(acc, n),
            "loss": loss, "truncated": cut}
