"""The learning curves of a run, drawn from its metrics rows (matplotlib, no pyplot)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .._io import atomic_write
from ..viz.static import figure

__all__ = ["plot_curves", "plot_head_scores", "plot_lm_curve", "plot_reliability"]


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
    if all(0 <= r["accuracy"] <= 1 for r in valid):  # a metric that is not a share (-bits/char) keeps its range
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


def plot_lm_curve(rows: list[dict[str, Any]], final: dict[str, Any], path: Path, title: str) -> Path:
    """A language model's validation bits per character against the CPU minutes of training (and the optimizer
    steps on the top axis), with each Kneser-Ney baseline as a horizontal line and the best one bold."""
    valid = [r for r in rows if r.get("split") == "valid"]
    fig = figure(8, 4.5)
    ax = fig.subplots()
    minutes = [r["cpu_s"] / 60 for r in valid]
    ax.plot(minutes, [-r["accuracy"] for r in valid], "o-", color="#08519c", markersize=3,
            label="the transformer, valid")
    best = str(final["ngram_order"])
    colours = ["#fdae6b", "#fd8d3c", "#e6550d", "#a63603"]
    for i, (order, bpc) in enumerate(sorted(final["ngram_valid_bits_per_char"].items())):
        ax.axhline(bpc, color=colours[i % len(colours)], linewidth=2.2 if order == best else 0.8,
                   linestyle="-" if order == best else "--",
                   label=f"Kneser-Ney {order}-gram{' (best on valid)' if order == best else ''}: {bpc:.3f}")
    ax.axhline(0.9 * final["ngram_valid_bits_per_char"][best], color="#636363", linewidth=0.8, linestyle=":",
               label="10% below the best n-gram")
    if "mix_valid_bits_per_char" in final:
        ax.axhline(final["mix_valid_bits_per_char"], color="#31a354", linewidth=1.4, linestyle="-.",
                   label=f"the best model mixed with the n-gram (lambda {final['mix_lambda']:.2f}): "
                         f"{final['mix_valid_bits_per_char']:.3f}")
    threads = int(final.get("threads", 1))
    counted = "one thread" if threads == 1 else f"{threads} threads, their CPU time summed"
    ax.set_xlabel(f"CPU minutes of training ({counted}; validations and head probes included)")
    ax.set_ylabel("valid bits per character")
    top = [-r["accuracy"] for r in valid]
    low = min([*top, 0.85 * final["ngram_valid_bits_per_char"][best]])
    high = max(final["ngram_valid_bits_per_char"].values()) + 0.6  # early losses far above are cut off, not the best
    ax.set_ylim(low - 0.1, max(high, min(top) + 0.3) if top else high)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    if len(set(minutes)) == 1:  # one validation: a range around it, and no axis of steps to map onto it
        ax.set_xlim(0, 2 * minutes[0] or 1)
    elif valid:
        at = [float(r["step"]) for r in valid]

        def to_step(m: Any) -> Any:
            return np.interp(m, minutes, at)

        def to_minutes(s: Any) -> Any:
            return np.interp(s, at, minutes)

        steps = ax.secondary_xaxis("top", functions=(to_step, to_minutes))
        steps.set_xlabel("optimizer step")
    ax.set_title(title, fontsize=10)
    return atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=110))


FORMED = 0.4  # an induction head "formed" above this score: attnlab.analysis.labels.DETECT, the label threshold


def formed_at(rows: list[dict[str, Any]], key: str = "heads") -> int | None:
    """The first validation step at which some head's induction score (``row[key]["induction"]``) is above
    :data:`FORMED`, or None."""
    for r in rows:
        if r.get("split") == "valid" and key in r and float(np.max(r[key]["induction"])) > FORMED:
            return int(r["step"])
    return None


def plot_head_scores(rows: list[dict[str, Any]], path: Path, title: str) -> Path:
    """Across training: each head's previous-token, duplicate-token and induction score (one thin line per head,
    the highest bold) and the in-context learning score; with copy windows, the induction score on repeated real text
    too, the step at which a head passed :data:`FORMED` marked on every panel."""
    valid = [r for r in rows if r.get("split") == "valid" and "heads" in r]
    steps = [r["step"] for r in valid]
    names = list(valid[0]["heads"]) if valid else []
    panels = [("heads", name) for name in names]
    if valid and "heads_text" in valid[0]:
        panels.append(("heads_text", "induction"))
    change = formed_at(valid, "heads_text") if len(panels) > len(names) else None
    fig = figure(4 * (len(panels) + 1), 3.8)
    axes = fig.subplots(1, len(panels) + 1, squeeze=False)[0]
    for ax, (key, name) in zip(axes, panels, strict=False):
        scores = np.array([r[key][name] for r in valid])  # (T, L, H)
        flat = scores.reshape(len(valid), -1)
        marker = "o" if len(steps) == 1 else None  # one validation: points, not lines
        for j in range(flat.shape[1]):
            ax.plot(steps, flat[:, j], color="#9ecae1", linewidth=0.7, marker=marker, markersize=3)
        top = int(flat[-1].argmax())
        layer, head = divmod(top, scores.shape[2])
        ax.plot(steps, flat[:, top], color="#08519c", linewidth=1.8, marker=marker, markersize=4,
                label=f"layer {layer} head {head}")
        ax.set_title(f"{name} score" + (" on repeated valid text" if key == "heads_text" else
                                        " on repeated random tokens" if change is not None else ""), fontsize=9)
        if change is not None:
            ax.axvline(change, color="#d62728", linewidth=1.0, linestyle="--")
        if name == "induction":  # say in the figure whether a phase change happened
            peak = float(flat.max())
            verdict = (f"a head above {FORMED:g} from step {steps[int((flat.max(1) > FORMED).argmax())]}"
                       if peak > FORMED else f"no induction head: none above {FORMED:g}")
            ax.text(0.03, 0.93, f"highest score {peak:.3f}\n{verdict}", transform=ax.transAxes, fontsize=8,
                    va="top")
        ax.set_ylim(0, 1)
        ax.set_xlabel("optimizer step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    icl = axes[-1]
    icl.plot(steps, [r["icl"] for r in valid], "o-", color="#d94801", markersize=3)
    if valid:
        early, late = valid[0]["icl_positions"]
        icl.set_title(f"in-context learning: loss at token {late} - at token {early}", fontsize=9)
    icl.axhline(0, color="#636363", linewidth=0.8)
    if change is not None:
        icl.axvline(change, color="#d62728", linewidth=1.0, linestyle="--", label=f"induction on text from {change}")
        icl.legend(fontsize=8)
    icl.set_xlabel("optimizer step")
    icl.set_ylabel("nats")
    if len(set(steps)) == 1:  # one validation: a range around its step on every panel
        for ax in axes:
            ax.set_xlim(steps[0] - 1, steps[0] + 1)
    icl.grid(alpha=0.3)
    fig.suptitle(title, fontsize=10)
    return atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=110))
