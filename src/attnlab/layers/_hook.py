"""The one named point where an attention layer hands what it computed to capture, statistics and gates.

Letters: B batch, H heads, L query length, S key length, Dk per-head query/key size, Dv per-head value size.

A layer builds one :class:`AttentionCall` per call (the hook payload, as x-transformers' ``Attend`` returns its
``Intermediates``) and passes it through its :class:`AttentionHook` (a named hook point, as TransformerLens'
``HookPoint``); whoever wants it attaches a function with :meth:`AttentionHook.attach`.  Consumers read the
payload and never a layer's private methods: :func:`attnlab.capture` records its weights (and ``q``, ``k``,
``scale``), :func:`attnlab.capturing.capture_stats` computes streaming statistics from its ``q``, ``k``, ``scale``
and ``mask``, and :func:`attnlab.capturing.head_gates` returns a copy with the heads' outputs multiplied by gates.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from torch import Tensor, nn

from ..errors import InputError
from ..trace import Kind

__all__ = ["AttentionCall", "AttentionHook", "Listener"]


@dataclass(frozen=True)
class AttentionCall:
    """What one attention call computed: the payload an :class:`AttentionHook` receives (and returns).

    Every tensor is the layer's own (not a copy, not detached): a consumer that keeps one copies it.
    A layer without a dot product (Bahdanau, Luong) sets ``kind`` and ``weights`` only.
    """

    kind: Kind  # "self", "causal" or "cross" (a cross call is "cross" even when causal is set)
    weights: Tensor | None = None  # (B, H, L, S): softmax(q k^T * scale + mask), when the layer computed them
    q: Tensor | None = None  # (B, H, L, Dk): the queries the scores come from (rotated, with rotary positions)
    k: Tensor | None = None  # (B, H, S, Dk): the keys, cached ones included
    scale: float | None = None  # the factor on q @ k^T before the softmax (the kernel's scale over its temperature)
    # the one mask the kernel received, the call's mask merged with its key padding: bool (True = may attend) or
    # float (added to the scores), broadcasting to (B, H, L, S); None = none.  The causal flag is apart (causal)
    # and so is a kernel's own structure (the window of kernel="local", in kernel_options)
    mask: Tensor | None = None
    causal: bool = False  # whether the kernel also kept query i to keys j <= i + S - L (bottom-right)
    kernel: str | None = None  # the kernel's name in attnlab.functional.KERNELS
    kernel_options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))  # the kernel's options
    # (B, H, L, Dv): each head's output before the heads are merged and projected.  A listener may return a copy
    # with other heads (dataclasses.replace(call, heads=...)): the layer goes on with what the hook returns (head
    # gates multiply them); None for a layer whose heads cannot be changed here
    heads: Tensor | None = None


# What attach() takes: a function of the payload that returns None (only reads it) or a replacement payload.
Listener = Callable[[AttentionCall], "AttentionCall | None"]


class AttentionHook(nn.Module):
    """An identity module an attention layer calls with its :class:`AttentionCall`; the layer goes on with
    what the call returns.

    ``capture()`` and friends find these through ``named_modules()`` (so records are named by module path)
    and :meth:`attach` a listener.  A layer asks its kernel for weights when the caller wants them or
    ``active`` (listeners that need the weights) is above zero, and calls the hook whenever it has weights or
    ``listeners`` (listeners that do not need them) is above zero, so listening never changes what the layer
    returns (head gates at 1 included).
    """

    def __init__(self) -> None:
        super().__init__()
        self.active = 0  # listeners that need the weights: while > 0 the layer computes them
        self.listeners = 0  # listeners that read the payload without needing the weights (statistics, gates)

    @property
    def wanted(self) -> bool:
        """Whether anyone listens: a layer calls the hook when this is true or it has weights anyway."""
        return bool(self.active or self.listeners)

    def attach(self, listener: Listener, *, weights: bool) -> Callable[[], None]:
        """Call ``listener(payload)`` at every call of the layer from now on; ``weights=True`` makes the layer
        compute its weights for it.  A listener that returns an :class:`AttentionCall` replaces the payload
        (listeners run in the order they were attached).  Returns the function that detaches it."""

        def on_call(module: nn.Module, args: tuple[Any, ...], call: AttentionCall) -> AttentionCall | None:
            return listener(call)

        handle = self.register_forward_hook(on_call)
        counter = "active" if weights else "listeners"
        setattr(self, counter, getattr(self, counter) + 1)

        def detach() -> None:
            handle.remove()
            setattr(self, counter, getattr(self, counter) - 1)

        return detach

    def forward(self, call: AttentionCall) -> AttentionCall:
        if not isinstance(call, AttentionCall):
            raise InputError(
                f"an AttentionHook takes one attnlab.layers.AttentionCall, got {type(call).__name__}; call it as "
                f"hook(AttentionCall(kind, weights=weights)) with weights (batch, heads, q_len, k_len)"
            )
        return call
