"""Ring attention on this machine's CPU processes (gloo): memory per rank, the longest sequence, time per step.

* memory: peak resident memory of one forward + backward (over the process's resident memory before it), per rank,
  at several lengths and 1, 2, 4 ranks (causal, zigzag, ring schedule);
* limit: from the measured growth per token at one rank, the length one rank can hold in a memory budget; then, under
  an address-space limit (RLIMIT_AS) of that budget, one point above it must fail on one rank and run on four, and
  one point below it must run on one; the same arithmetic, with the growth measured, gives the lengths for 24 GB;
* time: seconds per forward + backward step of ring vs allgather, contiguous vs zigzag, at 2 and 4 ranks, with the
  time spent waiting on communication (exposed, not overlapped) and the work balance from the schedule.

Each configuration runs under ``torchrun --standalone`` (its own free port), one thread per rank.  This machine has
2 cores: 4 ranks share them, so times measure overheads and balance, not speed-ups.

    python benchmarks/ring.py [--quick] [--out benchmarks/results/ring.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

SHAPE = {"batch": 4, "heads": 8, "dim": 64}  # per token per rank: many bytes for few flops, so limits come early


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def _peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _step(n: int, world: int, rank: int, layout: str, schedule: str, seed: int = 0) -> None:
    from attnlab.parallel import ring_attention, shard

    g = torch.Generator().manual_seed(seed)
    shape = (SHAPE["batch"], SHAPE["heads"], n, SHAPE["dim"])
    q, k, v = (shard(torch.randn(shape, generator=g), world, rank, layout=layout).requires_grad_() for _ in range(3))
    out = ring_attention(q, k, v, causal=True, layout=layout, schedule=schedule, length=n)
    assert isinstance(out, torch.Tensor)
    out.sum().backward()


def _timed_transport() -> dict[str, float]:
    """Count the seconds spent in the transport's blocking calls (the communication not hidden by compute)."""
    import attnlab.parallel.ring as ring_module
    from attnlab.parallel._transport import Distributed

    waited = {"seconds": 0.0}

    def timed(f: Any) -> Any:
        def call(*a: Any) -> Any:
            t = time.perf_counter()
            r = f(*a)
            waited["seconds"] += time.perf_counter() - t
            return r
        return call

    class Timed(Distributed):
        def shift(self, parts):  # type: ignore[no-untyped-def]
            return timed(timed(super().shift)(parts))

        gather = timed(Distributed.gather)
        reduce_home = timed(Distributed.reduce_home)
        exchange = timed(Distributed.exchange)

    ring_module.Distributed = Timed  # type: ignore[misc]
    return waited


def worker(args: argparse.Namespace) -> None:
    torch.set_num_threads(1)
    from attnlab._process_group import join_process_group

    rank, world, started = join_process_group("gloo")
    import torch.distributed as dist

    result: dict[str, Any] = {"rank": rank, "world": world}
    if args.mode == "memory":
        _step(256, world, rank, "zigzag", "ring")  # warm up: libraries, allocator
        base, rows = _rss(), []
        for n in args.lengths:
            _step(n, world, rank, "zigzag", "ring")
            rows.append({"length": n, "peak_mb": (_peak() - base) / 2**20})
        result["memory"] = rows
    elif args.mode == "limit":
        _step(256, world, rank, "zigzag", "ring")
        with open("/proc/self/statm") as f:
            vm = int(f.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (vm + args.budget, resource.RLIM_INFINITY))
        try:
            _step(args.lengths[0], world, rank, "zigzag", "ring")
            result["ran"] = True
        except (RuntimeError, MemoryError) as e:
            result["ran"], result["error"] = False, str(e).splitlines()[0][:200]
        if world > 1:
            ran = torch.tensor([float(result["ran"])])
            dist.all_reduce(ran, op=dist.ReduceOp.MIN)  # a rank out of memory fails the step everywhere
            result["ran"] = bool(ran.item())
    else:
        waited = _timed_transport()
        rows = []
        for layout in ("contiguous", "zigzag"):
            for schedule in ("ring", "allgather"):
                _step(args.lengths[0], world, rank, layout, schedule)  # warm up
                times, comms = [], []
                for r in range(args.repeats):
                    if world > 1:
                        dist.barrier()
                    waited["seconds"] = 0.0
                    t = time.perf_counter()
                    _step(args.lengths[0], world, rank, layout, schedule, seed=r)
                    times.append(time.perf_counter() - t)
                    comms.append(waited["seconds"])
                rows.append({"layout": layout, "schedule": schedule, "seconds": sorted(times)[len(times) // 2],
                             "comm_seconds": sorted(comms)[len(comms) // 2]})
        result["time"] = rows
    if started:
        dist.destroy_process_group()
    Path(args.worker_out, f"rank{rank}.json").write_text(json.dumps(result))


def _run(world: int, mode: str, lengths: list[int], extra: list[str]) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [__file__, "--worker", "--mode", mode, "--worker-out", tmp, "--lengths", *map(str, lengths), *extra]
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        if world == 1:
            subprocess.run([sys.executable, *cmd], check=True, env=env, timeout=600)
        else:
            subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
                            str(world), *cmd], check=True, env=env, timeout=600, capture_output=True)
        return [json.loads(Path(tmp, f"rank{r}.json").read_text()) for r in range(world)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "ring.json")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--mode", default="memory", help=argparse.SUPPRESS)
    p.add_argument("--worker-out", default="", help=argparse.SUPPRESS)
    p.add_argument("--lengths", type=int, nargs="*", default=[], help=argparse.SUPPRESS)
    p.add_argument("--budget", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--repeats", type=int, default=3, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args)
    from attnlab.parallel import load_balance

    lengths = [512, 1024, 2048] if args.quick else [1024, 2048, 4096]
    memory = {w: _run(w, "memory", lengths, []) for w in (1, 2, 4)}
    # growth per token of one rank: the slope between the two longest lengths
    one = memory[1][0]["memory"]
    per_token = (one[-1]["peak_mb"] - one[-2]["peak_mb"]) * 2**20 / (one[-1]["length"] - one[-2]["length"])
    budget = 256 * 2**20
    fits_one = int(budget / per_token)
    above, below = int(fits_one * 1.5), int(fits_one * 0.6)
    limit = {"budget_mb": budget / 2**20, "bytes_per_token_one_rank": per_token, "predicted_one_rank": fits_one,
             "predicted_four_ranks": 4 * fits_one,
             "above_one_rank": {"length": above, "ran": _run(1, "limit", [above], ["--budget", str(budget)])[0]},
             "above_four_ranks": {"length": above, "ran": _run(4, "limit", [above], ["--budget", str(budget)])[0]},
             "below_one_rank": {"length": below, "ran": _run(1, "limit", [below], ["--budget", str(budget)])[0]}}
    gb24 = 24 * 2**30 - 2 * 2**30  # 24 GB less what the process and the system hold (about 2 GB)
    limit["machine_24gb"] = {"one_rank_longest": int(gb24 / per_token), "four_ranks_longest": int(4 * gb24 / per_token),
                             "note": "each rank's own budget; 4 ranks on one 24 GB machine share it: then 22 GB / 4 "
                                     "each, and the same total length"}
    n_time = 1024 if args.quick else 2048
    timing = {w: _run(w, "time", [n_time], ["--repeats", "3"]) for w in (2, 4)}
    balance = {f"{layout} P={w}": load_balance(w, layout=layout, causal=True)  # type: ignore[arg-type]
               for w in (2, 4, 8) for layout in ("contiguous", "zigzag")}
    result = {"machine": {"cpus": os.cpu_count(), "torch": torch.__version__, "python": platform.python_version()},
              "shape": SHAPE, "memory": {w: r[0]["memory"] for w, r in memory.items()},
              "memory_all_ranks": {w: [x["memory"] for x in r] for w, r in memory.items()},
              "limit": limit, "time_length": n_time,
              "time": {w: [{**row, "slowest_rank_seconds": max(x["time"][i]["seconds"] for x in r),
                            "comm_share": row["comm_seconds"] / row["seconds"]}
                           for i, row in enumerate(r[0]["time"])] for w, r in timing.items()},
              "time_all_ranks": {w: [x["time"] for x in r] for w, r in timing.items()},
              "balance_blocks": balance}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.replace(args.out)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
