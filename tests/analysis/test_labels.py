"""Each label from weights built to show it, and not from weights just under its threshold."""

from __future__ import annotations

import numpy as np

from attnlab.analysis import head_metrics, label_heads
from attnlab.analysis.labels import BAND, BROAD, MOSTLY

N = 13
TOKENS = ["[CLS]", *"abcdefghijk", "[SEP]"]


def rows(kind: str, share: float) -> np.ndarray:
    """(N, N) weights: ``share`` on the pattern ``kind``, the rest spread evenly over every key."""
    pattern = np.zeros((N, N))
    if kind == "next":
        pattern[np.arange(N - 1), np.arange(1, N)] = 1.0
        pattern[N - 1, N - 1] = 1.0
    elif kind == "cls":
        pattern[:, 0] = 1.0
    elif kind == "band":  # the five nearest keys, each a fifth (no single offset reaches one half)
        for i in range(N):
            near = [j for j in range(N) if abs(i - j) <= 2]
            pattern[i, near] = 1.0 / len(near)
    elif kind == "back4":  # four tokens back (the last key for the first four): no label's pattern
        pattern[np.arange(N), (np.arange(N) - 4) % N] = 1.0
    elif kind == "uniform":
        pattern[:] = 1.0 / N
    return share * pattern + (1 - share) / N


def grid(*heads: np.ndarray) -> np.ndarray:
    return np.stack(heads)[None]  # (1, H, N, N)


def test_each_label_and_its_threshold() -> None:
    w = grid(rows("next", 0.9), rows("cls", 0.9), rows("band", 0.95), rows("uniform", 1.0), rows("back4", 0.9))
    labels = label_heads(head_metrics(w, TOKENS))
    assert labels.primary[0] == ["next token", "[CLS] sink", "band ±2", "broad", "mixed"]
    ev = labels.evidence[0]
    assert ev[0][0]["share"] > MOSTLY and ev[2][0]["share"] >= BAND and ev[3][0]["entropy_ratio"] >= BROAD
    # just under each threshold: no label
    m = head_metrics(grid(rows("next", 0.45), rows("cls", 0.40)), TOKENS)
    assert m["next"][0, 0] < MOSTLY and m["cls"][0, 1] + m["sep"][0, 1] < MOSTLY
    under = label_heads(m)
    assert not any(e["kind"] in ("positional", "sink") for head in under.evidence[0] for e in head)

