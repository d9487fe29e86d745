"""A classifier as one safetensors file: the weights, and in its JSON header the config plus whatever the caller
adds (the tokenizer, the label names, the training metrics).  Written atomically; nothing is unpickled."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .._io import atomic_write_bytes, safetensors_bytes
from ..errors import ConfigError, ModelLoadError
from .classifier import AttentionClassifier, ClassifierConfig

__all__ = ["MODEL_FILE", "load_classifier", "read_model_meta", "save_classifier"]

MODEL_FILE = "model.safetensors"
FORMAT = "attnlab.classifier/1"


def save_classifier(path: str | os.PathLike[str], model: AttentionClassifier, meta: dict[str, str]) -> Path:
    """Write ``model``'s weights and config (plus ``meta``, string values) to ``path`` atomically; the same weights
    and header give the same bytes."""
    header = {**meta, "format": FORMAT, "config": json.dumps(model.config.to_dict())}
    tensors = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    return atomic_write_bytes(path, safetensors_bytes(tensors, header))


def read_model_meta(path: str | os.PathLike[str]) -> dict[str, str]:
    """The JSON header of a classifier file (cheap: the weights are not read)."""
    from safetensors import safe_open

    path = Path(path)
    if not path.is_file():
        raise ModelLoadError(f"no classifier file at {str(path)!r}; pass the folder `attnlab train` wrote "
                             f"(it holds {MODEL_FILE})")
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = dict(f.metadata() or {})
    except Exception as exc:  # safetensors raises its own error types for a truncated or foreign file
        raise ModelLoadError(f"{str(path)!r} is not a readable safetensors file ({type(exc).__name__}: {exc}); "
                             f"it is corrupt or truncated: train again, or use an earlier checkpoint") from None
    if meta.get("format") != FORMAT:
        raise ModelLoadError(f"{str(path)!r} is a safetensors file but not an attnlab classifier (format "
                             f"{meta.get('format')!r}, expected {FORMAT!r}); pass a folder `attnlab train` wrote")
    return meta


def load_classifier(path: str | os.PathLike[str]) -> tuple[AttentionClassifier, dict[str, str]]:
    """``(model in eval mode, header)`` from a file :func:`save_classifier` wrote."""
    from safetensors.torch import load_file

    meta = read_model_meta(path)
    try:
        config = ClassifierConfig(**json.loads(meta["config"]))
    except (KeyError, TypeError, ValueError, ConfigError) as exc:
        raise ModelLoadError(f"{str(path)!r} has an unusable model config ({exc}); train again") from None
    model = AttentionClassifier(config)
    try:
        state: dict[str, Any] = load_file(str(path))
        model.load_state_dict(state, strict=True)
    except Exception as exc:
        raise ModelLoadError(f"cannot read the weights of {str(path)!r} ({type(exc).__name__}: {exc}); the file "
                             f"is corrupt or from another model: train again, or use an earlier checkpoint") from None
    return model.eval(), meta


