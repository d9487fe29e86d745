"""Independent float64 references for the tests: plain loops-free math, written without attnlab."""

from __future__ import annotations

import math

import torch
from torch import Tensor


def attention_ref(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    causal: bool = False,
    scale: float | None = None,
    temperature: float = 1.0,
) -> tuple[Tensor, Tensor]:
    """Scaled dot-product attention in float64.  ``mask`` bool (True = keep) or float (added).
    Rows with no allowed key give zeros."""
    q, k, v = q.double(), k.double(), v.double()
    L, S = q.shape[-2], k.shape[-2]
    s = (scale if scale is not None else 1 / math.sqrt(q.shape[-1])) / temperature
    scores = torch.einsum("...le,...se->...ls", q, k) * s
    allowed = torch.ones(scores.shape, dtype=torch.bool)
    if mask is not None:
        if mask.dtype == torch.bool:
            allowed = allowed & mask
        else:
            scores = scores + mask.double()
            allowed = allowed & ~torch.isneginf(mask).expand_as(scores)
    if causal:
        i = torch.arange(L).view(-1, 1)
        j = torch.arange(S).view(1, -1)
        allowed = allowed & (j <= i + S - L)
    scores = scores.masked_fill(~allowed, -math.inf)
    w = torch.softmax(scores, dim=-1)
    w = torch.nan_to_num(w, nan=0.0)  # rows with no allowed key
    return torch.einsum("...ls,...sd->...ld", w, v), w


def plain_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, causal: bool = False) -> Tensor:
    """The naive computation done entirely in the inputs' dtype (the baseline of FlashAttention's rule)."""
    L, S = q.shape[-2], k.shape[-2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        keep = torch.arange(S).view(1, -1) <= torch.arange(L).view(-1, 1) + S - L
        mask = keep if mask is None else mask & keep
    if mask is not None:
        scores = scores.masked_fill(~mask, -math.inf)
    w = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
    return w @ v
