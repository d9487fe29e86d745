"""Tiny labelled review files for the classifier tests (importable: pytest puts tests/ on the path)."""

from __future__ import annotations

import csv
import random
from pathlib import Path


def write_reviews(path: Path, n: int, seed: int = 0, longest: int = 14) -> Path:
    """``n`` texts of 3 to ``longest`` random letters with one sentiment character (好 positive, 差 negative)
    inside, as a CSV file with ``text`` and ``label`` columns."""
    r = random.Random(seed)
    with open(path, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["text", "label"])
        for _ in range(n):
            positive = r.random() < 0.5
            chars = [r.choice("abcdefghijk") for _ in range(r.randint(3, longest))]
            chars.insert(r.randint(0, len(chars)), "好" if positive else "差")
            out.writerow(["".join(chars), "pos" if positive else "neg"])
    return path
