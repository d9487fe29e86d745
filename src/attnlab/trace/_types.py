"""The two types: :class:`AttentionRecord` (one captured attention call) and :class:`AttentionTrace` (every call of
a forward pass, in call order), with the views every consumer reads and the assembling of a generation's steps.

Generation.  Decoding with a key/value cache calls each attention module once per generated token:
a *prefill* call over the prompt, then one *step* per new token whose queries are only the new
positions.  Such calls carry ``step`` (0 for the prefill, 1, 2, ... for the steps) and the ``layer``
of their module, and the trace *assembles* each module's steps into one record (:attr:`AttentionTrace.assembled`):
its rows are the rows of every step, one under the other, each padded with zeros on the right to the
last step's keys.  For causal self-attention that is the full ``(target, target)`` matrix, lower
triangular (bottom-right aligned); for cross-attention the ``(target, source)`` matrix.  Every view
(``select``, ``stack``, ``weights``, ``tokens``, ``n_layers``) and every figure reads the assembled records.

The file format lives in :mod:`._file` and the conversion of Hugging Face outputs in :mod:`._hf`; the methods
``save``, ``load`` and ``from_hf_outputs`` hand over to them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from ..errors import InputError, ShapeError
from ._file import read_trace, write_trace
from ._hf import records_from_outputs
from ._record import KINDS, STORED_DTYPES, AttentionRecord, Kind, StoredDtype, as_kind

__all__ = ["KINDS", "STORED_DTYPES", "AttentionRecord", "AttentionTrace", "Kind", "StoredDtype", "as_kind"]

def _chains(records: list[AttentionRecord]) -> list[list[AttentionRecord]]:
    """The records grouped into generations, in the order of each group's first record.

    An ordinary record (``step`` None) is a group of its own.  A record with ``step`` 0 opens a group
    for its ``(name, kind, layer)``; a record with step ``n > 0`` joins the open group of the same
    ``(name, kind, layer)``, whose last step must be ``n - 1``.
    """
    groups: list[list[AttentionRecord]] = []
    open_: dict[tuple[str, str, int], list[AttentionRecord]] = {}
    for r in records:
        key = (r.name, r.kind, r.layer)
        if r.step is None or r.step == 0:
            groups.append([r])
            if r.step == 0:
                open_[key] = groups[-1]
            continue
        chain = open_.get(key)
        if chain is None or chain[-1].step != r.step - 1:
            last = None if chain is None else chain[-1].step
            raise InputError(
                f"record {r.name!r} ({r.kind}, layer {r.layer}) is decoding step {r.step}, but the step before it "
                f"in the trace is {last!r}; a generation's steps go 0 (the prefill), 1, 2, ... in call order"
            )
        chain.append(r)
    return groups


def _join(chain: list[AttentionRecord]) -> AttentionRecord:
    """One record from a generation's steps: their rows one under the other, keys padded to the last step's."""
    if len(chain) == 1:
        return chain[0] if chain[0].step is None else replace(chain[0], step=None)
    first, last = chain[0], chain[-1]
    b, h = first.weights.shape[:2]
    k_len = max(int(r.weights.shape[-1]) for r in chain)
    for r in chain:
        if tuple(r.weights.shape[:2]) != (b, h):
            raise ShapeError(
                f"the decoding steps of {first.name!r} differ in (batch, heads): {(b, h)} at step 0, "
                f"{tuple(r.weights.shape[:2])} at step {r.step}"
            )
    rows = [F.pad(r.weights, (0, k_len - r.weights.shape[-1])) for r in chain]  # (B, H, L_i, S) each
    queries = [r.query_tokens for r in chain]
    q = [r.q for r in chain]
    return AttentionRecord(
        name=first.name, kind=first.kind, layer=first.layer,
        weights=torch.cat(rows, dim=2),  # (B, H, sum L_i, S)
        query_tokens=None if any(t is None for t in queries) else [t for ts in queries if ts for t in ts],
        key_tokens=max(chain, key=lambda r: r.weights.shape[-1]).key_tokens,
        q=None if any(t is None for t in q) else torch.cat([t for t in q if t is not None], dim=2),  # (B, H, ΣL, D)
        k=last.k if last.k is not None and last.k.shape[2] == k_len else None,
        scale=first.scale,
    )


_TOKENS_FIX = (
    "pass the tokens the model ran on (for an encoder-decoder model, tokens= the encoder's and target_tokens= the "
    "decoder's; for a generation, the final generated sequence)"
)


def _side(r: AttentionRecord, source: list[str], target: list[str]) -> tuple[list[str], list[str]]:
    """(query side, key side) tokens of a record of ``r.kind``."""
    keys = target if r.kind == "causal" else source
    queries = source if r.kind == "self" else target
    return queries, keys


def _attach_one(r: AttentionRecord, source: list[str], target: list[str]) -> AttentionRecord:
    queries, keys = _side(r, source, target)
    _, _, lq, lk = r.weights.shape
    if len(keys) != lk or len(queries) < lq:
        raise ShapeError(
            f"record {r.name!r} ({r.kind}) attends from {lq} queries to {lk} keys, but got {len(queries)} query "
            f"and {len(keys)} key tokens for it; {_TOKENS_FIX}"
        )
    return replace(r, query_tokens=queries[len(queries) - lq:], key_tokens=list(keys))


def _attach_chain(chain: list[AttentionRecord], source: list[str], target: list[str]) -> list[AttentionRecord]:
    """Tokens for a generation's steps: self-like steps are bottom-right aligned with their keys (a step
    over keys ``0..S-1`` with ``L`` queries attends from positions ``S-L..S-1``); cross-attention steps
    attend from the next ``L`` target positions, counted from 0, to every source token."""
    first = chain[0]
    queries, keys = _side(first, source, target)
    if first.kind == "cross":
        rows = sum(int(r.weights.shape[2]) for r in chain)
        if len(keys) != first.weights.shape[-1] or len(queries) < rows:
            raise ShapeError(
                f"the generation of {first.name!r} (cross) attends from {rows} target positions to "
                f"{first.weights.shape[-1]} source positions, but got {len(queries)} target and {len(keys)} source "
                f"tokens; {_TOKENS_FIX}"
            )
        out, start = [], 0
        for r in chain:
            n = int(r.weights.shape[2])
            out.append(replace(r, query_tokens=queries[start:start + n], key_tokens=list(keys)))
            start += n
        return out
    k_len = max(int(r.weights.shape[-1]) for r in chain)
    if len(keys) < k_len:
        raise ShapeError(
            f"the generation of {first.name!r} ({first.kind}) reaches {k_len} positions, but got {len(keys)} "
            f"tokens; {_TOKENS_FIX}"
        )
    out = []
    for r in chain:
        _, _, lq, lk = r.weights.shape
        out.append(replace(r, query_tokens=keys[lk - lq:lk], key_tokens=keys[:lk]))
    return out


@dataclass
class AttentionTrace:
    """Every attention call of one forward pass (or several), in call order.

    ``trace.records`` holds the calls (a generation's decoding steps one by one, with their ``step``);
    the views read :attr:`assembled`, one record per module and forward: ``trace.weights`` stacks the main
    self-attention stack of a single input as ``(layers, heads, q_len, k_len)``; ``trace.tokens`` are its
    tokens, or None when none are attached.
    ``trace.meta`` is a JSON-serialisable dict (``model``, ``text``, ...).
    """

    records: list[AttentionRecord] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    # ----- views -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[AttentionRecord]:
        return iter(self.records)

    def __getitem__(self, i: int) -> AttentionRecord:
        return self.records[i]

    def __repr__(self) -> str:
        kinds = {k: sum(r.kind == k for r in self.records) for k in KINDS}
        summary = ", ".join(f"{n} {k}" for k, n in kinds.items() if n)
        steps = max((r.step for r in self.records if r.step is not None), default=None)
        gen = "" if steps is None else f"; a generation of {steps + 1} calls per module"
        return (
            f"AttentionTrace({len(self.records)} records: {summary or 'empty'}{gen}; meta keys {sorted(self.meta)})"
        )

    @property
    def kinds(self) -> list[Kind]:
        """The kinds present, in the order of KINDS."""
        present = {r.kind for r in self.records}
        return [k for k in KINDS if k in present]

    @property
    def main_kind(self) -> Kind:
        """The kind of the main stack: ``"self"`` if the trace has encoder self-attention, else the
        first kind present."""
        if not self.records:
            raise InputError("the trace is empty: nothing was captured")
        kinds = self.kinds
        return "self" if "self" in kinds else kinds[0]

    @property
    def assembled(self) -> list[AttentionRecord]:
        """The records with each generation's decoding steps joined into one record per module.

        A module called once per generated token (``step`` 0, 1, 2, ...) becomes one record whose rows
        are those of every step, in order, each padded with zeros on the right to the last step's keys
        (``step`` None); ``q`` are joined the same way and ``k`` are the last step's.  Ordinary records
        are passed through as they are.  Without generation this is ``trace.records``."""
        return [_join(chain) for chain in _chains(self.records)]

    @property
    def is_generation(self) -> bool:
        """Whether the trace holds decoding steps (records with ``step`` set)."""
        return any(r.step is not None for r in self.records)

    def select(
        self, kind: Kind | None = None, layer: int | None = None, name: str | None = None
    ) -> list[AttentionRecord]:
        """Assembled records (see :attr:`assembled`) matching every given filter (``name`` matches as a
        substring).  The individual calls of a generation are in ``trace.records``."""
        if kind is not None:
            as_kind(kind)
        return [
            r
            for r in self.assembled
            if (kind is None or r.kind == kind)
            and (layer is None or r.layer == layer)
            and (name is None or name in r.name)
        ]

    def stack(self, kind: Kind | None = None, batch: int = 0) -> Tensor:
        """``(layers, heads, q_len, k_len)``: the (assembled) records of one kind for input ``batch`` of the batch."""
        kind = kind or self.main_kind
        recs = self.select(kind=kind)
        if not recs:
            raise InputError(f"the trace has no {kind!r} records; it has {self.kinds}")
        shapes = {tuple(r.weights.shape[1:]) for r in recs}
        if len(shapes) != 1:
            raise ShapeError(f"the {kind!r} records differ in shape {sorted(shapes)}; index trace.records instead")
        nb = recs[0].weights.shape[0]
        if not 0 <= batch < nb:
            raise InputError(f"batch index {batch} is out of range: the trace holds {nb} input(s)")
        return torch.stack([r.weights[batch] for r in recs])

    @property
    def weights(self) -> Tensor:
        """``(layers, heads, q_len, k_len)`` of the main self-attention stack of a single input."""
        nb = self.records[0].weights.shape[0] if self.records else 1
        if nb != 1:
            raise ShapeError(f"trace.weights needs a single input, the trace holds {nb}; use trace.stack(batch=i)")
        return self.stack()

    @property
    def tokens(self) -> list[str] | None:
        """The tokens of the main stack (its query tokens), or None when none are attached: attach them
        with ``trace = attnlab.capturing.attach_tokens(trace, tokens)``."""
        if not self.records:
            return None
        rec = self.select(kind=self.main_kind)[0]
        return list(rec.query_tokens) if rec.query_tokens is not None else None

    @property
    def n_layers(self) -> int:
        return len(self.select(kind=self.main_kind))

    @property
    def n_heads(self) -> int:
        return self.select(kind=self.main_kind)[0].n_heads

    def head_mean(self, kind: Kind | None = None, batch: int = 0) -> Tensor:
        """``(layers, q_len, k_len)``: the mean over heads (rows still sum to one)."""
        return self.stack(kind, batch).mean(dim=1)

    # ----- tokens and other sources ---------------------------------------------------------------
    def with_tokens(self, tokens: Sequence[str], target_tokens: Sequence[str] | None = None) -> AttentionTrace:
        """A copy whose records carry ``query_tokens`` and ``key_tokens`` (the weights are shared, not copied).

        ``self`` records get ``tokens``; ``causal`` records get ``target_tokens`` (or ``tokens`` when there
        are none); ``cross`` records attend from ``target_tokens`` to ``tokens``.  An ordinary record with
        fewer queries than keys (one cached decoding call) gets the last tokens as queries (bottom-right).
        In a generation pass the final sequence: a decoding step over keys ``0..S-1`` gets the first ``S``
        tokens as keys and its new positions as queries; tokens past the last step's keys (the last token
        generated, which no call read) are left out.  ``attnlab.capturing.attach_tokens`` is this method.
        """
        source = [str(t) for t in tokens]
        target = [str(t) for t in target_tokens] if target_tokens is not None else source
        attached: dict[int, AttentionRecord] = {}  # id of a record -> its copy with tokens
        for chain in _chains(self.records):
            done = [_attach_one(chain[0], source, target)] if chain[0].step is None else _attach_chain(
                chain, source, target
            )
            attached.update((id(r), a) for r, a in zip(chain, done, strict=True))
        return AttentionTrace(records=[attached[id(r)] for r in self.records], meta=dict(self.meta))

    @classmethod
    def from_hf_outputs(
        cls,
        attentions: Any = None,
        cross_attentions: Sequence[Any] | None = None,
        *,
        tokens: Sequence[str] | None = None,
        target_tokens: Sequence[str] | None = None,
        encoder_attentions: Sequence[Tensor] | None = None,
        kind: Kind | None = None,
        meta: dict[str, Any] | None = None,
    ) -> AttentionTrace:
        """A trace from what a Hugging Face model returned with ``output_attentions=True``.

        >>> out = model(**inputs, output_attentions=True)
        >>> trace = AttentionTrace.from_hf_outputs(out.attentions, tokens=tok.convert_ids_to_tokens(ids))
        >>> trace = AttentionTrace.from_hf_outputs(out, tokens=...)    # the output object itself works too

        Args:
            attentions: one ``(batch, heads, q_len, k_len)`` tensor per layer: the self-attention of an
                encoder or decoder-only model, or the decoder's self-attention of an encoder-decoder model
                (``outputs.decoder_attentions``).  From ``generate(..., output_attentions=True,
                return_dict_in_generate=True)``: one such tuple per generated token; the records then carry
                their ``step`` and the trace assembles them.  Or the whole output object, whose
                ``attentions`` / ``encoder_attentions`` / ``decoder_attentions`` / ``cross_attentions``
                are read.
            cross_attentions: the decoder's attention over the encoder, per layer (or per step, per layer).
            tokens: the input's tokens (the encoder's for an encoder-decoder model; for a generation, the
                final sequence).  Without tokens the records carry none (``trace.tokens`` is None).
            target_tokens: the decoder's tokens of an encoder-decoder model (the final sequence when generated).
            encoder_attentions: the encoder's self-attention of an encoder-decoder model, per layer.
            kind: the kind of ``attentions``; by default ``"causal"`` for a decoder (cross-attention or
                generation steps given, or every matrix lower triangular with a zero upper part), else ``"self"``.
            meta: the trace's ``meta``.
        """
        records = records_from_outputs(attentions, cross_attentions, encoder_attentions, kind)
        trace = cls(records=records, meta=dict(meta or {}))
        return trace if tokens is None else trace.with_tokens(tokens, target_tokens)

    # ----- Jupyter: the one lazy edge to attnlab.viz (imported on first display) ----------------
    def _repr_html_(self) -> str | None:
        """Jupyter shows a trace as the viewer (in a sandboxed iframe); an empty trace as its repr."""
        if not self.records:
            return None
        from ..viz.html import repr_html

        return repr_html(self)

    # ----- files -------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str], *, dtype: StoredDtype = "float32") -> Path:
        """Write the trace to ``path`` (safetensors with a JSON header), atomically.

        ``dtype`` is how the weights are stored: ``"float32"`` (the default) is exact; ``"float16"`` takes
        half the space, each weight within 2**-11 of its value relatively (and within 2**-12 absolutely for
        weights in [0, 1]); ``"uint8"`` a quarter, each weight in [0, 1] stored as ``round(255 * w)``, within
        1/510 of its value (the viewer's own 8-bit codes).  :meth:`load` gives float32 back either way."""
        return write_trace(self.records, self.meta, Path(path), dtype)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> AttentionTrace:
        """Read a trace written by :meth:`save`, its weights as float32.  A trace stored compact says so:
        ``trace.meta["stored_dtype"]`` is ``"float16"`` or ``"uint8"`` (an exact file adds nothing).
        A missing, truncated, corrupt or foreign file raises :class:`attnlab.errors.TraceFileError`."""
        records, meta = read_trace(Path(path))
        return cls(records=records, meta=meta)
