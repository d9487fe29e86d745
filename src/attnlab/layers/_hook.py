"""The named point where attnlab's own layers hand their attention weights to capture()."""

from __future__ import annotations

from torch import Tensor, nn

from ..trace import Kind

__all__ = ["AttentionHook"]


class AttentionHook(nn.Module):
    """An identity module that an attention layer calls with its weights and the call's kind.

    ``capture()`` finds these through ``named_modules()`` (so records are named by module path),
    raises ``active`` while it records, and reads ``(weights, kind)`` in a forward hook.  A layer asks
    its kernel for weights when the caller wants them *or* ``hook.active`` is set, so capturing never
    changes what the layer returns.
    """

    def __init__(self) -> None:
        super().__init__()
        self.active = 0

    def forward(self, weights: Tensor, kind: Kind) -> Tensor:  # (B, H, L, S), "self" | "causal" | "cross"
        return weights
