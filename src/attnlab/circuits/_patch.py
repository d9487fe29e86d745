"""Interventions: activation patching, path patching, ablation and attribution patching, scored by a metric.

Every patching function runs the *corrupted* input with one activation taken from the *clean* run (the
"denoising" direction: what restores the clean behaviour) and reports the metric and the share of the
clean-versus-corrupted difference it restores, ``(m_patched - m_corrupted) / (m_clean - m_corrupted)``: 1 = the
clean value, 0 = no effect.

Metrics (:func:`logit_diff`, :func:`target_prob`, :func:`loss_on`) are functions of the model's output to one
scalar, averaged over the batch and the chosen positions.  An output ``(B, T, V)`` is a language model's logits;
``(B, C)`` a classifier's (positions are then ignored).

Letters: B batch, T positions, H heads, D per-head size, N layers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..errors import InputError
from ._model import Anatomy, Edit, anatomy, run_with_cache, run_with_hooks

__all__ = [
    "Ablation",
    "AttributionPatching",
    "Metric",
    "Patching",
    "PathPatching",
    "ablate",
    "attribution_patching",
    "logit_diff",
    "loss_on",
    "patch_heads",
    "patch_resid",
    "path_patch",
    "restored",
    "target_prob",
]

Metric = Callable[[Tensor], Tensor]  # the model's output -> a scalar tensor
Positions = int | Sequence[int] | None


def _rows(output: Tensor, positions: Positions) -> Tensor:
    """``(B, P, V)`` the output's rows at ``positions`` (all of a classifier's ``(B, C)`` output)."""
    if output.dim() == 2:
        return output[:, None, :]  # (B, 1, C)
    if positions is None:
        return output
    pos = [positions] if isinstance(positions, int) else list(positions)
    return output[:, pos, :]  # (B, P, V)


def _ids(tokens: int | Sequence[int], n: int, what: str) -> Tensor:
    ids = [tokens] * n if isinstance(tokens, int) else list(tokens)
    if len(ids) != n:
        raise InputError(f"{what} has {len(ids)} token ids for {n} positions; give one per position or one for all")
    return torch.tensor(ids, dtype=torch.long)


def logit_diff(target: int | Sequence[int], distractor: int | Sequence[int], positions: Positions = -1) -> Metric:
    """The mean over the batch and ``positions`` of ``logit[target] - logit[distractor]`` (one id per position or
    one for all)."""

    def metric(output: Tensor) -> Tensor:
        rows = _rows(output, positions)  # (B, P, V)
        t, d = _ids(target, rows.shape[1], "target"), _ids(distractor, rows.shape[1], "distractor")
        at = torch.arange(rows.shape[1])
        return (rows[:, at, t] - rows[:, at, d]).mean()

    return _reads_last(metric, positions)


def _reads_last(metric: Metric, positions: Positions) -> Metric:
    """``metric`` marked with ``last``: how many last positions it reads, when it reads only positions counted from
    the end (``-1``, ``[-2, -1]``); patching then asks the model for those logits only."""
    pos = [positions] if isinstance(positions, int) else list(positions) if positions is not None else []
    if pos and all(isinstance(p, int) and p < 0 for p in pos):
        metric.last = -min(pos)  # type: ignore[attr-defined]
    return metric


def target_prob(target: int | Sequence[int], positions: Positions = -1) -> Metric:
    """The mean probability of ``target`` at ``positions``."""

    def metric(output: Tensor) -> Tensor:
        rows = _rows(output, positions).softmax(-1)  # (B, P, V)
        return rows[:, torch.arange(rows.shape[1]), _ids(target, rows.shape[1], "target")].mean()

    return _reads_last(metric, positions)


def loss_on(targets: Tensor, positions: Positions = None) -> Metric:
    """The mean cross-entropy of ``targets`` ``(B, T)`` or ``(T,)`` (the token each position should predict, -100
    to skip one) at ``positions`` (default: all)."""

    def metric(output: Tensor) -> Tensor:
        tg = targets if targets.dim() == 2 else targets[None].expand(output.shape[0], -1)  # (B, T)
        if positions is not None:
            pos = [positions] if isinstance(positions, int) else list(positions)
            tg, output = tg[:, pos], output[:, pos]  # (B, P), (B, P, V)
        return F.cross_entropy(output.reshape(-1, output.shape[-1]).double(), tg.reshape(-1), ignore_index=-100)

    return metric


def restored(value: Any, clean: float, corrupted: float) -> Any:
    """The share of the clean-versus-corrupted difference ``value`` restores (NaN when the two runs agree)."""
    gap = clean - corrupted
    return (np.asarray(value, dtype=np.float64) - corrupted) / gap if gap != 0 else np.full_like(
        np.asarray(value, dtype=np.float64), np.nan)


@dataclass(frozen=True)
class Patching:
    """One patching sweep: ``values`` the metric with each cell patched, ``restored`` its share of the clean-vs-
    corrupted difference, ``axes`` what the dimensions are (``("layer", "position")``, ``("layer", "head")``...)."""

    site: str  # the hook point patched, e.g. "hook_resid_pre" or "attn.hook_z"
    axes: tuple[str, ...]
    values: np.ndarray
    restored: np.ndarray
    clean: float
    corrupted: float

    def top(self) -> tuple[int, ...]:
        """The index of the cell whose patching restores the most (by absolute share)."""
        flat = np.nan_to_num(np.abs(self.restored), nan=-1.0)
        return tuple(int(i) for i in np.unravel_index(int(np.argmax(flat)), flat.shape))


def _inputs(model: nn.Module, clean: Tensor, corrupt: Tensor) -> Anatomy:
    if clean.shape != corrupt.shape:
        raise InputError(f"clean and corrupted inputs must have one shape to be patched position by position, got "
                         f"{tuple(clean.shape)} (clean) and {tuple(corrupt.shape)} (corrupted); make the corrupted "
                         f"text the same number of tokens")
    return anatomy(model)


def _score(metric: Metric, out: Any) -> float:
    return float(metric(out))


def _put(site_value: Tensor, index: tuple[Any, ...]) -> Edit:
    """An edit that copies ``site_value[index]`` into the activation at ``index``."""

    def edit(x: Tensor) -> Tensor:
        y = x.clone()
        y[index] = site_value[index].to(x.dtype)
        return y

    return edit


def patch_resid(model: nn.Module, clean: Tensor, corrupt: Tensor, metric: Metric,
                site: Literal["hook_resid_pre", "hook_resid_mid", "hook_resid_post", "hook_attn_out",
                              "hook_mlp_out"] = "hook_resid_pre", **kwargs: Any) -> Patching:
    """The residual stream (or a sublayer's output) at each layer x position taken from the clean run."""
    a = _inputs(model, clean, corrupt)
    names = [f"blocks.{i}.{site}" for i in range(a.n_layers)]
    clean_out, cache = run_with_cache(model, clean, names, **kwargs)
    corrupt_out, _ = run_with_hooks(model, corrupt, **kwargs)
    values = np.zeros((a.n_layers, clean.shape[1]))
    for i, name in enumerate(names):
        values[i] = _patched_scores(model, corrupt, name, cache[name],
                                    [(slice(None), t) for t in range(clean.shape[1])], metric, kwargs)
    c, k = _score(metric, clean_out), _score(metric, corrupt_out)
    return Patching(site, ("layer", "position"), values, restored(values, c, k), c, k)


HEAD_SITES = {"z": "attn.hook_z", "q": "attn.hook_q", "k": "attn.hook_k", "v": "attn.hook_v",
              "pattern": "attn.hook_pattern"}


def patch_heads(model: nn.Module, clean: Tensor, corrupt: Tensor, metric: Metric,
                site: Literal["z", "q", "k", "v", "pattern"] = "z", *, by_position: bool = False,
                **kwargs: Any) -> Patching:
    """Each head's output (``z``), queries, keys, values or attention pattern taken from the clean run, at every
    position (``(layer, head)``) or one position at a time (``by_position``: ``(layer, head, position)``; for a
    pattern, the query row)."""
    if site not in HEAD_SITES:
        raise InputError(f"site must be one of {sorted(HEAD_SITES)}, got {site!r}")
    a = _inputs(model, clean, corrupt)
    hook = HEAD_SITES[site]
    names = [f"blocks.{i}.{hook}" for i in range(a.n_layers)]
    clean_out, cache = run_with_cache(model, clean, names, **kwargs)
    corrupt_out, _ = run_with_hooks(model, corrupt, **kwargs)
    n_pos = clean.shape[1]
    n_heads = a.n_kv_heads if site in ("k", "v") else a.n_heads  # grouped-query attention: the key/value heads
    shape = (a.n_layers, n_heads, n_pos) if by_position else (a.n_layers, n_heads)
    values = np.zeros(shape)
    for i, name in enumerate(names):
        cells = [(h, t) for h in range(n_heads) for t in (range(n_pos) if by_position else [None])]
        # pattern (B, H, T, S): head on dim 1, query on dim 2; the others (B, T, H, D)
        indices = [(slice(None), h, slice(None) if t is None else t) if site == "pattern" else
                   (slice(None), slice(None) if t is None else t, h) for h, t in cells]
        scores = _patched_scores(model, corrupt, name, cache[name], indices, metric, kwargs)
        for (h, t), v in zip(cells, scores, strict=True):
            values[(i, h) if t is None else (i, h, t)] = v
    c, k = _score(metric, clean_out), _score(metric, corrupt_out)
    axes = ("layer", "head", "position") if by_position else ("layer", "head")
    return Patching(hook, axes, values, restored(values, c, k), c, k)


@dataclass(frozen=True)
class PathPatching:
    """Path patching from sender heads to one receiver (a head's q, k or v, or the logits): ``values`` ``(N, H)``
    the metric with the path from each sender patched (NaN where a head cannot send to the receiver: its layer is
    not below the receiver's), ``restored`` its share."""

    receiver: str  # "logits" or e.g. "blocks.1.attn.hook_k head 2"
    values: np.ndarray
    restored: np.ndarray
    clean: float
    corrupted: float


def path_patch(model: nn.Module, clean: Tensor, corrupt: Tensor, metric: Metric, *,
               receiver: tuple[int, int] | None = None, into: Literal["q", "k", "v"] = "k",
               senders: Sequence[tuple[int, int]] | None = None, **kwargs: Any) -> PathPatching:
    """Path patching (Wang et al. 2022; Goldowsky-Dill et al. 2023) from each sender head to ``receiver``'s
    ``into`` input (``(layer, head)``), or to the logits when ``receiver`` is None.  Under grouped-query attention a
    receiver's keys and values are those of its key/value head, which the other query heads of its group read too.

    For each sender: (1) the corrupted input runs with the sender's output ``z`` taken from the clean run and every
    other head's output frozen at its corrupted value (feed-forward sublayers recompute), so the sender's change
    reaches later layers only directly through the residual stream; the receiver's q/k/v from that run is kept;
    (2) the corrupted input runs with only the receiver's q/k/v replaced by it.  To the logits, the metric of run
    (1) is the answer.  A sender must sit in a layer below the receiver's (else :class:`InputError`).  Swap
    ``clean`` and ``corrupt`` for the noising direction (the clean run with the sender's corrupted output)."""
    a = _inputs(model, clean, corrupt)
    if into not in ("q", "k", "v"):
        raise InputError(f"into must be 'q', 'k' or 'v' (the receiver's input the path reaches), got {into!r}")
    for what, given in ([("receiver", receiver)] if receiver is not None else []) + [
            ("sender", s) for s in (senders or [])]:
        assert given is not None
        if not (0 <= given[0] < a.n_layers and 0 <= given[1] < a.n_heads):
            raise InputError(f"{what} head {given[0]}.{given[1]} does not exist; the model has layers 0-"
                             f"{a.n_layers - 1} and heads 0-{a.n_heads - 1}")
    top = a.n_layers if receiver is None else receiver[0]
    if top == 0:
        raise InputError(f"a path runs from an earlier layer to a later one: no head is below receiver "
                         f"{receiver[0]}.{receiver[1]}; pick a receiver in layer 1 or above")  # type: ignore[index]
    if senders is not None:
        for s in senders:
            if s[0] >= top:
                raise InputError(f"a path runs from an earlier layer to a later one: sender {s[0]}.{s[1]} is not "
                                 f"below receiver {receiver[0]}.{receiver[1]}; swap them or pick a sender in "  # type: ignore[index]
                                 f"layers 0-{top - 1}")
    z_names = [f"blocks.{i}.attn.hook_z" for i in range(a.n_layers)]
    clean_out, clean_cache = run_with_cache(model, clean, z_names, **kwargs)
    corrupt_out, corrupt_cache = run_with_cache(model, corrupt, z_names, **kwargs)
    c, k = _score(metric, clean_out), _score(metric, corrupt_out)
    todo = list(senders) if senders is not None else [(i, h) for i in range(top) for h in range(a.n_heads)]
    values = np.full((a.n_layers, a.n_heads), np.nan)
    r_name = None if receiver is None else f"blocks.{receiver[0]}.attn.hook_{into}"
    for layer, head in todo:
        edits: dict[str, Edit] = {}
        for i, name in enumerate(z_names):
            z = corrupt_cache[name].clone()  # (B, T, H, D): every head frozen at its corrupted output ...
            if i == layer:
                z[:, :, head] = clean_cache[name][:, :, head]  # ... but the sender's, from the clean run
            edits[name] = _constant(z)
        out, kept = run_with_hooks(model, corrupt, edits, keep=[r_name] if r_name else [], **kwargs)
        if r_name is not None and receiver is not None:
            # under grouped-query attention the receiver's keys and values are its group's (shared with the
            # other query heads of the group, which the patch reaches too)
            into_head = receiver[1] // (a.n_heads // a.n_kv_heads) if into in ("k", "v") else receiver[1]
            out, _ = run_with_hooks(model, corrupt, {r_name: _put(kept[r_name], (slice(None), slice(None),
                                                                                   into_head))}, **kwargs)
        values[layer, head] = _score(metric, out)
    label = "logits" if receiver is None else f"{r_name} head {receiver[1]}"
    return PathPatching(label, values, restored(values, c, k), c, k)


# At most this many corrupted rows run in one forward pass when patching is batched (cells x batch).
BATCH_ROWS = 64


def _patched_scores(model: nn.Module, corrupt: Tensor, name: str, source: Tensor, indices: list[tuple[Any, ...]],
                    metric: Metric, kwargs: dict[str, Any]) -> list[float]:
    """The metric of the corrupted run with ``source[index]`` put into activation ``name``, for each index: the
    cells run side by side in one batch (the corrupted input repeated, each copy patched at its own cell), at most
    :data:`BATCH_ROWS` rows a pass.  A run with keyword inputs (masks and the like, shaped by the batch) runs one cell a
    pass.  (Every model with hook points outputs one tensor, rows in order, so each cell's rows are scored apart.)"""
    b = corrupt.shape[0]
    per = max(1, BATCH_ROWS // b)
    layer = int(name.split(".")[1])
    last = getattr(metric, "last", None)
    repeat = b == 1 and anatomy(model).repeatable
    scores: list[float] = []
    for start in range(0, len(indices), per):
        chunk = indices[start:start + per]
        if kwargs or len(chunk) == 1:
            for index in chunk:
                out, _ = run_with_hooks(model, corrupt, {name: _put(source, index)}, **kwargs)
                scores.append(_score(metric, out))
            continue

        def edit(x: Tensor, chunk: list[tuple[Any, ...]] = chunk) -> Tensor:
            y = x.clone()
            for j, index in enumerate(chunk):
                rows = slice(j * b, (j + 1) * b)
                y[rows][index] = source[index].to(x.dtype)
            return y

        if repeat:  # one row: the blocks below the patched layer run once, and the stream is repeated there
            out, _ = run_with_hooks(model, corrupt, {name: edit}, expand=(layer, len(chunk)), last=last)
        else:
            out, _ = run_with_hooks(model, corrupt.repeat(len(chunk), *([1] * (corrupt.dim() - 1))), {name: edit},
                                    last=last)
        scores.extend(_score(metric, out[j * b:(j + 1) * b]) for j in range(len(chunk)))
    return scores


def _constant(value: Tensor) -> Edit:
    return lambda x: value


@dataclass(frozen=True)
class Ablation:
    """The metric on ``inputs`` before and after ablating ``heads`` (``how``: zero, mean or resample)."""

    heads: tuple[tuple[int, int], ...]
    how: str
    before: float
    after: float

    @property
    def change(self) -> float:
        return self.after - self.before


def ablate(model: nn.Module, inputs: Tensor, metric: Metric, heads: Sequence[tuple[int, int]],
           how: Literal["zero", "mean", "resample"] = "zero", *, reference: Tensor | None = None, seed: int = 0,
           **kwargs: Any) -> Ablation:
    """The metric with each head of ``heads`` (``(layer, head)``) replaced in its output ``z``: by zeros, by its
    mean over ``reference`` (a batch of other inputs of the same length; per position), or by its output on a
    row of ``reference`` drawn with ``seed`` for each input row (resample)."""
    anatomy(model)  # refuses a model without hook points before anything runs
    if how not in ("zero", "mean", "resample"):
        raise InputError(f"how must be 'zero', 'mean' or 'resample', got {how!r}")
    if how != "zero" and (reference is None or reference.shape[1] != inputs.shape[1]):
        got = None if reference is None else tuple(reference.shape)
        raise InputError(f"how={how!r} needs reference inputs of the same length as inputs ({inputs.shape[1]} "
                         f"tokens), got {got}; pass reference=a (batch, {inputs.shape[1]}) tensor of other inputs")
    layers = sorted({layer for layer, _ in heads})
    names = [f"blocks.{i}.attn.hook_z" for i in layers]
    ref: dict[str, Tensor] = {}
    if reference is not None and how != "zero":
        _, cache = run_with_cache(model, reference, names, **kwargs)
        rows = torch.randint(0, reference.shape[0], (inputs.shape[0],), generator=torch.Generator().manual_seed(seed))
        for name in names:
            z = cache[name]  # (R, T, H, D)
            ref[name] = z.mean(0, keepdim=True).expand(inputs.shape[0], -1, -1, -1) if how == "mean" else z[rows]

    def replace(layer: int) -> Edit:
        name = f"blocks.{layer}.attn.hook_z"

        def edit(x: Tensor) -> Tensor:
            y = x.clone()
            for i, h in heads:
                if i == layer:
                    y[:, :, h] = 0 if how == "zero" else ref[name][:, :, h].to(x.dtype)
            return y

        return edit

    before, _ = run_with_hooks(model, inputs, **kwargs)
    after, _ = run_with_hooks(model, inputs, {f"blocks.{i}.attn.hook_z": replace(i) for i in layers}, **kwargs)
    return Ablation(tuple((int(i), int(h)) for i, h in heads), how, _score(metric, before), _score(metric, after))


@dataclass(frozen=True)
class AttributionPatching:
    """Attribution patching (Nanda 2023; Syed et al. 2023): each head's effect estimated as
    ``sum (z_clean - z_corrupted) * d metric / d z`` at the corrupted run, ``(N, H)``, beside exact patching of
    the same heads and the Spearman correlation of the two over all heads."""

    estimate: np.ndarray  # (N, H) estimated metric change
    exact: np.ndarray  # (N, H) exact metric change (patched - corrupted)
    spearman: float
    clean: float
    corrupted: float


def attribution_patching(model: nn.Module, clean: Tensor, corrupt: Tensor, metric: Metric,
                         **kwargs: Any) -> AttributionPatching:
    """Attribution patching of every head's output ``z`` against exact patching (:func:`patch_heads`)."""
    from scipy.stats import spearmanr

    a = _inputs(model, clean, corrupt)
    names = [f"blocks.{i}.attn.hook_z" for i in range(a.n_layers)]
    _, clean_cache = run_with_cache(model, clean, names, **kwargs)

    def tracked(x: Tensor) -> Tensor:  # the graph's own tensor (a copy would cut the paths through later heads)
        return x if x.requires_grad else x.requires_grad_(True)

    out, kept = run_with_hooks(model, corrupt, dict.fromkeys(names, tracked), keep=names, grad=True, **kwargs)
    grads = torch.autograd.grad(metric(out), [kept[n] for n in names])
    estimate = np.stack([((clean_cache[n] - kept[n].detach()) * g).sum((0, 1, 3)).double().numpy()
                         for n, g in zip(names, grads, strict=True)])  # (N, H)
    exact = patch_heads(model, clean, corrupt, metric, "z", **kwargs)
    change = exact.values - exact.corrupted
    constant = np.ptp(estimate) == 0 or np.ptp(change) == 0  # no ranking to compare (spearmanr would warn)
    rho = float("nan") if constant else float(spearmanr(estimate.ravel(), change.ravel()).statistic)
    return AttributionPatching(estimate, change, rho, exact.clean, exact.corrupted)
