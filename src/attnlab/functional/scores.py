"""Score functions: how well each query matches each key, before the softmax.

All return ``(..., L, S)`` scores for queries ``(..., L, Eq)`` and keys ``(..., S, Ek)`` (Luong's
*location* score looks at the query alone and takes the number of keys ``S`` instead of the keys).
The layers (:class:`attnlab.LuongAttention`, :class:`attnlab.BahdanauAttention`, multi-head
attention) feed these to :func:`attnlab.functional.masked_softmax`.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ..errors import ShapeError

__all__ = ["additive", "additive_projected", "dot", "general", "location", "scaled_dot"]


def _need_last(name: str, t: Tensor, size: int, what: str) -> None:
    if t.shape[-1] != size:
        raise ShapeError(f"{name} must have last dim {size} ({what}), got shape {tuple(t.shape)}")


def dot(q: Tensor, k: Tensor) -> Tensor:
    """Luong's *dot*: ``q . k``.  Needs ``Eq == Ek``."""
    _need_last("k", k, q.shape[-1], "the query's feature size")
    return torch.matmul(q, k.transpose(-2, -1))  # (..., L, S)


def scaled_dot(q: Tensor, k: Tensor, scale: float | None = None) -> Tensor:
    """The Transformer's score ``q . k / sqrt(E)`` (or ``* scale``)."""
    s = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    return dot(q, k) * s


def general(q: Tensor, k: Tensor, weight: Tensor) -> Tensor:
    """Luong's *general* (bilinear): ``q^T W k`` with ``weight`` of shape ``(Eq, Ek)``."""
    if weight.ndim != 2:
        raise ShapeError(f"weight must be (Eq, Ek), got shape {tuple(weight.shape)}")
    _need_last("q", q, weight.shape[0], "weight.shape[0]")
    _need_last("k", k, weight.shape[1], "weight.shape[1]")
    return torch.matmul(torch.matmul(q, weight), k.transpose(-2, -1))  # (..., L, S)


def additive(q: Tensor, k: Tensor, w_q: Tensor, w_k: Tensor, v: Tensor, bias: Tensor | None = None) -> Tensor:
    """Bahdanau's additive (Luong's *concat*) score ``v^T tanh(W_q q + W_k k + b)``.

    ``w_q`` is ``(A, Eq)``, ``w_k`` is ``(A, Ek)``, ``v`` is ``(A,)`` and ``bias`` ``(A,)``: the same
    as concatenating ``[q; k]`` and applying ``W = [W_q W_k]``.  Memory is ``(..., L, S, A)``.
    """
    if w_q.ndim != 2 or w_k.ndim != 2 or v.ndim != 1:
        raise ShapeError(
            f"additive needs w_q (A, Eq), w_k (A, Ek), v (A,), got {tuple(w_q.shape)}, {tuple(w_k.shape)}, "
            f"{tuple(v.shape)}"
        )
    if not (w_q.shape[0] == w_k.shape[0] == v.shape[0]):
        raise ShapeError(
            f"w_q, w_k and v must share the attention size A, got {w_q.shape[0]}, {w_k.shape[0]}, {v.shape[0]}"
        )
    _need_last("q", q, w_q.shape[1], "w_q.shape[1]")
    _need_last("k", k, w_k.shape[1], "w_k.shape[1]")
    return additive_projected(torch.matmul(q, w_q.t()), torch.matmul(k, w_k.t()), v, bias)


def additive_projected(pq: Tensor, pk: Tensor, v: Tensor, bias: Tensor | None = None) -> Tensor:
    """:func:`additive` from the projections ``pq = W_q q`` ``(..., L, A)`` and ``pk = W_k k`` ``(..., S, A)``.

    A decoder scores one query per step against the same keys: it projects them once and passes ``pk``."""
    if v.ndim != 1 or pq.shape[-1] != v.shape[0] or pk.shape[-1] != v.shape[0]:
        raise ShapeError(f"additive_projected needs pq (..., L, A), pk (..., S, A) and v (A,), got "
                         f"{tuple(pq.shape)}, {tuple(pk.shape)}, {tuple(v.shape)}")
    h = pq.unsqueeze(-2) + pk.unsqueeze(-3)  # (..., L, 1, A) + (..., 1, S, A) = (..., L, S, A)
    h = h if bias is None else h + bias
    return torch.matmul(torch.tanh(h), v)  # (..., L, S)


def location(q: Tensor, weight: Tensor, k_len: int) -> Tensor:
    """Luong's *location* score (Luong et al., 2015, section 3.1): ``a_t = softmax(W_a h_t)``.

    The query alone is scored, once per source *position*: ``weight`` is ``(S_max, Eq)``, one row per
    position up to the longest source it was built for, and the scores of a source of ``k_len <= S_max``
    positions are the first ``k_len`` entries of ``W_a q``: ``(..., L, k_len)``.
    """
    if weight.ndim != 2:
        raise ShapeError(f"weight must be (max_source_length, Eq), got shape {tuple(weight.shape)}")
    _need_last("q", q, weight.shape[1], "weight.shape[1]")
    if k_len > weight.shape[0]:
        raise ShapeError(
            f"the location score knows {weight.shape[0]} source positions (weight has {weight.shape[0]} rows) but "
            f"the source has {k_len}; shorten the source or build the layer with a larger max_length"
        )
    return torch.matmul(q, weight[:k_len].t())  # (..., L, S)
