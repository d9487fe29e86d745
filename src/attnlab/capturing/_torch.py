"""Capture adapter for ``torch.nn.MultiheadAttention``.

Letters: B batch, H heads, L query length, S key length, E embed_dim, D head size.

A forward hook reads each call's inputs and recomputes the per-head weights from the module's own
projections: the module runs exactly as it would (same path, same output), and the weights come back
per head whatever ``need_weights`` / ``average_attn_weights`` the caller passed (``nn.TransformerEncoderLayer``
passes ``need_weights=False``).  torch's boolean masks mean True = blocked; they are converted once,
here, with :func:`attnlab.layers.from_torch_masks`.

Fused fast paths that bypass the module are switched off for the duration: ``nn.TransformerEncoderLayer``
already skips its fused kernel when a module inside it has hooks, and ``nn.TransformerEncoder``'s
nested-tensor path is turned off through its ``use_nested_tensor`` flag (restored afterwards).
"""

from __future__ import annotations

import inspect
import math
from contextlib import ExitStack
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..functional import causal_mask, masked_softmax
from ..layers import from_torch_masks
from ..trace import Kind
from ._recorder import Recorder, module_label

__all__ = ["install", "mha_qk_weights", "mha_weights"]

_SIGNATURE = inspect.signature(nn.MultiheadAttention.forward)


def install(model: nn.Module, named: list[tuple[str, nn.Module]], recorder: Recorder, undo: ExitStack) -> int:
    """Hook every ``nn.MultiheadAttention`` inside ``model``; return how many were found."""
    found = 0
    for path, module in named:
        if isinstance(module, nn.TransformerEncoder) and getattr(module, "use_nested_tensor", False):
            module.use_nested_tensor = False  # its nested-tensor fast path never calls self_attn
            undo.callback(setattr, module, "use_nested_tensor", True)
        if not isinstance(module, nn.MultiheadAttention):
            continue
        found += 1
        name = module_label(path, model)

        def on_call(
            mod: nn.MultiheadAttention, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any, name: str = name
        ) -> None:
            call = _SIGNATURE.bind(mod, *args, **kwargs).arguments
            query, key = call["query"], call["key"]
            self_attn = key is query or (key.shape == query.shape and torch.equal(key, query))
            with torch.no_grad():
                q, k, weights = mha_qk_weights(mod, query, key, call.get("key_padding_mask"), call.get("attn_mask"))
            kind: Kind = "cross"
            if self_attn:
                causal = call.get("is_causal", False) or _is_causal(call.get("attn_mask"), weights.shape[-2:])
                kind = "causal" if causal else "self"
            recorder.add(name, kind, weights, q, k, q.shape[-1] ** -0.5)

        undo.callback(module.register_forward_hook(on_call, with_kwargs=True).remove)
    return found


def mha_weights(
    mha: nn.MultiheadAttention,
    query: Tensor,
    key: Tensor,
    key_padding_mask: Tensor | None = None,
    attn_mask: Tensor | None = None,
) -> Tensor:
    """The per-head attention weights ``(B, H, L, S)`` that ``mha(query, key, ...)`` applies.

    Takes the module's inputs as it takes them (batch first or not, batched or not) and torch's masks
    (bool True = blocked, or float added; ``add_bias_kv`` and ``add_zero_attn`` add one key each).
    Rows with no allowed key are zeros (torch gives NaN there).  Dropout is not applied.
    """
    return mha_qk_weights(mha, query, key, key_padding_mask, attn_mask)[2]


def mha_qk_weights(
    mha: nn.MultiheadAttention,
    query: Tensor,
    key: Tensor,
    key_padding_mask: Tensor | None = None,
    attn_mask: Tensor | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """``(q (B, H, L, D), k (B, H, S, D), weights (B, H, L, S))``: as :func:`mha_weights`, with the per-head
    queries and keys (the extra keys of ``add_bias_kv`` / ``add_zero_attn`` included); the weights are
    ``softmax(q k^T / sqrt(D) + mask)``."""
    e, h = mha.embed_dim, mha.num_heads
    d = e // h
    if query.dim() == 2:  # unbatched (L, E)
        query, key = query.unsqueeze(0), key.unsqueeze(0)  # (1, L, E), (1, S, E)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)  # (1, S)
    elif not mha.batch_first:
        query, key = query.transpose(0, 1), key.transpose(0, 1)  # (B, L, E), (B, S, Ek)
    if mha._qkv_same_embed_dim:
        assert mha.in_proj_weight is not None
        w_q, w_k, _ = mha.in_proj_weight.chunk(3)  # (E, E) each
    else:
        w_q, w_k = mha.q_proj_weight, mha.k_proj_weight
    b_q = b_k = None
    if mha.in_proj_bias is not None:
        b_q, b_k, _ = mha.in_proj_bias.chunk(3)  # (E,) each
    b, l, _ = query.shape
    q = F.linear(query, w_q, b_q).view(b, l, h, d).transpose(1, 2)  # (B, H, L, D)
    k = F.linear(key, w_k, b_k)  # (B, S, E)
    extra = 0
    if mha.bias_k is not None:
        k = torch.cat([k, mha.bias_k.view(1, 1, e).expand(b, 1, e)], dim=1)  # (B, S + 1, E)
        extra += 1
    k = k.view(b, k.shape[1], h, d).transpose(1, 2)  # (B, H, S', D)
    if mha.add_zero_attn:
        k = torch.cat([k, k.new_zeros(b, h, 1, d)], dim=2)  # (B, H, S' + 1, D)
        extra += 1
    if extra:  # the appended keys are never masked
        attn_mask = None if attn_mask is None else F.pad(attn_mask, (0, extra))
        key_padding_mask = None if key_padding_mask is None else F.pad(key_padding_mask, (0, extra))
    scores = torch.matmul(q * (1.0 / math.sqrt(d)), k.transpose(-2, -1))  # (B, H, L, S)
    weights = masked_softmax(scores, from_torch_masks(attn_mask, key_padding_mask, n_heads=h)).to(scores.dtype)
    return q, k, weights


def _is_causal(attn_mask: Tensor | None, shape: torch.Size) -> bool:
    """Whether a torch ``attn_mask`` blocks exactly the future (query i sees keys j <= i)."""
    if attn_mask is None or attn_mask.shape[-2:] != shape:
        return False
    blocked = attn_mask if attn_mask.dtype == torch.bool else torch.isneginf(attn_mask)
    return bool((blocked == ~causal_mask(shape[0], shape[1], device=attn_mask.device)).all())
