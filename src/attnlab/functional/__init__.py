"""Pure tensor functions: attention kernels and score functions.

Every kernel takes ``(..., heads, seq, dim)`` tensors and returns ``(output, weights_or_None)``.
Nothing here is an ``nn.Module``.  Layers pick a kernel by name from :data:`KERNELS`.
"""

from collections.abc import Callable
from functools import partial
from typing import Any

from ..errors import ConfigError
from . import scores
from .dense import attention, causal_mask, masked_softmax, merge_masks
from .linear import (
    efficient_attention,
    efficient_kernel,
    linear_attention,
    linear_kernel,
    orthogonal_random_features,
    performer_attention,
    performer_kernel,
)
from .local import bigbird_attention, local_attention, local_kernel
from .lsh import lsh_attention, lsh_kernel
from .memory_efficient import memory_efficient_attention, memory_efficient_kernel
from .stats import AttentionStats, attention_stats

# name -> kernel(q, k, v, mask=None, causal=False, scale=None, dropout=0.0, return_weights=True)
#         -> (output, weights_or_None)
KERNELS: dict[str, Callable[..., Any]] = {"dense": attention}
# The efficient kernels never return weights (ConfigError when asked); see docs/efficient.md.
KERNELS.update(
    memory_efficient=memory_efficient_kernel,
    local=local_kernel,
    linear=linear_kernel,
    linear_relu=partial(linear_kernel, feature_map="relu"),
    performer=performer_kernel,
    efficient=efficient_kernel,
    lsh=lsh_kernel,
)


def get_kernel(name: str) -> Callable[..., Any]:
    """The kernel registered under ``name`` (see :data:`KERNELS`)."""
    try:
        return KERNELS[name]
    except KeyError:
        raise ConfigError(f"unknown attention kernel {name!r}; choose one of {sorted(KERNELS)}") from None


__all__ = [
    "KERNELS",
    "AttentionStats",
    "attention",
    "attention_stats",
    "bigbird_attention",
    "causal_mask",
    "efficient_attention",
    "get_kernel",
    "linear_attention",
    "local_attention",
    "lsh_attention",
    "masked_softmax",
    "memory_efficient_attention",
    "merge_masks",
    "orthogonal_random_features",
    "performer_attention",
    "scores",
]
