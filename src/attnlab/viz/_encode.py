"""How the HTML viewer stores attention weights: 8-bit linear codes, gzip-compressed, base64 text.

A weight ``w`` in ``[0, 1]`` becomes the byte ``round(255 * w)`` and the page reads it back as
``code / 255``, so every value the viewer shows or draws is within ``MAX_ERROR = 1/510`` (about 0.00196)
of the captured weight.  The codes of one record are stored row-major, ``(heads, q_len, k_len)``,
gzip-compressed (the page inflates them with the browser's own ``DecompressionStream("gzip")``) and
base64-encoded.

Why linear 8-bit: it is what fits the size budget.  On a 512-token trace of the bundled model
(6 x 12 x 512 x 512 weights) linear codes give about 3.4 MB of base64; square-root codes (finer for
small weights) give about 12 MB and 7-bit square-root codes about 8 MB, over the 8 MB budget.
"""

from __future__ import annotations

import base64
import gzip

import numpy as np
import torch
from torch import Tensor

from ..errors import InputError

__all__ = ["LEVELS", "MAX_ERROR", "decode", "encode", "quantise"]

LEVELS = 255
MAX_ERROR = 1 / (2 * LEVELS)  # half a quantisation step: the worst-case absolute error of a decoded weight
_TOLERANCE = 1e-3  # weights this far outside [0, 1] are float noise; further out they are not attention weights


def quantise(weights: Tensor) -> np.ndarray:
    """``uint8`` codes ``round(255 * w)`` of weights in ``[0, 1]``, same shape, C order."""
    w = weights.detach().to("cpu", torch.float64)
    if w.numel() and not bool(torch.isfinite(w).all()):
        raise InputError(
            f"attention weights must be finite, got {int((~torch.isfinite(w)).sum())} NaN/inf values; "
            "capture the weights after a safe softmax (attnlab.functional.masked_softmax)"
        )
    if w.numel() and (float(w.min()) < -_TOLERANCE or float(w.max()) > 1 + _TOLERANCE):
        raise InputError(
            f"attention weights must lie in [0, 1], got values from {float(w.min()):.4g} to {float(w.max()):.4g}; "
            "the viewer draws post-softmax weights, not scores or logits"
        )
    codes = torch.round(w.clamp(0.0, 1.0) * LEVELS).to(torch.uint8)
    return np.ascontiguousarray(codes.numpy())


def encode(weights: Tensor, compresslevel: int = 6) -> str:
    """The base64 text of the gzip-compressed codes of ``weights`` (deterministic: gzip mtime 0).  Level 6 suits a
    file kept on disk; level 1 is about 7 times faster and 30 % larger (``attnlab serve``, over loopback)."""
    raw = quantise(weights).tobytes()
    return base64.b64encode(gzip.compress(raw, compresslevel=compresslevel, mtime=0)).decode("ascii")


def decode(text: str, shape: tuple[int, ...]) -> np.ndarray:
    """The inverse of :func:`encode` as float64 weights (what the page computes); used by tests."""
    raw = gzip.decompress(base64.b64decode(text))
    return np.frombuffer(raw, dtype=np.uint8).reshape(shape).astype(np.float64) / LEVELS
