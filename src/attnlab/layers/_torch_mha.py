"""The boundary with ``torch.nn.MultiheadAttention``: import its weights, convert its masks.

torch packs the query/key/value projections into ``in_proj_weight`` ``(3E, E)`` when the key and value
widths equal ``E``, and keeps three ``*_proj_weight`` matrices otherwise; ``in_proj_bias`` ``(3E,)`` is
packed in both cases.  torch's boolean masks mean **True = blocked**; attnlab's mean True = may attend,
so they are inverted here, once.
"""

from __future__ import annotations

from typing import Any, TypeVar

import torch
from torch import Tensor, nn

from .. import _validate as check
from ..errors import ConfigError, MaskError

# the layer class a copy is made of: MultiHeadAttention (named by its caller, so that this module need not import it)
Layer = TypeVar("Layer", bound=nn.Module)

__all__ = ["from_torch_masks", "import_torch_mha"]


def import_torch_mha(cls: type[Layer], module: nn.MultiheadAttention) -> Layer:
    """A ``cls`` (attnlab's MultiHeadAttention) with ``module``'s weights, biases and dropout."""
    check.instance("module", module, nn.MultiheadAttention, "a torch.nn.MultiheadAttention",
                   "for other attention modules use attnlab.capture to record their weights")
    if module.bias_k is not None:
        raise ConfigError(
            "module has add_bias_kv=True (learned key/value appended to every sequence), which "
            "MultiHeadAttention does not support; build the torch module without add_bias_kv"
        )
    if module.add_zero_attn:
        raise ConfigError(
            "module has add_zero_attn=True (a zero key/value appended to every sequence), which "
            "MultiHeadAttention does not support; build the torch module without add_zero_attn"
        )
    e, h = module.embed_dim, module.num_heads
    bias = module.in_proj_bias is not None
    made = cls(e, h, dropout=float(module.dropout), bias=bias, d_key_in=module.kdim, d_value_in=module.vdim)
    layer: Any = made  # its projections are read by name
    w = module.in_proj_weight
    if w is not None:
        wq, wk, wv = w.chunk(3, dim=0)  # (E, E) each
    else:
        wq, wk, wv = module.q_proj_weight, module.k_proj_weight, module.v_proj_weight
    ref = module.out_proj.weight
    layer.to(device=ref.device, dtype=ref.dtype)
    with torch.no_grad():
        for lin, weight in ((layer.q_proj, wq), (layer.k_proj, wk), (layer.v_proj, wv)):
            lin.weight.copy_(weight)
        layer.out_proj.weight.copy_(module.out_proj.weight)
        if bias:
            assert module.in_proj_bias is not None
            for lin, b in zip((layer.q_proj, layer.k_proj, layer.v_proj), module.in_proj_bias.chunk(3), strict=True):
                assert lin.bias is not None
                lin.bias.copy_(b)
            assert layer.out_proj.bias is not None and module.out_proj.bias is not None
            layer.out_proj.bias.copy_(module.out_proj.bias)
    layer.train(module.training)
    return made


def _allowed(mask: Tensor, name: str) -> Tensor:
    """torch's mask (bool True = blocked, or float added) as attnlab's (bool True = may attend, or float)."""
    if mask.dtype == torch.bool:
        return ~mask
    if mask.dtype.is_floating_point:
        return mask
    raise MaskError(f"{name} must be bool (True = blocked, torch's convention) or float, got {mask.dtype}")


def from_torch_masks(
    attn_mask: Tensor | None = None, key_padding_mask: Tensor | None = None, *, n_heads: int
) -> Tensor | None:
    """Turn the masks of a ``torch.nn.MultiheadAttention`` call into one attnlab ``mask=``.

    Args:
        attn_mask: ``(L, S)`` or ``(B * n_heads, L, S)``; bool True = blocked, or float added.
        key_padding_mask: ``(B, S)``; bool True = padding (blocked), or float added.
        n_heads: the module's number of heads (to unfold a 3-D ``attn_mask``).

    Returns:
        A mask broadcasting to ``(B, H, L, S)``: bool **True = may attend** when both inputs are bool
        (or absent), otherwise float with ``-inf`` where a bool mask blocked; None when both are None.
    """
    parts: list[Tensor] = []
    if attn_mask is not None:
        m = _allowed(attn_mask, "attn_mask")
        if m.ndim == 3:
            if m.shape[0] % n_heads:
                raise MaskError(
                    f"attn_mask of shape {tuple(m.shape)} must be (batch * n_heads, L, S) with n_heads={n_heads}"
                )
            m = m.view(-1, n_heads, *m.shape[1:])  # (B, H, L, S)
        else:
            check.ndim("attn_mask", m, 2, "(L, S) or (batch * n_heads, L, S)", error=MaskError)
        parts.append(m)
    if key_padding_mask is not None:
        check.ndim("key_padding_mask", key_padding_mask, 2, "(batch, S)", error=MaskError)
        parts.append(_allowed(key_padding_mask, "key_padding_mask")[:, None, None, :])  # (B, 1, 1, S)
    if not parts:
        return None
    if all(p.dtype == torch.bool for p in parts):
        out = parts[0]
        for p in parts[1:]:
            out = out & p
        return out
    dtype = next(p.dtype for p in parts if p.dtype != torch.bool)
    floats = [
        p.to(dtype)
        if p.dtype != torch.bool
        else torch.zeros(p.shape, dtype=dtype, device=p.device).masked_fill(~p, float("-inf"))
        for p in parts
    ]
    out = floats[0]
    for f in floats[1:]:
        out = out + f
    return out
