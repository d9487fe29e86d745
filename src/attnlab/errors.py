"""Every exception attnlab raises.

Each one subclasses :class:`AttnLabError` *and* the built-in it behaves like (``ValueError`` or
``TypeError``), so ``except ValueError`` keeps working for callers who do not know attnlab.
Messages say what was received, what was expected, and how to fix it.
"""

from __future__ import annotations

__all__ = [
    "AttnLabError",
    "CaptureError",
    "ConfigError",
    "DTypeError",
    "DeviceError",
    "InputError",
    "MaskError",
    "MissingExtraError",
    "ModelLoadError",
    "ShapeError",
    "SuiteError",
    "TooLongError",
    "TraceFileError",
]


class AttnLabError(Exception):
    """Base class of every error attnlab raises on bad input."""


class ShapeError(AttnLabError, ValueError):
    """A tensor has the wrong number of dimensions or sizes that do not fit together."""


class MaskError(AttnLabError, ValueError):
    """A mask has the wrong dtype or a shape that does not broadcast to ``(..., q_len, k_len)``."""


class DTypeError(AttnLabError, TypeError):
    """A tensor has a dtype the operation does not take, or tensors disagree on dtype."""


class DeviceError(AttnLabError, ValueError):
    """Tensors that must live on one device do not."""


class ConfigError(AttnLabError, ValueError):
    """A constructor or function argument is out of range (heads, temperature, dropout, ...)."""


class InputError(AttnLabError, ValueError):
    """User-level input is unusable: empty text, text longer than the model takes, an index out of range."""


class TooLongError(InputError):
    """A text has more tokens than the model (or ``max_length``) takes; ``n_tokens`` and ``limit`` say how many."""

    def __init__(self, message: str, n_tokens: int, limit: int) -> None:
        super().__init__(message)
        self.n_tokens, self.limit = n_tokens, limit


class SuiteError(InputError):
    """A behaviour suite is unusable: a malformed line, an unknown capability or test type, or a suite written for
    another kind of model (or other labels) than the one it is run on."""


class ModelLoadError(AttnLabError, ValueError):
    """A model folder is missing, is not a model, or cannot be loaded offline."""


class TraceFileError(AttnLabError, ValueError):
    """A trace file is missing, truncated, corrupt, or not an attnlab trace."""


class CaptureError(AttnLabError, RuntimeError):
    """Capturing attention failed: the model has no attention attnlab knows how to record."""


class MissingExtraError(AttnLabError, ImportError):
    """What was asked needs a library of an optional extra that is not installed; ``extra`` names it
    (``pip install 'attnlab[EXTRA]'`` installs it)."""

    def __init__(self, message: str, extra: str) -> None:
        super().__init__(message)
        self.extra = extra
