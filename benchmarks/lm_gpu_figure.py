"""The zh-lm recipe run longer on a GPU: valid bits/char and the induction head forming, against steps.

    python benchmarks/lm_gpu_figure.py benchmarks/results/zh_lm_gpu_valid.jsonl --ngram 5.508308 \
        --schedule 20000 --out docs/lm/zh-lm-gpu.png

The input is the validation rows of a run's ``metrics.jsonl`` (``attnlab train lm --config configs/zh-lm.json
--max-steps 20000 --eval-every 250 --device cuda``; docs/lm.md says which run). The head is the one whose
induction score on repeated valid text rose most from the first row to the last; the step of the change is the
first validation at which that score has covered half of its rise from the first row to its highest. Prints the
figures the text quotes.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("metrics", type=Path)
    p.add_argument("--ngram", type=float, required=True, help="the chosen Kneser-Ney model's valid bits/char")
    p.add_argument("--cpu-steps", type=int, default=2700, help="where the CPU recipe (configs/zh-lm.json) stops")
    p.add_argument("--schedule", type=int, help="the run's --max-steps, when it was stopped before them")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    rows = [json.loads(line) for line in args.metrics.read_text().splitlines() if line.strip()]
    steps = np.array([r["step"] for r in rows])
    bits = np.array([r["loss"] / math.log(2) for r in rows])
    text = np.array([r["heads_text"]["induction"] for r in rows])  # (rows, layers, heads)
    rand = np.array([r["heads"]["induction"] for r in rows])
    gain = text[-1] - text[0]
    layer, head = (int(i) for i in np.unravel_index(int(np.argmax(gain)), gain.shape))
    score = text[:, layer, head]
    half = score[0] + (score.max() - score[0]) / 2
    change = int(steps[np.argmax(score >= half)])
    below = steps[bits < args.ngram]
    print(f"head L{layer}H{head}: induction on repeated text {score[0]:.3f} -> max {score.max():.3f} "
          f"(step {steps[score.argmax()]}), last {score[-1]:.3f}; on random tokens last {rand[-1, layer, head]:.3f}; "
          f"change (half the rise) at step {change}; first >= 0.4 at step "
          f"{steps[np.argmax(score >= 0.4)] if (score >= 0.4).any() else None}")
    print(f"valid bits/char: best {bits.min():.4f} at step {steps[bits.argmin()]}; first below the n-gram "
          f"({args.ngram:.4f}) at step {below[0] if below.size else None}; at step {args.cpu_steps}: "
          f"{np.interp(args.cpu_steps, steps, bits):.4f}; icl at the last row {rows[-1]['icl']:+.3f}")

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    schedule = f"{args.schedule:,}-step schedule" if args.schedule else f"{steps[-1]:,} steps"
    a.plot(steps, bits, color="C0", label=f"zh-lm recipe, {schedule} (GPU)")
    a.axhline(args.ngram, color="C3", ls="--", label=f"Kneser-Ney 5-gram {args.ngram:.3f}")
    a.axvline(args.cpu_steps, color="grey", ls=":", label=f"the CPU recipe ends (step {args.cpu_steps:,})")
    a.set(xlabel="optimizer step (32 windows of 128)", ylabel="valid bits / character", ylim=(5.3, 7.0),
          title="valid bits per character")
    a.legend(fontsize=8)
    b.plot(steps, score, color="C2", label=f"L{layer}H{head} on repeated valid text")
    b.plot(steps, rand[:, layer, head], color="C2", ls="--", label=f"L{layer}H{head} on repeated random characters")
    b.plot(steps, text.reshape(len(rows), -1).max(1), color="k", lw=0.6, alpha=0.5, label="best head, repeated text")
    b.axhline(0.4, color="C3", ls="--", lw=0.8, label="issue 31's 0.4")
    b.axvline(change, color="C1", label=f"the change: step {change:,}")
    b.axvline(args.cpu_steps, color="grey", ls=":")
    b.set(xlabel="optimizer step", ylabel="induction score", ylim=(0, 0.5), title="an induction head forming")
    b.legend(fontsize=8, loc="lower right")
    stopped = f" (stopped at step {steps[-1]:,} of {args.schedule:,})" if args.schedule else ""
    fig.suptitle(f"zh-lm's recipe run longer{stopped}")
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)


if __name__ == "__main__":
    main()
