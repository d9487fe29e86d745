"""The learning curves of a run, drawn from its metrics rows (matplotlib, no pyplot)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._io import atomic_write
from ..viz.static import figure

__all__ = ["plot_curves", "plot_reliability"]


def plot_curves(rows: list[dict[str, Any]], path: Path, title: str) -> Path:
    """Training loss per step (and its running mean) with the validation loss; accuracies on the right panel."""
    train = [r for r in rows if r.get("split") == "train"]
    valid = [r for r in rows if r.get("split") == "valid"]
    fig = figure(10, 4)
    loss_ax, acc_ax = fig.subplots(1, 2)
    steps = [r["step"] for r in train]
    window = max(1, len(train) // 50)
    for ax, key in ((loss_ax, "loss"), (acc_ax, "accuracy")):
        values = [r[key] for r in train]
        smooth = [sum(values[max(0, i - window + 1): i + 1]) / len(values[max(0, i - window + 1): i + 1])
                  for i in range(len(values))]
        ax.plot(steps, values, color="#9ecae1", linewidth=0.6, label=f"train {key} (per step)")
        ax.plot(steps, smooth, color="#08519c", linewidth=1.5, label=f"train {key} (mean of {window} steps)")
        ax.plot([r["step"] for r in valid], [r[key] for r in valid], "o-", color="#d94801", label=f"valid {key}")
        ax.set_xlabel("optimizer step")
        ax.set_ylabel(key)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    acc_ax.set_ylim(0, 1)
    fig.suptitle(title, fontsize=10)
    return atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=110))


def plot_reliability(panels: dict[str, list[tuple[int, float, float]]], path: Path, title: str) -> Path:
    """Reliability diagrams side by side, one per ``panels`` entry (its title -> the bins' ``(count, mean
    confidence, accuracy)`` over equal-width confidence bins on [0, 1]): the accuracy of each bin as a bar at its
    place, the diagonal where a calibrated model's bars end, and the gap between the two shaded."""
    fig = figure(4.2 * len(panels), 4.2)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (name, bins) in zip(axes, panels.items(), strict=True):
        width = 1.0 / len(bins)
        lefts = [i * width for i in range(len(bins))]
        used = [(x, conf, acc) for x, (n, conf, acc) in zip(lefts, bins, strict=True) if n]
        ax.bar([x for x, _, _ in used], [acc for _, _, acc in used], width=width, align="edge", color="#3182bd",
               edgecolor="#08519c", label="accuracy of the bin")
        ax.bar([x for x, _, _ in used], [conf - acc for _, conf, acc in used], bottom=[acc for _, _, acc in used],
               width=width, align="edge", color="#fc9272", alpha=0.6, edgecolor="#cb181d",
               label="gap to its confidence")
        ax.plot([0, 1], [0, 1], "--", color="#636363", linewidth=1, label="calibrated")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("confidence (probability of the predicted label)")
        ax.set_ylabel("accuracy")
        ax.set_title(name, fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    fig.suptitle(title, fontsize=10)
    return atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=110))
