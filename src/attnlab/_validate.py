"""Checks shared across attnlab: configuration values and the tensors a call receives.

Each failure raises an :mod:`attnlab.errors` type whose message names the argument, says what it got,
what it needed, and the fix.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from .errors import ConfigError, DTypeError, MaskError, ShapeError


def positive_int(name: str, value: object, *, optional: bool = False) -> None:
    """``value`` must be an int >= 1 (or None when ``optional``)."""
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        extra = " or None for the default" if optional else ""
        raise ConfigError(f"{name} must be a positive int{extra}, got {value!r}")


def probability(name: str, value: object) -> None:
    """``value`` must be a number in ``[0, 1)`` (a dropout probability)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
        raise ConfigError(f"{name} must be a number in [0, 1), got {value!r}; use 0.0 for no dropout")


def one_of(name: str, value: object, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ConfigError(f"{name} must be one of {choices}, got {value!r}")


def positive_float(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{name} must be a finite number > 0, got {value!r}")


def features(name: str, t: object, ndim: int, size: int, layout: str, like: Tensor | None = None) -> None:
    """``t`` is a floating tensor with ``ndim`` dims whose last is ``size``; with ``like``, it shares
    that tensor's dtype (the layer's parameters)."""
    if not isinstance(t, Tensor):
        raise DTypeError(f"{name} must be a torch.Tensor of shape {layout}, got {type(t).__name__}")
    if t.ndim != ndim or t.shape[-1] != size:
        hint = f"; for one sequence use {name}[None]" if t.ndim == ndim - 1 else ""
        raise ShapeError(f"{name} must have shape {layout} with last dim {size}, got shape {tuple(t.shape)}{hint}")
    if like is not None and t.dtype != like.dtype:
        raise DTypeError(
            f"{name} has dtype {t.dtype} but the layer's parameters are {like.dtype}; "
            f"cast the input ({name}.to({like.dtype})) or the layer (layer.to({t.dtype}))"
        )


def same_batch(names: tuple[str, ...], tensors: tuple[Tensor, ...]) -> None:
    sizes = [t.shape[0] for t in tensors]
    if len(set(sizes)) > 1:
        got = ", ".join(f"{n} {s}" for n, s in zip(names, sizes, strict=True))
        raise ShapeError(f"{', '.join(names[:-1])} and {names[-1]} must share the batch size (dim 0), got {got}")


def key_padding(key_padding_mask: object, batch: int, k_len: int, name: str = "key_padding_mask") -> Tensor:
    """A ``(batch, k_len)`` boolean tensor, True = real token; 0/1 integers are accepted."""
    if not isinstance(key_padding_mask, Tensor):
        raise MaskError(f"{name} must be a bool tensor (batch, k_len), got {type(key_padding_mask).__name__}")
    if key_padding_mask.dtype.is_floating_point or key_padding_mask.is_complex():
        raise MaskError(
            f"{name} must be bool (True = real token), got {key_padding_mask.dtype}; "
            f"pass an additive float mask as mask=... instead"
        )
    if tuple(key_padding_mask.shape) != (batch, k_len):
        raise MaskError(
            f"{name} must have shape (batch, k_len) = {(batch, k_len)}, got {tuple(key_padding_mask.shape)}; "
            f"with a cache, it covers every key: the cached ones and the new ones"
        )
    return key_padding_mask.to(torch.bool)
