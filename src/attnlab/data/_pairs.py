"""Parallel text for translation: source/target pairs, their splits and what each pair is an example of.

Every translation task (generated dates, the tutorials' toy grammar, a user's tab-separated file) returns
:class:`PairSplits`: train, valid and test drawn from one distribution, plus named extra test sets that probe
generalisation (``"unseen_years"`` for dates, ``"compositional"`` for the grammar).  Each pair carries a
``tag`` (the source locale for dates, the construction for the grammar, ``""`` for a file) so accuracy can be
broken down by it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..errors import InputError

__all__ = ["PairSplits", "Pairs"]


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
