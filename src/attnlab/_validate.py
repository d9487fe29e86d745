"""The one place where attnlab checks what it is given: numbers, choices, flags and tensors (the checks of plain
values live in :mod:`attnlab._checks`, which imports no torch, and are re-exported here).

Every module (masks, kernels, layers, their configs) builds its checks from these primitives, so one
rule holds everywhere: an int is never a bool, a probability is in ``[0, 1)``, a size is an int >= 1.
Each failure raises an :mod:`attnlab.errors` type whose message names the argument, says what it got,
what it needed, and the fix.  Every check returns the value it checked (converted where it says so).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import torch
from torch import Tensor

from ._checks import (
    boolean,
    got,
    instance,
    integer,
    non_negative_int,
    one_of,
    positive_float,
    positive_int,
    probability,
    share,
    window,
)
from .errors import AttnLabError, ConfigError, DeviceError, DTypeError, MaskError, ShapeError

# the checks of plain values come from attnlab._checks (torch-free) and are re-exported: every module calls them
# through here
__all__ = ["FLOATS", "agree", "boolean", "boolean_tensor", "broadcasts_to", "features", "floating", "got",
           "indices", "instance", "integer", "kernel_options", "key_padding", "ndim", "non_negative_int",
           "one_of", "positive_float", "positive_int", "probability", "qkv", "same_batch", "share", "tensor",
           "window"]

T = TypeVar("T")

FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


_INTS = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)


def _as_ints(value: Any) -> Tensor | None:
    """``value`` as a flat int64 tensor, or None when it is not a sequence/tensor of ints."""
    try:
        t = value if isinstance(value, Tensor) else torch.as_tensor(value)
    except (TypeError, ValueError, RuntimeError):
        return None
    if t.numel() and t.dtype not in _INTS:  # bools and floats are not positions
        return None
    return t.flatten().long()


def indices(name: str, value: Any, *, below: int | None = None, nonempty: bool = False) -> Tensor:
    """A sequence or tensor of ints >= 0 (and < ``below``) as a flat ``int64`` tensor."""
    flat = _as_ints(value)
    ok = flat is not None and (flat.numel() > 0 or not nonempty)
    if ok and flat is not None and flat.numel():
        ok = int(flat.min()) >= 0 and (below is None or int(flat.max()) < below)
    if not ok or flat is None:
        shown = value.tolist() if isinstance(value, Tensor) and value.numel() <= 16 else got(value)
        span = f"in [0, {below})" if below is not None else ">= 0"
        need = "a non-empty list" if nonempty else "a list"
        raise ConfigError(f"{name} must be {need} of ints {span}, got {shown}; e.g. {name}=[0]")
    return flat


# --- tensors -------------------------------------------------------------------------------------


def tensor(name: str, t: Any, layout: str) -> Tensor:
    """``t`` is a ``torch.Tensor`` (of the shape ``layout``, for the message)."""
    if not isinstance(t, Tensor):
        raise DTypeError(f"{name} must be a torch.Tensor of shape {layout}, got {type(t).__name__}; "
                         f"convert it with torch.as_tensor({name})")
    return t


def ndim(name: str, t: Tensor, n: int, layout: str, *, at_least: bool = False,
         error: type[AttnLabError] = ShapeError) -> Tensor:
    """``t`` has ``n`` dims (at least ``n`` when ``at_least``)."""
    if t.ndim < n if at_least else t.ndim != n:
        hint = f"; for one sequence use {name}[None]" if t.ndim == n - 1 else ""
        need = f"at least {n} dims" if at_least else f"{n} dims"
        raise error(f"{name} must have shape {layout} ({need}), got shape {tuple(t.shape)}{hint}")
    return t


def floating(name: str, t: Tensor) -> Tensor:
    """``t`` is float16, bfloat16, float32 or float64."""
    if t.dtype not in FLOATS:
        raise DTypeError(f"{name} must be a floating tensor (float16/bfloat16/float32/float64), got {t.dtype}; "
                         f"cast it with {name}.float()")
    return t


def boolean_tensor(name: str, t: Tensor, meaning: str, fix: str, error: type[AttnLabError] = MaskError) -> Tensor:
    """``t`` is bool or 0/1 integers (``meaning`` says what True is); returned as bool."""
    if t.dtype.is_floating_point or t.is_complex():
        raise error(f"{name} must be bool ({meaning}) or 0/1 integers, got {t.dtype}; {fix}")
    return t.to(torch.bool)


def broadcasts_to(shape: Sequence[int], target: Sequence[int]) -> bool:
    """Whether a tensor of ``shape`` broadcasts to exactly ``target``: ``torch.broadcast_shapes(shape, target) ==
    target`` without its cost (its first call imports torch's symbolic shapes and sympy: half a second of a cold
    CLI run)."""
    pairs = zip(reversed(shape), reversed(target), strict=False)  # right-aligned; target may have more dims
    return len(shape) <= len(target) and all(s in (1, t) for s, t in pairs)


def agree(names: Sequence[str], values: Sequence[Any], what: str, fix: str,
          error: type[AttnLabError] = ShapeError) -> None:
    """The tensors named ``names`` agree on ``what`` (their ``values``)."""
    if any(v != values[0] for v in values[1:]):
        got_ = ", ".join(f"{n} {v}" for n, v in zip(names, values, strict=True))
        raise error(f"{', '.join(names[:-1])} and {names[-1]} must have the same {what}, got {got_}; {fix}")


def features(name: str, t: object, ndim_: int, size: int, layout: str, like: Tensor | None = None) -> None:
    """``t`` is a tensor with ``ndim_`` dims whose last is ``size``; with ``like``, it shares that tensor's
    dtype (the layer's parameters)."""
    x = ndim(name, tensor(name, t, layout), ndim_, layout)
    if x.shape[-1] != size:
        raise ShapeError(f"{name} must have shape {layout} with last dim {size}, got shape {tuple(x.shape)}; "
                         f"project it to {size} features or build the layer for {x.shape[-1]}")
    if like is not None and x.dtype != like.dtype:
        raise DTypeError(
            f"{name} has dtype {x.dtype} but the layer's parameters are {like.dtype}; "
            f"cast the input ({name}.to({like.dtype})) or the layer (layer.to({x.dtype}))"
        )


def same_batch(names: tuple[str, ...], tensors: tuple[Tensor, ...]) -> None:
    agree(names, [t.shape[0] for t in tensors], "batch size (dim 0)", "pass one batch of sequences to all of them")


def key_padding(key_padding_mask: object, batch: int, k_len: int, name: str = "key_padding_mask") -> Tensor:
    """A ``(batch, k_len)`` boolean tensor, True = real token; 0/1 integers are accepted."""
    if not isinstance(key_padding_mask, Tensor):
        raise MaskError(f"{name} must be a bool tensor (batch, k_len), got {type(key_padding_mask).__name__}; "
                        f"build one with torch.as_tensor(..., dtype=torch.bool)")
    kpm = boolean_tensor(name, key_padding_mask, "True = real token", "pass an additive float mask as mask=... instead")
    if tuple(kpm.shape) != (batch, k_len):
        raise MaskError(
            f"{name} must have shape (batch, k_len) = {(batch, k_len)}, got {tuple(kpm.shape)}; "
            f"with a cache, it covers every key: the cached ones and the new ones"
        )
    return kpm


# --- the kernels' inputs -------------------------------------------------------------------------


def qkv(q: Tensor, k: Tensor, v: Tensor) -> None:
    """q ``(..., Lq, E)``, k ``(..., Lk, E)``, v ``(..., Lk, Ev)``: floating, one dtype, one device."""
    names = ("q", "k", "v")
    for name, t in zip(names, (q, k, v), strict=True):
        floating(name, ndim(name, tensor(name, t, "(..., seq, dim)"), 2, "(..., seq, dim)", at_least=True))
    agree(names, [q.dtype, k.dtype, v.dtype], "dtype", "cast them with .to(dtype)", DTypeError)
    agree(names, [q.device, k.device, v.device], "device", "move them with .to(device)", DeviceError)
    agree(names, [q.ndim, k.ndim, v.ndim], "number of dims", "the layout is (batch, heads, seq, dim)")
    agree(names, [tuple(t.shape[:-2]) for t in (q, k, v)], "leading (batch, heads) dims",
          "the layout is (batch, heads, seq, dim); expand or repeat the one that differs")
    agree(("q", "k"), [q.shape[-1], k.shape[-1]], "feature size (last dim)", "d_k must match, only d_v may differ")
    agree(("k", "v"), [k.shape[-2], v.shape[-2]], "sequence length (dim -2)", "every key needs one value")


def kernel_options(scale: Any, temperature: Any, dropout: Any) -> None:
    """The numeric options every kernel takes."""
    positive_float("scale", scale, optional=True, fix="None means 1/sqrt(d_k)")
    positive_float("temperature", temperature,
                   fix="tau < 1 sharpens the weights, tau > 1 flattens them, 1.0 leaves them as they are")
    probability("dropout", dropout)
