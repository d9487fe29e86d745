"""Pretrained models by name or folder, loaded offline: ``load_model`` gives a Hugging Face model with its tokenizer
(the bundled all-MiniLM-L6-v2 as ``"minilm"``, or any local folder), ``load_encoder`` the same computation through
attnlab's own :class:`~attnlab.models.bert.BertEncoder` when the folder is a plain BERT (MiniLM is: no transformers
import, about 4 s less of a cold ``attnlab show``), and ``model_config`` reads what a model's ``config.json`` says
without loading it.  Which model a name or folder is, :func:`attnlab.locate` decides; nothing
is ever downloaded (``local_files_only=True``) and nothing unpickled (safetensors only).
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

from .._bundled import MINILM, MINILM_NAME, Located, locate
from ..errors import ModelLoadError

__all__ = ["BUNDLED", "BUNDLED_NAME", "config_counts", "load_encoder", "load_model", "model_config"]

BUNDLED = MINILM  # the default model's name
BUNDLED_NAME = MINILM_NAME  # and how a trace names it


def display_name(found: Located) -> str:
    """How a trace and its warnings name the model: all-MiniLM-L6-v2 for the bundled encoder, else as given."""
    return BUNDLED_NAME if found.bundled == MINILM else found.given


def model_config(model: str | os.PathLike[str] | Located) -> dict[str, Any]:
    """The parsed ``config.json`` of a Hugging Face model or classifier (``"minilm"`` for the bundled encoder, or what
    :func:`attnlab.locate` found of one), read without transformers: cheap enough to check arguments (a layer index,
    say) before the model loads."""
    found = model if isinstance(model, Located) else locate(model, "huggingface", "classifier")
    if found.path.is_file():  # a classifier's model file: its header describes it
        from ._classifier import classifier_config  # (it imports attnlab.data: not needed for other models)

        return classifier_config(found.path)
    return _hf_config(found.path)


# config.json keys that give the number of layers and heads of each kind of attention, by model family
_LAYER_KEYS = {
    "self": ("encoder_layers", "num_hidden_layers", "num_layers", "n_layer"),
    "decoder": ("decoder_layers", "num_decoder_layers", "n_layer", "num_layers", "num_hidden_layers"),
}
_HEAD_KEYS = {
    "self": ("encoder_attention_heads", "num_attention_heads", "num_heads", "n_head"),
    "decoder": ("decoder_attention_heads", "num_attention_heads", "num_heads", "n_head"),
}


def config_counts(config: dict[str, Any], side: str) -> tuple[int | None, int | None]:
    """``(layers, heads)`` of the ``"self"`` (encoder, or a decoder-only model's) or ``"decoder"`` attention that a
    parsed ``config.json`` names, by the keys each model family uses (None where it names none)."""
    return (next((config[k] for k in _LAYER_KEYS[side] if isinstance(config.get(k), int)), None),
            next((config[k] for k in _HEAD_KEYS[side] if isinstance(config.get(k), int)), None))


def _hf_config(folder: Path) -> dict[str, Any]:
    path = folder / "config.json"
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        reason = "is empty" if path.is_file() and path.stat().st_size == 0 else f"is not valid JSON ({exc})"
        raise ModelLoadError(f"{str(path)!r} {reason}; a Hugging Face model folder needs its config.json") from None
    if not isinstance(config, dict) or "model_type" not in config:
        raise ModelLoadError(
            f"{str(path)!r} names no model_type, so it is not a Hugging Face model config; pass a folder saved with "
            f"model.save_pretrained() (its config.json has model_type, e.g. \"bert\")"
        )
    return config


# the files a Hugging Face tokenizer is saved as (tokenizer.save_pretrained writes one of these at least)
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "tokenizer.model", "spiece.model",
                   "sentencepiece.bpe.model")


def _check_tokenizer(folder: Path, given: str) -> None:
    """A folder without any tokenizer file is refused: its texts could only be read as unknown tokens."""
    if not any((folder / name).is_file() for name in TOKENIZER_FILES):
        raise ModelLoadError(f"{given!r} holds a model but no tokenizer (none of {', '.join(TOKENIZER_FILES)}); "
                             f"save the model's tokenizer beside it (tokenizer.save_pretrained(folder)), since attnlab "
                             f"reads texts with the model's own tokenizer and downloads nothing")


def load_model(model: str | os.PathLike[str] | Located = BUNDLED, *, cached: bool = True) -> tuple[Any, Any, str]:
    """``(hf_model, tokenizer, name)`` for ``"minilm"`` or a local Hugging Face folder, in eval mode, cached per
    process (``cached=False``: loaded anew and kept by nobody here, for a caller with a cache of its own);
    ``name`` is how a trace names it."""
    found = model if isinstance(model, Located) else locate(model, "huggingface")
    folder = found.path
    if not any(folder.glob("*.safetensors")) and any(folder.glob("*.bin")):
        raise ModelLoadError(
            f"{str(folder)!r} holds its weights only as .bin files, which are pickles, and attnlab never unpickles "
            f"a file; convert them once to model.safetensors (e.g. model.save_pretrained(folder) in transformers)"
        )
    _hf_config(folder)  # a readable config.json naming its model_type, checked before the slow load
    _check_tokenizer(folder, found.given)
    hf_model, tokenizer = (_load if cached else _load.__wrapped__)(str(folder.resolve()))
    return hf_model, tokenizer, display_name(found)


def load_encoder(model: str | os.PathLike[str] | Located = BUNDLED, *, cached: bool = True) -> tuple[Any, Any, str]:
    """``(encoder, tokenizer, name)`` as :func:`load_model` gives them, for running and capturing: a plain BERT
    folder (:func:`attnlab.models.bert.unsupported` says which are) is read into attnlab's own
    :class:`~attnlab.models.bert.BertEncoder` with its ``tokenizer.json`` (the same weights and tokens; the hidden
    states agree with transformers' within float32 rounding, see tests/models/test_bert.py), any other folder is
    loaded by transformers.  Cached per process, unless ``cached=False``."""
    found = model if isinstance(model, Located) else locate(model, "huggingface")  # (a Located: found already)
    bert = (_load_bert if cached else _load_bert.__wrapped__)(str(found.path.resolve()))
    if bert is None:
        return load_model(found, cached=cached)
    return *bert, display_name(found)


@functools.lru_cache(maxsize=4)
def _load_bert(folder: str) -> tuple[Any, Any] | None:
    """The folder's ``(BertEncoder, BertTokenizer)``, or None when the encoder cannot read it (decided once per
    folder, like the load itself: a ``trace_text`` loop reads no config or safetensors header again)."""
    from ..models.bert import BertEncoder, BertTokenizer, unsupported

    if unsupported(Path(folder)) is not None:
        return None
    return BertEncoder.from_folder(folder), BertTokenizer(folder)


@functools.lru_cache(maxsize=4)
def _load(folder: str) -> tuple[Any, Any]:
    try:
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        verbosity, bar = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
        hf_logging.set_verbosity_error()  # unused pooler weights and the like are not the user's concern
        hf_logging.disable_progress_bar()
        try:
            tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
            # safetensors only: a pytorch_model.bin is a pickle, which attnlab never loads
            hf_model = AutoModel.from_pretrained(folder, local_files_only=True, use_safetensors=True)
        finally:
            hf_logging.set_verbosity(verbosity)
            if bar:
                hf_logging.enable_progress_bar()
    except Exception as exc:  # transformers raises OSError, ValueError, KeyError... for a folder it cannot use
        raise ModelLoadError(
            f"cannot load a model and tokenizer from {folder!r} offline: {type(exc).__name__}: {exc}"
        ) from None
    return hf_model.eval(), tokenizer
