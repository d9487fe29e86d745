"""QK attribution: why a head looks where it looks.

For one head, one query position ``i`` and one key position ``j``, the attention score ``s = scale * q_i . k_j``
(before the softmax) is split exactly into a table of terms ``scale * q_a . k_b``: ``a`` a source on the query
side, ``b`` one on the key side.  The sources are what the residual stream at the head's block is the sum of:
``embed`` (the token embeddings, and positional ones where the model adds them), every head of the earlier layers
``"L.H"``, every earlier MLP ``"mL"``, and ``bias`` (everything else the stream holds: the attention output
projections' and MLPs' biases, the pre-attention LayerNorm's shift ``beta`` and the projection's bias).

* **The pre-attention LayerNorm** is made linear by **freezing its scale** at the value the real run divided that
  position's residual by (as TransformerLens does for attribution): each source ``c`` enters as
  ``gamma * (c - mean(c)) / sigma_i``, so the split is exact for this run, not for another input.
* **Positions**: rotary positions (RoPE) rotate the query at ``i`` and the key at ``j``; the rotation is linear, so
  each source's query (key) is rotated by its position and the table stays exact.  A model that adds positional
  embeddings has them inside ``embed``.  A position bias added to the scores (a float mask, ALiBi) is not a product
  of the two sides: it is reported apart (``mask_bias``) and is not in the table.

The table is checked against the score the attention layer itself computed (its :class:`AttentionCall`'s ``q``,
``k`` and ``scale``): a model whose parts do not rebuild its queries is refused.
"""

from __future__ import annotations

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


def _side(comps: Tensor, resid: Tensor, norm: nn.Module | None, weight: Tensor, bias: Tensor | None) -> Tensor:
    """``(C + 1, D)`` each source's part of one head's projection at one position (the last row: ``bias``), the
    LayerNorm's scale frozen at the real residual's.  ``comps`` ``(C, M)``, ``resid`` ``(M,)``, ``weight``
    ``(D, M)``."""
    rest = resid - comps.sum(0)  # (M,)
    parts = torch.cat([comps, rest[None]], 0)  # (C + 1, M)
    shift = torch.zeros_like(resid)
    if norm is not None:
        if not isinstance(norm, nn.LayerNorm):
            raise InputError(f"QK attribution freezes a LayerNorm's scale; this model's norm is "
                             f"{type(norm).__name__}")
        sigma = (resid.var(unbiased=False) + norm.eps).sqrt()
        parts = (parts - parts.mean(-1, keepdim=True)) / sigma
        if norm.weight is not None:
            parts = parts * norm.weight
        if norm.bias is not None:
            shift = norm.bias
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

    hook = getattr(lay.attn, "attn_hook", None)
    if hook is None:
        raise InputError(f"QK attribution reads layer {layer}'s own queries and keys through attnlab's attention "
                         f"hook, which this model's attention does not have")
    detach = hook.attach(listen, weights=False)
    try:
        with torch.no_grad():
            senders = sender_outputs(g, model, ids, **kwargs)[0, :, :n]  # (T, C, M)
            calls.clear()
            _, kept = run_with_hooks(model, ids, keep=[f"blocks.{layer}.hook_resid_pre"], **kwargs)
    finally:
        detach()
    call = calls[-1]
    if call.q is None or call.k is None or call.scale is None:
        raise InputError(f"layer {layer}'s attention does not report its queries and keys (a kernel without a dot "
                         f"product); QK attribution needs them")
    resid = kept[f"blocks.{layer}.hook_resid_pre"][0]  # (T, M)
    with torch.no_grad():
        h_d = call.q.shape[-1]
        rows = slice(head * h_d, (head + 1) * h_d)
        wq, wk = lay.attn.q_proj.weight[rows], lay.attn.k_proj.weight[rows]
        bq = lay.attn.q_proj.bias[rows] if lay.attn.q_proj.bias is not None else None
        bk = lay.attn.k_proj.bias[rows] if lay.attn.k_proj.bias is not None else None
        qs = _side(senders[query], resid[query], lay.norm, wq, bq)  # (C + 1, D)
        ks = _side(senders[key], resid[key], lay.norm, wk, bk)
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
                                 f"handles (rotary or added embeddings, LayerNorm or none)")
        scale = float(call.scale)
        table = (qs @ ks.T) * scale  # (C + 1, C + 1)
        score = float((q_real @ k_real) * scale)
        bias = 0.0
        if call.mask is not None and call.mask.is_floating_point():
            m = call.mask
            while m.dim() < 4:
                m = m[None]
            bias = float(m.expand(1, call.q.shape[1], call.q.shape[2], call.k.shape[2])[0, head, query, key])
    positions = "rotary (each source rotated by its position)" if rotary else "in embed (added embeddings) or none"
    norm = "LayerNorm, scale frozen at this run's" if lay.norm is not None else "none"
    return QKAttribution(layer, head, query, key, names, table.double().numpy(), score, scale, bias, positions, norm)
