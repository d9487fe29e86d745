"""What the hook points of :mod:`attnlab.circuits` sit on: a model's blocks (:class:`Layer`) and the whole
(:class:`Anatomy`), as references to the model's own modules and parameters, built by
:func:`attnlab.circuits.anatomy` (attnlab's models) and :mod:`attnlab.circuits._hf` (Hugging Face causal LMs) from
the one reading of a model's blocks, :func:`attnlab.models.blocks.read_blocks`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch import Tensor, nn

from ..models.blocks import Block

__all__ = ["Anatomy", "Layer", "own_layer"]


@dataclass(frozen=True)
class Layer:
    """One self-attention block of a model, as module references (not copies)."""

    block: nn.Module  # its input is the residual stream before it, its output the stream after it
    # the attention's weights and head counts: attnlab's MultiHeadAttention, or for a Hugging Face model a view of
    # its own parameters with the same names (q_proj, k_proj, v_proj, out_proj: weight (out, in), bias; n_heads)
    attn: Any
    # where the stream between the two sublayers is read: the input of this module (pre-norm: norm2), or its output
    # (post-norm: the LayerNorm over x + attention); None when the block has no second sublayer
    mid: nn.Module | None
    mid_is_output: bool
    mlp: nn.Module | None  # the feed-forward sublayer, whose output is hook_mlp_out (BERT: the output Linear)
    norm: nn.Module | None  # the LayerNorm (or RMSNorm) in front of the attention (pre-norm), None without one
    pre_norm: bool
    # the module whose output's first element is hook_attn_out (attnlab: the attention itself)
    attn_module: nn.Module | None = None

    @property
    def attention(self) -> nn.Module:
        return self.attn_module if self.attn_module is not None else self.attn


def own_layer(b: Block) -> Layer:
    """The :class:`Layer` of one of attnlab's own blocks (family ``"attnlab"`` or ``"attnlab-bert"``): its
    MultiHeadAttention is read as it is; the stream between the sublayers is where the attention sublayer's result
    is read, when a second sublayer follows."""
    mid = b.mixed if b.mlp is not None else None
    return Layer(b.block, b.attention, mid, mid is not None and b.mixed_is_output, b.mlp, b.norm, b.pre_norm)


@dataclass(frozen=True)
class Anatomy:
    """The parts of a model the hook points sit on; :func:`anatomy` builds it."""

    kind: str  # "lm", "classifier", "bert", or a Hugging Face model_type ("gpt2", "llama", "qwen2", "mistral")
    layers: tuple[Layer, ...]
    final_norm: nn.Module | None  # the norm before the unembedding (CausalLM with norms; a Hugging Face LM's own)
    unembed: Tensor | None  # (V, M): logits = final_norm(x) @ unembed.T (a language model)
    rms: bool = False  # the final norm is an RMSNorm (no centring, no bias), as in the Llama family
    # a Hugging Face model's hook installer for q/k/v/pattern/z and how it is called (attnlab.circuits._hf); None
    # for attnlab's own models
    family: Any = None
    # a one-row run may be repeated at a block's input (batched patching): every later use of the batch-shaped
    # inputs broadcasts one row (not so for a classifier, which pools with its padding mask after the blocks)
    repeatable: bool = True

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    @property
    def n_heads(self) -> int:
        return int(self.layers[0].attn.n_heads)

    @property
    def n_kv_heads(self) -> int:
        """Key/value heads per layer: fewer than :attr:`n_heads` under grouped-query attention, where each serves
        ``n_heads // n_kv_heads`` query heads in a row."""
        return int(getattr(self.layers[0].attn, "n_kv_heads", self.n_heads))

    def call(self, model: nn.Module, inputs: Tensor, **kwargs: Any) -> Any:
        """The model's output on ``inputs``: attnlab's models' own; a Hugging Face language model's logits."""
        return model(inputs, **kwargs) if self.family is None else self.family.call(model, inputs, **kwargs)
