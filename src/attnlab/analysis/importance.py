"""Head importance and the pruning curve (Michel, Levy and Neubig 2019, "Are sixteen heads really better than one?").

Every head's output is multiplied by a gate ``g_h`` (:func:`attnlab.capturing.head_gates`, hooks
only); the importance of a head is the expected size of the loss's sensitivity to its gate,

    I_h = E_x | dL(x) / d g_h |   at g = 1,

taken per example (a per-example gate, so examples of a batch do not cancel each other's signs).
Masking heads in increasing order of importance and measuring the accuracy gives the pruning curve,
drawn next to the same curve for random orders.  Michel et al. normalise the importances of each layer
by their l2 norm before ranking heads across layers; :meth:`HeadImportance.order` does so by default.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import torch
from torch import Tensor, nn

from ..capturing import HeadGates, head_gates
from ..errors import InputError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["HeadImportance", "PruningCurve", "head_gates", "head_importance", "pruning_curve", "pruning_figure"]

Batch = TypeVar("Batch")
Head = tuple[str, int]  # (module name, head index)


@dataclass(frozen=True)
class HeadImportance:
    """``scores[i, h]``: ``E_x |dL(x)/dg_h|`` of head ``h`` of the module ``names[i]`` (call order)."""

    names: tuple[str, ...]  # gated modules in call order: the rows of scores
    scores: Tensor  # (modules, heads) float64
    examples: int  # how many examples the expectation is over

    def normalized(self) -> Tensor:
        """Scores divided by their l2 norm within each module (layer), as Michel et al. rank heads."""
        norm = self.scores.norm(dim=1, keepdim=True)
        return self.scores / torch.where(norm > 0, norm, torch.ones_like(norm))

    def order(self, *, normalize: bool = True) -> list[Head]:
        """Every head, least important first (ties in call order)."""
        s = self.normalized() if normalize else self.scores
        flat = s.flatten()
        idx = sorted(range(flat.numel()), key=lambda i: (float(flat[i]), i))
        h = s.shape[1]
        return [(self.names[i // h], i % h) for i in idx]


@dataclass(frozen=True)
class PruningCurve:
    """Accuracy with a share of the heads masked, in importance order and in random orders."""

    heads: int  # heads in the model
    shares: tuple[float, ...]  # share of all heads masked
    masked: tuple[int, ...]  # how many heads that is
    by_importance: tuple[float, ...]  # accuracy, least important heads masked first
    random: tuple[tuple[float, ...], ...]  # accuracy per random order (one row per seed)

    def random_mean(self) -> tuple[float, ...]:
        return tuple(sum(col) / len(col) for col in zip(*self.random, strict=True))


def head_importance(
    model: nn.Module, batches: Iterable[Batch], loss: Callable[[nn.Module, Batch], Tensor]
) -> HeadImportance:
    """``E_x |dL(x)/dg_h|`` for every head of ``model`` over the examples of ``batches``.

    Args:
        model: attnlab layers or a Hugging Face model (see :func:`head_gates`); put it in ``eval()``
            mode first unless dropout should count.
        batches: anything iterable; each item is handed to ``loss``.
        loss: ``loss(model, batch)`` runs the model and returns the **per-example** losses, shape
            ``(batch,)`` (e.g. ``cross_entropy(..., reduction="none")``).

    The model's parameters get no gradient (only the gates are differentiated).
    """
    sums: dict[str, Tensor] = {}
    names: list[str] = []
    examples = 0
    for batch in batches:
        with head_gates(model, probe=True) as gates:
            per_example = loss(model, batch)
        _check_losses(per_example, gates)
        examples += per_example.shape[0]
        grads = torch.autograd.grad(per_example.sum(), [p for _, p in gates.probes], allow_unused=True)
        for (name, p), g in zip(gates.probes, grads, strict=True):
            got = torch.zeros_like(p) if g is None else g
            sums[name] = sums.get(name, torch.zeros(p.shape[1], dtype=torch.float64)) + got.abs().sum(0).double().cpu()
            if name not in names:
                names.append(name)
    if not examples:
        raise InputError("head_importance() got no batches; pass at least one batch of examples")
    heads = {sums[n].numel() for n in names}
    if len(heads) != 1:
        raise InputError(f"the gated modules have different numbers of heads {sorted(heads)}; a grid needs one")
    return HeadImportance(tuple(names), torch.stack([sums[n] for n in names]) / examples, examples)


def _check_losses(per_example: Any, gates: HeadGates) -> None:
    if not isinstance(per_example, Tensor) or per_example.dim() != 1:
        shape = tuple(per_example.shape) if isinstance(per_example, Tensor) else type(per_example).__name__
        raise InputError(
            f"loss(model, batch) must return the per-example losses, shape (batch,), got {shape}; "
            f"use reduction='none' (a mean over the batch would let examples cancel each other's gradients)"
        )
    if not gates.probes:
        raise InputError("loss(model, batch) ran no gated attention head; call the model inside loss()")
    batch = gates.probes[0][1].shape[0]
    if per_example.shape[0] != batch:
        raise InputError(f"loss(model, batch) returned {per_example.shape[0]} losses for a batch of {batch}")


def pruning_curve(
    model: nn.Module,
    batches: Sequence[Batch],
    correct: Callable[[nn.Module, Batch], Tensor],
    importance: HeadImportance,
    *,
    shares: Sequence[float] = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9),
    random_orders: int = 3,
    seed: int = 0,
) -> PruningCurve:
    """Accuracy of ``model`` with the ``share`` least important heads masked, and with random heads masked.

    ``correct(model, batch)`` runs the model and returns a bool tensor, True for each example it gets
    right; ``batches`` is a sequence (it is read once per point of the curve).  The order is fixed by
    ``importance`` once (Michel et al. also re-estimate importance after each pruning step; this does not).
    """
    if isinstance(batches, Iterable) and not isinstance(batches, Sequence):
        raise InputError("pruning_curve() reads the batches once per point: pass a list, not an iterator")
    for s in shares:
        if not (isinstance(s, (int, float)) and 0.0 <= s <= 1.0):
            raise InputError(f"shares must lie in [0, 1], got {s!r}")
    order = importance.order()
    n = len(order)
    counts = tuple(round(s * n) for s in shares)
    by_imp = tuple(_accuracy(model, batches, correct, order[:c]) for c in counts)
    rows = []
    for r in range(random_orders):
        perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed + r)).tolist()
        shuffled = [order[i] for i in perm]
        rows.append(tuple(_accuracy(model, batches, correct, shuffled[:c]) for c in counts))
    return PruningCurve(n, tuple(float(s) for s in shares), counts, by_imp, tuple(rows))


def _accuracy(model: nn.Module, batches: Sequence[Batch], correct: Callable[[nn.Module, Batch], Tensor],
              heads: list[Head]) -> float:
    masked: dict[str, list[int]] = {}
    for name, h in heads:
        masked.setdefault(name, []).append(h)
    right = total = 0
    with torch.no_grad(), head_gates(model, masked=masked):
        for batch in batches:
            ok = correct(model, batch)
            right += int(ok.sum())
            total += ok.numel()
    if not total:
        raise InputError("pruning_curve() got no examples; pass at least one batch")
    return right / total


def pruning_figure(curve: PruningCurve, *, title: str = "Pruning heads") -> Figure:
    """Accuracy against the share of heads masked: importance order, each random order and their mean."""
    from ..viz.static import figure

    fig = figure(5.0, 3.4)
    ax = fig.add_subplot()
    x = [100 * s for s in curve.shares]
    for i, row in enumerate(curve.random):
        ax.plot(x, row, color="0.7", lw=0.8, label="random orders" if i == 0 else None)
    if curve.random:
        ax.plot(x, curve.random_mean(), color="0.3", ls="--", marker=".", label="random, mean")
    ax.plot(x, curve.by_importance, color="C0", marker="o", label="importance order")
    ax.set_xlabel("heads masked (%)")
    ax.set_ylabel("accuracy")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower left", fontsize=8)
    ax.text(0.99, 0.98, f"{curve.heads} heads", transform=ax.transAxes, ha="right", va="top", fontsize=8)
    return fig
