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

from . import errors, functional, masks
from ._bundled import Located, locate
from .capturing import capture
from .errors import AttnLabError
from .functional import attention
from .trace import AttentionRecord, AttentionTrace

__version__ = "0.1.0"

# Every subpackage is reachable as ``attnlab.NAME`` after ``import attnlab`` (and as ``import attnlab.NAME``); the
# ones that pull in heavy libraries (matplotlib, transformers, tokenizers, scikit-learn) load on first use.
SUBPACKAGES = ("analysis", "capturing", "data", "explain", "functional", "layers", "masks", "models", "parallel",
               "suites", "trace", "training", "viz")
_LAZY_NAMES = {"trace_text": "attnlab.capturing"}

if TYPE_CHECKING:
    from . import analysis, capturing, data, explain, models, suites, training, viz
    from .capturing import trace_text


def __getattr__(name: str) -> Any:
    """Load a subpackage (or a name that needs one) on first use: ``import attnlab`` stays quick."""
    if name in SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _LAZY_NAMES:
        return getattr(importlib.import_module(_LAZY_NAMES[name]), name)
    raise AttributeError(f"module 'attnlab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "AttentionRecord",
    "AttentionTrace",
    "AttnLabError",
    "Located",
    "__version__",
    "analysis",
    "attention",
    "capture",
    "capturing",
    "data",
    "errors",
    "explain",
    "functional",
    "locate",
    "masks",
    "models",
    "parallel",
    "suites",
    "trace",
    "trace_text",
    "training",
    "viz",
]

# Layers (nn.Modules, batch first); the classes are also at the top level.
from . import layers  # noqa: E402
from .layers import (  # noqa: E402
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

__all__ += [
    "BahdanauAttention",
    "ConvAttentionBlock",
    "KVCache",
    "LuongAttention",
    "MultiHeadAttention",
    "TransformerConfig",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
    "layers",
]
