"""What every capture adapter shares: the :class:`Recorder` it reports to and the :class:`Adapter` protocol.

An adapter is a module with one function, ``install(model, named, recorder, undo) -> int``: it finds
the attention of one model family inside ``model``, installs what reports each call to ``recorder``,
registers the undo of everything it changed on ``undo``, and returns how many attention sites it
found.  A new model family is one new module here plus one entry in :data:`attnlab.capture._core.ADAPTERS`.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Protocol

import torch
from torch import Tensor, nn

from ..trace import KINDS, AttentionRecord, AttentionTrace, Kind

__all__ = ["Adapter", "Recorder", "module_label"]


class Adapter(Protocol):
    """A capture adapter (a module such as ``_own``, ``_torch`` or ``_hf``)."""

    def install(
        self, model: nn.Module, named: list[tuple[str, nn.Module]], recorder: Recorder, undo: ExitStack
    ) -> int: ...


class Recorder:
    """Turns ``(name, kind, weights)`` calls into :class:`AttentionRecord` s on one trace.

    It applies the ``kinds`` / ``names`` filters and numbers the layers of each kind in call order.
    """

    def __init__(self, trace: AttentionTrace, kinds: frozenset[Kind] | None, names: tuple[str, ...] | None) -> None:
        self.trace = trace
        self.kinds = kinds
        self.names = names
        self._count = dict.fromkeys(KINDS, 0)

    def wants(self, name: str, kind: Kind) -> bool:
        return (self.kinds is None or kind in self.kinds) and (self.names is None or any(s in name for s in self.names))

    def add(self, name: str, kind: Kind, weights: Tensor) -> None:
        if not self.wants(name, kind):
            return
        w = weights.detach()
        if w.dtype != torch.float32 or w.device.type != "cpu":
            w = w.to("cpu", torch.float32)  # no copy when it already is float32 on the CPU
        layer = self._count[kind]
        self._count[kind] += 1
        self.trace.records.append(AttentionRecord(name=name, kind=kind, layer=layer, weights=w))


def module_label(path: str, root: nn.Module) -> str:
    """A record's name: the module path, or the model's class name for the model itself."""
    return path or type(root).__name__
