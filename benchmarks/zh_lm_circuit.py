"""What the circuits tools find in a character language model (issue 42): its induction head on real text, when it
formed, what it reads, what it restores and what it costs to lose.

For a model folder (the bundled zh-lm by default; a run folder reads its latest checkpoint) and its run's
metrics.jsonl:
  formation  the best induction score on repeated People's Daily text (a stretch of valid text said twice, the
             run's own probe) at every validation: the head, its final score, the step and characters seen where
             it first reached half of that (the phase change), and a figure of it beside the valid bits/char;
  reads      K- and V-composition of that head with every head of the layers below, against the random baseline
             of the model's shapes (attnlab.circuits.composition_baseline);
  restores   activation patching of every head on pairs of held-out text: clean = X + X[:-1] (X, 20 characters of a
             test document), corrupted = Y + X[:-1] (Y, the 20 characters that follow X there), the metric the
             logit of X's last character against the corrupted run's top one; the head's share, mean over pairs;
  costs      zero and mean ablation of the head: the loss (nats per character) on the second half of the repeated
             texts against the loss on the same characters unrepeated (the first half).

    python benchmarks/zh_lm_circuit.py [MODEL] [--run RUN_FOLDER] [--pairs 32] [--out results/zh_lm_circuit.json]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
CHARS_PER_STEP = 32 * 128  # windows of the recipe's batch x context


def formation(metrics: Path) -> dict[str, Any]:
    rows = [json.loads(line) for line in metrics.read_text(encoding="utf-8").splitlines()]
    valid = [r for r in rows if r.get("split") == "valid" and "heads_text" in r]
    final = np.array(valid[-1]["heads_text"]["induction"])  # (L, H)
    layer, head = (int(i) for i in np.unravel_index(int(final.argmax()), final.shape))
    curve = [(r["step"], r["heads_text"]["induction"][layer][head], r["loss"] / math.log(2)) for r in valid]
    half = final[layer, head] / 2
    change = next(step for step, score, _ in curve if score >= half)
    return {"head": [layer, head], "final": float(final[layer, head]), "change_step": change,
            "change_characters": change * CHARS_PER_STEP, "curve": curve}


def figure(found: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps, scores, bits = zip(*found["curve"], strict=True)
    fig, ax = plt.subplots(figsize=(7, 3.6), layout="constrained")
    ax.plot(steps, scores, color="#b2182b", label=f"induction score of L{found['head'][0]}H{found['head'][1]}")
    ax.axvline(found["change_step"], color="#888", ls="--", lw=1)
    ax.text(found["change_step"], 0.02, f" half its final score: step {found['change_step']:,}\n"
            f" ({found['change_characters'] / 1e6:.1f} M characters)", fontsize=8, color="#444")
    ax.set(xlabel="step", ylabel="induction score on repeated text", ylim=(0, max(scores) * 1.15))
    twin = ax.twinx()
    twin.plot(steps, bits, color="#2166ac", lw=1, label="valid bits/char")
    twin.set_ylabel("valid bits per character")
    lines = ax.get_legend_handles_labels(), twin.get_legend_handles_labels()
    ax.legend(lines[0][0] + lines[1][0], lines[0][1] + lines[1][1], loc="center right", fontsize=8)
    ax.set_title("zh-lm: the induction head forms (People's Daily, said twice)", fontsize=10)
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main() -> None:
    from attnlab import circuits
    from attnlab.data import lm_documents, split_documents
    from attnlab.kinds import Model

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", nargs="?", default="zh-lm")
    parser.add_argument("--run", type=Path, help="the run folder whose metrics.jsonl holds the probe (default: the "
                        "model folder)")
    parser.add_argument("--pairs", type=int, default=32)
    parser.add_argument("--length", type=int, default=20)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "zh_lm_circuit.json")
    parser.add_argument("--figure", type=Path, help="where to draw the formation figure (PNG)")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = Model.load(args.model, "lm")
    lm = model.loaded
    net = lm.model.eval()
    run = args.run or model.found.path
    found = formation(Path(run) / "metrics.jsonl")
    layer, head = found["head"]
    if args.figure:
        figure(found, args.figure)

    comp = circuits.composition_scores(net)
    baseline = circuits.composition_baseline(net)
    reads = {m: sorted(((float(comp.of(m)[s1, s2, layer, head]), f"L{s1}H{s2}") for s1 in range(layer)
                        for s2 in range(comp.of(m).shape[1])), reverse=True)[:3] for m in ("k", "v")}

    n = args.length
    test = split_documents(lm_documents("peoples-daily")).test  # the held-out documents, one a line
    rng = np.random.default_rng(0)
    docs = [d for d in test.split("\n") if len(d) >= 2 * n + 1]
    clean, corrupt, targets = [], [], []
    for doc in (docs[int(i)] for i in rng.choice(len(docs), args.pairs, replace=False)):
        at = int(rng.integers(0, len(doc) - 2 * n))
        x, y = doc[at: at + n], doc[at + n: at + 2 * n]
        clean.append(lm.encode_prompt(x + x[:-1]))
        corrupt.append(lm.encode_prompt(y + x[:-1]))
        targets.append(lm.encode_prompt(x)[-1])
    shares, tops = [], []
    for c, k, t in zip(clean, corrupt, targets, strict=True):
        a, b = torch.tensor([c]), torch.tensor([k])
        with torch.no_grad():
            d = int(net(b)[0, -1].argmax())
        if d == t:
            d = int(net(b)[0, -1].argsort(descending=True)[1])
        got = circuits.patch_heads(net, a, b, circuits.logit_diff(t, d), "z")
        if got.clean - got.corrupted > 0.5:  # pairs whose repetition changes the prediction
            shares.append(float(got.restored[layer, head]))
            best = np.unravel_index(int(np.nanargmax(got.restored)), got.restored.shape)
            tops.append((int(best[0]), int(best[1])))
    repeated = torch.tensor([[*c, t] for c, t in zip(clean, targets, strict=True)])  # (N, 2n): X said twice
    firsts = repeated[:, 1:n]  # predicting X's characters the first time (positions 0..n-2 -> 1..n-1)
    seconds = repeated[:, n + 1:]
    reference = torch.tensor(corrupt)  # other text of the same length, for the mean
    reference = torch.cat([reference, reference[:, -1:]], 1)
    costs = {}
    for how in ("zero", "mean"):
        for part, positions, targets_ in (("repeated", range(n, 2 * n - 1), seconds),
                                          ("first", range(0, n - 1), firsts)):
            full = torch.full_like(repeated, -100)
            full[:, list(positions)] = targets_
            metric = circuits.loss_on(full)
            ab = circuits.ablate(net, repeated, metric, [(layer, head)], how, reference=reference)
            costs[f"{how} {part}"] = {"before": ab.before, "after": ab.after, "rise": ab.change}
    result = {"model": args.model, **{k: v for k, v in found.items() if k != "curve"},
              "composition_baseline": baseline, "reads": reads,
              "patching": {"pairs": len(shares), "of": args.pairs, "mean_share": float(np.mean(shares)) if shares
                           else None, "top_head_counts": {f"L{a}H{b}": tops.count((a, b)) for a, b in set(tops)}},
              "ablation_nats": costs, "curve": found["curve"]}
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "curve"}, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
