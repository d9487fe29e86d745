"""Peak memory of capture_stats() on a long input: one attnlab encoder layer with an efficient kernel.

    python benchmarks/stats_memory.py [--n 16384] [--kernel local|memory_efficient] [--heads 4]

Runs the layer on a ``(1, n, 64)`` input inside :func:`attnlab.capturing.capture_stats` (top-8 keys) under
``torch.no_grad`` and prints the peak extra resident memory (``attnlab.bench.measure_peak``: VmHWM around
the call, large allocations served by mmap) next to what the dense weights alone would take,
``heads x n x n x 4`` bytes.
"""

from __future__ import annotations

import argparse
import os
import time

import torch

from attnlab.bench import _setup_malloc, measure_peak
from attnlab.capturing import capture_stats
from attnlab.layers import TransformerConfig, TransformerEncoder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=16384)
    ap.add_argument("--kernel", choices=("local", "memory_efficient"), default="local")
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--window", type=int, default=128)
    args = ap.parse_args()
    _setup_malloc()
    options = {"window": args.window} if args.kernel == "local" else {}
    model = TransformerEncoder(TransformerConfig(64, args.heads, 128, kernel=args.kernel, kernel_options=options), 1)
    x = torch.randn(1, args.n, 64)

    def run() -> int:
        with torch.no_grad(), capture_stats(model) as stats:
            model(x)
        return len(stats.records)

    start = time.perf_counter()
    records, peak = measure_peak(run)
    took = time.perf_counter() - start
    dense = args.heads * args.n * args.n * 4 / 2**20
    print(f"capture_stats, kernel {args.kernel}, n={args.n}, {args.heads} heads: {records} record(s), "
          f"peak extra {peak:.0f} MiB (dense weights alone: {dense:.0f} MiB), {took:.1f} s; "
          f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
