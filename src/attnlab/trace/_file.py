"""The trace file: one safetensors file whose header carries the records' fields and the trace's meta as JSON.

Tensors ``r{i}`` hold record ``i``'s weights (float32, float16, or 8-bit codes ``round(255 * w)``), ``q{i}`` and
``k{i}`` its queries and keys when captured.  The header holds ``format`` (``"attnlab.trace"``), ``version``,
``dtype``, ``records`` (JSON: name, kind, layer, tokens, and ``step``/``scale`` when set) and ``meta`` (JSON).
Nothing is ever unpickled.  :meth:`AttentionTrace.save <attnlab.trace.AttentionTrace.save>` and
:meth:`AttentionTrace.load <attnlab.trace.AttentionTrace.load>` are the public doors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from .. import _validate
from .._io import atomic_write
from ..errors import InputError, TraceFileError
from ._record import STORED_DTYPES, AttentionRecord, StoredDtype, as_kind

__all__ = ["FORMAT", "VERSION", "read_trace", "write_trace"]

FORMAT = "attnlab.trace"
VERSION = 1
_LEVELS = 255
_TOLERANCE = 1e-3  # weights this far outside [0, 1] are float noise (clamped); further out, uint8 refuses them


def write_trace(records: list[AttentionRecord], meta: dict[str, Any], path: Path, dtype: StoredDtype) -> Path:
    """Write a trace's ``records`` and ``meta`` to ``path`` with its weights stored as ``dtype``, atomically."""
    from safetensors.torch import save_file

    _validate.one_of("dtype", dtype, STORED_DTYPES, 'use "float32" (exact) or "float16" (half the size)')
    tensors = {f"r{i}": _stored(r, dtype) for i, r in enumerate(records)}
    tensors.update(_qk_tensors(records))
    header = {
        "format": FORMAT,
        "version": str(VERSION),
        "dtype": dtype,
        "records": json.dumps(
            [
                {"name": r.name, "kind": r.kind, "layer": r.layer, "query_tokens": r.query_tokens,
                 "key_tokens": r.key_tokens, **_optional_fields(r)}
                for r in records
            ],
            ensure_ascii=False,
        ),
        "meta": json.dumps(meta, ensure_ascii=False),
    }
    atomic_write(path, lambda tmp: save_file(tensors, str(tmp), metadata=header))
    return path


def read_trace(path: Path) -> tuple[list[AttentionRecord], dict[str, Any]]:
    """The records (weights as float32) and the meta of the trace file at ``path``; a missing, truncated, corrupt
    or foreign file raises :class:`TraceFileError`."""
    from safetensors import safe_open

    if not path.is_file():
        raise TraceFileError(f"no trace file at {str(path)!r}; write one with trace.save(path) or `attnlab show`")
    try:
        with safe_open(str(path), framework="pt") as f:
            header = f.metadata() or {}
            if header.get("format") != FORMAT:
                raise TraceFileError(
                    f"{str(path)!r} is a safetensors file but not an attnlab trace (no format={FORMAT!r} header)"
                )
            if header.get("version") != str(VERSION):
                raise TraceFileError(
                    f"{str(path)!r} is trace format version {header.get('version')!r}; "
                    f"this attnlab reads version {VERSION}"
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
                    key_tokens=e.get("key_tokens"), **_read_optional(e, i, f),
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
    return records, meta


def _qk_tensors(records: list[AttentionRecord]) -> dict[str, Tensor]:
    """The captured queries and keys, as tensors ``q{i}`` and ``k{i}`` of record ``i``."""
    out = {}
    for i, r in enumerate(records):
        for label, t in (("q", r.q), ("k", r.k)):
            if t is not None:
                out[f"{label}{i}"] = t.detach().to("cpu", torch.float32).contiguous()
    return out


def _optional_fields(r: AttentionRecord) -> dict[str, Any]:
    """The JSON of the fields most records leave unset (written only when set, so older readers see nothing new)."""
    return {k: v for k, v in (("step", r.step), ("scale", r.scale)) if v is not None}


def _read_optional(entry: dict[str, Any], i: int, f: Any) -> dict[str, Any]:
    """``step``, ``scale``, ``q`` and ``k`` of record ``i`` from its JSON entry and the open safetensors file."""
    names = set(f.keys())
    return {
        "step": None if entry.get("step") is None else int(entry["step"]),
        "scale": None if entry.get("scale") is None else float(entry["scale"]),
        "q": f.get_tensor(f"q{i}") if f"q{i}" in names else None,
        "k": f.get_tensor(f"k{i}") if f"k{i}" in names else None,
    }


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
