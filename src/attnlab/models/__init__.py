"""Trainable models built from :mod:`attnlab.layers`: the tutorials' attention text classifier, and the
encoder-decoder translation models (recurrent with Bahdanau or Luong attention, and a transformer) with their
greedy and beam-search decoding.

Each name loads its module on first use: the configs (``ClassifierConfig``, ``LMConfig``, ``Seq2SeqConfig``,
``TransformerSeq2SeqConfig``) import no torch, so ``attnlab train ... --help`` shows their defaults at once."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._configs import (
        POOLINGS,
        POSITIONALS,
        ClassifierConfig,
        LMConfig,
        Seq2SeqConfig,
        TransformerSeq2SeqConfig,
    )
    from ._decode import Generation, length_penalty
    from ._file import MODEL_FILE, load_classifier, read_model_meta, save_classifier
    from ._s2s_file import load_seq2seq, save_seq2seq
    from .classifier import AttentionClassifier, PositionalEncoding, count_bigrams, count_trigrams
    from .seq2seq import Seq2Seq, TransformerSeq2Seq

_MODULES = {  # public name -> the module that defines it
    **dict.fromkeys(("POOLINGS", "POSITIONALS", "ClassifierConfig", "LMConfig", "Seq2SeqConfig",
                     "TransformerSeq2SeqConfig"), "._configs"),
    **dict.fromkeys(("Generation", "length_penalty"), "._decode"),
    **dict.fromkeys(("MODEL_FILE", "load_classifier", "read_model_meta", "save_classifier"), "._file"),
    **dict.fromkeys(("load_seq2seq", "save_seq2seq"), "._s2s_file"),
    **dict.fromkeys(("AttentionClassifier", "PositionalEncoding", "count_bigrams", "count_trigrams"), ".classifier"),
    **dict.fromkeys(("Seq2Seq", "TransformerSeq2Seq"), ".seq2seq"),
}


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        value = getattr(importlib.import_module(_MODULES[name], __name__), name)
        globals()[name] = value  # later lookups skip this function
        return value
    raise AttributeError(f"module 'attnlab.models' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "MODEL_FILE",
    "POOLINGS",
    "POSITIONALS",
    "AttentionClassifier",
    "ClassifierConfig",
    "Generation",
    "LMConfig",
    "PositionalEncoding",
    "Seq2Seq",
    "Seq2SeqConfig",
    "TransformerSeq2Seq",
    "TransformerSeq2SeqConfig",
    "count_bigrams",
    "count_trigrams",
    "length_penalty",
    "load_classifier",
    "load_seq2seq",
    "read_model_meta",
    "save_classifier",
    "save_seq2seq",
]
