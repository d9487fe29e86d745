"""``trace_translation``: translate a text with a trained translator and capture its attention while it does."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Protocol

import torch
from torch import nn

from ..data import collate
from ..trace import AttentionTrace
from ._core import capture

__all__ = ["Translating", "trace_translation"]


class Translating(Protocol):
    """What :func:`trace_translation` reads of a translator (``attnlab.training.Translator`` is one): its model (with
    a ``config`` holding ``bos_id``, ``pad_id`` and ``max_length``), its source encoding, and its translation, whose
    result has ``ids``, ``source_tokens`` and ``target_tokens``."""

    @property
    def model(self) -> nn.Module: ...

    def encode(self, texts: Sequence[str]) -> list[list[int]]: ...

    def translate(self, texts: Sequence[str], *, beam: int = 1, warn: bool = True) -> Sequence[Any]: ...


def trace_translation(translator: Translating, text: str, beam: int = 1) -> tuple[Any, AttentionTrace]:
    """``(translation, trace)``: the translation of ``text`` and the attention captured while it was made.

    Greedy decoding (``beam=1``) is captured as it runs (one record per layer and decoding step, assembled by the
    trace); a beam search's chosen hypothesis is replayed teacher-forced under capture, which gives the same weights
    that hypothesis had.  The trace's source tokens are the translation's (``[EOS]`` last).  Each decoding step is
    named by the token it *writes* (the generated tokens, then ``[EOS]``): a cross-attention row's label and a
    decoder self-attention query's, while the decoder self-attention's keys are the tokens it *read* (``[BOS]``
    first).  So "query 五 attends to F" is the step that wrote 五, as in the lab's step line and ``alignment.png``.
    The translation's doubts are in ``translation.warnings``, not issued as warnings here (:meth:`attnlab.Model.run`
    issues them once)."""
    model = translator.model
    if beam == 1:
        with capture(model) as trace:
            (translation,) = translator.translate([text], beam=1, warn=False)
        read = ["[BOS]", *translation.target_tokens, "[EOS]"]
        return translation, _label_steps(trace, translation.source_tokens, read, read[1:])
    (translation,) = translator.translate([text], beam=beam, warn=False)
    cfg: Any = model.config
    cpu, pad = torch.device("cpu"), int(cfg.pad_id)
    # [BOS] and every generated token: the inputs of every step, the last one's output EOS (none when the search
    # stopped at max_length, which counts EOS)
    ids = [int(cfg.bos_id), *translation.ids][: int(cfg.max_length)]
    with torch.no_grad(), capture(model) as trace:
        model(collate(translator.encode([text]), cpu, pad), collate([ids], cpu, pad))  # (1, S), (1, T)
    read = ["[BOS]", *translation.target_tokens][: len(ids)]
    return translation, _label_steps(trace, translation.source_tokens, read, [*translation.target_tokens,
                                                                              "[EOS]"][: len(ids)])


def _label_steps(trace: AttentionTrace, source: Sequence[str], read: Sequence[str],
                 written: Sequence[str]) -> AttentionTrace:
    """``trace`` with the source tokens on the encoder's side and each decoding position named by the token it
    wrote: cross-attention rows and decoder self-attention queries get ``written``, the decoder self-attention's
    keys ``read`` (position ``i`` reads ``read[i]`` and writes ``written[i]``)."""
    by_read, by_written = trace.with_tokens(source, read), trace.with_tokens(source, written)
    records = []
    for r, w in zip(by_read.records, by_written.records, strict=True):
        if r.kind == "cross":
            records.append(w)
        elif r.kind == "causal":
            records.append(replace(r, query_tokens=w.query_tokens))
        else:
            records.append(r)
    return AttentionTrace(records=records, meta=dict(trace.meta))
