"""Named hook points on attnlab's own models: a cache of every activation by name and edits that replace any of them.

The names follow TransformerLens's where the two models have the same part (``blocks.{i}.hook_resid_pre``,
``blocks.{i}.attn.hook_z``, ...), and the layouts too: per-head activations are ``(B, T, H, D)``, patterns
``(B, H, T, S)``.  The points are built on what the models already expose, never on a layer's private methods:

* the residual stream: a forward pre-hook on each block (``hook_resid_pre``), its output (``hook_resid_post``),
  and between the two sublayers ``hook_resid_mid`` (pre-norm: the input of ``norm2``; post-norm: the output of the
  LayerNorm after the attention);
* ``attn.hook_q`` / ``hook_k`` / ``hook_v``: the outputs of the attention's ``q_proj`` / ``k_proj`` / ``v_proj``
  (before rotary positions are applied, as TransformerLens's ``hook_q``);
* ``attn.hook_pattern`` and ``attn.hook_z`` (each head's output before ``W_O``): the layer's one
  :class:`attnlab.layers.AttentionCall` payload, through its ``AttentionHook``.  An edited pattern is applied to
  the call's values (``z = pattern @ v``), so patching a pattern changes what the layer outputs;
* ``hook_attn_out`` (the attention's output, ``W_O`` and its bias included), ``hook_mlp_out``;
* ``ln_final.hook_scale`` ``(B, T, 1)``: the standard deviation the final LayerNorm divided each row by, which
  direct logit attribution needs (CausalLM with norms only).

The cache also holds ``blocks.{i}.attn.hook_result`` ``(B, T, H, M)``: each head's output through its slice of
``W_O`` (no bias), computed from ``hook_z``; it is read-only (edit ``hook_z`` to change a head).

Letters: B batch, T positions, S key positions, H heads, D per-head size, M d_model, V vocabulary, N layers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from ..errors import InputError
from ..layers import AttentionCall
from ..models.blocks import read_blocks
from ._anatomy import Anatomy, Layer, own_layer

__all__ = ["ActivationCache", "Anatomy", "Edit", "Layer", "anatomy", "edited", "hook_names", "run_with_cache",
           "run_with_hooks"]

# An edit receives the activation (in the layout above) and returns its replacement, or None to leave it.
Edit = Callable[[Tensor], "Tensor | None"]

LAYER_SITES = ("hook_resid_pre", "attn.hook_q", "attn.hook_k", "attn.hook_v", "attn.hook_pattern", "attn.hook_z",
               "hook_attn_out", "hook_resid_mid", "hook_mlp_out", "hook_resid_post")
DERIVED = ("attn.hook_result",)  # cache only


def anatomy(model: nn.Module) -> Anatomy:
    """The blocks, final norm and unembedding of one of attnlab's models: :class:`attnlab.models.CausalLM` (with or
    without feed-forward sublayers and norms), the encoder of :class:`attnlab.models.AttentionClassifier`, and
    :class:`attnlab.models.bert.BertEncoder`.  Anything else is an :class:`InputError` naming these."""
    from ..models import AttentionClassifier
    from ..models.bert import BertEncoder
    from ..models.lm import CausalLM

    if isinstance(model, CausalLM):
        norm = model.norm if isinstance(model.norm, nn.LayerNorm) else None
        return Anatomy("lm", _own_layers(model), norm, model.embed.weight)
    if isinstance(model, AttentionClassifier) and model.encoder is not None:
        return Anatomy("classifier", _own_layers(model), None, None, repeatable=False)
    if isinstance(model, BertEncoder):
        return Anatomy("bert", _own_layers(model), None, None)
    from ._hf import hf_anatomy, supported_said  # (a module of its own: transformers only where a model is one)

    found = hf_anatomy(model)  # a Hugging Face causal language model (or an InputError naming the supported ones)
    if found is not None:
        return found
    raise InputError(f"circuits need named hook points, which attnlab builds for its own models (CausalLM, an "
                     f"AttentionClassifier with encoder layers, BertEncoder) and for Hugging Face causal language "
                     f"models ({supported_said()}); got {type(model).__name__}; load the model with attnlab "
                     f"(attnlab.Model.load), or capture it with attnlab.capture to see its attention")


def _own_layers(model: nn.Module) -> tuple[Layer, ...]:
    return tuple(own_layer(b) for b in read_blocks(model))


def hook_names(model: nn.Module | Anatomy) -> list[str]:
    """Every hook point of ``model``, in the order a forward pass reaches them (``attn.hook_result`` too)."""
    a = model if isinstance(model, Anatomy) else anatomy(model)
    names = []
    for i, layer in enumerate(a.layers):
        for site in LAYER_SITES + DERIVED:
            if site in ("hook_resid_mid", "hook_mlp_out") and layer.mlp is None:
                continue
            names.append(f"blocks.{i}.{site}")
    if a.final_norm is not None:
        names.append("ln_final.hook_scale")
    return names


@dataclass(frozen=True)
class ActivationCache:
    """Every activation of one run by name (``cache["blocks.0.attn.hook_z"]``), detached copies unless the run
    kept gradients; layouts in the module docstring."""

    activations: Mapping[str, Tensor]
    n_layers: int
    n_heads: int

    def __getitem__(self, name: str) -> Tensor:
        if name not in self.activations:
            raise InputError(f"the cache holds no activation {name!r}; it holds {sorted(self.activations)}; run "
                             f"run_with_cache without names= to keep every one")
        return self.activations[name]

    def __contains__(self, name: object) -> bool:
        return name in self.activations

    @property
    def names(self) -> list[str]:
        return list(self.activations)


def _check_names(names: Iterable[str], valid: list[str], what: str) -> None:
    bad = [n for n in names if n not in valid]
    if bad:
        raise InputError(f"{what} names unknown hook points {bad}; this model has {valid}")


def run_with_hooks(model: nn.Module, inputs: Tensor, edits: Mapping[str, Edit] | None = None, *,
                   keep: Iterable[str] = (), grad: bool = False, expand: tuple[int, int] | None = None,
                   last: int | None = None, **kwargs: Any) -> tuple[Any, dict[str, Tensor]]:
    """``model(inputs, **kwargs)`` in eval mode with each ``edits[name]`` replacing the activation ``name``, and
    the activations named in ``keep`` returned (after any edit) as ``(output, {name: tensor})``.  Without ``grad``
    the run is under ``torch.no_grad()`` and kept tensors are detached; with it they are the graph's own.

    Two savings for batched patching: ``expand=(layer, n)`` runs a one-row ``inputs`` through the blocks below
    ``layer`` once and repeats the stream ``n`` times at that layer's input (the rows are equal up to there); ``last``
    asks a Hugging Face language model for the logits of the last ``last`` positions only (``logits_to_keep``)."""
    a = anatomy(model)
    edits = dict(edits or {})
    keep = list(keep)
    valid = hook_names(a)
    _check_names(edits, [n for n in valid if not n.endswith(DERIVED)], "edits")
    _check_names(keep, valid, "keep")
    kept: dict[str, Tensor] = {}
    with ExitStack() as stack:
        if not grad:
            stack.enter_context(torch.no_grad())
        stack.enter_context(_eval(model))
        if expand is not None:
            block = a.layers[expand[0]].block
            stack.callback(block.register_forward_pre_hook(_repeat_input(expand[1]), with_kwargs=True,
                                                           prepend=True).remove)
        _install(stack, a, edits, set(keep), kept, grad)
        if last is not None and a.family is not None:
            kwargs = {**kwargs, "logits_to_keep": last}
        out = a.call(model, inputs, **kwargs)
    for name in keep:
        if name.endswith(DERIVED) and name not in kept:
            i = int(name.split(".")[1])
            kept[name] = head_results(a, i, kept[f"blocks.{i}.attn.hook_z"])
    return out, {n: kept[n] for n in keep}


@contextmanager
def edited(model: nn.Module, edits: Mapping[str, Edit]) -> Iterator[None]:
    """Every forward pass of ``model`` inside the block runs with each ``edits[name]`` replacing the activation
    ``name`` (in eval mode; the hooks leave with the block): for a caller whose own code runs the model, such as a
    classifier reading a long text in windows (each window's activation is edited)."""
    a = anatomy(model)
    edits = dict(edits)
    _check_names(edits, [n for n in hook_names(a) if not n.endswith(DERIVED)], "edits")
    with ExitStack() as stack:
        stack.enter_context(_eval(model))
        _install(stack, a, edits, set(), {}, False)
        yield


def run_with_cache(model: nn.Module, inputs: Tensor, names: Iterable[str] | None = None, *, grad: bool = False,
                   **kwargs: Any) -> tuple[Any, ActivationCache]:
    """``(output, cache)``: ``model(inputs, **kwargs)`` with every activation named in ``names`` (default: all,
    :func:`hook_names`) kept."""
    a = anatomy(model)
    wanted = hook_names(a) if names is None else list(names)
    for name in list(wanted):  # a head's result is computed from its z
        if name.endswith(DERIVED):
            z = name.replace("attn.hook_result", "attn.hook_z")
            if z not in wanted:
                wanted.append(z)
    out, kept = run_with_hooks(model, inputs, keep=wanted, grad=grad, **kwargs)
    return out, ActivationCache(kept, a.n_layers, a.n_heads)


def head_results(a: Anatomy, layer: int, z: Tensor) -> Tensor:
    """``(B, T, H, M)`` each head's output through its slice of ``W_O`` (bias excluded) from ``z`` ``(B, T, H, D)``."""
    attn = a.layers[layer].attn
    w_o = attn.out_proj.weight  # (M, H * D)
    h = attn.n_heads
    w = w_o.reshape(w_o.shape[0], h, -1).permute(1, 2, 0)  # (H, D, M)
    return torch.einsum("bthd,hdm->bthm", z.to(w.dtype), w)  # (B, T, H, M)


@contextmanager
def _eval(model: nn.Module) -> Iterator[None]:
    was = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was)


def _install(stack: ExitStack, a: Anatomy, edits: dict[str, Edit], keep: set[str], kept: dict[str, Tensor],
             grad: bool) -> None:
    """Register every hook the edits and the kept names need on ``stack``."""

    def touch(name: str, x: Tensor) -> Tensor:
        edit = edits.get(name)
        if edit is not None:
            new = edit(x)
            if new is not None:
                if new.shape != x.shape:
                    raise InputError(f"the edit of {name} returned shape {tuple(new.shape)}; the activation is "
                                     f"{tuple(x.shape)}: return a tensor of the same shape")
                x = new.to(x.dtype)
        if name in keep:
            kept[name] = x if grad else x.detach().clone()
        return x

    def wanted(name: str) -> bool:
        return name in edits or name in keep

    for i, layer in enumerate(a.layers):
        p = f"blocks.{i}."
        if wanted(p + "hook_resid_pre"):
            stack.callback(layer.block.register_forward_pre_hook(_replace_input(p + "hook_resid_pre", touch),
                                                                 with_kwargs=True).remove)
        if wanted(p + "hook_resid_post"):
            stack.callback(layer.block.register_forward_hook(_replace_output(p + "hook_resid_post", touch)).remove)
        if wanted(p + "hook_attn_out"):
            stack.callback(layer.attention.register_forward_hook(_replace_first(p + "hook_attn_out", touch)).remove)
        if layer.mlp is not None and wanted(p + "hook_mlp_out"):
            stack.callback(layer.mlp.register_forward_hook(_replace_output(p + "hook_mlp_out", touch)).remove)
        if layer.mid is not None and wanted(p + "hook_resid_mid"):
            name = p + "hook_resid_mid"
            hook = (layer.mid.register_forward_hook(_replace_output(name, touch)) if layer.mid_is_output
                    else layer.mid.register_forward_pre_hook(_replace_input(name, touch), with_kwargs=True))
            stack.callback(hook.remove)
        if a.family is not None:
            a.family.install(stack, p, layer, touch, wanted)
            continue
        values: dict[str, Tensor] = {}  # this call's v (B, H, S, D), for an edited pattern
        h = layer.attn.n_heads
        for letter, proj in (("q", layer.attn.q_proj), ("k", layer.attn.k_proj), ("v", layer.attn.v_proj)):
            name = p + f"attn.hook_{letter}"
            need_v = letter == "v" and wanted(p + "attn.hook_pattern")
            if wanted(name) or need_v:
                stack.callback(proj.register_forward_hook(_projection(name, touch, h, values if letter == "v"
                                                                      else None)).remove)
        if wanted(p + "attn.hook_pattern") or wanted(p + "attn.hook_z"):
            listener = _listener(p, touch, values, wanted(p + "attn.hook_pattern"))
            stack.callback(layer.attn.attn_hook.attach(listener, weights=wanted(p + "attn.hook_pattern")))
    if a.final_norm is not None and "ln_final.hook_scale" in keep:
        norm = a.final_norm

        def keep_scale(_m: nn.Module, args: tuple[Any, ...]) -> None:
            x = args[0]  # (B, T, M)
            if a.rms:  # as the Llama family's RMSNorm computes it: in float32, whatever the model's dtype
                eps = float(getattr(norm, "variance_epsilon", getattr(norm, "eps", 1e-6)))
                scale = torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps).reciprocal().to(x.dtype)
            else:
                scale = (x.var(-1, keepdim=True, unbiased=False) + norm.eps).sqrt()  # (B, T, 1)
            kept["ln_final.hook_scale"] = scale if grad else scale.detach().clone()

        stack.callback(norm.register_forward_pre_hook(keep_scale).remove)


Touch = Callable[[str, Tensor], Tensor]


def _replace_input(name: str, touch: Touch) -> Callable[..., Any]:
    def hook(_m: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if args:
            return (touch(name, args[0]), *args[1:]), kwargs
        key = "hidden_states" if "hidden_states" in kwargs else next(iter(kwargs))
        return args, {**kwargs, key: touch(name, kwargs[key])}

    return hook


def _repeat_input(n: int) -> Callable[..., Any]:
    """A block's pre-hook repeating its one-row inputs ``n`` times: the stream, and whatever else is shaped by the
    batch (a padding mask, positions, rotary tables of one row)."""

    def rep(x: Any) -> Any:
        return x.repeat(n, *([1] * (x.dim() - 1))) if isinstance(x, Tensor) and x.dim() >= 2 and len(x) == 1 else x

    def hook(_m: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return tuple(rep(a) if not isinstance(a, tuple) else tuple(rep(x) for x in a) for a in args), {
            k: rep(v) if not isinstance(v, tuple) else tuple(rep(x) for x in v) for k, v in kwargs.items()}

    return hook


def _replace_output(name: str, touch: Touch) -> Callable[..., Any]:
    def hook(_m: nn.Module, _args: tuple[Any, ...], out: Any) -> Any:
        if isinstance(out, tuple):  # a block returning (hidden_states, ...)
            return (touch(name, out[0]), *out[1:])
        return touch(name, out)

    return hook


def _replace_first(name: str, touch: Touch) -> Callable[..., Any]:
    def hook(_m: nn.Module, _args: tuple[Any, ...], out: tuple[Tensor, Any]) -> tuple[Tensor, Any]:
        return (touch(name, out[0]), *out[1:])

    return hook


def _projection(name: str, touch: Touch, h: int, values: dict[str, Tensor] | None) -> Callable[..., Any]:
    def hook(_m: nn.Module, _args: tuple[Any, ...], out: Tensor) -> Tensor:
        b, t, hd = out.shape
        x = touch(name, out.view(b, t, h, hd // h))  # (B, T, H, D)
        if values is not None:
            values["v"] = x.transpose(1, 2)  # (B, H, T, D)
        return x.reshape(b, t, hd)  # (B, T, H * D)

    return hook


def _listener(p: str, touch: Touch, values: dict[str, Tensor], pattern: bool) -> Callable[[AttentionCall],
                                                                                           AttentionCall]:
    def listen(call: AttentionCall) -> AttentionCall:
        assert call.heads is not None
        heads = call.heads  # (B, H, T, D)
        if pattern:
            assert call.weights is not None
            w = touch(p + "attn.hook_pattern", call.weights)  # (B, H, T, S)
            if w is not call.weights:
                heads = (w.to(values["v"].dtype) @ values["v"]).to(heads.dtype)  # (B, H, T, D)
        z = touch(p + "attn.hook_z", heads.transpose(1, 2)).transpose(1, 2)  # (B, T, H, D) -> (B, H, T, D)
        return dataclasses.replace(call, heads=z)

    return listen
