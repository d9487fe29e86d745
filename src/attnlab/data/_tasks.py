"""Translation tasks by name: :func:`load_pairs` reads a generated task (the dates, the tutorials' sentences) or a
file of pairs.  Apart from :mod:`._pairs` so that the tasks, which build pairs, and the pairs do not import each
other."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import ConfigError, InputError
from ._pairs import PairSplits, read_pairs, split_pairs

__all__ = ["TASKS", "load_pairs"]

TASKS = ("dates", "sentences")  # the generated translation tasks (make_dates, make_sentences), by name


def _task(name: str) -> Callable[..., PairSplits]:
    """The maker of the generated task ``name`` (imported when asked for: the dates need Babel's data)."""
    if name == "dates":
        from ._dates import make_dates

        return make_dates
    from ._grammar import make_sentences

    return make_sentences


def load_pairs(spec: str, *, seed: int = 0, **options: Any) -> PairSplits:
    """A translation task: ``"dates"`` (:func:`make_dates`), ``"sentences"`` (the tutorials' toy grammar,
    :func:`make_sentences`), with ``options`` their keyword arguments (e.g. ``n_train``), or the path of a
    tab-separated file (:func:`read_pairs`, split by :func:`split_pairs`; the seed changes nothing for a file, and
    it takes no options)."""
    if spec in TASKS:
        maker = _task(spec)
        try:
            return maker(**{"seed": seed, **options})
        except TypeError as exc:
            raise ConfigError(f"data_options {sorted(options)} do not fit {spec!r} ({exc}); see "
                              f"attnlab.data.make_{spec}") from None
    if options:
        raise ConfigError(f"data_options {sorted(options)} apply to {' and '.join(map(repr, TASKS))}, not to a "
                          f"pairs file ({spec!r}); leave them out")
    if not Path(spec).is_file():
        raise InputError(f"{spec!r} is neither 'dates', 'sentences' nor a file; give one of the two tasks or a "
                         f"tab-separated file of 'source<TAB>target' lines")
    return split_pairs(read_pairs(spec), spec)
