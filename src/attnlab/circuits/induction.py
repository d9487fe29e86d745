"""The induction circuit, found by the tools rather than told: on a two-layer model trained on repeated random
tokens (``attnlab train induction``, the bundled ``induction-2l``), :func:`find_induction_circuit` labels the
heads with the detectors, then asks the interventions of :mod:`attnlab.circuits` whether the labels are right.

The inputs (:func:`induction_inputs`): ``clean`` is ``[x1..xL, x1..xL]`` (``S S``), ``corrupt`` the same with the
first half replaced by other random tokens (``R S``), so only the clean run can predict the second half by copying.
The metric is the mean logit difference, over the sequences and the repeated-half positions, between the token
the clean run should predict (the next ``x``) and the one at the same offset of the corrupt first half (what a
positional copy would predict); the loss is the mean cross-entropy on the same positions.

What it measures (each a field of :class:`InductionCircuit`):

* the previous-token head: layer 0's highest previous-token score; the induction head: layer 1's highest
  induction score (:func:`attnlab.functional.detectors.detector_scores` on the clean run's attention); and the
  groups: every layer-0 head scoring at least :data:`PREVIOUS`, every layer-1 head at least :data:`INDUCTION`
  (a model with four heads a layer may share the work among several);
* the pair (layer 0 -> layer 1) of the highest K-composition score, against every other pair, raw and less the
  score of random matrices of the same shapes (the baseline Elhage et al., 2021 subtract);
* activation patching of every head's output from the clean run into the corrupt one: the share of the logit
  difference each restores, which head restores the most, and the share the induction heads restore together;
* mean ablation of each head, and of each group (the output replaced by its mean over other repeated
  sequences): the rise of the repeated-half loss;
* path patching from every layer-0 head into the induction head's queries, keys and values;
* attribution patching's estimate of every head's patching effect, and its Spearman correlation with the exact
  effect.

Letters: B sequences, L half length, T = 2L positions, N layers, H heads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ..errors import InputError
from ..functional.detectors import detector_scores
from ._lens import composition_scores
from ._model import anatomy, run_with_cache, run_with_hooks
from ._patch import ablate, attribution_patching, loss_on, patch_heads, path_patch, restored

PREVIOUS = 0.5  # a layer-0 head with a previous-token score this high is one of the previous-token heads
INDUCTION = 0.3  # a layer-1 head with an induction score this high (of ~0.5 at most on S S) is an induction head

__all__ = ["InductionCircuit", "InductionInputs", "find_induction_circuit", "induction_inputs",
           "random_composition_baseline"]


@dataclass(frozen=True)
class InductionInputs:
    """Clean ``[x, x]`` and corrupt ``[r, x]`` sequences ``(B, 2L)``, and what each repeated-half position should
    predict."""

    clean: Tensor  # (B, 2L)
    corrupt: Tensor  # (B, 2L)
    reference: Tensor  # (B, 2L) other clean sequences: the means of mean ablation
    length: int  # L

    @property
    def positions(self) -> list[int]:
        """``L .. 2L - 2``: the positions whose next token is a copy of an earlier one."""
        return list(range(self.length, 2 * self.length - 1))

    @property
    def targets(self) -> Tensor:
        """``(B, P)`` the next token at each repeated-half position (the clean run's)."""
        return self.clean[:, [p + 1 for p in self.positions]]

    @property
    def distractors(self) -> Tensor:
        """``(B, P)`` the token at the same offset of the corrupt first half (a positional copy's guess)."""
        return self.corrupt[:, [p + 1 - self.length for p in self.positions]]

    def logit_diff(self) -> Any:
        """The metric: mean ``logit[target] - logit[distractor]`` over the sequences and repeated-half positions
        (one target per sequence and position, which :func:`attnlab.circuits.logit_diff`, one id per position for
        the whole batch, does not take)."""
        pos, t, d = self.positions, self.targets, self.distractors

        def metric(output: Tensor) -> Tensor:
            rows = output[:, pos]  # (B, P, V)
            return (rows.gather(-1, t[..., None]) - rows.gather(-1, d[..., None])).mean()

        return metric

    def loss(self) -> Any:
        """The mean cross-entropy of the repeated half (:func:`attnlab.circuits.loss_on`)."""
        targets = torch.full_like(self.clean, -100)  # (B, 2L), -100: not scored
        targets[:, self.positions] = self.targets
        return loss_on(targets)


def induction_inputs(vocab_size: int, length: int = 20, batch: int = 32, *, seed: int = 0,
                     low: int = 1) -> InductionInputs:
    """Random ``clean``, ``corrupt`` and ``reference`` sequences over ids ``low .. vocab_size - 1`` (``low`` keeps
    ``[UNK]`` out); the corrupt first half differs from the clean one at every position."""
    if length < 2 or batch < 1 or vocab_size - low < 2:
        raise InputError(f"need length >= 2, batch >= 1 and two or more ids; got length={length}, batch={batch}, "
                         f"ids {low}..{vocab_size - 1}")
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(low, vocab_size, (batch, length), generator=g)  # (B, L)
    shift = torch.randint(1, vocab_size - low, (batch, length), generator=g)
    r = (x - low + shift) % (vocab_size - low) + low  # (B, L), never equal to x at the same position
    other = torch.randint(low, vocab_size, (batch, length), generator=g)
    return InductionInputs(torch.cat([x, x], 1), torch.cat([r, x], 1), torch.cat([other, other], 1), length)


def _argmax(values: np.ndarray) -> tuple[int, int]:
    i, h = np.unravel_index(int(np.nanargmax(values)), values.shape)
    return int(i), int(h)


def random_composition_baseline(d_model: int, d_head: int, samples: int = 200, seed: int = 0) -> float:
    """The mean composition score ``||A B|| / (||A|| ||B||)`` of random rank-``d_head`` ``d_model x d_model``
    matrices (Gaussian factors): what an untrained pair scores."""
    g = torch.Generator().manual_seed(seed)
    scores = []
    for _ in range(samples):
        a = torch.randn(d_model, d_head, generator=g, dtype=torch.float64) @ torch.randn(
            d_head, d_model, generator=g, dtype=torch.float64)
        b = torch.randn(d_model, d_head, generator=g, dtype=torch.float64) @ torch.randn(
            d_head, d_model, generator=g, dtype=torch.float64)
        scores.append(float(torch.linalg.matrix_norm(a @ b) / (torch.linalg.matrix_norm(a)
                                                                 * torch.linalg.matrix_norm(b))))
    return float(np.mean(scores))


@dataclass(frozen=True)
class InductionCircuit:
    """What :func:`find_induction_circuit` found; heads are ``(layer, head)``."""

    previous_token_head: tuple[int, int]  # layer 0's highest previous-token score
    induction_head: tuple[int, int]  # layer 1's highest induction score
    previous_token_heads: tuple[tuple[int, int], ...]  # every layer-0 head scoring >= PREVIOUS (0.5)
    induction_heads: tuple[tuple[int, int], ...]  # every layer-1 head scoring >= INDUCTION (0.3)
    scores: dict[str, np.ndarray]  # the detectors' "previous token" and "induction" scores (N, H)
    k_pair: tuple[tuple[int, int], tuple[int, int]]  # the layer-0 -> layer-1 pair of the highest K-composition
    k_composition: float  # its score
    k_composition_others: np.ndarray  # every other layer-0 -> layer-1 pair's
    composition_baseline: float  # random matrices' score
    patching: np.ndarray  # (N, H) share of the logit difference restored by patching each head's output
    top_patched: tuple[int, int]  # the head whose patching restores the most (signed: a head whose clean output
    # moves the corrupt run further from the clean one, as the previous-token head's does here, restores least)
    clean_logit_diff: float
    corrupt_logit_diff: float
    loss: float  # the clean repeated-half loss
    group_patching: float  # share restored by patching every induction head's output at once
    ablation: np.ndarray  # (N, H) rise of the repeated-half loss when the head is mean-ablated
    zero_ablation: np.ndarray  # (N, H) the same, zero-ablated
    group_ablation: dict[str, float]  # {"induction", "previous token"}: the rise with the whole group mean-ablated
    paths: dict[str, np.ndarray]  # {"q", "k", "v"}: (H,) share restored by each layer-0 head's path into that input
    attribution: np.ndarray  # (N, H) attribution patching's estimate of each head's effect
    spearman: float  # its Spearman correlation with exact patching over every head
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def k_composition_ratio(self) -> float:
        """The pair's K-composition over the median of the other pairs'."""
        return float(self.k_composition / np.median(self.k_composition_others))

    @property
    def k_composition_ratio_above_baseline(self) -> float:
        """The same with the random baseline taken from both."""
        return float((self.k_composition - self.composition_baseline)
                     / (np.median(self.k_composition_others) - self.composition_baseline))

    def summary(self) -> dict[str, Any]:
        """Every number as JSON values."""
        p, i = self.previous_token_head, self.induction_head
        return {
            "previous_token_head": list(p), "induction_head": list(i),
            "previous_token_heads": [list(h) for h in self.previous_token_heads],
            "induction_heads": [list(h) for h in self.induction_heads],
            "previous_token_scores": self.scores["previous token"].round(6).tolist(),
            "induction_scores": self.scores["induction"].round(6).tolist(),
            "previous_token_score": float(self.scores["previous token"][p]),
            "induction_score": float(self.scores["induction"][i]),
            "k_pair": [list(h) for h in self.k_pair], "k_composition": self.k_composition,
            "k_composition_median_others": float(np.median(self.k_composition_others)),
            "k_composition_ratio": self.k_composition_ratio,
            "composition_baseline": self.composition_baseline,
            "k_composition_ratio_above_baseline": self.k_composition_ratio_above_baseline,
            "patching_restored": self.patching.round(6).tolist(), "top_patched": list(self.top_patched),
            "clean_logit_diff": self.clean_logit_diff, "corrupt_logit_diff": self.corrupt_logit_diff,
            "group_patching_restored": self.group_patching, "group_mean_ablation_loss_rise": self.group_ablation,
            "loss": self.loss, "mean_ablation_loss_rise": self.ablation.round(6).tolist(),
            "zero_ablation_loss_rise": self.zero_ablation.round(6).tolist(),
            "path_patching_restored": {k: v.round(6).tolist() for k, v in self.paths.items()},
            "attribution_estimate": self.attribution.round(6).tolist(), "spearman": self.spearman, **self.extra}


def find_induction_circuit(model: nn.Module, inputs: InductionInputs | None = None) -> InductionCircuit:
    """Run every tool on ``model`` (a two-layer :class:`attnlab.models.CausalLM`) with ``inputs`` (default:
    :func:`induction_inputs` of the model's vocabulary, L = 20, 32 sequences)."""
    a = anatomy(model)
    if a.unembed is None or a.n_layers != 2:
        raise InputError(f"the induction circuit is looked for in a two-layer language model (attnlab train "
                         f"induction), got a {a.kind} model of {a.n_layers} layers")
    model.eval()
    vocab = int(a.unembed.shape[0]) if a.unembed is not None else 0
    x = inputs if inputs is not None else induction_inputs(vocab)
    metric, loss = x.logit_diff(), x.loss()
    weights = model.attention_weights(x.clean)  # type: ignore[operator]  # (B, N, H, T, T)
    scores = detector_scores(weights.double().numpy(), x.clean.numpy())
    prev = (0, int(np.argmax(scores["previous token"][0])))
    ind = (1, int(np.argmax(scores["induction"][1])))
    prevs = tuple((0, h) for h in range(a.n_heads) if scores["previous token"][0, h] >= PREVIOUS) or (prev,)
    inds = tuple((1, h) for h in range(a.n_heads) if scores["induction"][1, h] >= INDUCTION) or (ind,)
    comp = composition_scores(model).k  # (N, H, N, H)
    pairs = comp[0, :, 1, :]  # (H, H) layer-0 sender -> layer-1 receiver
    top = int(np.argmax(pairs))
    k_pair = ((0, top // pairs.shape[1]), (1, top % pairs.shape[1]))
    others = np.delete(pairs.ravel(), top)
    d_model = int(a.unembed.shape[1]) if a.unembed is not None else 0
    baseline = random_composition_baseline(d_model, d_model // a.n_heads)
    patched = patch_heads(model, x.clean, x.corrupt, metric, "z")
    heads = [(i, h) for i in range(a.n_layers) for h in range(a.n_heads)]
    mean = np.zeros((a.n_layers, a.n_heads))
    zero = np.zeros((a.n_layers, a.n_heads))
    for i, h in heads:
        mean[i, h] = ablate(model, x.clean, loss, [(i, h)], "mean", reference=x.reference).change
        zero[i, h] = ablate(model, x.clean, loss, [(i, h)], "zero").change
    group = {name: ablate(model, x.clean, loss, list(hs), "mean", reference=x.reference).change
             for name, hs in (("induction", inds), ("previous token", prevs))}
    _, clean_z = run_with_cache(model, x.clean, ["blocks.1.attn.hook_z"])

    def put(z: Tensor) -> Tensor:  # (B, T, H, D): the induction heads' clean outputs
        z = z.clone()
        for _, h in inds:
            z[:, :, h] = clean_z["blocks.1.attn.hook_z"][:, :, h]
        return z

    out, _ = run_with_hooks(model, x.corrupt, {"blocks.1.attn.hook_z": put})
    group_patched = float(restored(float(metric(out)), patched.clean, patched.corrupted))
    paths = {into: path_patch(model, x.clean, x.corrupt, metric, receiver=ind, into=into).restored[0]
             for into in ("q", "k", "v")}
    attribution = attribution_patching(model, x.clean, x.corrupt, metric)
    with torch.no_grad():
        clean_loss = float(loss(model(x.clean)))
    return InductionCircuit(
        previous_token_head=prev, induction_head=ind, previous_token_heads=prevs, induction_heads=inds, scores=scores,
        k_pair=k_pair, k_composition=float(pairs.ravel()[top]),
        k_composition_others=others, composition_baseline=baseline, patching=patched.restored,
        top_patched=_argmax(patched.restored), clean_logit_diff=patched.clean, corrupt_logit_diff=patched.corrupted,
        group_patching=group_patched, loss=clean_loss, ablation=mean, zero_ablation=zero, group_ablation=group,
        paths=paths, attribution=attribution.estimate,
        spearman=attribution.spearman)
