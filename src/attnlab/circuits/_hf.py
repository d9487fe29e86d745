"""Hook points on a Hugging Face causal language model, taken from its own modules: nothing is copied or converted.

The same names and layouts as attnlab's own models (:mod:`attnlab.circuits._model`), found on the model's modules:

* ``hook_resid_pre`` / ``hook_resid_post``: the input and output of each decoder layer (``transformer.h[i]``,
  ``model.layers[i]``); ``hook_resid_mid``: the input of the norm before the feed-forward sublayer (``ln_2``,
  ``post_attention_layernorm``); ``hook_attn_out``: the attention module's output (its ``W_O`` bias included);
  ``hook_mlp_out``: the ``mlp`` module's output;
* ``attn.hook_q`` / ``hook_k`` / ``hook_v`` ``(B, T, H, D)``: the projections' outputs, before rotary positions (as
  TransformerLens's); GPT-2's fused ``c_attn`` is split into the three.  Under grouped-query attention (Llama,
  Qwen2, Mistral with fewer key/value heads) ``hook_k`` and ``hook_v`` have the key/value heads, ``n_kv_heads`` of
  them, each serving ``n_heads // n_kv_heads`` query heads in a row (TransformerLens's layout too);
* ``attn.hook_z`` ``(B, T, H, D)``: the input of the output projection (``c_proj``, ``o_proj``), each head's output;
* ``attn.hook_pattern`` ``(B, H, T, S)``: the attention weights, read by running the module's own eager attention
  through :func:`attnlab.capturing.edit_attention` while the hook is on (the model's configs are switched back
  after); an edited pattern is applied to the call's values;
* ``ln_final.hook_scale``: the final norm's divisor (LayerNorm: the standard deviation; RMSNorm: the root mean
  square, in float32 as the Llama family computes it).

The decoder layers and their modules are the one reading of a model's blocks, :func:`attnlab.models.blocks.read_blocks`;
the weights circuits read (``Layer.attn``) are its views of the model's own parameters (``Block.weights``: GPT-2's
``Conv1D`` weights ``(in, out)`` transposed, the Llama family's ``nn.Linear`` weights as they are).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from .._bundled import CAUSAL_LMS
from ..errors import InputError
from ..models.blocks import Block, Projection, read_blocks
from ._anatomy import Anatomy, Layer

__all__ = ["SUPPORTED", "hf_anatomy", "supported_said"]

SUPPORTED = CAUSAL_LMS  # model_type -> the architecture's name in messages


def supported_said() -> str:
    return ", ".join(f"{name} ({mt})" for mt, name in SUPPORTED.items())


@dataclass(frozen=True)
class Attention:
    """What circuits reads of one attention module of a Hugging Face model: its weights as :class:`Projection`
    views and its head counts; ``parts`` is its block as :func:`attnlab.models.blocks.read_blocks` read it (the
    projection modules the hooks go on)."""

    module: nn.Module
    q_proj: Projection
    k_proj: Projection
    v_proj: Projection
    out_proj: Projection
    n_heads: int
    n_kv_heads: int
    head_dim: int
    parts: Block


Touch = Callable[[str, Tensor], Tensor]


@dataclass(frozen=True)
class Family:
    """How a Hugging Face causal language model is run and where its per-head hooks go."""

    model: nn.Module

    def call(self, model: nn.Module, inputs: Tensor, **kwargs: Any) -> Tensor:
        """The logits ``(B, T, V)`` of ``inputs`` ``(B, T)`` (no key/value cache kept)."""
        return model(input_ids=inputs, use_cache=False, **kwargs).logits

    def install(self, stack: ExitStack, p: str, layer: Any, touch: Touch, wanted: Callable[[str], bool]) -> None:
        at: Attention = layer.attn
        b, d = at.parts, at.head_dim
        if b.fused and any(wanted(p + f"attn.hook_{x}") for x in "qkv"):  # GPT-2's c_attn gives q, k and v
            stack.callback(b.q_proj.register_forward_hook(_fused(p, touch, at.n_heads, d)).remove)
        elif not b.fused:
            for letter, module, h in (("q", b.q_proj, at.n_heads), ("k", b.k_proj, at.n_kv_heads),
                                      ("v", b.v_proj, at.n_kv_heads)):
                name = p + f"attn.hook_{letter}"
                if wanted(name):
                    stack.callback(module.register_forward_hook(_split(name, touch, h, d)).remove)
        if wanted(p + "attn.hook_pattern"):
            from ..capturing import edit_attention

            edit_attention(self.model, at.module, _pattern(p + "attn.hook_pattern", touch, at), stack)
        if wanted(p + "attn.hook_z"):
            stack.callback(b.out_proj.register_forward_pre_hook(_z(p + "attn.hook_z", touch, at.n_heads, d)).remove)

    def listen(self, stack: ExitStack, layer: Any, listener: Callable[[Any], None]) -> None:
        """While ``stack`` is open, ``listener`` gets each call of ``layer``'s attention as an
        :class:`attnlab.layers.AttentionCall` of its own post-rotary queries, keys (grouped key heads repeated), scale
        and additive mask (:func:`attnlab.capturing.listen_attention`)."""
        from ..capturing import listen_attention

        listen_attention(self.model, layer.attn.module, listener, stack)

    def rotary(self, layer: Any, x: Tensor, position: int) -> Tensor | None:
        """``x`` ``(..., D)`` rotated to ``position`` as ``layer``'s attention rotates its queries and keys: the
        model's own rotary embedding (``rotary_emb``) and its modeling file's ``rotate_half``,
        ``x * cos + rotate_half(x) * sin``; None for a model without one (GPT-2: its learned positions are added to
        the embeddings)."""
        rope = getattr(getattr(self.model, "model", None), "rotary_emb", None)
        if rope is None:
            return None
        cos, sin = rope(x, torch.tensor([[position]], device=x.device))  # (1, 1, D) each
        turn = getattr(sys.modules.get(type(layer.attn.module).__module__), "rotate_half", None)
        if not callable(turn):
            raise InputError(f"{type(layer.attn.module).__name__}'s modeling file has no rotate_half; its rotary "
                             f"positions are not the ones circuits read")
        return x * cos[0, 0] + turn(x) * sin[0, 0]


def _split(name: str, touch: Touch, h: int, d: int) -> Callable[..., Any]:
    def hook(_m: nn.Module, _args: tuple[Any, ...], out: Tensor) -> Tensor:
        b, t, _ = out.shape
        return touch(name, out.view(b, t, h, d)).reshape(b, t, h * d)  # (B, T, H, D) <-> (B, T, H * D)

    return hook


def _fused(p: str, touch: Touch, h: int, d: int) -> Callable[..., Any]:
    def hook(_m: nn.Module, _args: tuple[Any, ...], out: Tensor) -> Tensor:
        b, t, _ = out.shape
        parts = [touch(p + f"attn.hook_{x}", part.reshape(b, t, h, d)).reshape(b, t, h * d)
                 for x, part in zip("qkv", out.split(h * d, dim=2), strict=True)]  # each (B, T, H, D)
        return torch.cat(parts, dim=2)  # (B, T, 3 * H * D)

    return hook


def _z(name: str, touch: Touch, h: int, d: int) -> Callable[..., Any]:
    def hook(_m: nn.Module, args: tuple[Any, ...]) -> tuple[Any, ...]:
        x = args[0]  # (B, T, H * D)
        b, t, _ = x.shape
        return (touch(name, x.reshape(b, t, h, d)).reshape(b, t, h * d), *args[1:])

    return hook


def _pattern(name: str, touch: Touch, at: Attention) -> Callable[[Tensor, Tensor, Tensor], Tensor]:
    groups = at.n_heads // at.n_kv_heads

    def edit(out: Tensor, weights: Tensor, value: Tensor) -> Tensor:
        w = touch(name, weights)  # (B, H, T, S)
        if w is weights:
            return out
        v = value.repeat_interleave(groups, dim=1) if groups > 1 else value  # (B, H, S, D)
        return (w.to(v.dtype) @ v).transpose(1, 2).contiguous().to(out.dtype)  # (B, T, H, D), as eager returns

    return edit


def hf_anatomy(model: nn.Module) -> Anatomy | None:
    """The :class:`attnlab.circuits.Anatomy` of a Hugging Face causal language model of a supported architecture;
    None for a model that is not a transformers model; an :class:`InputError` naming the supported architectures
    for any other transformers model."""
    if "transformers" not in sys.modules:
        return None
    from transformers import PreTrainedModel

    if not isinstance(model, PreTrainedModel):
        return None
    config = model.config
    mt = getattr(config, "model_type", None)
    lm_head = getattr(model, "lm_head", None)
    if mt not in SUPPORTED or not isinstance(lm_head, nn.Linear):
        what = f"a {type(model).__name__} ({mt})"
        raise InputError(f"circuits read Hugging Face causal language models of these architectures: "
                         f"{supported_said()}, loaded with their language-model head (AutoModelForCausalLM); got "
                         f"{what}; its attention can still be seen with attnlab show or attnlab.capture")
    blocks = read_blocks(model)
    family = "hf-gpt2" if mt == "gpt2" else "hf-llama"
    if not blocks or any(b.family != family for b in blocks):
        raise InputError(f"circuits read a {type(model).__name__} ({mt}) through its decoder layers as "
                         f"transformers builds them ({family}); its blocks read as {[b.family for b in blocks]}")
    if any(b.cross is not None for b in blocks):
        raise InputError("circuits read GPT-2 decoders without cross-attention; this one has "
                         "add_cross_attention=True")
    base: Any = model.transformer if mt == "gpt2" else model.model
    final, rms = (base.ln_f, False) if mt == "gpt2" else (base.norm, True)
    return Anatomy(str(mt), tuple(_layer(b) for b in blocks), final, lm_head.weight, rms=rms, family=Family(model))


def _layer(b: Block) -> Layer:
    """The :class:`Layer` of a Hugging Face decoder layer: its attention read through :class:`Attention`, a view of
    its own parameters."""
    view = Attention(b.attention, *b.weights(), b.n_heads, b.n_kv_heads, b.head_dim, b)
    return Layer(b.block, view, b.mixed, False, b.mlp, b.norm, True, attn_module=b.attention)
