"""AttentionTrace: the one data type that capture produces and analysis and drawing consume.

A trace is a list of :class:`AttentionRecord`, one per attention call in call order, plus free-form
metadata (model name, text, ...).  It saves to one safetensors file whose header carries the JSON
metadata; loading never unpickles anything.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

import torch
from torch import Tensor

from . import _validate
from ._io import atomic_write
from .errors import InputError, ShapeError, TraceFileError

__all__ = ["KINDS", "STORED_DTYPES", "AttentionRecord", "AttentionTrace", "Kind", "StoredDtype", "as_kind"]

# What an attention call attends to: its own sequence, its own past (causal mask), or another sequence.
Kind = Literal["self", "causal", "cross"]
KINDS: tuple[Kind, ...] = get_args(Kind)


def as_kind(value: object) -> Kind:
    """``value`` as a :data:`Kind`, or an :class:`InputError` naming the kinds there are."""
    if value not in KINDS:
        raise InputError(f"kind must be one of {KINDS}, got {value!r}")
    return value
_FORMAT = "attnlab.trace"
_VERSION = 1

# How save() may store weights: exact, half precision, or 8-bit codes round(255 * w) (within 1/510, as the viewer)
StoredDtype = Literal["float32", "float16", "uint8"]
STORED_DTYPES: tuple[StoredDtype, ...] = get_args(StoredDtype)
_LEVELS = 255
_TOLERANCE = 1e-3  # weights this far outside [0, 1] are float noise (clamped); further out, uint8 refuses them


@dataclass
class AttentionRecord:
    """One captured attention call.

    Attributes:
        name: the module path inside the model, e.g. ``"encoder.layer.3.attention.self"``.
        kind: ``"self"``, ``"causal"`` (self-attention with a causal mask) or ``"cross"``.
        layer: the index of this call among the trace's calls of the same kind, in call order
            (encoder self-attention 0..5, decoder causal 0..5 and cross 0..5 in a 6+6 model).
        weights: ``(batch, heads, q_len, k_len)`` float32 on the CPU; rows sum to one over allowed keys.
        query_tokens / key_tokens: readable tokens, or None when the capture did not know them.
    """

    name: str
    kind: Kind
    layer: int
    weights: Tensor
    query_tokens: list[str] | None = None
    key_tokens: list[str] | None = None

    def __post_init__(self) -> None:
        as_kind(self.kind)
        if self.weights.ndim != 4:
            raise ShapeError(
                f"record weights must be (batch, heads, q_len, k_len), got shape {tuple(self.weights.shape)}"
            )
        _, _, lq, lk = self.weights.shape
        for label, toks, n in (("query_tokens", self.query_tokens, lq), ("key_tokens", self.key_tokens, lk)):
            if toks is not None and len(toks) != n:
                raise ShapeError(f"{self.name}: {label} has {len(toks)} tokens but the weights have {n}")

    @property
    def n_heads(self) -> int:
        return int(self.weights.shape[1])

    def __repr__(self) -> str:
        shape = tuple(self.weights.shape)
        return f"AttentionRecord(name={self.name!r}, kind={self.kind!r}, layer={self.layer}, weights={shape})"


@dataclass
class AttentionTrace:
    """Every attention call of one forward pass (or several), in call order.

    ``trace.records`` holds the calls; ``trace.weights`` stacks the main self-attention stack of a
    single input as ``(layers, heads, q_len, k_len)``; ``trace.tokens`` are its tokens.
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
        return f"AttentionTrace({len(self.records)} records: {summary or 'empty'}; meta keys {sorted(self.meta)})"

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

    def select(
        self, kind: Kind | None = None, layer: int | None = None, name: str | None = None
    ) -> list[AttentionRecord]:
        """Records matching every given filter (``name`` matches as a substring)."""
        if kind is not None:
            as_kind(kind)
        return [
            r
            for r in self.records
            if (kind is None or r.kind == kind)
            and (layer is None or r.layer == layer)
            and (name is None or name in r.name)
        ]

    def stack(self, kind: Kind | None = None, batch: int = 0) -> Tensor:
        """``(layers, heads, q_len, k_len)``: the records of one kind for input ``batch`` of the batch."""
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
    def tokens(self) -> list[str]:
        """The tokens of the main stack (its query tokens)."""
        rec = self.select(kind=self.main_kind)[0]
        return list(rec.query_tokens) if rec.query_tokens is not None else [str(i) for i in range(rec.weights.shape[2])]

    @property
    def n_layers(self) -> int:
        return len(self.select(kind=self.main_kind))

    @property
    def n_heads(self) -> int:
        return self.select(kind=self.main_kind)[0].n_heads

    def head_mean(self, kind: Kind | None = None, batch: int = 0) -> Tensor:
        """``(layers, q_len, k_len)``: the mean over heads (rows still sum to one)."""
        return self.stack(kind, batch).mean(dim=1)

    # ----- Jupyter: the one lazy edge to attnlab.viz (imported on first display) ----------------
    def _repr_html_(self) -> str | None:
        """Jupyter shows a trace as the viewer (in a sandboxed iframe); an empty trace as its repr."""
        if not self.records:
            return None
        from .viz.html import repr_html

        return repr_html(self)

    # ----- files -------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str], *, dtype: StoredDtype = "float32") -> Path:
        """Write the trace to ``path`` (safetensors with a JSON header), atomically.

        ``dtype`` is how the weights are stored: ``"float32"`` (the default) is exact; ``"float16"`` takes
        half the space, each weight within 2**-11 of its value relatively (and within 2**-12 absolutely for
        weights in [0, 1]); ``"uint8"`` a quarter, each weight in [0, 1] stored as ``round(255 * w)``, within
        1/510 of its value (the viewer's own 8-bit codes).  :meth:`load` gives float32 back either way."""
        from safetensors.torch import save_file

        _validate.one_of("dtype", dtype, STORED_DTYPES, 'use "float32" (exact) or "float16" (half the size)')
        path = Path(path)
        tensors = {f"r{i}": _stored(r, dtype) for i, r in enumerate(self.records)}
        header = {
            "format": _FORMAT,
            "version": str(_VERSION),
            "dtype": dtype,
            "records": json.dumps(
                [
                    {"name": r.name, "kind": r.kind, "layer": r.layer, "query_tokens": r.query_tokens,
                     "key_tokens": r.key_tokens}
                    for r in self.records
                ],
                ensure_ascii=False,
            ),
            "meta": json.dumps(self.meta, ensure_ascii=False),
        }
        atomic_write(path, lambda tmp: save_file(tensors, str(tmp), metadata=header))
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> AttentionTrace:
        """Read a trace written by :meth:`save`, its weights as float32.  A trace stored compact says so:
        ``trace.meta["stored_dtype"]`` is ``"float16"`` or ``"uint8"`` (an exact file adds nothing).
        A missing, truncated, corrupt or foreign file raises :class:`attnlab.errors.TraceFileError`."""
        from safetensors import safe_open

        path = Path(path)
        if not path.is_file():
            raise TraceFileError(f"no trace file at {str(path)!r}; write one with trace.save(path) or `attnlab show`")
        try:
            with safe_open(str(path), framework="pt") as f:
                header = f.metadata() or {}
                if header.get("format") != _FORMAT:
                    raise TraceFileError(
                        f"{str(path)!r} is a safetensors file but not an attnlab trace (no format={_FORMAT!r} header)"
                    )
                if header.get("version") != str(_VERSION):
                    raise TraceFileError(
                        f"{str(path)!r} is trace format version {header.get('version')!r}; "
                        f"this attnlab reads version {_VERSION}"
                    )
                dtype = header.get("dtype", "float32")
                if dtype not in STORED_DTYPES:
                    raise TraceFileError(f"{str(path)!r} stores its weights as {dtype!r}; this attnlab reads "
                                         f"{', '.join(STORED_DTYPES)}")
                entries = json.loads(header["records"])
                meta = json.loads(header.get("meta", "{}"))
                records = [
                    AttentionRecord(
                        name=str(e["name"]), kind=as_kind(e["kind"]), layer=int(e["layer"]),
                        weights=_loaded(f.get_tensor(f"r{i}"), dtype, path), query_tokens=e.get("query_tokens"),
                        key_tokens=e.get("key_tokens"),
                    )
                    for i, e in enumerate(entries)
                ]
        except TraceFileError:
            raise
        except Exception as exc:  # safetensors, JSON and key errors all mean the same thing to a user
            raise TraceFileError(
                f"cannot read {str(path)!r} as an attnlab trace: {type(exc).__name__}: {exc}; "
                f"the file is truncated, corrupt or of another format"
            ) from None
        if dtype != "float32":
            meta["stored_dtype"] = dtype
        return cls(records=records, meta=meta)


def _stored(record: AttentionRecord, dtype: StoredDtype) -> Tensor:
    """``record``'s weights as ``save`` stores them in ``dtype``; a value that dtype cannot hold is refused."""
    w = record.weights.detach().to("cpu", torch.float32).contiguous()
    if dtype == "float32":
        return w
    if not bool(torch.isfinite(w).all()):
        raise InputError(f"{record.name}: weights with NaN or inf cannot be stored as {dtype}; save with "
                         f'dtype="float32"')
    if dtype == "float16":
        half = w.to(torch.float16)
        if not bool(torch.isfinite(half).all()):
            raise InputError(f"{record.name}: weights up to {float(w.abs().max()):.4g} overflow float16 (65504); "
                             f'save with dtype="float32"')
        return half
    low, high = (float(w.min()), float(w.max())) if w.numel() else (0.0, 0.0)
    if low < -_TOLERANCE or high > 1.0 + _TOLERANCE:
        raise InputError(f"{record.name}: 8-bit codes hold weights in [0, 1], these run from {low:.4g} to {high:.4g}; "
                         f'save with dtype="float16" or "float32"')
    return torch.round(w.clamp(0.0, 1.0) * _LEVELS).to(torch.uint8)


def _loaded(stored: Tensor, dtype: str, path: Path) -> Tensor:
    """The float32 weights of a stored tensor (8-bit codes read back as ``code / 255``)."""
    if dtype == "uint8":
        if stored.dtype != torch.uint8:
            raise TraceFileError(f"{str(path)!r} says its weights are uint8 codes but holds {stored.dtype}; "
                                 f"the file is corrupt")
        return stored.to(torch.float32) / _LEVELS
    return stored.to(torch.float32)
