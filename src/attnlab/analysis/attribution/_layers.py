"""Finding the attention layers attribution reads in a model and recording what each computed on one input, with
the hooks and LayerNorm linearisation the methods share.

Letters: L layers, H heads, n tokens, M d_model, Dv per-head value size, B batch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from ...errors import InputError

__all__ = ["Forward", "LayerParts", "LayerRun", "check_eval", "layer_parts", "linear_norm", "pre_hook", "row_sigma",
           "run_layers"]


# forward(k): run the model on k copies of the one input (a batch of k); its output is not read
Forward = Callable[[int], Any]

@dataclass(frozen=True)
class LayerParts:
    """The pieces of one self-attention layer that attribution reads (module references, not copies)."""

    block: nn.Module  # the whole layer: its output (the first item of a tuple) is the residual stream after it
    attention: nn.Module  # the module whose call computes the weights (attnlab MultiHeadAttention, BertSelfAttention)
    value: nn.Linear  # the value projection: (B, n, M) -> (B, n, H * Dv), heads side by side
    output: nn.Linear  # the output projection W_O: (B, n, H * Dv) -> (B, n, M)
    n_heads: int
    # where the attention sublayer's result (residual included) is read: the input of this module when
    # ``post_norm`` is None (pre-norm: the next sublayer's LayerNorm), else its output (post-norm: the LayerNorm
    # over x + attention, which ALTI linearises; it is this module)
    mixed: nn.Module
    post_norm: nn.LayerNorm | None
    # an attention-only block (no feed-forward sublayer, hence no second LayerNorm): the block's own output is the
    # attention sublayer's result, read after it runs
    mixed_is_output: bool = False


def layer_parts(model: nn.Module) -> list[LayerParts]:
    """The self-attention layers of ``model`` in order: attnlab transformer blocks (their ``self_attn``), the layers
    of attnlab's own BERT encoder (:class:`attnlab.models.bert.BertEncoder`) or Hugging Face BERT-family layers
    (``attention.self.value``, ``attention.output.dense``)."""
    from ...layers import MultiHeadAttention

    parts = []
    for module in model.modules():
        attn = getattr(module, "self_attn", None)
        if isinstance(attn, MultiHeadAttention):  # an attnlab encoder or decoder layer
            block: Any = module
            post = None if block.config.norm_first else block.norm1  # pre-norm: x + SA(LN(x)) enters norm2
            alone = post is None and getattr(block, "norm2", None) is None  # attention-only: nothing follows
            parts.append(LayerParts(module, attn, attn.v_proj, attn.out_proj, attn.n_heads,
                                    module if alone else block.norm2 if post is None else post, post, alone))
        elif _is_own_bert_layer(module):  # attnlab's models.bert: MultiHeadAttention at HF's path, post-norm
            own: Any = module.attention  # BertAttention: .self (MultiHeadAttention) and .LayerNorm
            mha = own.get_submodule("self")
            parts.append(LayerParts(module, mha, mha.v_proj, mha.out_proj, mha.n_heads, own.LayerNorm,
                                    own.LayerNorm))
        elif _is_bert_layer(module):
            attention: Any = module.attention  # BertAttention: .self (BertSelfAttention) and .output (dense)
            heads = int(getattr(attention.self, "num_attention_heads", 0) or attention.self.config.num_attention_heads)
            norm = attention.output.LayerNorm  # BERT is post-norm: LN(x + dense(attention))
            parts.append(LayerParts(module, attention.self, attention.self.value, attention.output.dense, heads,
                                    norm, norm))
    if not parts:
        raise InputError(f"found no attention layer to attribute through in {type(model).__name__}; attribution "
                         f"reads attnlab transformer blocks or BERT-family Hugging Face layers "
                         f"(attention.self.value, attention.output.dense)")
    return parts


def _is_own_bert_layer(module: nn.Module) -> bool:
    """A layer of :class:`attnlab.models.bert.BertEncoder`: ``attention.self`` is attnlab's MultiHeadAttention and
    ``attention.LayerNorm`` the post-norm over ``x + attention``."""
    from ...layers import MultiHeadAttention

    attention = getattr(module, "attention", None)
    return (isinstance(getattr(attention, "self", None), MultiHeadAttention)
            and isinstance(getattr(attention, "LayerNorm", None), nn.LayerNorm))


def _is_bert_layer(module: nn.Module) -> bool:
    attention = getattr(module, "attention", None)
    return (isinstance(getattr(getattr(attention, "self", None), "value", None), nn.Linear)
            and isinstance(getattr(getattr(attention, "output", None), "dense", None), nn.Linear)
            and isinstance(getattr(getattr(attention, "output", None), "LayerNorm", None), nn.LayerNorm))


@dataclass(frozen=True)
class LayerRun:
    """What one attention layer computed on one input (float64, batch item 0): ``weights`` ``(H, n, n)``,
    ``values`` ``(H, n, Dv)`` (value bias included), ``residual`` ``(n, M)`` the block's input, ``output``
    ``(n, M)`` the attention sublayer's result with its residual (after the LayerNorm in a post-norm layer) and,
    post-norm, ``sigma`` ``(n,)`` the standard deviation that LayerNorm divided each row by."""

    weights: Tensor
    values: Tensor
    residual: Tensor
    output: Tensor
    sigma: Tensor | None


def run_layers(model: nn.Module, forward: Forward) -> list[LayerRun]:
    """One forward pass ``forward(1)`` (a batch of one) with every attention layer's weights, values, input and
    sublayer output recorded, in the model's own dtype, then made float64."""
    from ...capturing import capture
    from ...layers import MultiHeadAttention

    check_eval(model)
    parts = layer_parts(model)
    seen: list[dict[str, Tensor]] = [{} for _ in parts]
    with ExitStack() as stack:
        stack.enter_context(torch.no_grad())
        stack.enter_context(capture(model))  # switches Hugging Face models to eager attention (weights returned)
        for p, got in zip(parts, seen, strict=True):
            if isinstance(p.attention, MultiHeadAttention):
                def keep_weights(call: Any, got: dict[str, Tensor] = got) -> None:
                    if call.weights is not None:  # a kernel without weights leaves them out: refused below
                        got["weights"] = call.weights[0].detach()

                stack.callback(p.attention.attn_hook.attach(keep_weights, weights=True))
            else:
                _on(stack, p.attention, _store(got, "weights", lambda out: out[1]))  # (attn_output, attn_weights)
            _on(stack, p.value, _store(got, "values", lambda out: out))
            stack.enter_context(pre_hook(p.block, _store(got, "residual", lambda x: x)))
            if p.mixed_is_output:
                _on(stack, p.mixed, _store(got, "output", lambda out: out[0] if isinstance(out, tuple) else out))
            elif p.post_norm is None:
                stack.enter_context(pre_hook(p.mixed, _store(got, "output", lambda x: x)))
            else:
                def keep_norm(m: Any, args: tuple[Any, ...], out: Tensor, got: dict[str, Tensor] = got) -> None:
                    z = args[0][0].detach()  # (n, M): x + attention, before the LayerNorm
                    got.update(output=out[0].detach(), sigma=row_sigma(z, m))

                _on(stack, p.mixed, keep_norm)
        forward(1)
    runs = []
    for p, got in zip(parts, seen, strict=True):
        if not {"weights", "values", "residual", "output"} <= set(got):
            raise InputError(f"layer {type(p.block).__name__} recorded only {sorted(got)} in one forward pass; "
                             f"attribution needs each attention layer called once with its weights")
        n = got["values"].shape[0]
        runs.append(LayerRun(got["weights"].double(), got["values"].double().reshape(n, p.n_heads, -1).transpose(0, 1),
                             got["residual"].double(), got["output"].double(), got.get("sigma")))
    return runs


def _store(got: dict[str, Tensor], key: str, pick: Callable[[Any], Tensor]) -> Callable[..., None]:
    """A hook that keeps ``pick(last argument)[0]`` (batch item 0, detached) as ``got[key]``: the output of a
    forward hook, the input of :func:`_pre_hook`."""

    def hook(*args: Any) -> None:
        got[key] = pick(args[-1])[0].detach()

    return hook


def _on(stack: ExitStack, module: nn.Module, fn: Callable[..., Any]) -> None:
    """A forward hook on ``module`` until ``stack`` closes."""
    stack.callback(module.register_forward_hook(fn).remove)


@contextmanager
def pre_hook(module: nn.Module, keep: Callable[[Tensor], Any]) -> Iterator[None]:
    """``keep(x)`` with ``module``'s first input (positional or ``hidden_states=``) at every call."""

    def hook(_m: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        keep(args[0] if args else kwargs["hidden_states"])

    handle = module.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        yield
    finally:
        handle.remove()

def row_sigma(z: Tensor, norm: nn.LayerNorm) -> Tensor:
    """``(n,)``: the standard deviation ``norm`` divides each row of ``z`` ``(n, M)`` by (float64)."""
    return (z.double().var(-1, unbiased=False) + norm.eps).sqrt()

def linear_norm(x: Tensor, sigma: Tensor, norm: nn.LayerNorm, *, beta: bool = False) -> Tensor:
    """``norm`` with each row's standard deviation fixed at ``sigma`` ``(n,)``, a linear map: ``gamma (x - mean x) /
    sigma_i`` on ``x`` ``(n, ..., M)`` (every vector of row ``i``), plus ``beta`` when ``beta`` (the part that no
    token carries)."""
    m = x.shape[-1]
    gamma = torch.ones(m, dtype=x.dtype) if norm.weight is None else norm.weight.detach().double()  # (M,)
    out = gamma * (x - x.mean(-1, keepdim=True)) / sigma.reshape(-1, *[1] * (x.ndim - 1))
    return out + norm.bias.detach().double() if beta and norm.bias is not None else out

def check_eval(model: nn.Module) -> None:
    if model.training:
        raise InputError("the model is in training mode (dropout on): attribution compares exact forward passes; "
                         "call model.eval() first")
