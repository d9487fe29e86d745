"""The interactive attention viewer: one self-contained, offline HTML file.

    >>> import attnlab as al
    >>> al.viz.save_html(trace, "cat.html")    # open it from disk in any browser, no network needed
    >>> html = al.viz.to_html(trace)             # the same page as a string
    >>> trace                                    # in Jupyter: the viewer, in a sandboxed iframe

The page's script and style are the real files ``assets/viewer.js`` and ``assets/viewer.css`` of this
package, inlined.  The weights travel as 8-bit codes, gzip-compressed and base64-encoded (see
:mod:`attnlab.viz._encode`; every shown value is within ``1/510`` of the captured weight), inside a
``<script type="application/json">`` block whose ``<``, ``>``, ``&`` and line separators are escaped.
Tokens are user text: the page only ever renders them with ``textContent`` and canvas ``fillText``.
A Content-Security-Policy allows the page's own script (by hash) and nothing from the network.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from .._io import atomic_write_text
from ..errors import InputError
from ..trace import AttentionTrace
from . import _encode

__all__ = ["IFRAME_HEIGHT", "repr_html", "save_html", "to_html"]

IFRAME_HEIGHT = 760  # pixels of the Jupyter iframe; the page scrolls inside it
_PAYLOAD_VERSION = 1
_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def save_html(trace: AttentionTrace, path: str | os.PathLike[str], *, batch: int = 0) -> Path:
    """Write the viewer for input ``batch`` of ``trace`` to ``path`` (atomically) and return the path.

    The file is self-contained: it loads nothing from the network and opens from ``file://``."""
    page = to_html(trace, batch=batch)
    path = Path(path)
    if not path.parent.is_dir():
        raise InputError(f"cannot write {str(path)!r}: the folder {str(path.parent)!r} does not exist; create it first")
    return atomic_write_text(path, page)


def to_html(trace: AttentionTrace, *, batch: int = 0) -> str:
    """The viewer page for input ``batch`` of ``trace``, as one HTML string."""
    js, css = _asset("viewer.js"), _asset("viewer.css")
    data = _json_for_script(_payload(trace, batch))
    csp = (
        "default-src 'none'; "
        f"script-src '{_sha256(js)}'; style-src '{_sha256(css)}'; "
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


def repr_html(trace: AttentionTrace) -> str:
    """The viewer for Jupyter: the page inside a sandboxed ``<iframe srcdoc>`` so that its script and
    style cannot touch the notebook (scripts may run, nothing else; downloads allowed for export)."""
    page = html.escape(to_html(trace), quote=True)
    return (
        f'<iframe srcdoc="{page}" sandbox="allow-scripts allow-downloads" title="attnlab attention viewer" '
        f'style="width:100%;height:{IFRAME_HEIGHT}px;border:1px solid #ccc;resize:vertical"></iframe>'
    )


# ----- internals -----------------------------------------------------------------------------------
def _payload(trace: AttentionTrace, batch: int) -> dict[str, Any]:
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
                "data": _encode.encode(r.weights[batch]),
            }
        )
    meta = {str(k): _meta_text(v) for k, v in trace.meta.items() if isinstance(v, str | int | float | bool)}
    return {
        "format": "attnlab.viewer",
        "version": _PAYLOAD_VERSION,
        "encoding": {"codes": "uint8", "levels": _encode.LEVELS, "compression": "gzip", "max_error": _encode.MAX_ERROR},
        "batch": batch,
        "meta": meta,
        "records": records,
    }


def _tokens(tokens: list[str] | None, n: int) -> list[str]:
    return [str(t) for t in tokens] if tokens is not None else [str(i) for i in range(n)]


def _meta_text(value: str | float | bool) -> str:
    text = str(value)
    return text if len(text) <= 2000 else text[:2000] + "…"


def _json_for_script(obj: Any) -> str:
    """JSON that cannot end or open anything inside a ``<script>`` element (and is ASCII, so lone
    surrogates in user text cannot break the UTF-8 file)."""
    text = json.dumps(obj, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    for char, escaped in _JSON_ESCAPES.items():
        text = text.replace(char, escaped)
    return text


@cache
def _asset(name: str) -> str:
    text = (resources.files("attnlab.viz") / "assets" / name).read_text(encoding="utf-8")
    closing = "</script" if name.endswith(".js") else "</style"
    if closing in text.lower():  # the asset is ours; this guards a future edit that would break the page
        raise RuntimeError(f"assets/{name} contains {closing!r}, which would end its inline element")
    return text


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")
