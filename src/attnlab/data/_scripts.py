"""Which writing system a text is in, for the warning that a model is being asked about text unlike its training
text (``hello`` to a Chinese classifier).

A text's *units* are its CJK characters, one each, and its runs of letters in any other script, one per run (a
Chinese character is about a word; ``iPhone`` is one word, not six units). Digits, punctuation, symbols and spaces
are no units. A letter's script is the first word of its Unicode name after NFKC (full-width Ａ is LATIN).
A model's main script is the script most of its vocabulary's entries begin with."""

from __future__ import annotations

import itertools
import unicodedata
from collections import Counter
from collections.abc import Iterable

__all__ = ["main_script", "script_share", "script_units"]


def letter_script(ch: str) -> str | None:
    """``"CJK"``, ``"LATIN"``, ``"HANGUL"``, ... for a letter; None for anything else (digits, punctuation, ...)."""
    c = unicodedata.normalize("NFKC", ch)[:1]
    if not c or not unicodedata.category(c).startswith("L"):
        return None
    return unicodedata.name(c, "UNKNOWN").split()[0]


def script_units(text: str) -> list[str]:
    """The script of each unit of ``text``: one per CJK character, one per run of other letters."""
    out: list[str] = []
    for script, run in itertools.groupby(map(letter_script, text)):
        if script is not None:
            out += [script] * len(list(run)) if script == "CJK" else [script]
    return out


def script_share(text: str, script: str) -> tuple[int, int]:
    """``(k, n)``: ``k`` of the ``n`` units of ``text`` are in ``script``."""
    units = script_units(text)
    return sum(u == script for u in units), len(units)


def main_script(vocabulary: Iterable[str]) -> str | None:
    """The script most entries of ``vocabulary`` begin with (their first letter); None when none has a letter.
    Special tokens (``[PAD]``, ``<s>``) are no entries: a small vocabulary would be theirs."""
    entries = (e for e in vocabulary if (e[:1], e[-1:]) not in (("[", "]"), ("<", ">")))
    counts = Counter(s for s in (next(filter(None, map(letter_script, e)), None) for e in entries) if s)
    return counts.most_common(1)[0][0] if counts else None
