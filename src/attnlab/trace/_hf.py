"""From what a Hugging Face model returns with ``output_attentions=True`` to records: per layer, or per generated
token and per layer (``generate(..., return_dict_in_generate=True)``), in the order the model made the calls.
:meth:`AttentionTrace.from_hf_outputs <attnlab.trace.AttentionTrace.from_hf_outputs>` is the public door."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from ..errors import InputError, ShapeError
from ._record import AttentionRecord, Kind, as_kind

__all__ = ["records_from_outputs"]


def records_from_outputs(
    attentions: Any,
    cross_attentions: Sequence[Any] | None,
    encoder_attentions: Sequence[Tensor] | None,
    kind: Kind | None,
) -> list[AttentionRecord]:
    """The records of a model's attention fields (or of its whole output object, passed as ``attentions``),
    without tokens; see ``AttentionTrace.from_hf_outputs`` for each argument."""
    if isinstance(attentions, Mapping):  # an output object: its empty fields are fields the model lacks
        out = attentions
        attentions = out.get("decoder_attentions") or out.get("attentions") or None
        cross_attentions = cross_attentions if cross_attentions is not None else out.get("cross_attentions") or None
        encoder_attentions = (
            encoder_attentions if encoder_attentions is not None else out.get("encoder_attentions") or None
        )
    for label, given in (("attentions", attentions), ("cross_attentions", cross_attentions),
                         ("encoder_attentions", encoder_attentions)):
        if given is not None and len(given) == 0:
            raise InputError(
                f"{label} is empty: the model returned no attention weights (a transformers model running "
                f"SDPA or flash attention returns none); load it with attn_implementation='eager', or use "
                f"attnlab.capture(model), which needs no reload"
            )
    records: list[AttentionRecord] = []
    if encoder_attentions is not None:
        records += _hf_records("encoder_attentions", encoder_attentions, "self")
    decoder = encoder_attentions is not None or cross_attentions is not None
    if attentions is not None:
        k = kind or ("causal" if decoder or _is_steps(attentions) or _lower_triangular(attentions) else "self")
        records += _hf_records("decoder_attentions" if decoder else "attentions", attentions, as_kind(k))
    if cross_attentions is not None:
        records += _hf_records("cross_attentions", cross_attentions, "cross")
    if not records:
        raise InputError(
            "from_hf_outputs got no attention: pass outputs.attentions (run the model with "
            "output_attentions=True, loaded with attn_implementation='eager'), or the output object itself"
        )
    return _interleave_decoder(records) if decoder else records


def _is_steps(attentions: Sequence[Any]) -> bool:
    """Whether HF attentions are per generated token (a tuple of per-layer tuples)."""
    return len(attentions) > 0 and isinstance(attentions[0], (tuple, list))


def _lower_triangular(attentions: Sequence[Any]) -> bool:
    """Whether every matrix of the first layer puts zero weight above its (bottom-right) diagonal."""
    w = attentions[0]
    if not isinstance(w, Tensor) or w.ndim != 4 or w.shape[-2] < 2:
        return False
    lq, lk = w.shape[-2:]
    above = torch.ones(lq, lk, dtype=torch.bool, device=w.device).triu(lk - lq + 1)  # (L, S): the future
    return bool((w[..., above] == 0).all())


def _hf_tensor(label: str, w: Any) -> Tensor:
    if not isinstance(w, Tensor) or w.ndim != 4:
        shape = tuple(w.shape) if isinstance(w, Tensor) else type(w).__name__
        raise ShapeError(
            f"{label} must be a (batch, heads, q_len, k_len) tensor, got {shape}; pass outputs.attentions "
            f"of a model run with output_attentions=True"
        )
    return w.detach().to("cpu", torch.float32)


def _hf_records(field_name: str, attentions: Sequence[Any], kind: Kind) -> list[AttentionRecord]:
    """Records of one HF attention field: per layer, or per generated token and per layer."""
    if not _is_steps(attentions):
        return [
            AttentionRecord(name=f"{field_name}[{i}]", kind=kind, layer=i, weights=_hf_tensor(f"{field_name}[{i}]", w))
            for i, w in enumerate(attentions)
        ]
    records: list[AttentionRecord] = []
    seen: dict[int, int] = {}  # layer -> keys covered so far
    for step, layers in enumerate(attentions):
        for i, w in enumerate(layers):
            t = _hf_tensor(f"{field_name}[{step}][{i}]", w)
            lq, lk = t.shape[-2:]
            if kind != "cross":
                # without a cache a step recomputes every position; keep only the rows not seen yet
                start = max(0, seen.get(i, 0) - (lk - lq))
                t, seen[i] = t[:, :, start:], int(lk)
            records.append(AttentionRecord(name=f"{field_name}[{i}]", kind=kind, layer=i, weights=t, step=step))
    if len(attentions) == 1:
        for r in records:
            r.step = None
    return records


def _interleave_decoder(records: list[AttentionRecord]) -> list[AttentionRecord]:
    """Encoder records first, then per step and layer the decoder's self-attention before its cross-attention:
    the order in which a model calls them."""
    enc = [r for r in records if r.kind == "self" and r.name.startswith("encoder")]
    rest = [r for r in records if not (r.kind == "self" and r.name.startswith("encoder"))]
    rank = {"causal": 0, "self": 0, "cross": 1}
    return enc + sorted(rest, key=lambda r: (r.step or 0, r.layer, rank[r.kind]))
