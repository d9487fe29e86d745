"""The interactive attention viewer: one self-contained, offline HTML file.

    >>> import attnlab as al
    >>> al.viz.save_html(trace, "cat.html")    # open it from disk in any browser, no network needed
    >>> html = al.viz.to_html(trace)             # the same page as a string
    >>> trace                                    # in Jupyter: the viewer, in a sandboxed iframe

The page's script and style are real files of this package, inlined: ``assets/viewer.css``, and the script
files of :data:`SCRIPTS` (``assets/viewer.js``, one file per view under ``assets/views/``, the viewer and the
page under ``assets/viewer/``) joined in that order inside one strict-mode function, so the page holds one
script and its top-level names stay private to it.  The weights travel as 8-bit codes, gzip-compressed and
base64-encoded (see :mod:`attnlab.viz._encode`; every shown value is within ``1/510`` of the captured weight),
inside a ``<script type="application/json">`` block whose ``<``, ``>``, ``&`` and line separators are escaped.
Tokens are user text: the page only ever renders them with ``textContent`` and canvas ``fillText``.
A Content-Security-Policy allows the page's own script (by hash) and nothing from the network.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import html
import json
import math
import os
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .._io import atomic_write_text
from ..errors import InputError
from ..trace import AttentionTrace
from . import _encode
from ._first import first_view

__all__ = ["IFRAME_HEIGHT", "SCRIPTS", "compare_html", "csp_hash", "payload", "repr_html", "save_html", "to_html",
           "viewer_script", "viewer_style"]

# The viewer's script files under assets/, in the order they are joined (tsconfig.json checks the same list):
# the shared types and helpers first, then each view, then the viewer that holds them and the page that mounts it.
SCRIPTS = ("viewer.js", "views/head.js", "views/model.js", "views/matrix.js", "views/neuron.js", "viewer/store.js",
           "viewer/controls.js", "viewer/pane.js", "viewer/page.js")

IFRAME_HEIGHT = 760  # pixels of the Jupyter iframe; the page scrolls inside it
_PAYLOAD_VERSION = 1
_META_MAX = 20_000  # characters of one metadata value: a 450-word text is about 3,000
_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


Traces = AttentionTrace | Sequence[AttentionTrace]


def save_html(trace: Traces, path: str | os.PathLike[str], *, batch: int = 0) -> Path:
    """Write the viewer for input ``batch`` of ``trace`` to ``path`` (atomically) and return the path.

    ``trace`` may be a list of two traces (two inputs, or two models): the page shows them side by
    side, with linked controls.  The file is self-contained: it loads nothing from the network and
    opens from ``file://``."""
    page = to_html(trace, batch=batch)
    path = Path(path)
    if not path.parent.is_dir():
        raise InputError(f"cannot write {str(path)!r}: the folder {str(path.parent)!r} does not exist; create it first")
    return atomic_write_text(path, page)


def compare_html(a: AttentionTrace, b: AttentionTrace, path: str | os.PathLike[str], *, batch: int = 0) -> Path:
    """Write a page that shows traces ``a`` and ``b`` side by side (``save_html([a, b], path)``)."""
    return save_html([a, b], path, batch=batch)


def to_html(trace: Traces, *, batch: int = 0) -> str:
    """The viewer page for input ``batch`` of ``trace`` (or of two traces side by side), as one HTML string."""
    js, css = viewer_script(), viewer_style()
    data = _json_for_script(_document(trace, batch))
    csp = (
        "default-src 'none'; "
        f"script-src '{csp_hash(js)}'; style-src '{csp_hash(css)}'; "
        "img-src data: blob:; base-uri 'none'; form-action 'none'"
    )
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<link rel="icon" href="data:,">\n'
        "<title>attnlab attention viewer</title>\n"
        f"<style>{css}</style>\n</head>\n<body>\n"
        '<main id="attnlab-viewer"><noscript>The attnlab viewer needs JavaScript.</noscript></main>\n'
        f'<script type="application/json" id="attnlab-data">{data}</script>\n'
        f"<script>{js}</script>\n</body>\n</html>\n"
    )


def payload(trace: Traces, *, batch: int = 0, compresslevel: int = 6) -> dict[str, Any]:
    """What the page's script reads (the JSON inside ``to_html``'s page): one trace's payload, or two side by side.
    ``attnlab serve`` sends it to its page, which draws it with the same script (``compresslevel``: gzip's, of the
    weights' codes)."""
    return _document(trace, batch, compresslevel)


def repr_html(trace: AttentionTrace) -> str:
    """The viewer for Jupyter: the page inside a sandboxed ``<iframe srcdoc>`` so that its script and
    style cannot touch the notebook (scripts may run, nothing else; downloads allowed for export)."""
    page = html.escape(to_html(trace), quote=True)
    return (
        f'<iframe srcdoc="{page}" sandbox="allow-scripts allow-downloads" title="attnlab attention viewer" '
        f'style="width:100%;height:{IFRAME_HEIGHT}px;border:1px solid #ccc;resize:vertical"></iframe>'
    )


# ----- internals -----------------------------------------------------------------------------------
def _document(trace: Traces, batch: int, level: int = 6) -> dict[str, Any]:
    """One trace's payload, or ``{"panes": [payload, payload]}`` for two traces side by side."""
    if isinstance(trace, AttentionTrace):
        return _payload(trace, batch, level)
    if isinstance(trace, Sequence) and not isinstance(trace, str):
        traces = list(trace)
        if len(traces) == 1:
            return _payload(traces[0], batch, level)
        if len(traces) == 2:
            panes = [_payload(t, batch, level) for t in traces]
            first = first_view(traces[0], traces[1], batch=batch)  # both open where they differ most
            for pane in panes:
                if pane["first"]["kind"] == first["kind"]:
                    pane["first"]["layer"] = first["layer"]
            return {"format": "attnlab.viewer.compare", "version": _PAYLOAD_VERSION, "panes": panes}
        raise InputError(
            f"the viewer shows one trace or two side by side, got a list of {len(traces)}; pass one or two"
        )
    raise InputError(f"the viewer draws an AttentionTrace, got {type(trace).__name__}; capture one first")


def _payload(trace: AttentionTrace, batch: int, level: int = 6) -> dict[str, Any]:
    if not isinstance(trace, AttentionTrace):
        raise InputError(f"the viewer draws an AttentionTrace, got {type(trace).__name__}; capture one first")
    if not trace.records:
        raise InputError("the trace is empty: nothing was captured, so there is nothing to show")
    records = []
    for r in trace.assembled:  # a generation's decoding steps joined: one matrix per layer
        nb, heads, q_len, k_len = r.weights.shape
        if not 0 <= batch < nb:
            raise InputError(f"batch index {batch} is out of range: record {r.name!r} holds {nb} input(s)")
        records.append(
            {
                "name": r.name,
                "kind": r.kind,
                "layer": r.layer,
                "heads": int(heads),
                "q": int(q_len),
                "k": int(k_len),
                "query_tokens": _tokens(r.query_tokens, q_len),
                "key_tokens": _tokens(r.key_tokens, k_len),
                "data": _encode.encode(r.weights[batch], level),
                **_qk(r, batch, int(heads), int(q_len), int(k_len)),
            }
        )
    meta = {str(k): _meta_text(v) for k, v in trace.meta.items() if isinstance(v, str | int | float | bool)}
    out: dict[str, Any] = {
        "format": "attnlab.viewer",
        "version": _PAYLOAD_VERSION,
        "encoding": {"codes": "uint8", "levels": _encode.LEVELS, "compression": "gzip", "max_error": _encode.MAX_ERROR},
        "batch": batch,
        "meta": meta,
        "records": records,
        "first": first_view(trace, batch=batch),  # the view it opens on (viz/_first.py), as heatmap.png shows
    }
    head_notes = _head_notes(trace)
    if head_notes is not None:
        out["heads"] = head_notes
    return out


def _qk(record: Any, batch: int, heads: int, q_len: int, k_len: int) -> dict[str, Any]:
    """The record's query and key vectors for the neuron view, when the capture kept them (``qk=True``):
    float16, row-major ``(heads, len, d_k)``, gzip-compressed and base64-encoded."""
    q, k = getattr(record, "q", None), getattr(record, "k", None)
    if q is None or k is None:
        return {}
    for name, t, n in (("q", q, q_len), ("k", k, k_len)):
        if not isinstance(t, torch.Tensor) or t.ndim != 4 or tuple(t.shape[1:3]) != (heads, n):
            got = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
            raise InputError(
                f"{record.name}: record.{name} must be (batch, {heads}, {n}, d_k) like its weights, got {got}; "
                "capture it with capture(model, qk=True)"
            )
    if q.shape[-1] != k.shape[-1]:
        raise InputError(f"{record.name}: q and k differ in d_k ({q.shape[-1]} vs {k.shape[-1]})")
    return {"qk": {"d": int(q.shape[-1]), "q": _encode_half(q[batch]), "k": _encode_half(k[batch])}}


def _encode_half(values: torch.Tensor) -> str:
    """The base64 text of the gzip-compressed float16 bytes (little-endian, C order) of ``values``:
    the neuron view's query and key vectors (relative error at most 2**-11 within float16's range)."""
    v = values.detach().to("cpu", torch.float32)
    if v.numel() and not bool(torch.isfinite(v).all()):
        raise InputError(f"query/key vectors must be finite, got {int((~torch.isfinite(v)).sum())} NaN/inf values")
    raw = np.ascontiguousarray(v.numpy().astype("<f2")).tobytes()
    return base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii")


def decode_half(text: str, shape: tuple[int, ...]) -> np.ndarray:
    """The inverse of the neuron view's float16 encoding, as float64 (used by tests)."""
    raw = gzip.decompress(base64.b64decode(text))
    return np.frombuffer(raw, dtype="<f2").reshape(shape).astype(np.float64)


def _head_notes(trace: AttentionTrace) -> dict[str, Any] | None:
    """``trace.meta["heads"]`` (labels and metrics per layer and head, from attnlab.analysis), checked
    and cleaned for the model view; None when the trace has none."""
    notes = trace.meta.get("heads")
    if notes is None:
        return None
    if not isinstance(notes, dict):
        raise InputError(
            f'trace.meta["heads"] must be a dict {{"kind", "labels", "metrics"}}, got {type(notes).__name__}'
        )
    kind = notes.get("kind", "self")
    labels = notes.get("labels") or []
    metrics = notes.get("metrics") or {}
    if not isinstance(labels, list) or not all(isinstance(row, list) for row in labels):
        raise InputError('trace.meta["heads"]["labels"] must be a list (layers) of lists (heads) of strings')
    if not isinstance(metrics, dict) or not all(isinstance(v, list) for v in metrics.values()):
        raise InputError('trace.meta["heads"]["metrics"] must map names to lists (layers) of lists (heads) of numbers')

    def number(x: Any) -> float | None:
        return float(x) if isinstance(x, int | float) and math.isfinite(float(x)) else None

    return {
        "kind": str(kind),
        "labels": [[_meta_text(str(x))[:200] for x in row] for row in labels],
        "metrics": {str(name): [[number(x) for x in row] for row in rows] for name, rows in metrics.items()},
    }


def _tokens(tokens: list[str] | None, n: int) -> list[str]:
    return [str(t) for t in tokens] if tokens is not None else [str(i) for i in range(n)]


def _meta_text(value: str | float | bool) -> str:
    """How the viewer shows a meta value: text cut at :data:`_META_MAX` characters, a float to 4 significant
    digits (a probability 0.8700472116470337 reads 0.87)."""
    text = f"{value:.4g}" if isinstance(value, float) else str(value)
    return text if len(text) <= _META_MAX else text[:_META_MAX] + "…"


def _json_for_script(obj: Any) -> str:
    """JSON that cannot end or open anything inside a ``<script>`` element (and is ASCII, so lone
    surrogates in user text cannot break the UTF-8 file)."""
    text = json.dumps(obj, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    for char, escaped in _JSON_ESCAPES.items():
        text = text.replace(char, escaped)
    return text


@cache
def viewer_script(tail: str = "") -> str:
    """The viewer's script as the page holds it: the files of :data:`SCRIPTS`, in order, inside one function;
    ``tail`` is one more script inside it, after them (``attnlab serve``'s page, which calls the viewer's functions)."""
    if "</script" in tail.lower():
        raise RuntimeError("the tail script contains '</script', which would end its inline element")
    return '(() => {\n"use strict";\n\n' + "\n".join([*(_asset(name) for name in SCRIPTS), tail]) + "})();\n"


@cache
def viewer_style(tail: str = "") -> str:
    """The viewer's style sheet as the page holds it; ``tail`` is more CSS after it (``attnlab serve``'s page)."""
    if "</style" in tail.lower():
        raise RuntimeError("the tail style contains '</style', which would end its inline element")
    return _asset("viewer.css") + ("\n" + tail if tail else "")


def csp_hash(text: str) -> str:
    """The Content-Security-Policy source (``'sha256-...'`` without quotes) that allows one inline script or style."""
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


@cache
def _asset(name: str) -> str:
    text = (resources.files("attnlab.viz") / "assets" / name).read_text(encoding="utf-8")
    closing = "</script" if name.endswith(".js") else "</style"
    if closing in text.lower():  # the asset is ours; this guards a future edit that would break the page
        raise RuntimeError(f"assets/{name} contains {closing!r}, which would end its inline element")
    return text

