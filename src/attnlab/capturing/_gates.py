"""Head gates: a multiplier on the output of every attention head, installed with hooks (no model rewrite).

Letters: B batch, L query length, H heads, D per-head value size.

Michel et al. (2019, "Are sixteen heads really better than one?") write multi-head attention as
``sum_h g_h Att_h(x)`` with a gate ``g_h`` per head: ``g_h = 0`` masks the head, and ``dL/dg_h`` at
``g = 1`` measures how much the loss depends on it.  attnlab puts the gate where each family's
per-head outputs are still apart:

* attnlab's :class:`~attnlab.layers.MultiHeadAttention`: a listener at its hook point that returns the
  payload (:class:`~attnlab.layers.AttentionCall`) with its ``heads`` ``(B, H, L, D)`` multiplied by the
  gates, before the layer merges and projects them;
* Hugging Face transformers models: the ``"attnlab_capture"`` attention implementation of ``_hf.py``
  hands each module's output ``(B, L, H, D)`` to the gates of :data:`attnlab.capturing._hf.GATES`.

``torch.nn.MultiheadAttention`` computes its output projection inside one functional call, so its
heads cannot be gated by a hook (convert it with ``MultiHeadAttention.from_torch``).

A gate exists from its module's first call on (a transformers model says how many heads a module has
only when it runs), so modules are numbered in call order, as capture's records are.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import replace

import torch
from torch import Tensor, nn

from ..errors import CaptureError, InputError
from ..layers import AttentionCall, MultiHeadAttention
from ..trace import AttentionTrace
from . import _hf
from ._recorder import Recorder, module_label

__all__ = ["HeadGates", "head_gates"]


class HeadGates:
    """The gates of one :func:`head_gates` block.

    ``names`` lists the gated modules in the order of their first call and ``heads[name]`` their
    number of heads.  With ``probe=True`` every call multiplies its heads' outputs by a fresh
    ``(B, H)`` tensor of ones that requires grad (one gate per example and head), kept in ``probes``
    as ``(name, tensor)``: the gradient of a sum of per-example losses with respect to it is each
    example's ``dL(x)/dg_h``.
    """

    def __init__(self, masked: Mapping[str, Sequence[int]], probe: bool) -> None:
        self.masked = {name: sorted({int(h) for h in heads}) for name, heads in masked.items()}
        self.probe = probe
        self.names: list[str] = []
        self.heads: dict[str, int] = {}
        self.probes: list[tuple[str, Tensor]] = []
        self._values: dict[str, Tensor] = {}

    def _value(self, name: str, n_heads: int) -> Tensor:
        """The fixed gates of module ``name``, (H,): 0 for its masked heads, 1 elsewhere."""
        if name not in self.heads:
            bad = [h for h in self.masked.get(name, []) if not 0 <= h < n_heads]
            if bad:
                raise InputError(
                    f"cannot mask heads {bad} of {name!r}: it has {n_heads} heads (0 to {n_heads - 1}); "
                    f"pass head indices in that range"
                )
            value = torch.ones(n_heads)
            value[self.masked.get(name, [])] = 0.0
            self.names.append(name)
            self.heads[name] = n_heads
            self._values[name] = value
        elif self.heads[name] != n_heads:
            raise CaptureError(f"{name!r} was called with {self.heads[name]} heads, then with {n_heads}")
        return self._values[name]

    def apply(self, name: str, out: Tensor) -> Tensor:
        """``out`` (B, L, H, D) with head ``h`` of example ``b`` multiplied by its gate."""
        b, _, h, _ = out.shape
        gate = self._value(name, h).to(out.device, out.dtype).expand(b, h)  # (B, H)
        if self.probe and torch.is_grad_enabled():
            p = torch.ones(b, h, dtype=out.dtype, device=out.device, requires_grad=True)
            self.probes.append((name, p))
            gate = gate * p
        return out * gate[:, None, :, None]  # (B, L, H, D)

    def unused(self) -> list[str]:
        """Names given in ``masked`` that no gated module had."""
        return [name for name in self.masked if name not in self.heads]


@contextmanager
def head_gates(
    model: nn.Module, *, masked: Mapping[str, Sequence[int]] | None = None, probe: bool = False
) -> Iterator[HeadGates]:
    """Gate every attention head of ``model`` while the block runs.

    >>> with head_gates(model, masked={"encoder.layers.0.self_attn": [1, 3]}):
    ...     logits = model(x)                  # heads 1 and 3 of that layer contribute nothing

    Args:
        model: an ``nn.Module`` holding attnlab :class:`~attnlab.layers.MultiHeadAttention` layers or a
            Hugging Face transformers model.
        masked: module path (as capture names records) -> heads whose output is set to zero.
        probe: record a per-example gate that requires grad at every call (see :class:`HeadGates`).

    Raises :class:`~attnlab.errors.CaptureError` when the model has no head that can be gated, and
    :class:`~attnlab.errors.InputError` when ``masked`` names a module that never ran or a head it
    does not have.  The hooks come off however the block ends.
    """
    if not isinstance(model, nn.Module):
        raise InputError(f"head_gates() takes a torch.nn.Module, got {type(model).__name__}")
    gates = HeadGates(masked or {}, probe)
    with ExitStack() as undo:
        named = list(model.named_modules())
        found = _install_own(model, named, gates, undo) + _install_hf(model, named, gates, undo)
        if not found:
            raise CaptureError(
                f"{type(model).__name__} has no attention heads attnlab can gate: no attnlab MultiHeadAttention "
                f"and no Hugging Face transformers model (torch.nn.MultiheadAttention cannot be gated by a hook; "
                f"convert it with attnlab.layers.MultiHeadAttention.from_torch)"
            )
        yield gates
    unused = gates.unused()
    if unused:
        raise InputError(
            f"masked names {unused} matched no gated module; the gated modules were {gates.names}; "
            f"use those names (capture's record names)"
        )


def _install_own(model: nn.Module, named: list[tuple[str, nn.Module]], gates: HeadGates, undo: ExitStack) -> int:
    found = 0
    for path, module in named:
        if not isinstance(module, MultiHeadAttention):
            continue
        name = module_label(path, model)

        def gate(call: AttentionCall, name: str = name) -> AttentionCall:
            assert call.heads is not None  # a MultiHeadAttention always hands its heads' outputs
            gated = gates.apply(name, call.heads.transpose(1, 2))  # (B, L, H, D)
            return replace(call, heads=gated.transpose(1, 2))  # (B, H, L, D)

        undo.callback(module.attn_hook.attach(gate, weights=False))
        found += 1
    return found


def _install_hf(model: nn.Module, named: list[tuple[str, nn.Module]], gates: HeadGates, undo: ExitStack) -> int:
    keep_nothing = Recorder(AttentionTrace(), frozenset(), None)  # switches the attention as capture does
    if not _hf.install(model, named, keep_nothing, undo):
        return 0
    paths = {id(m): path for path, m in named}

    def gate(module: nn.Module, out: Tensor) -> Tensor:
        path = paths.get(id(module))
        return out if path is None else gates.apply(module_label(path, model), out)

    _hf.GATES.append(gate)
    undo.callback(_hf.GATES.remove, gate)
    return 1

