"""A translation model on disk: a folder with ``model.safetensors`` (the weights) and ``config.json``.

``config.json`` is ``{"format": "attnlab.seq2seq/1", "architecture": "seq2seq" | "transformer_seq2seq",
"config": {...the config's fields...}, "meta": {...strings the caller keeps with the model...}}``.  Nothing is
unpickled: the weights are safetensors, the rest JSON.  Both files are written atomically, the weights first,
so a folder with a ``config.json`` holds a complete model.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .. import _validate as check
from .._io import atomic_write, atomic_write_text
from ..errors import ConfigError, ModelLoadError
from .seq2seq import Seq2Seq, Seq2SeqConfig, TransformerSeq2Seq, TransformerSeq2SeqConfig

__all__ = ["S2S_CONFIG_FILE", "S2S_WEIGHTS_FILE", "load_seq2seq", "save_seq2seq"]

S2S_CONFIG_FILE = "config.json"
S2S_WEIGHTS_FILE = "model.safetensors"
FORMAT = "attnlab.seq2seq/1"
ARCHITECTURES: dict[str, tuple[type[Seq2Seq] | type[TransformerSeq2Seq], type[Any]]] = {
    "seq2seq": (Seq2Seq, Seq2SeqConfig),
    "transformer_seq2seq": (TransformerSeq2Seq, TransformerSeq2SeqConfig),
}


def _architecture(model: object) -> str:
    for name, (kind, _) in ARCHITECTURES.items():
        if type(model) is kind:
            return name
    raise ConfigError(f"model must be a Seq2Seq or a TransformerSeq2Seq, got {type(model).__name__}; "
                      f"save a classifier with save_classifier")


def save_seq2seq(folder: str | os.PathLike[str], model: Seq2Seq | TransformerSeq2Seq, meta: dict[str, str]) -> Path:
    """Write ``model`` and ``meta`` (string keys and values, e.g. the tokenizer's JSON) to ``folder`` (created if
    needed); return the folder."""
    from safetensors.torch import save_file

    architecture = _architecture(model)
    if not isinstance(meta, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
        raise ConfigError(f"meta must be a dict of strings to strings, got {check.got(meta)}; "
                          f"store other values as JSON text")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    atomic_write(folder / S2S_WEIGHTS_FILE, lambda tmp: save_file(tensors, str(tmp), metadata={"format": FORMAT}))
    header = {"format": FORMAT, "architecture": architecture, "config": model.config.to_dict(), "meta": meta}
    atomic_write_text(folder / S2S_CONFIG_FILE, json.dumps(header, indent=2, ensure_ascii=False) + "\n")
    return folder


def _read_header(folder: Path) -> dict[str, Any]:
    path = folder / S2S_CONFIG_FILE
    if not path.is_file():
        raise ModelLoadError(f"no translation model at {str(folder)!r}: {S2S_CONFIG_FILE} is missing; pass the folder "
                             f"save_seq2seq (or `attnlab train translate`) wrote")
    try:
        header = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelLoadError(f"{str(path)!r} is not readable JSON ({exc}); the file is corrupt: save the model "
                             f"again") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        found = header.get("format") if isinstance(header, dict) else type(header).__name__
        raise ModelLoadError(f"{str(path)!r} is not an attnlab translation model (format {found!r}, expected "
                             f"{FORMAT!r}); pass a folder save_seq2seq wrote")
    return header


def load_seq2seq(folder: str | os.PathLike[str]) -> tuple[Seq2Seq | TransformerSeq2Seq, dict[str, str]]:
    """``(model in eval mode, meta)`` from a folder :func:`save_seq2seq` wrote; a missing, corrupt or
    mismatching file is a :class:`attnlab.errors.ModelLoadError` naming the problem."""
    from safetensors.torch import load_file

    folder = Path(folder)
    header = _read_header(folder)
    architecture = header.get("architecture")
    if architecture not in ARCHITECTURES:
        raise ModelLoadError(f"{str(folder)!r} holds an unknown architecture {architecture!r}; expected one of "
                             f"{', '.join(ARCHITECTURES)}")
    model_type, config_type = ARCHITECTURES[architecture]
    meta = header.get("meta", {})
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise ModelLoadError(f"{str(folder)!r}: the meta of {S2S_CONFIG_FILE} must map strings to strings; "
                             f"save the model again")
    try:
        config = config_type(**header["config"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelLoadError(f"{str(folder)!r} has an unusable {architecture} config ({exc}); save the model "
                             f"again") from None
    model = model_type(config)
    weights = folder / S2S_WEIGHTS_FILE
    if not weights.is_file():
        raise ModelLoadError(f"{str(folder)!r} has a config but no weights ({S2S_WEIGHTS_FILE} is missing); "
                             f"save the model again")
    try:
        state = load_file(str(weights))
    except Exception as exc:  # safetensors raises its own error types for a truncated or foreign file
        raise ModelLoadError(f"{str(weights)!r} is not a readable safetensors file ({type(exc).__name__}: {exc}); "
                             f"it is corrupt or truncated: save the model again") from None
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        first = str(exc).strip().splitlines()
        raise ModelLoadError(f"the weights in {str(weights)!r} do not fit the {architecture} its config describes "
                             f"({' '.join(line.strip() for line in first[:3])}); the files come from different "
                             f"models: save the model again") from None
    return model.eval(), meta
