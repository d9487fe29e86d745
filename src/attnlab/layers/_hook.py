"""The named point where attnlab's own layers hand their attention weights to capture()."""

from __future__ import annotations

from torch import Tensor, nn

from ..trace import Kind

__all__ = ["AttentionHook"]


class AttentionHook(nn.Module):
    """An identity module that an attention layer calls with its weights and the call's kind.

    ``capture()`` finds these through ``named_modules()`` (so records are named by module path),
    raises ``active`` while it records, and reads ``(weights, kind)`` in a forward hook; a layer that
    computes ``softmax(q k^T * scale + mask)`` also passes ``q``, ``k`` and ``scale`` (for
    ``capture(qk=True)``).  A layer asks its kernel for weights when the caller wants them *or*
    ``hook.active`` is set, so capturing never changes what the layer returns.
    """

    def __init__(self) -> None:
        super().__init__()
        self.active = 0

    def forward(
        self,
        weights: Tensor,  # (B, H, L, S)
        kind: Kind,  # "self" | "causal" | "cross"
        q: Tensor | None = None,  # (B, H, L, Dk): the queries the weights were computed from
        k: Tensor | None = None,  # (B, H, S, Dk): the keys
        scale: float | None = None,  # the factor on q @ k^T before the softmax
    ) -> Tensor:
        return weights
