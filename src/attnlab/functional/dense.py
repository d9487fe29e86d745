"""Exact dense attention: the readable reference path and the fused fast path.

Letters: B batch, H heads, L query length, S key length, E query/key features, Ev value features.
Kernels take ``(..., L, E)`` queries, ``(..., S, E)`` keys and ``(..., S, Ev)`` values and return
``(output, weights_or_None)``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from ..masks import Mask
from ._checks import check_options, check_qkv, resolve_mask
from ._kernel import reject_options

__all__ = [
    "attention",
    "causal_mask",
    "finite_or_zero",
    "keyless_output",
    "log_normaliser",
    "masked_softmax",
    "merge_masks",
    "work_dtype",
]


def work_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype every kernel computes its softmax statistics in: float32 for half and single
    precision inputs, float64 for float64."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def finite_or_zero(row_max: Tensor) -> Tensor:
    """A softmax shift that is safe on rows with no allowed key: the row maximum, or 0 where it is
    ``-inf`` (then ``exp(-inf - 0) = 0`` instead of ``exp(-inf + inf) = NaN``)."""
    return torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))


def keyless_output(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """Zeros ``(..., L, Ev)``, the output of queries that see no key, in the dtype of ``q``.  Built as
    ``(q k[:0]^T) v[:0]`` (no work) so that it stays in the autograd graph of ``q, k, v``: a loss on an
    empty or keyless output back-propagates zeros instead of failing."""
    return torch.matmul(torch.matmul(q, k[..., :0, :].transpose(-2, -1)), v[..., :0, :])  # (..., L, 0) @ (..., 0, Ev)


def log_normaliser(shift: Tensor, total: Tensor) -> tuple[Tensor, Tensor]:
    """From a finite ``shift`` and ``total = sum exp(s - shift)`` over a row: the row's log-sum-exp
    (``-inf`` where ``total == 0``, a row with no allowed key) and ``total`` with 0 replaced by 1, the
    safe divisor."""
    has = total > 0
    divisor = torch.where(has, total, torch.ones_like(total))
    return torch.where(has, shift + torch.log(divisor), torch.full_like(total, float("-inf"))), divisor


def masked_softmax(scores: Tensor, mask: Tensor | None = None) -> Tensor:
    """Softmax over the last dim, safe on rows where no key is allowed.

    ``mask`` is bool (True = keep) or floating (added).  Statistics run in at least float32 and the
    result has that dtype.  A row whose every entry is masked (or ``-inf``) gets weights of zeros,
    not NaN, and its gradient is zero too: the row maximum is replaced by 0 where it is not finite,
    and the normaliser by 1 where it is 0.
    """
    s = scores.to(work_dtype(scores.dtype))
    if s.shape[-1] == 0:  # no key at all: amax has nothing to reduce
        return s.new_zeros(s.shape)
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask.to(s.dtype)
    row_max = finite_or_zero(s.amax(dim=-1, keepdim=True).detach())  # (..., L, 1); cancels in the gradient
    e = torch.exp(s - row_max)  # (..., L, S)
    z = e.sum(dim=-1, keepdim=True)  # (..., L, 1)
    return e / torch.where(z > 0, z, torch.ones_like(z))


def causal_mask(q_len: int, k_len: int, device: torch.device | str | None = None) -> Tensor:
    """Bool ``(L, S)``: query ``i`` may see keys ``j <= i + S - L`` (bottom-right aligned)."""
    i = torch.arange(q_len, device=device).unsqueeze(-1)  # (L, 1)
    j = torch.arange(k_len, device=device)  # (S,)
    return j <= i + (k_len - q_len)


def merge_masks(mask: Tensor | None, extra: Tensor) -> Tensor:
    """Combine a user mask (bool or additive float) with an extra boolean mask."""
    if mask is None:
        return extra
    if mask.dtype == torch.bool:
        return mask & extra
    return mask.masked_fill(~extra, float("-inf"))


def check_dense_options(options: Mapping[str, Any]) -> None:
    """The values of kernel ``"dense"``'s options (its ``temperature``), as :func:`attention` checks them."""
    check_options(None, options.get("temperature", 1.0), 0.0)


def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    mask: Tensor | Mask | None = None,
    causal: bool = False,
    scale: float | None = None,
    temperature: float = 1.0,
    dropout: float = 0.0,
    return_weights: bool = True,
    **options: Any,
) -> tuple[Tensor, Tensor | None]:
    r"""Exact scaled dot-product attention, :math:`\mathrm{softmax}(QK^\top \cdot s / \tau + M)\,V`.

    Args:
        q: queries ``(..., L, E)``, usually ``(batch, heads, L, E)``.
        k: keys ``(..., S, E)``; ``S`` may differ from ``L``.
        v: values ``(..., S, Ev)``; ``Ev`` may differ from ``E``.
        mask: bool (**True = may attend**), floating (added to the scores), or an
            :class:`attnlab.masks.Mask`; broadcasts to ``(..., L, S)``.
        causal: query ``i`` sees keys ``j <= i + S - L``.  When ``L != S`` this is **bottom-right**
            alignment (the last query sees every key), as for decoding with a key/value cache.
        scale: ``s``; ``None`` means ``1 / sqrt(E)``.  The scaling keeps the scores' variance near 1
            when q and k have unit-variance entries, so the softmax does not saturate.
        temperature: ``tau > 0`` divides the scaled scores: ``tau < 1`` sharpens, ``tau > 1`` flattens.
        dropout: probability of zeroing a weight (the kept ones are rescaled).  Pass 0 in evaluation;
            layers do this for you.
        return_weights: also return the weights ``(..., L, S)``.  When False the call goes to
            :func:`torch.nn.functional.scaled_dot_product_attention` (fused, no ``L x S`` matrix kept
            for the caller).
        options: this function is the registered kernel ``"dense"`` (a :class:`attnlab.functional.Kernel`),
            whose only option is ``temperature``; any other keyword raises :class:`~attnlab.errors.ConfigError`.

    Everything after ``v`` is keyword-only, as in :func:`torch.nn.functional.scaled_dot_product_attention`.

    Returns:
        ``(output, weights)``: output ``(..., L, Ev)`` in the input dtype; weights in the input dtype
        (the weights actually applied, dropout included), or None.  A query with no allowed key gets
        an output of zeros and weights of zeros, never NaN, in the forward and the backward.

    Half-precision inputs are upcast for the scores and the softmax, whose statistics accumulate in
    float32.
    """
    reject_options("dense", options, ("temperature",))
    check_qkv(q, k, v)
    check_options(scale, temperature, dropout)
    m = resolve_mask(mask, q, k)
    L, S = q.shape[-2], k.shape[-2]
    s = (scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])) / temperature
    if causal:
        if not (return_weights or m is not None or L != S):
            # Fused path with the kernel's own causal mask (top-left == bottom-right when L == S).
            out = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout, is_causal=True, scale=s)
            return out, None
        m = merge_masks(m, causal_mask(L, S, q.device))

    if not return_weights:
        keep = None
        if m is not None:
            keep = m.any(dim=-1, keepdim=True) if m.dtype == torch.bool else ~torch.isneginf(m).all(-1, True)
            if bool(keep.all()):
                keep = None
            else:
                # Fused kernels give NaN on rows with no allowed key, in the forward and the backward:
                # open those rows, compute, then zero their output (the where() also stops their gradient).
                m = m | ~keep if m.dtype == torch.bool else m.masked_fill(~keep, 0.0)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=m, dropout_p=dropout, scale=s)
        if keep is not None:
            out = torch.where(keep, out, torch.zeros((), dtype=out.dtype, device=out.device))
        return out, None

    # The readable path: scores -> masked softmax -> weighted sum of values.
    work = work_dtype(q.dtype)
    scores = torch.matmul(q.to(work), k.to(work).transpose(-2, -1)) * s  # (..., L, S)
    weights = masked_softmax(scores, m)  # (..., L, S), float32/64
    if dropout > 0.0:
        weights = F.dropout(weights, p=dropout)
    out = torch.matmul(weights, v.to(work))  # (..., L, Ev)
    return out.to(q.dtype), weights.to(q.dtype)
