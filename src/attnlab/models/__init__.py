"""Trainable models built from :mod:`attnlab.layers`: the tutorials' attention text classifier, and the
encoder-decoder translation models (recurrent with Bahdanau or Luong attention, and a transformer) with their
greedy and beam-search decoding."""

from ._decode import Generation, length_penalty
from ._file import MODEL_FILE, load_classifier, read_model_meta, save_classifier
from ._s2s_file import load_seq2seq, save_seq2seq
from .classifier import (
    POOLINGS,
    POSITIONALS,
    AttentionClassifier,
    ClassifierConfig,
    PositionalEncoding,
    count_bigrams,
    count_trigrams,
)
from .seq2seq import Seq2Seq, Seq2SeqConfig, TransformerSeq2Seq, TransformerSeq2SeqConfig

__all__ = [
    "MODEL_FILE",
    "POOLINGS",
    "POSITIONALS",
    "AttentionClassifier",
    "ClassifierConfig",
    "Generation",
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
