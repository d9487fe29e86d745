"""Input checks shared by every kernel.  Each failure names the argument, what it got, what it
needed, and the fix."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ..errors import ConfigError, DeviceError, DTypeError, MaskError, ShapeError
from ..masks import Mask

_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def check_qkv(q: Tensor, k: Tensor, v: Tensor) -> None:
    """q ``(..., Lq, E)``, k ``(..., Lk, E)``, v ``(..., Lk, Ev)``: one dtype, one device."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, Tensor):
            raise DTypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.ndim < 2:
            raise ShapeError(
                f"{name} must have shape (..., seq, dim) with at least 2 dims, got shape {tuple(t.shape)}; "
                f"add a sequence axis with {name}[None]"
            )
        if t.dtype not in _FLOATS:
            raise DTypeError(f"{name} must be a floating tensor (float16/bfloat16/float32/float64), got {t.dtype}")
    if not (q.dtype == k.dtype == v.dtype):
        raise DTypeError(
            f"q, k, v must share one dtype, got q={q.dtype}, k={k.dtype}, v={v.dtype}; cast them with .to(dtype)"
        )
    if not (q.device == k.device == v.device):
        raise DeviceError(
            f"q, k, v must be on one device, got q={q.device}, k={k.device}, v={v.device}; move them with .to(device)"
        )
    if not (q.ndim == k.ndim == v.ndim):
        raise ShapeError(
            f"q, k, v must have the same number of dims, got shapes {tuple(q.shape)}, {tuple(k.shape)}, "
            f"{tuple(v.shape)}; the layout is (batch, heads, seq, dim)"
        )
    if q.shape[:-2] != k.shape[:-2] or k.shape[:-2] != v.shape[:-2]:
        raise ShapeError(
            f"q, k, v must agree on the leading (batch, heads) dims, got {tuple(q.shape[:-2])}, "
            f"{tuple(k.shape[:-2])}, {tuple(v.shape[:-2])}"
        )
    if q.shape[-1] != k.shape[-1]:
        raise ShapeError(
            f"q and k must have the same feature size (last dim), got q {q.shape[-1]} and k {k.shape[-1]}; "
            f"d_k must match, only d_v may differ"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ShapeError(
            f"k and v must have the same sequence length (dim -2), got k {k.shape[-2]} and v {v.shape[-2]}"
        )


def check_options(scale: float | None, temperature: float, dropout: float) -> None:
    if scale is not None and (not isinstance(scale, (int, float)) or not math.isfinite(scale) or scale <= 0):
        raise ConfigError(f"scale must be a finite number > 0 or None (for 1/sqrt(d_k)), got {scale!r}")
    if not isinstance(temperature, (int, float)) or not math.isfinite(temperature) or temperature <= 0:
        raise ConfigError(
            f"temperature must be a finite number > 0, got {temperature!r}; "
            f"tau < 1 sharpens the weights, tau > 1 flattens them, 1.0 leaves them as they are"
        )
    if not isinstance(dropout, (int, float)) or not 0.0 <= dropout < 1.0:
        raise ConfigError(f"dropout must be in [0, 1), got {dropout!r}")


def predicate_block(mask: Mask, q: Tensor, k: Tensor, q0: int, q1: int, k0: int, k1: int) -> Tensor:
    """The predicate ``mask`` on the block ``[q0, q1) x [k0, k1)`` of the ``q``/``k`` problem, with as many
    dims as the inputs have (they may be ``(L, E)`` or ``(H, L, E)``): ``(B|1, 1, q1 - q0, k1 - k0)`` at most."""
    batch = q.shape[0] if q.ndim >= 3 and mask.batch_size is not None else None
    m = mask.block(q.shape[-2], k.shape[-2], q0, q1, k0, k1, batch=batch, device=q.device)
    while m.ndim > max(q.ndim, 2) and m.shape[0] == 1:  # drop the leading dims the inputs do not have
        m = m[0]
    return m


def resolve_mask(mask: Tensor | Mask | None, q: Tensor, k: Tensor) -> Tensor | None:
    """Turn ``mask`` into a tensor that broadcasts to ``q.shape[:-2] + (Lq, Lk)``:
    bool (True = may attend) or floating (added to the scores)."""
    if mask is None:
        return None
    lq, lk = q.shape[-2], k.shape[-2]
    if isinstance(mask, Mask):
        return predicate_block(mask, q, k, 0, lq, 0, lk)
    if not isinstance(mask, Tensor):
        raise MaskError(f"mask must be a torch.Tensor, an attnlab.masks.Mask or None, got {type(mask).__name__}")
    if mask.dtype != torch.bool and not mask.dtype.is_floating_point:
        raise MaskError(
            f"mask must be bool (True = may attend) or floating (added to the scores), got {mask.dtype}; "
            f"for a 0/1 integer mask pass mask.bool()"
        )
    if mask.device != q.device:
        raise DeviceError(f"mask is on {mask.device} but q is on {q.device}; move it with mask.to(q.device)")
    target = (*q.shape[:-2], lq, lk)
    try:
        fits = torch.broadcast_shapes(mask.shape, target) == torch.Size(target)
    except RuntimeError:
        fits = False
    if not fits:
        raise MaskError(
            f"mask of shape {tuple(mask.shape)} does not broadcast to (..., q_len, k_len) = {target}; "
            f"a key-padding mask of shape (batch, k_len) needs mask[:, None, None, :]"
        )
    return mask
