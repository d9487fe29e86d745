"""``capture()``: record every attention computation inside a model while a ``with`` block runs.

The adapters of :data:`ADAPTERS` (see :class:`._recorder.Adapter`) find the attention of a model and
install what records it; each registers its undo on one :class:`contextlib.ExitStack`, so hooks come
off and flags come back however the block ends:

* attnlab's own layers: their :class:`attnlab.layers.AttentionHook` points (``_own.py``);
* ``torch.nn.MultiheadAttention``, alone or inside ``nn.Transformer*`` (``_torch.py``);
* Hugging Face transformers models, through their attention interface (``_hf.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager

from torch import nn

from .. import _validate as check
from ..errors import CaptureError, InputError
from ..trace import KINDS, AttentionTrace, Kind, as_kind
from . import _hf, _own, _torch
from ._recorder import Adapter, Recorder

__all__ = ["ADAPTERS", "capture"]

# Every model family capture() knows, tried in this order; a new family is one module and one entry here.
ADAPTERS: tuple[Adapter, ...] = (_own, _torch, _hf)


def check_filters(
    kinds: Iterable[str] | str | None, names: Iterable[str] | str | None
) -> tuple[frozenset[Kind] | None, tuple[str, ...] | None]:
    kind_set: frozenset[Kind] | None = None
    if kinds is not None:
        given = [kinds] if isinstance(kinds, str) else list(kinds)
        if not given or any(k not in KINDS for k in given):
            raise InputError(f"kinds must be a non-empty subset of {KINDS}, got {sorted(map(str, given))}")
        kind_set = frozenset(as_kind(k) for k in given)
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
    qk: bool = False,
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
        qk: also record each call's queries and keys per head (``record.q`` ``(batch, heads, q_len, d_k)``,
            ``record.k`` ``(batch, heads, k_len, d_k)``, float32 on the CPU) and the score scale
            (``record.scale``), for the viewer's neuron view; for attnlab's layers, torch's
            ``MultiheadAttention`` and Hugging Face models.

    Generation with a key/value cache (Hugging Face ``generate()``, attnlab's layers with a ``KVCache``)
    calls each attention module once per token: those calls are recorded with their ``step`` and their
    module's ``layer``, and the trace assembles them into one matrix per layer (see ``docs/capture.md``).

    Every hook is removed and every switched flag restored when the block ends, also when it
    raises. Raises :class:`attnlab.errors.CaptureError` when the model holds no attention that can
    be recorded. Capturing does not change the model's outputs (see ``docs/capture.md`` for the
    two rounding-level exceptions: SDPA Hugging Face models and torch's fused encoder fast path).
    """
    if not isinstance(model, nn.Module):
        raise InputError(f"capture() takes a torch.nn.Module, got {type(model).__name__}")
    kind_set, name_tuple = check_filters(kinds, names)
    trace = AttentionTrace(meta={"model": type(model).__name__})
    check.boolean("qk", qk, "record queries and keys too")
    recorder = Recorder(trace, kind_set, name_tuple, qk=qk)
    with ExitStack() as undo:
        named = list(model.named_modules())  # one walk of the module tree, shared by the adapters
        found = sum(adapter.install(model, named, recorder, undo) for adapter in ADAPTERS)
        if not found:
            raise CaptureError(
                f"{type(model).__name__} holds no attention attnlab can record: no attnlab attention layer, no "
                f"torch.nn.MultiheadAttention and no Hugging Face transformers model; build the model from "
                f"attnlab.layers, or call an attnlab.layers.AttentionHook with your weights"
            )
        yield trace
