"""What every capture adapter shares: the :class:`Recorder` it reports to and the :class:`Adapter` protocol.

An adapter is a module with one function, ``install(model, named, recorder, undo) -> int``: it finds
the attention of one model family inside ``model``, installs what reports each call to ``recorder``,
registers the undo of everything it changed on ``undo``, and returns how many attention sites it
found.  A new model family is one new module here plus one entry in :data:`attnlab.capturing._core.ADAPTERS`.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import Tensor, nn

from ..errors import ShapeError
from ..trace import KINDS, AttentionRecord, AttentionTrace, Kind

__all__ = ["Adapter", "Recorder", "module_label"]


class Adapter(Protocol):
    """A capture adapter (a module such as ``_own``, ``_torch`` or ``_hf``)."""

    def install(
        self, model: nn.Module, named: list[tuple[str, nn.Module]], recorder: Recorder, undo: ExitStack
    ) -> int: ...


@dataclass
class _LastCall:
    """What the step rule needs of a module's previous call."""

    kind: Kind
    shape: tuple[int, int, int, int]  # (B, H, L, S)
    step: int | None
    record: AttentionRecord | None  # the record made of it; None when the filters dropped it
    n_self: int = 0  # how many self or causal calls the recorder had seen when this call came


class Recorder:
    """Turns ``(name, kind, weights)`` calls into :class:`AttentionRecord` s on one trace.

    It applies the ``kinds`` / ``names`` filters, numbers the layers of each kind in call order, and
    recognises the decoding steps of a generation with a key/value cache (the *step rule*):

    * a self or causal call is a step when the same module's previous call had the same batch and heads
      and this call has fewer queries than keys and exactly that many keys more (``L < S`` and
      ``S == S_prev + L``: the cache grew by the new positions);
    * a cross call is a step when the same module's previous call had the same batch, heads and keys
      (the same encoder memory) and the last self or causal call before it was a step, or no self or
      causal call came in between (a recurrent decoder: its attention is the only one, once per token).

    The previous call becomes step 0 (the prefill) if it was not a step yet; a step takes its layer.
    """

    def __init__(
        self, trace: AttentionTrace, kinds: frozenset[Kind] | None, names: tuple[str, ...] | None, qk: bool = False
    ) -> None:
        self.trace = trace
        self.kinds = kinds
        self.names = names
        self.qk = qk
        self._count = dict.fromkeys(KINDS, 0)
        self._last: dict[str, _LastCall] = {}
        self._decoding = False  # whether the last self or causal call was a decoding step
        self._n_self = 0  # self or causal calls seen so far

    def wants(self, name: str, kind: Kind) -> bool:
        return (self.kinds is None or kind in self.kinds) and (self.names is None or any(s in name for s in self.names))

    def _step_of(self, kind: Kind, shape: tuple[int, int, int, int], prev: _LastCall | None) -> int | None:
        """The decoding step this call is (see the class docstring), or None."""
        if prev is None or prev.kind != kind or prev.shape[:2] != shape[:2]:
            return None
        _, _, lq, lk = shape
        grew = lq < lk and lk == prev.shape[3] + lq  # self/causal: the cache grew by the new queries
        only_attention = prev.n_self == self._n_self  # nothing else attended since this module's last call
        is_step = ((self._decoding or only_attention) and prev.shape[3] == lk) if kind == "cross" else grew
        return (0 if prev.step is None else prev.step) + 1 if is_step else None

    def add(
        self,
        name: str,
        kind: Kind,
        weights: Tensor,
        q: Tensor | None = None,
        k: Tensor | None = None,
        scale: float | None = None,
    ) -> None:
        if weights.ndim != 4:
            raise ShapeError(
                f"{name}: attention weights must be (batch, heads, q_len, k_len), got shape {tuple(weights.shape)}"
            )
        b, h, lq, lk = (int(n) for n in weights.shape)
        prev = self._last.get(name)
        step = self._step_of(kind, (b, h, lq, lk), prev)
        if kind != "cross":
            self._decoding = step is not None
            self._n_self += 1
        call = _LastCall(kind, (b, h, lq, lk), step, None, self._n_self)
        self._last[name] = call
        if not self.wants(name, kind):
            return
        if step is not None and prev is not None and prev.record is not None:
            layer = prev.record.layer
            if prev.record.step is None:
                prev.record.step = 0
        else:
            step = None
            layer = self._count[kind]
            self._count[kind] += 1
        record = AttentionRecord(
            name=name, kind=kind, layer=layer, weights=_cpu(weights), step=step,
            q=_copy(q) if self.qk and q is not None else None,
            k=_copy(k) if self.qk and k is not None else None,
            scale=scale if self.qk else None,
        )
        call.record = record
        self.trace.records.append(record)


def _cpu(t: Tensor) -> Tensor:
    """Detached float32 on the CPU (no copy when it already is)."""
    t = t.detach()
    return t if t.dtype == torch.float32 and t.device.type == "cpu" else t.to("cpu", torch.float32)

def _copy(t: Tensor) -> Tensor:
    """A float32 CPU copy: a cache may be written in place after the call (static caches are)."""
    return t.detach().to("cpu", torch.float32, copy=True)


def module_label(path: str, root: nn.Module) -> str:
    """A record's name: the module path, or the model's class name for the model itself."""
    return path or type(root).__name__
