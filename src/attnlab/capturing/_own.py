"""Capture adapter for attnlab's own layers: their :class:`~attnlab.layers.AttentionHook` points.

Each hook point gets a listener that needs the weights (``attach(..., weights=True)``), so the layer asks its
kernel for them, and records the payload's weights (with ``q``, ``k`` and ``scale`` for ``capture(qk=True)``;
layers without a dot product hand none).  The record is named after the layer that owns the hook point
(``"encoder.layers.0.self_attn"``, not ``"...self_attn.attn_hook"``).
"""

from __future__ import annotations

from contextlib import ExitStack

from torch import nn

from ..layers import AttentionCall, AttentionHook
from ._recorder import Recorder, module_label

__all__ = ["install"]


def install(model: nn.Module, named: list[tuple[str, nn.Module]], recorder: Recorder, undo: ExitStack) -> int:
    """Listen at every AttentionHook inside ``model``; return how many were found."""
    found = 0
    for path, module in named:
        if not isinstance(module, AttentionHook):
            continue
        name = module_label(path.rpartition(".")[0], model) if path else module_label("", model)
        found += 1

        def on_call(call: AttentionCall, name: str = name) -> None:
            if call.weights is not None:  # None only from a kernel that cannot build them (it refuses first)
                recorder.add(name, call.kind, call.weights, call.q, call.k, call.scale)

        undo.callback(module.attach(on_call, weights=True))
    return found
