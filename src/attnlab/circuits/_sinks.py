"""Attention sinks, measured per head: how much attention lands on the first token (and on delimiters where the
tokenizer has them), and how much the sink's value actually writes.

For every head, over the prompts and their query positions (a causal language model's from position 1 on, since
position 0 can only see itself; an encoder's every position):

* ``first_share``: the mean attention weight on position 0;
* ``delimiter_share``: the mean total weight on the delimiter tokens given (None without any);
* ``value_norm_ratio``: ``||v_0 W_O||`` (what position 0's value writes through the head's output projection, per
  unit of attention) over the mean ``||v_j W_O||`` of the other positions; a "sink writes little" head has it << 1;
* ``delimiter_value_ratio``: the same ratio for the delimiters' values (mean ``||v_j W_O||`` over delimiter
  positions over that of the others);
* ``write_share``: the share of the head's attention-weighted value norms ``sum_j p_ij ||v_j W_O||`` that comes
  from position 0; against ``first_share`` it says whether the attention the sink gets turns into output.

A head is called a **sink head** here when ``first_share >= 0.5``; the known result (Xiao et al., 2023; Gu et al.,
2024) is that such heads write little: ``value_norm_ratio`` well below 1.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import Tensor, nn

from ..errors import InputError
from ._model import anatomy, head_results, run_with_cache

__all__ = ["SINK", "SinkRow", "attention_sinks"]

SINK = 0.5  # a head whose mean attention on position 0 is at least this is called a sink head


@dataclass(frozen=True)
class SinkRow:
    layer: int
    head: int
    first_share: float
    delimiter_share: float | None
    value_norm_ratio: float
    write_share: float
    delimiter_value_ratio: float | None = None

    @property
    def sink(self) -> bool:
        return self.first_share >= SINK

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "sink_head": self.sink}


def attention_sinks(model: nn.Module, tokens: Tensor, *, delimiters: Iterable[int] = (),
                    **kwargs: Any) -> list[SinkRow]:
    """One :class:`SinkRow` per head (layer by layer) on ``tokens`` ``(B, T)`` (module docstring)."""
    a = anatomy(model)
    if tokens.dim() != 2 or tokens.shape[1] < 2:
        raise InputError(f"attention sinks need (B, T) token ids with T >= 2; got shape {tuple(tokens.shape)}")
    delim = torch.tensor(sorted(set(int(d) for d in delimiters)), dtype=torch.long)
    names = [f"blocks.{i}.attn.{s}" for i in range(a.n_layers) for s in ("hook_pattern", "hook_v")]
    _, cache = run_with_cache(model, tokens, names, **kwargs)
    start = 1 if a.unembed is not None else 0  # a language model is causal: its position 0 sees only itself
    is_delim = torch.isin(tokens, delim) if len(delim) else None  # (B, S)
    rows = []
    with torch.no_grad():
        for i in range(a.n_layers):
            p = cache[f"blocks.{i}.attn.hook_pattern"].double()[:, :, start:]  # (B, H, Q, S)
            v = cache[f"blocks.{i}.attn.hook_v"]  # (B, S, H, D)
            norms = head_results(a, i, v).double().norm(dim=-1).transpose(1, 2)  # (B, H, S): ||v_j W_O||
            first = p[..., 0].mean((0, 2))  # (H,)
            ratio = norms[..., 0].mean(0) / norms[..., 1:].mean((0, 2))  # (H,)
            weighted = p * norms[:, :, None, :]  # (B, H, Q, S)
            share = (weighted[..., 0] / weighted.sum(-1).clamp_min(1e-30)).mean((0, 2))  # (H,)
            if is_delim is not None:
                dm = is_delim[:, None, :].expand_as(norms)  # (B, H, S)
                dshare = (p * is_delim[:, None, None, :].to(p.dtype)).sum(-1).mean((0, 2))
                dratio = (norms * dm).sum((0, 2)) / dm.sum((0, 2)).clamp_min(1) / (
                    (norms * ~dm).sum((0, 2)) / (~dm).sum((0, 2)).clamp_min(1))
            for h in range(a.n_heads):
                rows.append(SinkRow(i, h, float(first[h]), None if is_delim is None else float(dshare[h]),
                                    float(ratio[h]), float(share[h]),
                                    None if is_delim is None or not bool(is_delim.any()) else float(dratio[h])))
    return rows
