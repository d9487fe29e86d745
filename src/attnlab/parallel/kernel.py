"""The kernel ``"ring"`` that :class:`attnlab.MultiHeadAttention` takes: ring attention over the sequence of the
current :func:`~attnlab.parallel.sequence_parallel` context (alone, outside one: exact attention of the local
sequence, so the same model runs in one process and sharded)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from ..errors import ConfigError, MaskError
from ..functional import register_kernel
from ..functional.dense import keyless_output
from ..masks import Mask
from .ring import ALONE, ring_attention
from .sequence import current_shard

__all__ = ["ring_kernel"]


def _key_padding(mask: Tensor | Mask | None, q: Tensor) -> Tensor | None:
    """The layer's merged mask as a ``(B, n)`` key-padding mask, the only kind that shards with the keys."""
    if mask is None:
        return None
    if isinstance(mask, Tensor) and mask.dtype == torch.bool and mask.ndim == 4 and mask.shape[1:3] == (1, 1):
        return mask[:, 0, 0, :].expand(q.shape[0], -1)  # (B, n)
    got = f"a Mask predicate ({mask!r})" if isinstance(mask, Mask) else f"{mask.dtype} of shape {tuple(mask.shape)}"
    raise MaskError(f"kernel 'ring' takes a key-padding mask only (key_padding_mask=, (batch, n) bool, this rank's "
                    f"shard), got {got}; use causal=True for a causal mask, and a key padding mask for padding")


def ring_kernel(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    mask: Tensor | Mask | None = None,
    causal: bool = False,
    scale: float | None = None,
    dropout: float = 0.0,
    return_weights: bool = False,
    **options: Any,
) -> tuple[Tensor, None]:
    """``(ring_attention(q, k, v, ...), None)`` with the group, layout and length of the current
    :func:`~attnlab.parallel.sequence_parallel` context.  It never builds weights and has no dropout and no
    options (each raises :class:`~attnlab.errors.ConfigError`)."""
    if options:
        raise ConfigError(f"kernel 'ring' has no options, got {sorted(options)}; the layout, length and group come "
                          f"from attnlab.parallel.sequence_parallel(length, layout=..., group=...)")
    if return_weights or dropout:
        raise ConfigError(f"kernel 'ring' never builds the (L x S) weights, but return_weights={return_weights!r} / "
                          f"dropout={dropout!r} was asked (directly, by attnlab.capture, or by the layer's dropout); "
                          f"use kernel='dense' to capture weights, and dropout=0.0 on the layer")
    sp = current_shard()
    keys = _key_padding(mask, q)
    if sp is None and (q.shape[-2] == 0 or k.shape[-2] == 0):  # nothing to attend from, or to: zeros, as every kernel
        return keyless_output(q, k, v), None  # (..., L, Ev) zeros, in the graph of q, k, v
    if sp is None:
        out = ring_attention(q, k, v, causal=causal, scale=scale, mask=keys, group=ALONE)
    else:
        out = ring_attention(q, k, v, causal=causal, scale=scale, mask=keys, group=sp.group, layout=sp.layout,
                             length=sp.length)
    assert isinstance(out, Tensor)
    return out, None


# registered like every kernel (attnlab.functional.KERNELS), with what it can do declared: no weights, no dropout,
# no options (the layout, length and group come from the sequence_parallel context)
register_kernel("ring", ring_kernel, weights=False, dropout=False, options=())
