"""Pure tensor functions: attention kernels and score functions.

Every kernel takes ``(..., heads, seq, dim)`` tensors ``q, k, v`` positionally, everything else by
keyword, and returns ``(output, weights_or_None)``.  Nothing here is an ``nn.Module``.  Layers pick a
kernel by name from :data:`KERNELS`; each entry is a :class:`KernelSpec`: the kernel and what it can do
(weights, dropout, its options and their check), declared by :func:`register_kernel`.
"""

from . import scores
from ._checks import resolve_mask
from ._kernel import KERNELS, Kernel, KernelSpec, get_kernel, register_kernel
from .dense import attention, causal_mask, check_dense_options, masked_softmax, merge_masks
from .linear import (
    check_linear_options,
    check_performer_options,
    efficient_attention,
    efficient_kernel,
    linear_attention,
    linear_kernel,
    linear_relu_kernel,
    orthogonal_random_features,
    performer_attention,
    performer_kernel,
)
from .local import bigbird_attention, check_local_options, local_attention, local_kernel
from .lsh import check_lsh_options, lsh_attention, lsh_kernel
from .memory_efficient import check_memory_efficient_options, memory_efficient_attention, memory_efficient_kernel
from .stats import AttentionStats, attention_stats

# name -> kernel(q, k, v, *, mask=None, causal=False, scale=None, dropout=0.0, return_weights=...,
#                **options) -> (output, weights_or_None), with what it can do.  The efficient kernels never return
# weights nor drop them out (ConfigError when asked); see docs/efficient.md.  Options go per layer:
# MultiHeadAttention(..., kernel="local", kernel_options={"window": 64}).
register_kernel("dense", attention, weights=True, dropout=True, options=("temperature",), check=check_dense_options)
register_kernel("memory_efficient", memory_efficient_kernel, weights=False, dropout=True,
                options=("block_q", "block_k"), check=check_memory_efficient_options)
register_kernel("local", local_kernel, weights=False, dropout=False, options=("window", "dilation", "global_tokens"),
                check=check_local_options)
register_kernel("linear", linear_kernel, weights=False, dropout=False, options=("feature_map", "chunk"),
                check=check_linear_options)
register_kernel("linear_relu", linear_relu_kernel, weights=False, dropout=False, options=("chunk",),
                check=check_linear_options)
register_kernel("performer", performer_kernel, weights=False, dropout=False, options=("features", "seed", "chunk"),
                check=check_performer_options)
register_kernel("efficient", efficient_kernel, weights=False, dropout=False, options=())
register_kernel("lsh", lsh_kernel, weights=False, dropout=False,
                options=("n_buckets", "n_hashes", "chunk", "seed", "shared_qk", "dedup"), check=check_lsh_options)


__all__ = [
    "KERNELS",
    "AttentionStats",
    "Kernel",
    "KernelSpec",
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
    "register_kernel",
    "resolve_mask",
    "scores",
]
