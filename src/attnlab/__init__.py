"""attnlab: build, train, capture, see and measure attention.

    >>> import attnlab as al
    >>> out, w = al.attention(q, k, v, causal=True)          # (B, H, L, Ev), (B, H, L, S)
    >>> with al.capture(model) as trace: model(x)             # any nn.Module
    >>> al.viz.save_html(trace, "attention.html")             # one offline file

Conventions: kernels take ``(batch, heads, seq, dim)``; layers take ``(batch, seq, d_model)``; a
boolean mask is **True = may attend**; causal masks align bottom-right when ``q_len != k_len``; rows
with no allowed key give zeros, never NaN; heads are never averaged unless asked.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import errors
from ._bundled import KINDS, MODELS, Located, locate
from .errors import AttnLabError

__version__ = "0.9.0"

# Every subpackage is reachable as ``attnlab.NAME`` after ``import attnlab`` (and as ``import attnlab.NAME``), and
# every public name below loads its module on first use: ``import attnlab`` imports neither torch nor any heavy
# library, so ``attnlab --version`` answers at once and each command pays only for what it runs.
SUBPACKAGES = ("analysis", "capturing", "circuits", "data", "explain", "functional", "kinds", "layers", "masks",
               "models", "parallel", "suites", "trace", "trained", "training", "viz")
_LAZY_NAMES = {
    "attention": "attnlab.functional",
    "capture": "attnlab.capturing",
    "trace_text": "attnlab.kinds",
    "Model": "attnlab.kinds",
    "Outcome": "attnlab.kinds",
    "AttentionRecord": "attnlab.trace",
    "AttentionTrace": "attnlab.trace",
    **{name: "attnlab.layers" for name in (
        "BahdanauAttention", "ConvAttentionBlock", "KVCache", "LuongAttention", "MultiHeadAttention",
        "TransformerConfig", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder",
        "TransformerEncoderLayer")},
}

if TYPE_CHECKING:
    from . import (
        analysis,
        capturing,
        data,
        explain,
        functional,
        kinds,
        layers,
        masks,
        models,
        parallel,
        suites,
        trace,
        trained,
        training,
        viz,
    )
    from .capturing import capture
    from .functional import attention
    from .kinds import Model, Outcome, trace_text
    from .layers import (
        BahdanauAttention,
        ConvAttentionBlock,
        KVCache,
        LuongAttention,
        MultiHeadAttention,
        TransformerConfig,
        TransformerDecoder,
        TransformerDecoderLayer,
        TransformerEncoder,
        TransformerEncoderLayer,
    )
    from .trace import AttentionRecord, AttentionTrace


def __getattr__(name: str) -> Any:
    """Load a subpackage (or a name that needs one) on first use: ``import attnlab`` stays quick."""
    if name in SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _LAZY_NAMES:
        value = getattr(importlib.import_module(_LAZY_NAMES[name]), name)
        globals()[name] = value  # later lookups skip this function
        return value
    raise AttributeError(f"module 'attnlab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "KINDS",
    "MODELS",
    "AttentionRecord",
    "AttentionTrace",
    "AttnLabError",
    "BahdanauAttention",
    "ConvAttentionBlock",
    "KVCache",
    "Located",
    "LuongAttention",
    "Model",
    "MultiHeadAttention",
    "Outcome",
    "TransformerConfig",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
    "__version__",
    "analysis",
    "attention",
    "capture",
    "capturing",
    "circuits",
    "data",
    "errors",
    "explain",
    "functional",
    "kinds",
    "layers",
    "locate",
    "masks",
    "models",
    "parallel",
    "suites",
    "trace",
    "trace_text",
    "trained",
    "training",
    "viz",
]
