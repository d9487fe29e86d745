"""docs/parallel/schedule.png: who computes which score block of causal ring attention, at which step, for the
contiguous and the zigzag layouts over 4 ranks, and each rank's work (from attnlab.parallel.schedule).

    python benchmarks/ring_figure.py [--out docs/parallel/schedule.png]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import Polygon, Rectangle

from attnlab.parallel import load_balance, schedule

WORLD = 4
COLOURS = ["#4477aa", "#ee6677", "#228833", "#ccbb44"]


def panel(ax_grid, ax_bar, layout: str) -> None:  # type: ignore[no-untyped-def]
    chunks = WORLD * (2 if layout == "zigzag" else 1)
    size = 1.0 / chunks  # every chunk as a share of the sequence
    work = [0] * WORLD
    for b in schedule(WORLD, layout=layout, causal=True):  # type: ignore[arg-type]
        x0, y0 = b.k_chunk * size, b.q_chunk * size
        colour = COLOURS[b.rank]
        if b.kind == "diagonal":  # the lower triangle (query i sees keys <= i)
            ax_grid.add_patch(Polygon([(x0, y0), (x0, y0 + size), (x0 + size, y0 + size)], closed=True,
                                      facecolor=colour, edgecolor="white", alpha=0.85))
        else:
            ax_grid.add_patch(Rectangle((x0, y0), size, size, facecolor=colour, edgecolor="white", alpha=0.85))
        ax_grid.text(x0 + size * (0.3 if b.kind == "diagonal" else 0.5), y0 + size * (0.7 if b.kind == "diagonal"
                     else 0.5), f"s{b.step}", ha="center", va="center", fontsize=8 if chunks > 4 else 11,
                     color="white")
        work[b.rank] += 1
    ax_grid.set_xlim(0, 1)
    ax_grid.set_ylim(1, 0)
    ax_grid.set_aspect("equal")
    ticks = [i * size for i in range(chunks + 1)]
    ax_grid.set_xticks(ticks, [""] * len(ticks))
    ax_grid.set_yticks(ticks, [""] * len(ticks))
    ax_grid.grid(True, color="#dddddd", linewidth=0.5)
    ax_grid.set_xlabel("keys (position →)")
    ax_grid.set_ylabel("queries (position ↓)")
    owners = " ".join(f"r{r}:{'+'.join(str(c) for c in ((r, 2 * WORLD - 1 - r) if layout == 'zigzag' else (r,)))}"
                      for r in range(WORLD))
    ax_grid.set_title(f"{layout}: chunks held  {owners}", fontsize=10)
    ax_bar.bar(range(WORLD), work, color=COLOURS)
    ax_bar.set_xticks(range(WORLD), [f"rank {r}" for r in range(WORLD)])
    ax_bar.set_ylabel(f"score blocks of (N/{chunks})²")
    ratio = load_balance(WORLD, layout=layout, causal=True)  # type: ignore[arg-type]
    ax_bar.set_title(f"busiest / mean = {ratio:.2f}", fontsize=10)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path(__file__).parents[1] / "docs" / "parallel" / "schedule.png")
    args = p.parse_args()
    fig, axes = plt.subplots(2, 2, figsize=(10, 7.5), gridspec_kw={"height_ratios": [3, 1]})
    for col, layout in enumerate(("contiguous", "zigzag")):
        panel(axes[0][col], axes[1][col], layout)
    fig.suptitle("Causal ring attention over 4 ranks: colour = the rank that computes the block, sN = the step\n"
                 "(at step s rank r holds the keys of rank r - s); triangles are the diagonal blocks", fontsize=11)
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(args.out.stem + ".tmp.png")
    fig.savefig(tmp, dpi=110)
    tmp.replace(args.out)
    print(args.out)


if __name__ == "__main__":
    main()
