"""Parallel text for translation: source/target pairs, their splits and what each pair is an example of.

Every translation task (generated dates, the tutorials' toy grammar, a user's tab-separated file) returns
:class:`PairSplits`: train, valid and test drawn from one distribution, plus named extra test sets that probe
generalisation (``"unseen_years"`` for dates, ``"compositional"`` for the grammar).  Each pair carries a
``tag`` (the source locale for dates, the construction for the grammar, ``""`` for a file) so accuracy can be
broken down by it.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError
from ._corpus import decode_lines, hash_bucket

__all__ = ["PairSplits", "Pairs", "read_pairs", "split_pairs"]


@dataclass(frozen=True)
class Pairs:
    """Source texts, their translations and a tag per pair (all three the same length)."""

    source: tuple[str, ...]
    target: tuple[str, ...]
    tag: tuple[str, ...]

    def __post_init__(self) -> None:
        if not len(self.source) == len(self.target) == len(self.tag):
            raise InputError(f"pairs need one target and one tag per source, got {len(self.source)} sources, "
                             f"{len(self.target)} targets and {len(self.tag)} tags")

    @classmethod
    def of(cls, triples: Iterable[tuple[str, str, str]]) -> Pairs:
        """Pairs from ``(source, target, tag)`` triples."""
        rows = list(triples)
        return cls(tuple(r[0] for r in rows), tuple(r[1] for r in rows), tuple(r[2] for r in rows))

    def __len__(self) -> int:
        return len(self.source)

    def counts(self) -> dict[str, int]:
        """Pairs per tag, most frequent first."""
        return dict(Counter(self.tag).most_common())


@dataclass(frozen=True)
class PairSplits:
    """A translation task: its splits, its extra test sets, and what loading found (``stats``)."""

    train: Pairs
    valid: Pairs
    test: Pairs
    source: str  # "dates", "sentences" or the file's path
    extra: dict[str, Pairs] = field(default_factory=dict)  # named generalisation test sets
    stats: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        """One line per split, for the training log."""
        lines = [f"{name}: {len(p)} pairs" for name, p in (("train", self.train), ("valid", self.valid),
                                                          ("test", self.test))]
        lines += [f"{name} (extra test set): {len(p)} pairs" for name, p in self.extra.items()]
        lines += [f"{key}: {value}" for key, value in self.stats.items()]
        return "\n".join(lines)


# --- loading -------------------------------------------------------------------------------------

_ANKI_HEADER = re.compile(r"#[a-z ]+:")  # Anki's export starts with lines such as "#separator:tab"


def read_pairs(path: str | os.PathLike[str], *, source_column: int = 0, target_column: int = 1) -> Pairs:
    """The pairs of a tab-separated file, one ``source<TAB>target`` per line (the Tatoeba/Anki format).

    Columns are counted from 0; more columns (Tatoeba's attribution) are allowed and ignored, but every line
    must have as many as the first.  Blank lines and Anki's ``#key:value`` header lines are skipped, fields are
    stripped, there is no quoting.  A missing column, a line with another number of fields, an empty source or
    target, bytes that are not UTF-8 and a file without pairs are :class:`InputError` naming the line."""
    where = str(path)
    if source_column < 0 or target_column < 0 or source_column == target_column:
        raise InputError(f"source_column and target_column must be two different column numbers >= 0 (counting "
                         f"from 0), got {source_column} and {target_column}")
    if not Path(path).is_file():
        raise InputError(f"{where!r} is not a file; give a tab-separated file of 'source<TAB>target' lines")
    rows: list[tuple[str, str, str]] = []
    first: tuple[int, int] | None = None  # (line number, number of fields) of the first pair
    for i, line in enumerate(decode_lines(Path(path).read_bytes(), where), 1):
        if not line.strip() or (first is None and _ANKI_HEADER.match(line)):
            continue
        fields = line.split("\t")
        if first is None:
            first = (i, len(fields))
            need = max(source_column, target_column) + 1
            if len(fields) < need:
                raise InputError(f"{where!r}, line {i}: {len(fields)} tab-separated field(s) ({_preview(line)}), "
                                 f"but the source is column {source_column} and the target column "
                                 f"{target_column} (counting from 0); write 'source<TAB>target' lines")
        elif len(fields) != first[1]:
            raise InputError(f"{where!r}, line {i}: {len(fields)} tab-separated field(s) ({_preview(line)}), but "
                             f"line {first[0]} has {first[1]}; every line needs the same columns (a tab missing, "
                             f"or one inside a text?)")
        source, target = fields[source_column].strip(), fields[target_column].strip()
        for name, text, column in (("source", source, source_column), ("target", target, target_column)):
            if not text:
                raise InputError(f"{where!r}, line {i}: the {name} (column {column}) is empty; every line needs "
                                 f"a source and a target text")
        rows.append((source, target, ""))
    if not rows:
        raise InputError(f"{where!r} holds no pairs (it is empty or blank); write 'source<TAB>target' lines")
    return Pairs.of(rows)


def _preview(line: str) -> str:
    return repr(line if len(line) <= 50 else line[:47] + "...")


def split_pairs(pairs: Pairs, source: str, *, valid: float = 0.1, test: float = 0.1) -> PairSplits:
    """Distinct pairs split by a hash of the source text (as :func:`split_by_hash`: 0-9 test, 10-19 valid at
    10% each), so a source and all its translations are in one split; each split sorted, file order irrelevant.
    ``stats``: pairs read, duplicates dropped, distinct sources."""
    distinct = sorted(dict.fromkeys(zip(pairs.source, pairs.target, pairs.tag, strict=True)))
    n_test, n_valid = round(test * 100), round(valid * 100)
    parts: dict[str, list[tuple[str, str, str]]] = {"train": [], "valid": [], "test": []}
    for row in distinct:
        b = hash_bucket(row[0])
        parts["test" if b < n_test else "valid" if b < n_test + n_valid else "train"].append(row)
    if not parts["train"]:
        raise InputError(f"{source}: all {len(distinct)} distinct pair(s) fell in the valid/test splits, none is "
                         f"left to train on; give more pairs")
    stats = {"pairs read": len(pairs), "duplicates dropped": len(pairs) - len(distinct),
             "distinct sources": len({row[0] for row in distinct})}
    return PairSplits(Pairs.of(parts["train"]), Pairs.of(parts["valid"]), Pairs.of(parts["test"]), source, {}, stats)
