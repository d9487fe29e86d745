"""Pure tensor functions: attention kernels and score functions.

Every kernel takes ``(..., heads, seq, dim)`` tensors and returns ``(output, weights_or_None)``.
Nothing here is an ``nn.Module``.  Layers pick a kernel by name from :data:`KERNELS`.
"""

from collections.abc import Callable
from typing import Any

from ..errors import ConfigError
from . import scores
from .dense import attention, causal_mask, masked_softmax, merge_masks

# name -> kernel(q, k, v, mask=None, causal=False, scale=None, dropout=0.0, return_weights=True)
#         -> (output, weights_or_None)
KERNELS: dict[str, Callable[..., Any]] = {"dense": attention}


def get_kernel(name: str) -> Callable[..., Any]:
    """The kernel registered under ``name`` (see :data:`KERNELS`)."""
    try:
        return KERNELS[name]
    except KeyError:
        raise ConfigError(f"unknown attention kernel {name!r}; choose one of {sorted(KERNELS)}") from None


__all__ = ["KERNELS", "attention", "causal_mask", "get_kernel", "masked_softmax", "merge_masks", "scores"]
