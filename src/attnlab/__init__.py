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

from typing import TYPE_CHECKING, Any

from . import errors, functional, masks
from ._bundled import Located, locate
from .capture import capture, trace_text
from .errors import AttnLabError
from .functional import attention
from .trace import AttentionRecord, AttentionTrace

__version__ = "0.1.0"

if TYPE_CHECKING:
    from . import viz


def __getattr__(name: str) -> Any:
    """Load heavy submodules on first use: ``attnlab.viz`` (matplotlib) stays unimported until touched."""
    if name == "viz":
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'attnlab' has no attribute {name!r}")

__all__ = [
    "AttentionRecord",
    "AttentionTrace",
    "AttnLabError",
    "Located",
    "__version__",
    "attention",
    "capture",
    "errors",
    "functional",
    "locate",
    "masks",
    "trace_text",
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
