"""QK attribution: why a head looks where it looks.

For one head, one query position ``i`` and one key position ``j``, the attention score ``s = scale * q_i . k_j``
(before the softmax) is split exactly into a table of terms ``scale * q_a . k_b``: ``a`` a source on the query
side, ``b`` one on the key side.  The sources are what the residual stream at the head's block is the sum of:
``embed`` (the token embeddings, and positional ones where the model adds them), every head of the earlier layers
``"L.H"``, every earlier MLP ``"mL"``, and ``bias`` (everything else the stream holds: the attention output
projections' and MLPs' biases, the pre-attention LayerNorm's shift ``beta`` and the projection's bias).

* **The pre-attention LayerNorm** is made linear by **freezing its scale** at the value the real run divided that
  position's residual by (as TransformerLens does for attribution): each source ``c`` enters as
  ``gamma * (c - mean(c)) / sigma_i``, so the split is exact for this run, not for another input.  An RMSNorm (the
  Llama family's) likewise: ``weight * c / rms_i``, no centring, ``1 / rms_i`` in float32 as the model computes it;
  its rounding of the input to float32 (about 1e-7 of it) is no source's and goes to ``bias``.
* **Positions**: rotary positions (RoPE) rotate the query at ``i`` and the key at ``j``; the rotation is linear, so
  each source's query (key) is rotated by its position and the table stays exact (a Hugging Face model's own
  ``rotary_emb`` and ``rotate_half``).  A model that adds positional embeddings has them inside ``embed``.  A
  position bias added to the scores (a float mask, ALiBi) is not a product of the two sides: it is reported apart
  (``mask_bias``) and is not in the table; a pair the mask hides (a key after the query in a causal model) is refused.
* **Grouped-query attention**: query head ``h`` reads key/value head ``h // (n_heads // n_kv_heads)``.

The table is checked against the score the attention layer itself computed (its :class:`AttentionCall`'s ``q``,
``k`` and ``scale``: attnlab's attention hook, or a Hugging Face model's attention-interface call through
:func:`attnlab.capturing.listen_attention`, its eager attention): a model whose parts do not rebuild its queries is
refused.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ..errors import InputError
from ..layers import AttentionCall
from ._graph import graph_of, sender_outputs
from ._model import anatomy, run_with_hooks

__all__ = ["QKAttribution", "qk_attribution"]

TOL = 1e-4


@dataclass(frozen=True)
class QKAttribution:
    """``table[a, b]``: the part of the score from query-side source ``sources[a]`` and key-side ``sources[b]``;
    ``score`` the layer's own score, ``table.sum() + mask_bias == score``."""

    layer: int
    head: int
    query: int
    key: int
    sources: tuple[str, ...]
    table: np.ndarray
    score: float
    scale: float
    mask_bias: float
    positions: str
    norm: str

    def top(self, n: int = 5) -> list[tuple[str, str, float]]:
        """The ``n`` largest terms by absolute value: ``(query source, key source, term)``."""
        flat = np.argsort(-np.abs(self.table), axis=None, kind="stable")[:n]
        rows = []
        for f in flat:
            a, b = np.unravel_index(int(f), self.table.shape)
            rows.append((self.sources[a], self.sources[b], float(self.table[a, b])))
        return rows

    def to_json(self) -> dict[str, Any]:
        return {"layer": self.layer, "head": self.head, "query": self.query, "key": self.key,
                "sources": list(self.sources), "table": self.table.tolist(), "score": self.score,
                "scale": self.scale, "mask_bias": self.mask_bias, "positions": self.positions, "norm": self.norm,
                "query_side": dict(zip(self.sources, self.table.sum(1).tolist(), strict=True)),
                "key_side": dict(zip(self.sources, self.table.sum(0).tolist(), strict=True)),
                "top": [{"query_source": a, "key_source": b, "term": v} for a, b, v in self.top(8)]}


def _side(comps: Tensor, resid: Tensor, norm: nn.Module | None, rms: bool, weight: Tensor,
          bias: Tensor | None) -> Tensor:
    """``(C + 1, D)`` each source's part of one head's projection at one position (the last row: ``bias``), the
    norm's scale frozen at the real residual's.  ``comps`` ``(C, M)``, ``resid`` ``(M,)``, ``weight`` ``(D, M)``."""
    rest = resid - comps.sum(0)  # (M,)
    parts = torch.cat([comps, rest[None]], 0)  # (C + 1, M)
    shift = torch.zeros_like(resid)
    if isinstance(norm, nn.LayerNorm):
        sigma = (resid.var(unbiased=False) + norm.eps).sqrt()
        parts = (parts - parts.mean(-1, keepdim=True)) / sigma
        if norm.weight is not None:
            parts = parts * norm.weight
        if norm.bias is not None:
            shift = norm.bias
    elif norm is not None and rms:
        # the Llama family's RMSNorm: weight * x / rms(x), no centring, no bias, computed as the model computes it:
        # in float32 whatever the model's dtype.  Its input's rounding to float32 (about 1e-7 of it) is no source's:
        # it goes to the bias row, so that the rows sum to the normalised input the model itself projected
        eps = float(getattr(norm, "variance_epsilon", getattr(norm, "eps", None)) or 1e-6)
        inv = torch.rsqrt(resid.float().pow(2).mean() + eps)
        parts = parts * inv.to(resid.dtype)
        parts[-1] = parts[-1] + ((resid.float() * inv).to(resid.dtype) - parts.sum(0))
        w = getattr(norm, "weight", None)
        if w is not None:
            parts = parts * w
    elif norm is not None:
        raise InputError(f"QK attribution freezes a LayerNorm's or an RMSNorm's scale; this model's norm is "
                         f"{type(norm).__name__}")
    out = parts @ weight.T  # (C + 1, D)
    out[-1] = out[-1] + shift @ weight.T + (bias if bias is not None else 0)
    return out


def qk_attribution(model: nn.Module, tokens: Tensor, layer: int, head: int, query: int, key: int,
                   **kwargs: Any) -> QKAttribution:
    """The table of one head's score at ``(query, key)`` on ``tokens`` ``(T,)`` or ``(1, T)`` (module docstring)."""
    a = anatomy(model)
    ids = tokens[None] if tokens.dim() == 1 else tokens
    if ids.shape[0] != 1:
        raise InputError(f"QK attribution reads one sequence; got a batch of {ids.shape[0]}")
    t = ids.shape[1]
    if not (0 <= layer < a.n_layers and 0 <= head < a.n_heads):
        raise InputError(f"head {layer}.{head} does not exist; the model has layers 0-{a.n_layers - 1} and heads "
                         f"0-{a.n_heads - 1}")
    if not (0 <= query < t and 0 <= key < t):
        raise InputError(f"positions must lie in 0..{t - 1}; got query {query}, key {key}")
    g = graph_of(model)
    lay = a.layers[layer]
    n = g.prefix[("q", layer)]
    names = (*tuple(s.name for s in g.senders[:n]), "bias")
    calls: list[AttentionCall] = []

    def listen(call: AttentionCall) -> None:
        calls.append(call)

    with ExitStack() as stack:
        if a.family is not None:  # a Hugging Face model: its attention-interface call's own q, k, scale and mask
            a.family.listen(stack, lay, listen)
        else:
            hook = getattr(lay.attn, "attn_hook", None)
            if hook is None:
                raise InputError(f"QK attribution reads layer {layer}'s own queries and keys through attnlab's "
                                 f"attention hook, which this model's attention does not have")
            stack.callback(hook.attach(listen, weights=False))
        with torch.no_grad():
            senders = sender_outputs(g, model, ids, **kwargs)[0, :, :n]  # (T, C, M)
            calls.clear()
            _, kept = run_with_hooks(model, ids, keep=[f"blocks.{layer}.hook_resid_pre"], **kwargs)
    call = calls[-1]
    if call.q is None or call.k is None or call.scale is None:
        raise InputError(f"layer {layer}'s attention does not report its queries and keys (a kernel without a dot "
                         f"product); QK attribution needs them")
    bias = _mask_bias(call, head, query, key)
    resid = kept[f"blocks.{layer}.hook_resid_pre"][0]  # (T, M)
    with torch.no_grad():
        h_d = call.q.shape[-1]
        kv = head // (a.n_heads // a.n_kv_heads)  # grouped-query attention: the key/value head this head reads
        rows, kv_rows = slice(head * h_d, (head + 1) * h_d), slice(kv * h_d, (kv + 1) * h_d)
        wq, wk = lay.attn.q_proj.weight[rows], lay.attn.k_proj.weight[kv_rows]
        bq = lay.attn.q_proj.bias[rows] if lay.attn.q_proj.bias is not None else None
        bk = lay.attn.k_proj.bias[kv_rows] if lay.attn.k_proj.bias is not None else None
        qs = _side(senders[query], resid[query], lay.norm, a.rms, wq, bq)  # (C + 1, D)
        ks = _side(senders[key], resid[key], lay.norm, a.rms, wk, bk)
        if a.family is not None:  # the model's own rotary embedding, if it has one
            turned = a.family.rotary(lay, qs, query)
            rotary = turned is not None
            if turned is not None:
                qs, ks = turned, a.family.rotary(lay, ks, key)
        else:
            rotary = bool(getattr(getattr(lay.attn, "config", None), "rotary", False))
            if rotary:
                from ..functional.rotary import apply_rotary

                qs = apply_rotary(qs[:, None], offset=query)[:, 0]
                ks = apply_rotary(ks[:, None], offset=key)[:, 0]
        q_real, k_real = call.q[0, head, query], call.k[0, head, key]  # (D,)
        for side, real, what in ((qs, q_real, "query"), (ks, k_real, "key")):
            err = float((side.sum(0) - real).abs().max())
            if err > TOL * max(1.0, float(real.abs().max())):
                raise InputError(f"the {what} rebuilt from the residual stream's parts differs from layer {layer}'s "
                                 f"own by {err:.3g}; this model's positions or norm are not ones QK attribution "
                                 f"handles (rotary or added embeddings; LayerNorm, RMSNorm or none)")
        scale = float(call.scale)
        table = (qs @ ks.T) * scale  # (C + 1, C + 1)
        score = float((q_real @ k_real) * scale)
    positions = "rotary (each source rotated by its position)" if rotary else "in embed (added embeddings) or none"
    norm = ("none" if lay.norm is None
            else "LayerNorm, scale frozen at this run's" if isinstance(lay.norm, nn.LayerNorm)
            else "RMSNorm, scale frozen at this run's (float32, as the model computes it)")
    return QKAttribution(layer, head, query, key, names, table.double().numpy(), score, scale, bias, positions, norm)


def _mask_bias(call: AttentionCall, head: int, query: int, key: int) -> float:
    """What the call's mask adds to the score at ``(query, key)`` (0.0 where a causal mask lets it through); a pair
    the mask hides is an :class:`InputError`: it has no score."""
    assert call.q is not None and call.k is not None
    if key > query and (call.causal or call.kind == "causal"):
        raise InputError(f"query {query} does not see key {key}: a causal model's query reads the keys up to its own "
                         f"position; give a key of at most {query}")
    m = call.mask
    if m is None:
        return 0.0
    while m.dim() < 4:
        m = m[None]
    s = call.k.shape[2]
    value = m[..., :s].expand(1, call.q.shape[1], call.q.shape[2], s)[0, head, query, key]
    hidden = not bool(value) if m.dtype == torch.bool else float(value) <= torch.finfo(m.dtype).min / 2
    if hidden:
        raise InputError(f"query {query} does not see key {key}: the attention mask hides it")
    return 0.0 if m.dtype == torch.bool else float(value)
