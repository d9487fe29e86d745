"""Cost of capturing all the attention of the bundled all-MiniLM-L6-v2.

Compares, in one run and on the same model object, at 16, 128 and 512 tokens:

* ``eager``: the model's own forward with ``output_attentions=True`` in eager mode (what one would
  run without attnlab to get the weights);
* ``capture``: the model as loaded (SDPA) inside ``attnlab.capture()`` (records every weight);
* ``sdpa``: the plain forward, for reference (no weights).

Each is warmed up, then timed ``--repeats`` times, the three taking turns in every repeat; the
median is reported.  Goal: capture costs at
most 1.15x the eager forward at 512 tokens.

    python benchmarks/capture.py [--quick] [--out benchmarks/results/capture.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

import attnlab as al
from attnlab.bench import atomic_write_text
from attnlab.capturing import load_model

GOAL = 1.15
LENGTHS = (16, 128, 512)


def _medians(fns: dict[str, Callable[[], object]], repeats: int, warmup: int) -> dict[str, float]:
    """Median seconds of each function; the functions take turns in every repeat, so that a change in
    the machine's load hits them all alike."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for i in range(warmup + repeats):
        for key, fn in fns.items():
            start = time.perf_counter()
            fn()
            if i >= warmup:
                times[key].append(time.perf_counter() - start)
    return {k: statistics.median(v) for k, v in times.items()}


def _variants(model: Any, inputs: dict[str, torch.Tensor]) -> dict[str, Callable[[], object]]:
    def eager() -> None:
        model.set_attn_implementation("eager")
        try:
            model(**inputs, output_attentions=True)
        finally:
            model.set_attn_implementation("sdpa")

    def capture() -> None:
        with al.capture(model) as trace:
            model(**inputs)
        assert len(trace) == 6

    def sdpa() -> None:
        model(**inputs)

    return {"eager": eager, "capture": capture, "sdpa": sdpa}


def run(repeats: int, warmup: int) -> dict[str, object]:
    model, tokenizer, name = load_model("minilm")
    text = " ".join(["the quick brown fox jumps over the lazy dog"] * 80)
    rows = []
    for n in LENGTHS:
        inputs = tokenizer(text, return_tensors="pt", truncation=True, max_length=n)
        assert inputs["input_ids"].shape[1] == n

        with torch.no_grad():
            t = _medians(_variants(model, dict(inputs)), repeats, warmup)
        rows.append({"tokens": n, "eager_output_attentions_ms": 1e3 * t["eager"], "capture_ms": 1e3 * t["capture"],
                     "sdpa_no_weights_ms": 1e3 * t["sdpa"], "capture_over_eager": t["capture"] / t["eager"]})
    at_512 = next(r for r in rows if r["tokens"] == 512)["capture_over_eager"]
    return {
        "benchmark": "capture", "model": name, "repeats": repeats, "warmup": warmup, "goal": f"<= {GOAL}x at 512",
        "goal_met": at_512 <= GOAL, "torch": torch.__version__, "threads": torch.get_num_threads(),
        "machine": platform.machine(), "processor": platform.processor(), "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1: steadier when shared)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "capture.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    repeats = args.repeats or (3 if args.quick else 15)
    result = run(repeats, warmup=1 if args.quick else 3)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out, json.dumps(result, indent=2) + "\n")
    print(f"{result['model']}: median of {repeats} runs, {result['threads']} threads")
    print(f"{'tokens':>6}  {'eager+attn ms':>13}  {'capture ms':>10}  {'sdpa ms':>8}  {'capturing/eager':>13}")
    for r in result["rows"]:  # type: ignore[attr-defined]
        print(f"{r['tokens']:>6}  {r['eager_output_attentions_ms']:>13.2f}  {r['capture_ms']:>10.2f}  "
              f"{r['sdpa_no_weights_ms']:>8.2f}  {r['capture_over_eager']:>12.3f}x")
    print(f"goal {result['goal']}: {'met' if result['goal_met'] else 'MISSED'}; wrote {args.out}")


if __name__ == "__main__":
    main()
