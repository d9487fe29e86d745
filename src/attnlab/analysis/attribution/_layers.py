"""The attention layers attribution reads in a model (a view of :func:`attnlab.models.blocks.read_blocks`), what
each computed on one input, and the hooks and LayerNorm linearisation the methods share.

Letters: L layers, H heads, n tokens, M d_model, Dv per-head value size, B batch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any, cast

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


ATTRIBUTED = ("attnlab", "attnlab-bert", "hf-bert")  # the families of models.blocks whose projections are nn.Linear


def layer_parts(model: nn.Module) -> list[LayerParts]:
    """The self-attention layers of ``model`` in order: attnlab transformer blocks (their ``self_attn``), the layers
    of attnlab's own BERT encoder (:class:`attnlab.models.bert.BertEncoder`) or Hugging Face BERT-family layers
    (``attention.self.value``, ``attention.output.dense``), as :func:`attnlab.models.blocks.read_blocks` reads
    them."""
    from ...models.blocks import read_blocks

    parts = [LayerParts(b.block, b.attention, cast(nn.Linear, b.v_proj), cast(nn.Linear, b.out_proj), b.n_heads,
                        b.mixed, b.post_norm, b.mixed_is_output and b.post_norm is None)
             for b in read_blocks(model) if b.family in ATTRIBUTED]
    if not parts:
        raise InputError(f"found no attention layer to attribute through in {type(model).__name__}; attribution "
                         f"reads attnlab transformer blocks or BERT-family Hugging Face layers "
                         f"(attention.self.value, attention.output.dense)")
    return parts


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
