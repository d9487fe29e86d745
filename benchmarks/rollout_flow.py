"""Cost of attention rollout and attention flow (Abnar & Zuidema 2020) on traces of the bundled
all-MiniLM-L6-v2 (6 layers, 12 heads).

* rollout of a 512-token trace (goal <= 0.1 s);
* flow from every input token to one output position ([CLS]) at 128 tokens (goal <= 1 s);
* flow for all pairs at 128 tokens (goal <= 10 s, issue 21), with ``--workers`` processes: the sparse solver
  (the default: OR-Tools on each node's strongest edges, certified by a cut of the whole graph) against
  OR-Tools on the whole graph (built once and re-solved: the solver before) and scipy (a graph per target,
  Dinic: the first solver), whose answers must be equal;
* the same at 512 tokens, reported: one target estimated from 32 of its 512 sources (each source is
  one max-flow problem of the same graph, so they cost about the same), with the sparse solver and with
  OR-Tools on the whole graph; all pairs estimated from that (measured only with ``--all-512``).

Timings are the fastest of ``--repeats`` runs (the least disturbed by other load on the machine),
with the median next to it; the load average is recorded with them.  Flow uses integer capacities
scaled by 2**30; the error bound of that scaling is printed next to it.

    python benchmarks/rollout_flow.py [--quick] [--workers N] [--out benchmarks/results/rollout_flow.json]
"""

from __future__ import annotations

import argparse
import json
import os

# one BLAS thread: on a shared machine, threads that wait for each other make matmul slower, not faster
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

import attnlab as al
from attnlab.analysis import flow, flow_error_bound, rollout
from attnlab.analysis.rollout import SPARSE_KEEP
from attnlab.bench import atomic_write_text
from attnlab.capturing import load_model

GOALS = {"rollout_512_s": 0.1, "flow_one_target_128_s": 1.0, "flow_all_pairs_128_s": 10.0}


def _times(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """(fastest, median) seconds of ``repeats`` calls after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def _trace(n: int) -> np.ndarray:
    model, tokenizer, _ = load_model("minilm")
    text = " ".join(["The quick brown fox jumps over the lazy dog, and the dog sleeps on."] * 60)
    inputs = tokenizer(text, return_tensors="pt", truncation=True, max_length=n)
    assert inputs["input_ids"].shape[1] == n
    with torch.no_grad(), al.capture(model) as trace:
        model(**inputs)
    return trace.weights.numpy()  # (6, 12, n, n) float32, as captured


def run(repeats: int, workers: int, all_512: bool, with_scipy: bool = True) -> dict[str, Any]:
    w128, w512 = _trace(128), _trace(512)
    load_before = os.getloadavg()
    rows: dict[str, Any] = {}
    rows["rollout_512_s"], rows["rollout_512_median_s"] = _times(lambda: rollout(w512), repeats)
    rows["rollout_128_s"], rows["rollout_128_median_s"] = _times(lambda: rollout(w128), repeats)
    rows["flow_one_target_128_s"], rows["flow_one_target_128_median_s"] = _times(
        lambda: flow(w128, targets=[0]), max(1, repeats // 3))
    for solver, key in (("sparse", ""), ("ortools", "_ortools")):
        start = time.perf_counter()
        flow(w512, targets=[0], sources=range(0, 512, 16), solver=solver)  # 32 of the 512 sources, scaled up
        rows[f"flow_one_target_512{key}_estimated_s"] = (time.perf_counter() - start) * 16
    load_all_pairs = os.getloadavg()
    results: list[np.ndarray] = []
    rows["flow_all_pairs_128_s"], rows["flow_all_pairs_128_median_s"] = _times(
        lambda: results.append(flow(w128, workers=workers)), repeats)
    fast = results[-1]
    for solver in ("ortools", "scipy") if with_scipy else ("ortools",):  # once each: tens of seconds
        start = time.perf_counter()
        before = flow(w128, workers=workers, solver=solver)
        seconds = rows[f"flow_all_pairs_128_{solver}_s"] = time.perf_counter() - start
        rows[f"flow_all_pairs_128_{solver}_speedup"] = seconds / rows["flow_all_pairs_128_s"]
        rows[f"flow_all_pairs_128_{solver}_max_difference"] = float(np.abs(fast - before).max())
    if all_512:
        start = time.perf_counter()
        flow(w512, workers=workers)
        rows["flow_all_pairs_512_s"] = time.perf_counter() - start
    else:  # estimated from one target: every target costs about the same
        for key in ("", "_ortools"):
            rows[f"flow_all_pairs_512{key}_estimated_s"] = rows[f"flow_one_target_512{key}_estimated_s"] * 512 / workers
    return {
        "benchmark": "rollout_flow", "model": "all-MiniLM-L6-v2", "repeats": repeats, "workers": workers,
        "solver": "sparse", "sparse_keep": SPARSE_KEEP, "load_average_all_pairs": load_all_pairs,
        "goals_s": GOALS, "goals_met": {k: rows[k] <= v for k, v in GOALS.items()}, "rows": rows,
        "flow_error_bound": {"128": flow_error_bound(6, 128), "512": flow_error_bound(6, 512)},
        "load_average_before": load_before, "load_average_after": os.getloadavg(), "cpus": os.cpu_count(),
        "torch": torch.__version__, "machine": platform.machine(), "processor": platform.processor(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--workers", type=int, default=1, help="processes for all-pairs flow (default 1)")
    parser.add_argument("--all-512", action="store_true", help="also all-pairs flow at 512 tokens (long)")
    parser.add_argument("--no-scipy", action="store_true", help="skip the scipy all-pairs row (about 150 s)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "rollout_flow.json")
    args = parser.parse_args()
    torch.set_num_threads(1)
    repeats = args.repeats or (3 if args.quick else 15)
    result = run(repeats, args.workers, args.all_512, not args.no_scipy)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out, json.dumps(result, indent=2) + "\n")
    load = ", ".join(f"{x:.1f}" for x in result["load_average_before"])
    print(f"{result['model']}: fastest of {repeats} (median in brackets); load average {load} on "
          f"{result['cpus']} CPUs; all-pairs flow with {args.workers} process(es)")
    rows = result["rows"]
    for key, value in rows.items():
        if key.endswith("_median_s"):
            continue
        median = rows.get(key.removesuffix("_s") + "_median_s") if key.endswith("_s") else None
        goal = GOALS.get(key)
        extra = f" [{median:.4f}]" if median is not None else ""
        verdict = f"  goal <= {goal} s: {'met' if value <= goal else 'MISSED'}" if goal is not None else ""
        unit = "" if key.endswith(("_speedup", "_difference")) else " s"
        print(f"  {key:<34} {value:>10.4f}{unit}{extra}{verdict}")
    bound = result["flow_error_bound"]
    print(f"flow's integer scaling (2**30) errs by at most {bound['128']:.1e} at 128 tokens, {bound['512']:.1e} at 512")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
