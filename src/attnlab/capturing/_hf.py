"""Capture adapter for Hugging Face transformers models (transformers 5.x attention interface).

Every attention module of a transformers model calls
``ALL_ATTENTION_FUNCTIONS.get_interface(config._attn_implementation, eager_attention_forward)``.
attnlab registers one more implementation, ``"attnlab_capture"`` (and the eager mask builder under
the same name), which runs the module's own ``eager_attention_forward`` (the one in its modeling
file: T5's adds the relative position bias, GPT-2's casts like GPT-2) and hands the weights to the
capture.  While capturing, each config of the model is switched to it and switched back afterwards,
so a model loaded with the default SDPA attention is captured with the same weights as
``output_attentions=True`` in eager mode, and the user never reloads with ``attn_implementation="eager"``.

transformers is imported only when it is already imported (a model from it cannot exist otherwise).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

from torch import Tensor, nn

from ..errors import CaptureError
from ..functional import attention
from ..layers import AttentionCall
from ..trace import Kind
from ._recorder import Recorder, module_label

__all__ = ["IMPLEMENTATION", "edit_attention", "install", "listen_attention", "module_kind", "switch_implementation"]

IMPLEMENTATION = "attnlab_capture"

# One entry per running capture of a transformers model: (module id -> path, model, recorder).
_SESSIONS: list[tuple[dict[int, str], nn.Module, Recorder]] = []
_registered = False
# Head gates (capturing/_gates.py): each takes (module, output (B, L, H, D)) and returns the gated output.
GATES: list[Callable[[nn.Module, Tensor], Tensor]] = []
# Attention editors (edit_attention): module id -> (output (B, L, H, D), weights (B, H, L, S), value (B, Hkv, S, D))
# -> the output the module goes on with.
EDITORS: dict[int, Callable[[Tensor, Tensor, Tensor], Tensor]] = {}
# Attention listeners (listen_attention): module id -> a function of the call's own queries, keys, scale and mask.
LISTENERS: dict[int, Callable[[AttentionCall], None]] = {}


def module_kind(module: nn.Module) -> Kind:
    """self / causal / cross from an attention module's flags.

    ``is_cross_attention`` (GPT-2) says cross; a causal module (``is_causal``: BERT as decoder,
    GPT-2, BART/T5/Marian decoder self-attention) is causal; a non-causal attention inside a decoder
    (``is_decoder`` on the module or its config: the decoder's attention over the encoder) is cross;
    everything else (encoders) is self.
    """
    if getattr(module, "is_cross_attention", False):
        return "cross"
    if getattr(module, "is_causal", False):
        return "causal"
    in_decoder = getattr(module, "is_decoder", None)
    if in_decoder is None:
        in_decoder = getattr(getattr(module, "config", None), "is_decoder", False)
    return "cross" if in_decoder else "self"


def _attention(
    module: nn.Module, query: Tensor, key: Tensor, value: Tensor, attention_mask: Tensor | None, **kwargs: Any
) -> tuple[Tensor, Tensor]:
    """The ``"attnlab_capture"`` implementation: the module's eager attention, weights handed on."""
    out, weights = _eager(module)(module, query, key, value, attention_mask, **kwargs)
    for paths, root, recorder in _SESSIONS:
        path = paths.get(id(module))
        if path is not None:
            q, k, scale = _qk(module, query, key, kwargs) if recorder.qk else (None, None, None)
            recorder.add(module_label(path, root), module_kind(module), weights, q, k, scale)
    listener = LISTENERS.get(id(module))
    if listener is not None:
        q, k, scale = _qk(module, query, key, kwargs)
        listener(AttentionCall(module_kind(module), weights, q, k, scale, attention_mask))
    editor = EDITORS.get(id(module))
    if editor is not None:
        out = editor(out, weights, value)
    for gate in GATES:
        out = gate(module, out)
    return out, weights


def _qk(module: nn.Module, query: Tensor, key: Tensor, kwargs: dict[str, Any]) -> tuple[Tensor, Tensor, float]:
    """Per-head queries ``(B, H, L, D)`` and keys ``(B, H, S, D)`` (grouped key heads repeated to one per
    query head) and the score scale the eager attention used (``scaling``, default ``1 / sqrt(D)``)."""
    groups = query.shape[1] // key.shape[1]
    if groups > 1:
        key = key.repeat_interleave(groups, dim=1)  # (B, H, S, D)
    scaling = kwargs.get("scaling")
    return query, key, float(scaling if scaling is not None else query.shape[-1] ** -0.5)


def _eager(module: nn.Module) -> Callable[..., tuple[Tensor, Tensor]]:
    fn = getattr(sys.modules.get(type(module).__module__), "eager_attention_forward", None)
    return fn if callable(fn) else _generic_eager


def _generic_eager(
    module: nn.Module,
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attention_mask: Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[Tensor, Tensor]:
    """Eager attention for a modeling file without its own ``eager_attention_forward``: attnlab's dense
    kernel with the model's additive mask, in the layout transformers expects back."""
    groups = int(getattr(module, "num_key_value_groups", 1))
    if groups > 1:  # grouped-query attention: each key/value head serves `groups` query heads
        key = key.repeat_interleave(groups, dim=1)  # (B, H, S, D)
        value = value.repeat_interleave(groups, dim=1)  # (B, H, S, D)
    mask = None if attention_mask is None else attention_mask[..., : key.shape[-2]]
    p = dropout if module.training else 0.0
    out, weights = attention(query, key, value, mask=mask, scale=scaling, dropout=p)  # (B, H, L, D), (B, H, L, S)
    assert weights is not None
    return out.transpose(1, 2).contiguous(), weights  # (B, L, H, D)


def _register() -> None:
    global _registered
    if _registered:
        return
    from transformers.masking_utils import AttentionMaskInterface, eager_mask
    from transformers.modeling_utils import AttentionInterface

    AttentionInterface.register(IMPLEMENTATION, _attention)
    AttentionMaskInterface.register(IMPLEMENTATION, eager_mask)
    _registered = True


def _configs(modules: list[nn.Module]) -> list[Any]:
    """Every distinct transformers config the modules read, sub-configs included."""
    from transformers import PretrainedConfig

    seen: dict[int, Any] = {}
    todo: list[Any] = [getattr(m, "config", None) for m in modules]
    while todo:
        config = todo.pop()
        if not isinstance(config, PretrainedConfig) or id(config) in seen:
            continue
        seen[id(config)] = config
        todo.extend(getattr(config, key, None) for key in getattr(config, "sub_configs", {}))
    return list(seen.values())


# transformers keeps the attention implementation a model runs in the private attribute below; its public
# setter (`model.set_attn_implementation`) reloads and re-checks the model, which capture must not do on
# every call. This is the one place attnlab touches transformers' private state, and
# tests/capturing/test_hf_private_state.py fails, naming the transformers version, when that state changes.
_PRIVATE_IMPLEMENTATION = "_attn_implementation_internal"


def switch_implementation(config: Any, name: str, undo: ExitStack) -> None:
    """Make every attention module reading ``config`` run implementation ``name``; ``undo`` switches it back."""
    import transformers

    if not hasattr(config, _PRIVATE_IMPLEMENTATION):
        raise CaptureError(
            f"transformers {transformers.__version__} keeps no {_PRIVATE_IMPLEMENTATION!r} on "
            f"{type(config).__name__}: capture cannot switch its attention; use a transformers version "
            f"this attnlab was tested with (see pyproject.toml) or report it"
        )
    undo.callback(setattr, config, _PRIVATE_IMPLEMENTATION, getattr(config, _PRIVATE_IMPLEMENTATION))
    setattr(config, _PRIVATE_IMPLEMENTATION, name)


def install(model: nn.Module, named: list[tuple[str, nn.Module]], recorder: Recorder, undo: ExitStack) -> int:
    """Switch every config of the transformers models inside ``model`` to ``"attnlab_capture"``."""
    if sys.modules.get("transformers") is None:
        return 0  # no transformers model can exist (not imported, or not installed)
    from transformers import PreTrainedModel

    modules = [m for _, m in named]
    if not any(isinstance(m, PreTrainedModel) for m in modules):
        return 0
    _register()
    for config in _configs(modules):
        switch_implementation(config, IMPLEMENTATION, undo)
    session = ({id(m): path for path, m in named}, model, recorder)
    _SESSIONS.append(session)
    undo.callback(_SESSIONS.remove, session)
    return 1


def edit_attention(model: nn.Module, module: nn.Module, editor: Callable[[Tensor, Tensor, Tensor], Tensor],
                   undo: ExitStack) -> None:
    """While ``undo`` is open, ``module`` (an attention module of the transformers model ``model``) runs its eager
    attention and goes on with ``editor(output, weights, value)`` instead of its output: what
    :mod:`attnlab.circuits` reads and edits a Hugging Face model's attention pattern with.  The model's configs are
    switched to ``"attnlab_capture"`` and back, so nothing of the model is changed after ``undo`` closes."""
    _switch(model, module, undo)
    if id(module) in EDITORS:
        raise CaptureError(f"{type(module).__name__} already has an attention editor; close the first edit first")
    EDITORS[id(module)] = editor
    undo.callback(EDITORS.pop, id(module), None)


def listen_attention(model: nn.Module, module: nn.Module, listener: Callable[[AttentionCall], None],
                     undo: ExitStack) -> None:
    """While ``undo`` is open, each call of ``module`` (an attention module of the transformers model ``model``) runs
    its eager attention and hands ``listener`` an :class:`attnlab.layers.AttentionCall` of its own tensors (not
    copies): ``q`` ``(B, H, L, D)`` and ``k`` ``(B, H, S, D)`` as the scores are made of them (after rotary
    positions; grouped key heads repeated, one per query head), ``scale`` and the additive ``mask`` the eager
    attention adds.  The model's configs are switched as by :func:`edit_attention`, and back."""
    _switch(model, module, undo)
    if id(module) in LISTENERS:
        raise CaptureError(f"{type(module).__name__} already has an attention listener; close the first one first")
    LISTENERS[id(module)] = listener
    undo.callback(LISTENERS.pop, id(module), None)


def _switch(model: nn.Module, module: nn.Module, undo: ExitStack) -> None:
    _register()
    for config in _configs([model, module]):
        switch_implementation(config, IMPLEMENTATION, undo)
