"""Rotary position embedding (RoPE; Su et al., 2021, "RoFormer"): positions as rotations of queries and keys.

Letters: L positions, D the last (feature) dim, even.

Feature pairs ``(x[2i], x[2i+1])`` of the vector at position ``p`` are rotated by the angle ``p * theta_i`` with
``theta_i = base ** (-2i / D)``.  A rotation by ``p`` then one by ``-s`` is a rotation by ``p - s``, so the score
``(R_p q) . (R_s k) = q . (R_{s-p} k)`` depends on the positions only through their difference: relative
positions, with no table to learn and no length limit.  Rotate the queries and the keys (never the values),
after their projections and before the kernel; every registered kernel takes q and k, so it applies to all of
them, with the caveats in :func:`apply_rotary`.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .. import _validate as check
from ..errors import ShapeError

__all__ = ["ROTARY_BASE", "apply_rotary", "rotary_angles"]

ROTARY_BASE = 10000.0  # the paper's (and Vaswani et al.'s sinusoids') base


def rotary_angles(length: int, dim: int, *, offset: int = 0, base: float = ROTARY_BASE,
                  device: torch.device | None = None, positions: Tensor | None = None) -> Tensor:
    """The angles ``(offset + p) * base ** (-2i / dim)`` in float64: ``(length, dim // 2)``; with ``positions``
    ``(length,)`` given, ``positions[p] * base ** (-2i / dim)``."""
    position = (torch.arange(offset, offset + length, dtype=torch.float64, device=device) if positions is None
                else positions.to(device=device, dtype=torch.float64))  # (L,)
    rate = base ** (-torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim)  # (D/2,)
    return position[:, None] * rate[None, :]  # (L, D/2)


def apply_rotary(x: Tensor, *, offset: int = 0, base: float = ROTARY_BASE, positions: Tensor | None = None) -> Tensor:
    """``x`` ``(..., L, D)`` with the vector at position ``offset + p`` rotated pairwise by ``(offset + p) theta``.

    ``offset`` is the position of ``x[..., 0, :]`` (the length of a key/value cache when decoding); ``positions``
    ``(L,)``, when given, are the rows' positions instead (a sequence sharded across ranks, whose rows need not be
    consecutive: :meth:`attnlab.parallel.SequenceShard.positions`).  The angles
    are computed in float64 and the rotation in float32 at least (float64 input stays float64); the result has
    ``x``'s dtype.

    With softmax kernels (``dense``, ``memory_efficient``, ``local``, ``lsh``) the scores then depend on the
    positions only through ``i - j``, exactly.  The linear kernels (``linear``, ``linear_relu``, ``efficient``)
    apply their feature maps to the rotated vectors, which keeps position information but not that exact
    property; ``performer``'s random features estimate ``exp(q_i . k_j)`` of the rotated vectors, so it holds
    for the estimated kernel only in expectation.
    """
    check.tensor("x", x, "(..., length, dim)")
    check.ndim("x", x, 2, "(..., length, dim)", at_least=True)
    check.floating("x", x)
    check.integer("offset", offset, fix="the position of the first row, e.g. the length of a KV cache")
    d = x.shape[-1]
    if d % 2:
        raise ShapeError(f"rotary positions rotate pairs of features, so the last dim must be even, got {d} "
                         f"(x of shape {tuple(x.shape)}); use an even per-head size d_k")
    work = torch.promote_types(x.dtype, torch.float32)
    if positions is not None and tuple(positions.shape) != (x.shape[-2],):
        raise ShapeError(f"positions must hold one position per row, ({x.shape[-2]},), got shape "
                         f"{tuple(positions.shape)}; pass the positions of x's rows")
    angles = rotary_angles(x.shape[-2], d, offset=offset, base=base, device=x.device, positions=positions)  # (L, D/2)
    cos, sin = angles.cos().to(work), angles.sin().to(work)  # (L, D/2) each
    # pair (a, b) -> (a cos - b sin, b cos + a sin), written as x * [cos, cos] + swapped(x) * [-sin, sin]: the same
    # products and sums, so the same bits as rotating the even and odd features apart, in the forward and the backward
    # (each gradient is a sum of two terms either way), without the strided slices whose backward fills zeros
    cos2 = cos.repeat_interleave(2, dim=-1)  # (L, D): cos_i on both features of pair i
    sin2 = torch.stack((-sin, sin), dim=-1).flatten(-2)  # (L, D): -sin_i on the first feature, sin_i on the second
    xw = x.to(work)
    swapped = xw.unflatten(-1, (d // 2, 2)).flip(-1).flatten(-2)  # (..., L, D): (b, a) in place of each (a, b)
    return (xw * cos2 + swapped * sin2).to(x.dtype)  # (..., L, D)
