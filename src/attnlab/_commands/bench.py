"""``attnlab bench``: time and peak memory of the efficient kernels against PyTorch's SDPA and the naive
version, across sequence lengths, in one run.  The work lives in :mod:`attnlab.bench`."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import ConfigError

DEFAULT_OUT = "attnlab-bench"  # each run writes into a folder of its own below this one, named by its start time
QUICK_MAX_N = 1024

EXAMPLES = """\
Writes into --out: bench.json (every measurement, the machine, the goals), bench.md (the tables) and
time.png / memory.png (log-log against n, with n and n^2 slopes).  Batch 1, 8 heads, dim 64, float32.
Peak memory is the peak resident set size of the call over the resident size before it (Linux /proc).

examples:
  attnlab bench --quick                      # n = 512, 1024; under two minutes
  attnlab bench                              # n = 512 ... 65536 where each kernel allows (many minutes)
  attnlab bench --max-n 8192 --no-flex --out bench-8k
Without --out, each run writes into attnlab-bench/<date>-<time>/, so runs never mix.
  attnlab bench --profile stats --max-n 4096   # operators by self CPU time for one case
"""


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "bench",
        help="measure time, GFLOP/s and peak memory of the attention kernels against torch SDPA",
        description="Benchmark memory-efficient, local, linear attention and streaming statistics against "
        "torch.nn.functional.scaled_dot_product_attention and the naive matmul-softmax-matmul.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--quick", action="store_true", help=f"small sizes only (up to n={QUICK_MAX_N}), one run each")
    p.add_argument("--max-n", type=int, metavar="N", help="the largest sequence length (a power of two >= 512)")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help=f"folder to write into (default: {DEFAULT_OUT}/<date>-<time>, one per run)")
    flex = p.add_mutually_exclusive_group()
    flex.add_argument("--flex", dest="flex", action="store_true", default=None,
                      help="also time torch.compile'd flex_attention (default: on, off with --quick)")
    flex.add_argument("--no-flex", dest="flex", action="store_false")
    p.add_argument("--threads", type=int, metavar="T", help="torch threads (default: torch's choice)")
    p.add_argument("--profile", metavar="CASE", help="instead of the benchmark, print the torch.profiler table of "
                   "one case (e.g. stats) at n = --max-n: where its time goes")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..bench import Config
    from ..bench import run as run_bench

    max_n = args.max_n if args.max_n is not None else (QUICK_MAX_N if args.quick else 65536)
    if max_n < 512 or max_n & (max_n - 1):
        raise ConfigError(f"--max-n must be a power of two >= 512, got {max_n}; e.g. --max-n 4096")
    if args.threads is not None and args.threads < 1:
        raise ConfigError(f"--threads must be >= 1, got {args.threads}")
    flex = args.flex if args.flex is not None else not args.quick
    cfg = Config(max_n=max_n, quick=args.quick, flex=flex, threads=args.threads)
    if args.profile:
        from ..bench import profile

        print(profile(args.profile, max_n, cfg))
        return 0
    if args.out is None:
        args.out = Path(DEFAULT_OUT) / time.strftime("%Y%m%d-%H%M%S")
    if args.out.exists() and not args.out.is_dir():
        raise ConfigError(f"--out {str(args.out)!r} exists and is not a folder; choose another path")

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    doc = run_bench(cfg, args.out, progress)
    print(f"wrote {args.out / 'bench.json'}, bench.md, time.png, memory.png ({doc['total_seconds']} s)")
    for g in doc["goals"]:
        if g["value"] is not None:
            print(f"  {g['name']}: {g['value']} (target {g['target']}, {'met' if g['ok'] else 'NOT met'})")
    return 0
