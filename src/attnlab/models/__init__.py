"""Trainable models built from :mod:`attnlab.layers`: the tutorials' attention text classifier."""

from ._file import MODEL_FILE, load_classifier, read_model_meta, save_classifier
from .classifier import (
    POOLINGS,
    POSITIONALS,
    AttentionClassifier,
    ClassifierConfig,
    PositionalEncoding,
    count_bigrams,
)

__all__ = [
    "MODEL_FILE",
    "POOLINGS",
    "POSITIONALS",
    "AttentionClassifier",
    "ClassifierConfig",
    "PositionalEncoding",
    "count_bigrams",
    "load_classifier",
    "read_model_meta",
    "save_classifier",
]
