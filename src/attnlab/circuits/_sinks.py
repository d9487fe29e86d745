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

:func:`value_norms` keeps the ``||v_j W_O||`` of whatever forward passes run inside it (``attnlab analyze`` and the
lab hook the run that captures the attention, so the ratio costs no second run); :func:`model_value_norms` does so
for a loaded :class:`attnlab.Model`, and says why when circuits cannot read its network.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ..errors import InputError
from ._anatomy import Anatomy
from ._model import anatomy, edited, head_results, run_with_cache

__all__ = ["SINK", "SinkRow", "ValueNorms", "attention_sinks", "model_value_norms", "value_norms"]

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
            norms = _norms(a, i, cache[f"blocks.{i}.attn.hook_v"])  # (B, H, S): ||v_j W_O||
            first = p[..., 0].mean((0, 2))  # (H,)
            ratio = _first_ratio(norms)  # (H,)
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


def _norms(a: Anatomy, layer: int, v: Tensor) -> Tensor:
    """``(B, H, S)`` float64: ``||v_j W_O||`` of each head at each position, from ``v`` ``(B, S, H or H_kv, D)`` (under
    grouped-query attention each query head reads its group's value head)."""
    with torch.no_grad():
        if v.shape[2] != a.n_heads:
            v = v.repeat_interleave(a.n_heads // v.shape[2], dim=2)
        return head_results(a, layer, v).double().norm(dim=-1).transpose(1, 2)


def _first_ratio(norms: Tensor) -> Tensor:
    """``(H,)``: position 0's ``||v W_O||`` over the mean of the other positions' (``norms`` ``(B, H, S)``)."""
    return norms[..., 0].mean(0) / norms[..., 1:].mean((0, 2))


@dataclass
class ValueNorms:
    """What :func:`value_norms` kept: per layer, the ``||v_j W_O||`` ``(B, H, S)`` of each forward pass in the order
    they ran; ``missing`` says why nothing was kept (:func:`model_value_norms` on a network circuits cannot read)."""

    passes: list[list[Tensor]] = field(default_factory=list)
    missing: str | None = None

    def first_value_ratio(self, n_tokens: int) -> np.ndarray:
        """``(L, H)``: ``||v_0 W_O||`` over the mean of the other positions' (:attr:`SinkRow.value_norm_ratio`), on
        one text of ``n_tokens`` tokens that the passes read one for one: in one pass, or a prompt and then one
        cached step per token (a language model writing).  An :class:`InputError` says why not (``missing``; a text
        read in overlapping windows)."""
        if self.missing is not None:
            raise InputError(self.missing)
        rows = []
        for layer in self.passes:
            if not layer:
                raise InputError("no run of the model was kept (run it inside the value_norms block)")
            if any(p.shape[0] != 1 for p in layer) or sum(p.shape[-1] for p in layer) != n_tokens:
                windows = sum(p.shape[0] for p in layer)
                raise InputError(f"the model read the text's {n_tokens} tokens in {windows} overlapping windows, "
                                 f"whose first positions are not all the text's first token")
            rows.append(_first_ratio(torch.cat(layer, -1)).numpy())  # (1, H, S) in the order they were read
        return np.stack(rows)


@contextmanager
def value_norms(model: nn.Module) -> Iterator[ValueNorms]:
    """Every forward pass of ``model`` inside the block keeps each head's ``||v_j W_O||`` at each position
    (:class:`ValueNorms`), through the ``attn.hook_v`` hook points (:func:`attnlab.circuits.edited`: nothing is
    changed); a model without hook points is an :class:`InputError` (:func:`anatomy`)."""
    a = anatomy(model)
    kept = ValueNorms([[] for _ in range(a.n_layers)])

    def keeper(i: int) -> Any:
        def keep(v: Tensor) -> None:
            kept.passes[i].append(_norms(a, i, v))

        return keep

    with edited(model, {f"blocks.{i}.attn.hook_v": keeper(i) for i in range(a.n_layers)}):
        yield kept


@contextmanager
def model_value_norms(model: Any, text: str) -> Iterator[ValueNorms]:
    """:func:`value_norms` on the network of a loaded :class:`attnlab.Model` that will run ``text`` inside the
    block: its kind's view with hook points (:meth:`attnlab.kinds.Kind.text_model`), else the forward pass its
    attribution replays (:meth:`attnlab.kinds.Kind.forward`: MiniLM's BERT).  A network circuits cannot read keeps
    nothing and says why, in one line (``ValueNorms.missing``); the run goes on as without the block."""
    spec = model.spec
    net: Any = None
    with ExitStack() as stack:
        try:
            if spec.able("patch"):
                net = spec.text_model(model).model
            elif spec.able("explain"):
                net = spec.forward(model, text).net
            kept = stack.enter_context(value_norms(net)) if isinstance(net, nn.Module) else None
        except InputError:
            kept = None
        if kept is None:
            what = type(net).__name__ if isinstance(net, nn.Module) else f"a {spec.noun}"
            kept = ValueNorms(missing=f"what a value writes needs the model's values and output projection through "
                                      f"attnlab.circuits, which reads attnlab's own models (MiniLM's BERT among them) "
                                      f"and Hugging Face causal language models, not {what}")
        yield kept
