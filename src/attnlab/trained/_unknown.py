"""The one rule for text a model cannot read, for every model kind (encoder, classifier, translator, language
model) and every surface (the Python API, the CLI, the lab).

A text is read as units (a character of a character tokenizer, a token of a sub-word one; whitespace is no unit).
When **any** unit is unknown to the model's vocabulary (read as ``[UNK]``), the surface warns in one line naming
the unknown characters and their share: the model's output says nothing about what it did not see, and a share
threshold would hide one unknown word in a sentence (the translators' ``R`` in ``2021R5月``).  When **every** unit
is unknown there is nothing left to run the model on: :func:`unknown_warning` raises :class:`InputError` (the CLI
says it in one line and exits 2; the lab answers 422).  Each surface keeps its own warning category
(``UnknownTokensWarning`` for an encoder's ``trace_text``, ``UserWarning`` elsewhere).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InputError

__all__ = ["SHOWN_UNKNOWN", "unknown_warning"]

SHOWN_UNKNOWN = 20  # distinct unknown pieces named in a warning; more are counted, not shown


def unknown_warning(pieces: Sequence[str], unknown: Sequence[bool], *, text: str, model: str,
                    unit: str = "character") -> str | None:
    """The warning a text gets for what its model does not know, or None when it knows every unit.

    ``pieces``: what each unit of ``text`` read (``text[start:end]``); ``unknown``: whether each was read as
    ``[UNK]`` (the same length); a unit that read only whitespace is not counted, unless the text is nothing
    else.  ``unit``: ``"character"`` or ``"token"``, as the message names them.  Raises :class:`InputError` when
    every unit is unknown, or when ``text`` has no unit at all: nothing to run the model on."""
    if len(pieces) != len(unknown):
        raise InputError(f"unknown_warning takes one flag per piece, got {len(pieces)} pieces and {len(unknown)} "
                         f"flags; pass the tokenizer's pieces and their [UNK] flags together")
    quoted = text if len(text) <= 30 else text[:30] + "…"
    units = f"{unit}s"
    if not pieces:
        raise InputError(f"the text {quoted!r} gives {model!r} no {unit} to read; give some text")
    counted = [(p, u) for p, u in zip(pieces, unknown, strict=True) if p.strip()]
    if not counted:  # only whitespace: a language model reads it (a line break), the others drop it
        counted = list(zip(pieces, unknown, strict=True))
    bad = [p for p, u in counted if u]
    if not bad:
        return None
    distinct = list(dict.fromkeys(bad))
    joiner = "" if all(len(p) <= 1 for p in distinct) else " "
    shown = joiner.join(distinct[:SHOWN_UNKNOWN]) + ("…" if len(distinct) > SHOWN_UNKNOWN else "")
    if len(bad) == len(counted):
        raise InputError(f"every {unit} of {quoted!r} is unknown to the model {model!r} ({shown!r}, all "
                         f"{len(counted)} read as [UNK]), so it has nothing to read; give a text in the language "
                         f"and script it was trained on")
    return (f"{len(bad)} of the {len(counted)} {units} of {quoted!r} ({len(bad) / len(counted):.0%}) are unknown to "
            f"the model {model!r} ({shown!r}, read as [UNK]): it cannot tell what they are, so its output may be wrong")
