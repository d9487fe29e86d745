"""Cost of per-head metrics over a corpus against the bare forward passes of the bundled all-MiniLM-L6-v2.

A corpus of ``--texts`` sentences, each at least 128 tokens long and truncated to 128 (so every batch is
``batch x 128`` with no padding), is written to a temporary file.  Timed, taking turns in every repeat:

* ``forward``: the model as loaded (SDPA) on the already tokenised batches, under ``torch.no_grad``;
* ``capture``: the same batches inside ``attnlab.capture()`` (the eager attention that gives the weights), no
  reductions: the part of the cost that is getting the weights at all;
* ``metrics``: :func:`attnlab.analysis.corpus_metrics` on the file, same batch size: reading, tokenising,
  the captured (eager) forward and the per-head reductions.

The fastest of ``--repeats`` runs of each is reported (on a shared machine the slower runs measure the
neighbours), with the load average.  Goal: metrics <= 1.3x forward.

    python benchmarks/corpus_metrics.py [--texts 256] [--batch 32] [--repeats 3] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

from attnlab.analysis import corpus_metrics
from attnlab.bench import atomic_write_text
from attnlab.capturing import capture, load_model

GOAL = 1.3
TOKENS = 128
WORDS = (
    "the", "cat", "sat", "on", "mat", "while", "a", "dog", "of", "the", "house", "looked", "at", "birds", "in",
    "trees", "and", "people", "walked", "by", "with", "their", "children", "talking", "about", "weather",
    "news", "music", "books", "rivers", "mountains", "cities",
)


def _corpus(path: Path, n: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    lines = (" ".join(rng.choice(WORDS) for _ in range(TOKENS + 20)) for _ in range(n))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _fastest(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Fastest seconds of each function over ``repeats`` rounds in which they take turns (after a warm-up)."""
    best = dict.fromkeys(fns, float("inf"))
    for i in range(repeats + 1):
        for key, fn in fns.items():
            t = time.perf_counter()
            fn()
            if i:
                best[key] = min(best[key], time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--texts", type=int, default=256)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    model, tokenizer, name = load_model()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "corpus.txt"
        _corpus(path, args.texts)
        texts = path.read_text(encoding="utf-8").splitlines()
        batches = [tokenizer(texts[i : i + args.batch], truncation=True, max_length=TOKENS, padding=True,
                             return_tensors="pt") for i in range(0, len(texts), args.batch)]
        assert all(b["input_ids"].shape[1] == TOKENS for b in batches)

        def forward() -> None:
            with torch.no_grad():
                for b in batches:
                    model(input_ids=b["input_ids"], attention_mask=b["attention_mask"])

        def captured() -> None:
            with torch.no_grad():
                for b in batches:
                    with capture(model):
                        model(input_ids=b["input_ids"], attention_mask=b["attention_mask"])

        def metrics() -> None:
            corpus_metrics(model, tokenizer, path, batch_size=args.batch, max_length=TOKENS, progress=False)

        load_before = os.getloadavg()
        best = _fastest({"forward": forward, "capture": captured, "metrics": metrics}, args.repeats)
        load_after = os.getloadavg()
    ratio = best["metrics"] / best["forward"]
    doc = {
        "model": name, "texts": args.texts, "batch": args.batch, "tokens": TOKENS, "repeats": args.repeats,
        "threads": torch.get_num_threads(), "seconds": best, "ratio": ratio, "goal": f"<= {GOAL}",
        "met": ratio <= GOAL, "loadavg_before": load_before, "loadavg_after": load_after,
    }
    print(f"{args.texts} texts x {TOKENS} tokens, batch {args.batch}, {torch.get_num_threads()} threads: "
          f"forward {best['forward']:.3f} s, capture {best['capture']:.3f} s, metrics {best['metrics']:.3f} s, "
          f"ratio {ratio:.2f} (goal <= {GOAL}); "
          f"load average {load_before[0]:.2f} -> {load_after[0]:.2f}")
    if args.out:
        atomic_write_text(args.out, json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
