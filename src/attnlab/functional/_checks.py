"""The kernels' input checks, built from :mod:`attnlab._validate`; and the mask resolution, which stays here
because it needs :class:`attnlab.masks.Mask`.  Each failure names the argument, what it got, what it
needed, and the fix."""

from __future__ import annotations

import torch
from torch import Tensor

from .. import _validate as check
from ..errors import DeviceError, MaskError
from ..masks import Mask


def check_qkv(q: Tensor, k: Tensor, v: Tensor) -> None:
    """q ``(..., Lq, E)``, k ``(..., Lk, E)``, v ``(..., Lk, Ev)``: one dtype, one device."""
    check.qkv(q, k, v)


def check_options(scale: float | None, temperature: float, dropout: float) -> None:
    """scale (None or finite > 0), temperature (finite > 0), dropout in [0, 1)."""
    check.kernel_options(scale, temperature, dropout)


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
    check.instance("mask", mask, Tensor, "a torch.Tensor, an attnlab.masks.Mask or None",
                   "build a predicate with attnlab.masks or pass a bool tensor (True = may attend)", MaskError)
    if mask.dtype != torch.bool and not mask.dtype.is_floating_point:
        raise MaskError(
            f"mask must be bool (True = may attend) or floating (added to the scores), got {mask.dtype}; "
            f"for a 0/1 integer mask pass mask.bool()"
        )
    check.agree(("mask", "q"), [mask.device, q.device], "device", "move it with mask.to(q.device)", DeviceError)
    target = (*q.shape[:-2], lq, lk)
    if not check.broadcasts_to(mask.shape, target):
        raise MaskError(
            f"mask of shape {tuple(mask.shape)} does not broadcast to (..., q_len, k_len) = {target}; "
            f"a key-padding mask of shape (batch, k_len) needs mask[:, None, None, :]"
        )
    return mask
