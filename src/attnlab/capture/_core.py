"""``capture()``: record every attention computation inside a model while a ``with`` block runs.

Three adapters find the attention of a model and install what records it; each registers its undo
on one :class:`contextlib.ExitStack`, so hooks come off and flags come back however the block ends:

* attnlab's own layers: their :class:`attnlab.layers.AttentionHook` points (``_own.py``);
* ``torch.nn.MultiheadAttention``, alone or inside ``nn.Transformer*`` (``_torch.py``);
* Hugging Face transformers models, through their attention interface (``_hf.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager

import torch
from torch import Tensor, nn

from ..errors import CaptureError, InputError
from .trace import KINDS, AttentionRecord, AttentionTrace

__all__ = ["Recorder", "capture", "module_label"]


class Recorder:
    """Turns ``(name, kind, weights)`` calls into :class:`AttentionRecord` s on one trace.

    It applies the ``kinds`` / ``names`` filters and numbers the layers of each kind in call order.
    """

    def __init__(self, trace: AttentionTrace, kinds: frozenset[str] | None, names: tuple[str, ...] | None) -> None:
        self.trace = trace
        self.kinds = kinds
        self.names = names
        self._count = dict.fromkeys(KINDS, 0)

    def wants(self, name: str, kind: str) -> bool:
        return (self.kinds is None or kind in self.kinds) and (self.names is None or any(s in name for s in self.names))

    def add(self, name: str, kind: str, weights: Tensor) -> None:
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


def _check_filters(
    kinds: Iterable[str] | str | None, names: Iterable[str] | str | None
) -> tuple[frozenset[str] | None, tuple[str, ...] | None]:
    kind_set: frozenset[str] | None = None
    if kinds is not None:
        kind_set = frozenset([kinds] if isinstance(kinds, str) else kinds)
        bad = sorted(kind_set - set(KINDS))
        if bad or not kind_set:
            raise InputError(f"kinds must be a non-empty subset of {KINDS}, got {sorted(kind_set)}")
    name_tuple: tuple[str, ...] | None = None
    if names is not None:
        name_tuple = (names,) if isinstance(names, str) else tuple(names)
        if not name_tuple or not all(isinstance(n, str) for n in name_tuple):
            raise InputError(f"names must be a string or a non-empty list of strings, got {names!r}")
    return kind_set, name_tuple


@contextmanager
def capture(
    model: nn.Module,
    *,
    kinds: Iterable[str] | str | None = None,
    names: Iterable[str] | str | None = None,
) -> Iterator[AttentionTrace]:
    """Record every attention computation inside ``model`` while the block runs.

    >>> with capture(model) as trace:
    ...     model(**inputs)
    >>> trace.records[0].weights.shape          # (batch, heads, q_len, k_len)

    Works on attnlab's own layers, on ``torch.nn.MultiheadAttention`` (also inside
    ``nn.TransformerEncoder``/``Decoder``) and on Hugging Face transformers models of any attention
    implementation (a model loaded with SDPA is computed with its eager attention while captured, so
    the weights equal ``output_attentions=True``). Records are appended in call order; weights are
    ``(batch, heads, q_len, k_len)`` float32 on the CPU, detached, heads never averaged.

    Args:
        model: any ``nn.Module`` that contains attention attnlab knows.
        kinds: keep only these kinds (``"self"``, ``"causal"``, ``"cross"``).
        names: keep only records whose module path contains one of these strings.

    Every hook is removed and every switched flag restored when the block ends, also when it
    raises. Raises :class:`attnlab.errors.CaptureError` when the model holds no attention that can
    be recorded. Capturing does not change the model's outputs (see ``docs/capture.md`` for the
    two rounding-level exceptions: SDPA Hugging Face models and torch's fused encoder fast path).
    """
    if not isinstance(model, nn.Module):
        raise InputError(f"capture() takes a torch.nn.Module, got {type(model).__name__}")
    kind_set, name_tuple = _check_filters(kinds, names)
    from . import _hf, _own, _torch

    trace = AttentionTrace(meta={"model": type(model).__name__})
    recorder = Recorder(trace, kind_set, name_tuple)
    with ExitStack() as undo:
        named = list(model.named_modules())  # one walk of the module tree, shared by the adapters
        found = sum(adapter.install(model, named, recorder, undo) for adapter in (_own, _torch, _hf))
        if not found:
            raise CaptureError(
                f"{type(model).__name__} holds no attention attnlab can record: no attnlab attention layer, no "
                f"torch.nn.MultiheadAttention and no Hugging Face transformers model; build the model from "
                f"attnlab.layers, or call an attnlab.layers.AttentionHook with your weights"
            )
        yield trace
