"""What the registered efficient kernels share: refusing what they cannot give."""

from __future__ import annotations

from ..errors import ConfigError


def refuse(name: str, return_weights: bool, dropout: float, *, dropout_ok: bool = False) -> None:
    """Raise a ConfigError when a kernel that never builds the ``L x S`` weights is asked for them (or
    for dropout on them, which needs them)."""
    if return_weights:
        raise ConfigError(
            f"kernel {name!r} never builds the (L x S) weights, but return_weights=True was asked (directly or "
            f"by attnlab.capture); use kernel='dense' to get weights, or attnlab.functional.attention_stats for "
            f"entropy / distance / top-k of long inputs"
        )
    if dropout and not dropout_ok:
        raise ConfigError(
            f"kernel {name!r} has no attention weights to drop out, got dropout={dropout!r}; pass dropout=0.0 "
            f"(e.g. MultiHeadAttention(dropout=0.0)) or use kernel='dense' / 'memory_efficient'"
        )
