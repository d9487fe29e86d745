"""Capture adapter for attnlab's own layers: their :class:`AttentionHook` points.

A layer asks its kernel for weights when ``hook.active`` is set and calls ``hook(weights, kind, q, k, scale)``
(queries, keys and scale optional: layers without a dot product pass none); a forward hook on the hook
point reads them.  The record is named after the layer that owns the
hook point (``"encoder.layers.0.self_attn"``, not ``"...self_attn.attn_hook"``).
"""

from __future__ import annotations

import inspect
from contextlib import ExitStack
from typing import Any

from torch import nn

from ..layers._hook import AttentionHook
from ._recorder import Recorder, module_label

__all__ = ["install"]

_SIGNATURE = inspect.signature(AttentionHook.forward)


def install(model: nn.Module, named: list[tuple[str, nn.Module]], recorder: Recorder, undo: ExitStack) -> int:
    """Hook every AttentionHook inside ``model``; return how many were found."""
    found = 0
    for path, module in named:
        if not isinstance(module, AttentionHook):
            continue
        name = module_label(path.rpartition(".")[0], model) if path else module_label("", model)
        found += 1

        def on_call(mod: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any, name: str = name) -> None:
            call = _SIGNATURE.bind(mod, *args, **kwargs).arguments
            recorder.add(name, call["kind"], call["weights"], call.get("q"), call.get("k"), call.get("scale"))

        module.active += 1
        undo.callback(_deactivate, module)
        undo.callback(module.register_forward_hook(on_call, with_kwargs=True).remove)
    return found


def _deactivate(hook: AttentionHook) -> None:
    hook.active -= 1
