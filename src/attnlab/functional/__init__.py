"""Pure tensor functions: attention kernels and score functions.

Every kernel takes ``(..., heads, seq, dim)`` tensors ``q, k, v`` positionally, everything else by
keyword, and returns ``(output, weights_or_None)``.  Nothing here is an ``nn.Module``.  Layers pick a
kernel by name from :data:`KERNELS`; each entry is a :class:`Kernel`.
"""

from ..errors import ConfigError
from . import scores
from ._checks import resolve_mask
from ._kernel import Kernel
from .dense import attention, causal_mask, masked_softmax, merge_masks
from .linear import (
    efficient_attention,
    efficient_kernel,
    linear_attention,
    linear_kernel,
    linear_relu_kernel,
    orthogonal_random_features,
    performer_attention,
    performer_kernel,
)
from .local import bigbird_attention, local_attention, local_kernel
from .lsh import lsh_attention, lsh_kernel
from .memory_efficient import memory_efficient_attention, memory_efficient_kernel
from .stats import AttentionStats, attention_stats

# name -> kernel(q, k, v, *, mask=None, causal=False, scale=None, dropout=0.0, return_weights=...,
#                **options) -> (output, weights_or_None).  The efficient kernels never return weights
# (ConfigError when asked); see docs/efficient.md.  Options go per layer:
# MultiHeadAttention(..., kernel="local", kernel_options={"window": 64}).
KERNELS: dict[str, Kernel] = {
    "dense": attention,
    "memory_efficient": memory_efficient_kernel,
    "local": local_kernel,
    "linear": linear_kernel,
    "linear_relu": linear_relu_kernel,
    "performer": performer_kernel,
    "efficient": efficient_kernel,
    "lsh": lsh_kernel,
}


def get_kernel(name: str) -> Kernel:
    """The kernel registered under ``name`` (see :data:`KERNELS`)."""
    try:
        return KERNELS[name]
    except KeyError:
        raise ConfigError(f"unknown attention kernel {name!r}; choose one of {sorted(KERNELS)}") from None


__all__ = [
    "KERNELS",
    "AttentionStats",
    "Kernel",
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
    "resolve_mask",
    "scores",
]
