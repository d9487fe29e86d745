"""The one reading of a model's self-attention blocks: which blocks a model has and what each contains, as
references to the model's own modules (never copies).

:func:`read_blocks` walks a model once and gives a :class:`Block` for every self-attention block it knows:

* ``"attnlab"``: attnlab's transformer blocks (:class:`attnlab.layers.TransformerEncoderLayer`,
  ``TransformerDecoderLayer``, :class:`attnlab.models.lm.CausalBlock`), pre- or post-norm, with or without a
  feed-forward sublayer and norms: their ``self_attn`` is attnlab's :class:`attnlab.layers.MultiHeadAttention`;
* ``"attnlab-bert"``: the layers of :class:`attnlab.models.bert.BertEncoder` (attnlab's attention at Hugging
  Face's path ``attention.self``, post-norm);
* ``"hf-bert"``: Hugging Face BERT-family encoder layers (``attention.self.query`` / ``key`` / ``value``,
  ``attention.output.dense``, ``attention.output.LayerNorm``);
* ``"hf-gpt2"``: Hugging Face GPT-2 blocks (``attn.c_attn``, one projection giving q, k and v, ``ln_1``, ``ln_2``);
* ``"hf-llama"``: decoder layers of the Llama family (Llama, Qwen2, Mistral: ``self_attn.q_proj`` ... ``o_proj``,
  ``input_layernorm``, ``post_attention_layernorm``).

Its readers take the view they need: :func:`attnlab.circuits.anatomy` (the hook points of patching and discovery)
and :func:`attnlab.analysis.attribution.layer_parts` (ALTI, value zeroing, norm-based and logit attribution).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch.nn.functional as F
from torch import Tensor, nn

from ..layers import MultiHeadAttention

__all__ = ["Block", "Projection", "read_blocks"]


@dataclass(frozen=True)
class Projection:
    """A linear map ``x @ weight.T + bias`` whose ``weight`` ``(out, in)`` and ``bias`` are views of a model's own
    parameters."""

    weight: Tensor
    bias: Tensor | None

    def __call__(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight, self.bias)


@dataclass(frozen=True)
class Block:
    """One self-attention block of a model (module references, not copies); :func:`read_blocks` reads them."""

    family: str  # "attnlab", "attnlab-bert", "hf-bert", "hf-gpt2", "hf-llama" (the module docstring)
    block: nn.Module  # its input is the residual stream before it, its output (a tuple's first item) the stream after
    attention: nn.Module  # the module whose call computes the weights (MultiHeadAttention, BertSelfAttention, ...)
    # the projections: nn.Linear (heads side by side), or GPT-2's Conv1D (x @ weight + bias, weight (in, out)): its
    # fused c_attn is q_proj, k_proj and v_proj at once (q, k, v side by side); out_proj's input is each head's
    # output side by side (BERT: attention.output.dense)
    q_proj: nn.Module
    k_proj: nn.Module
    v_proj: nn.Module
    out_proj: nn.Module
    n_heads: int
    n_kv_heads: int  # fewer than n_heads under grouped-query attention, each serving n_heads // n_kv_heads in a row
    head_dim: int  # a query's (and key's) size per head
    norm: nn.Module | None  # the LayerNorm (or RMSNorm) in front of the attention (pre-norm), None without one
    pre_norm: bool
    post_norm: nn.LayerNorm | None  # post-norm: the LayerNorm over x + attention; None in a pre-norm block
    mlp: nn.Module | None  # the feed-forward sublayer, its output before the residual (BERT: its output Linear)
    # where the attention sublayer's result (its residual included) is read: the output of this module when
    # ``mixed_is_output`` (post-norm: ``post_norm``; an attention-only block: the block itself), else its input
    # (pre-norm: the next sublayer's norm)
    mixed: nn.Module
    mixed_is_output: bool
    cross: nn.Module | None = None  # a second, cross-attention (attnlab's decoder layers, GPT-2's crossattention)

    @property
    def fused(self) -> bool:
        """One module computes q, k and v (GPT-2's ``c_attn``)."""
        return self.q_proj is self.v_proj

    def weights(self) -> tuple[Projection, Projection, Projection, Projection]:
        """``(q, k, v, out)`` as :class:`Projection` views ``(out, in)`` of the block's own parameters (GPT-2's
        ``Conv1D`` weights transposed, its fused ``c_attn`` cut into the three)."""
        if not self.fused:
            return _view(self.q_proj), _view(self.k_proj), _view(self.v_proj), _view(self.out_proj)
        whole = _view(self.q_proj)  # (q, k, v side by side, M)
        sizes = [self.n_heads * self.head_dim] + [self.n_kv_heads * self.head_dim] * 2
        biases = (None,) * 3 if whole.bias is None else whole.bias.split(sizes)
        q, k, v = (Projection(w, b) for w, b in zip(whole.weight.split(sizes), biases, strict=True))
        return q, k, v, _view(self.out_proj)


def _view(module: nn.Module) -> Projection:
    weight: Any = module.weight
    bias: Any = module.bias
    return Projection(weight if isinstance(module, nn.Linear) else weight.T, bias)  # Conv1D: (in, out)


def read_blocks(model: nn.Module) -> list[Block]:
    """Every self-attention block of ``model`` that this module knows (its docstring), in the order
    ``model.modules()`` reaches them; ``[]`` when there is none."""
    blocks = []
    for module in model.modules():
        found = _read(module)
        if found is not None:
            blocks.append(found)
    return blocks


def _read(module: nn.Module) -> Block | None:
    """``module`` read as a block, or None for a module that is none: the one place the structures are probed."""
    for read in (_attnlab, _attnlab_bert, _hf_bert, _hf_gpt2, _hf_llama):
        found = read(module)
        if found is not None:
            return found
    return None


def _attnlab(m: Any) -> Block | None:
    """An attnlab encoder, decoder or causal block: pre-norm ``x + SA(LN(x))`` entering ``norm2`` (or leaving the
    block when nothing follows), or post-norm ``LN(x + SA(x))`` (``norm1``)."""
    a: Any = getattr(m, "self_attn", None)
    if not isinstance(a, MultiHeadAttention):
        return None
    pre = bool(m.config.norm_first)
    ff, norm2 = getattr(m, "ff", None), getattr(m, "norm2", None)
    post = None if pre else m.norm1
    mixed, is_output = (m.norm1, True) if post is not None else (m, True) if norm2 is None else (norm2, False)
    norm = m.norm1 if pre and isinstance(m.norm1, nn.LayerNorm) else None  # norm=False: nn.Identity, no norm
    return Block("attnlab", m, a, a.q_proj, a.k_proj, a.v_proj, a.out_proj, a.n_heads, a.n_heads, a.config.head_k,
                 norm, pre, post, ff, mixed, is_output, getattr(m, "cross_attn", None))


def _attnlab_bert(m: Any) -> Block | None:
    """A layer of attnlab's BERT: its MultiHeadAttention at ``attention.self``, post-norm ``attention.LayerNorm``."""
    a: Any = getattr(getattr(m, "attention", None), "self", None)
    norm: Any = getattr(getattr(m, "attention", None), "LayerNorm", None)
    if not (isinstance(a, MultiHeadAttention) and isinstance(norm, nn.LayerNorm)):
        return None
    return Block("attnlab-bert", m, a, a.q_proj, a.k_proj, a.v_proj, a.out_proj, a.n_heads, a.n_heads,
                 a.config.head_k, None, False, norm, m.output, norm, True)


def _hf_bert(m: Any) -> Block | None:
    """A Hugging Face BERT-family layer, post-norm: ``attention.output.LayerNorm(x + dense(attention))``."""
    s: Any = getattr(getattr(m, "attention", None), "self", None)
    out: Any = getattr(getattr(m, "attention", None), "output", None)
    if not (all(isinstance(getattr(s, p, None), nn.Linear) for p in ("query", "key", "value"))
            and isinstance(getattr(out, "dense", None), nn.Linear)
            and isinstance(getattr(out, "LayerNorm", None), nn.LayerNorm)):
        return None
    heads = int(getattr(s, "num_attention_heads", 0) or s.config.num_attention_heads)
    mlp = getattr(getattr(m, "output", None), "dense", None)
    return Block("hf-bert", m, s, s.query, s.key, s.value, out.dense, heads, heads, s.query.out_features // heads,
                 None, False, out.LayerNorm, mlp, out.LayerNorm, True)


def _hf_gpt2(m: Any) -> Block | None:
    """A Hugging Face GPT-2 block, pre-norm: ``ln_1``, the fused ``attn.c_attn``, ``attn.c_proj``, ``ln_2``."""
    a: Any = getattr(m, "attn", None)
    if not all(hasattr(a, p) for p in ("c_attn", "c_proj")) or not all(hasattr(m, p) for p in ("ln_1", "ln_2")):
        return None
    h = int(a.config.n_head)
    return Block("hf-gpt2", m, a, a.c_attn, a.c_attn, a.c_attn, a.c_proj, h, h, int(a.config.n_embd) // h, m.ln_1,
                 True, None, m.mlp, m.ln_2, False, getattr(m, "crossattention", None))


def _hf_llama(m: Any) -> Block | None:
    """A decoder layer of the Llama family (Llama, Qwen2, Mistral), pre-norm: ``input_layernorm``,
    ``self_attn.q_proj`` ... ``o_proj``, ``post_attention_layernorm``."""
    a: Any = getattr(m, "self_attn", None)
    if (not all(hasattr(a, p) for p in ("q_proj", "k_proj", "v_proj", "o_proj"))
            or not all(hasattr(m, p) for p in ("input_layernorm", "post_attention_layernorm"))):
        return None
    c = a.config
    h = int(c.num_attention_heads)
    kv = int(getattr(c, "num_key_value_heads", None) or h)
    d = int(getattr(c, "head_dim", None) or c.hidden_size // h)
    return Block("hf-llama", m, a, a.q_proj, a.k_proj, a.v_proj, a.o_proj, h, kv, d, m.input_layernorm, True, None,
                 m.mlp, m.post_attention_layernorm, False)
