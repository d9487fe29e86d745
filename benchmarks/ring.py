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
    """One causal forward + backward of this rank's shard of an ``n``-long sequence (the shard drawn directly: no
    rank ever holds the full tensors, so the memory measured is the ring's own)."""
    from attnlab.parallel import padded_length, ring_attention

    g = torch.Generator().manual_seed(seed * 1000 + rank)
    shape = (SHAPE["batch"], SHAPE["heads"], padded_length(n, world, layout) // world, SHAPE["dim"])  # (B, H, n, E)
    q, k, v = (torch.randn(shape, generator=g).requires_grad_() for _ in range(3))
    out = ring_attention(q, k, v, causal=True, layout=layout, schedule=schedule, length=n)
    assert isinstance(out, torch.Tensor)
    out.sum().backward()


def _timed_transport() -> dict[str, float]:
    """Count the seconds spent in the transport's blocking calls (the communication not hidden by compute)."""
    import attnlab.parallel.ring as ring_module
    from attnlab.parallel import Distributed

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
    import torch.distributed as dist

    if args.mode == "limit" and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        # a rank out of memory in the middle of the ring leaves the others waiting for its next block (as in any
        # collective): a short timeout turns that wait into an error, and the ranks leave without closing
        import datetime
        import importlib

        importlib.import_module("torch.distributed.nn")  # before the group: see attnlab/_process_group.py

        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
        rank, world, started = dist.get_rank(), dist.get_world_size(), True
    else:
        from attnlab.parallel import join_process_group

        rank, world, started = join_process_group("gloo")

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
        except (RuntimeError, MemoryError) as e:  # out of memory, or waiting on a rank that was
            result["ran"], result["error"] = False, str(e).splitlines()[0][:200]
        Path(args.worker_out, f"rank{rank}.json").write_text(json.dumps(result))
        os._exit(0)  # the group may hold a failed exchange: no orderly close to wait on
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
        # a fixed mmap threshold: every block of 64 KiB or more is its own mapping, returned when freed, so the
        # resident memory follows what is alive (glibc's adaptive threshold otherwise keeps freed blocks resident)
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MALLOC_MMAP_THRESHOLD_": "65536"}
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

    # from 4096 on, every rank's chunks (N/8 for zigzag over 4 ranks) hold whole 256 x 512 tiles: the tile work
    # memory is the same at every length, and the slope between two lengths is the activation memory alone
    lengths = [1024, 2048, 4096] if args.quick else [2048, 4096, 8192]
    memory = {w: _run(w, "memory", lengths, []) for w in (1, 2, 4)}
    # growth per token of the full sequence, per rank: the slope between the two longest lengths
    slopes = {w: (r[0]["memory"][-1]["peak_mb"] - r[0]["memory"][-2]["peak_mb"]) * 2**20
              / (r[0]["memory"][-1]["length"] - r[0]["memory"][-2]["length"]) for w, r in memory.items()}
    per_token = slopes[1]
    # peak(N) = fixed + slope * N per rank (the fixed part: the tiles' work memory, the libraries' first use)
    fixed = {w: r[0]["memory"][-1]["peak_mb"] * 2**20 - slopes[w] * r[0]["memory"][-1]["length"]
             for w, r in memory.items()}
    budget = 512 * 2**20
    fits = {w: int((budget - fixed[w]) / slopes[w]) for w in (1, 4)}
    above, below = int(min(1.5 * fits[1], (fits[1] + fits[4]) / 2)), int(fits[1] * 0.7)

    def ran(world: int, n: int) -> dict[str, Any]:
        ranks = _run(world, "limit", [n], ["--budget", str(budget)])
        return {"length": n, "ranks": world, "ran": all(r["ran"] for r in ranks),
                "error": next((r["error"] for r in ranks if not r["ran"]), None)}

    limit = {"budget_mb": budget / 2**20, "bytes_per_token_one_rank": per_token, "fixed_mb": {
        w: f / 2**20 for w, f in fixed.items()}, "predicted_one_rank": fits[1], "predicted_four_ranks": fits[4],
        "checks": [ran(1, below), ran(1, above), ran(4, above)]}
    gb24 = 24 * 2**30 - 2 * 2**30  # 24 GB less what the process and the system hold (about 2 GB)
    limit["machine_24gb"] = {w: int((gb24 - fixed[w]) / slopes[w]) for w in (1, 2, 4)}
    n_time = 1024 if args.quick else 2048
    timing = {w: _run(w, "time", [n_time], ["--repeats", "3"]) for w in (2, 4)}
    balance = {f"{layout} P={w}": load_balance(w, layout=layout, causal=True)  # type: ignore[arg-type]
               for w in (2, 4, 8) for layout in ("contiguous", "zigzag")}
    result = {"machine": {"cpus": os.cpu_count(), "torch": torch.__version__, "python": platform.python_version()},
              "shape": SHAPE, "memory": {w: r[0]["memory"] for w, r in memory.items()},
              "memory_all_ranks": {w: [x["memory"] for x in r] for w, r in memory.items()},
              "memory_bytes_per_token": slopes,
              "limit": limit, "time_length": n_time,
              "time": {w: [{**row, "slowest_rank_seconds": max(x["time"][i]["seconds"] for x in r),
                            "comm_share": row["comm_seconds"] / row["seconds"]}
                           for i, row in enumerate(r[0]["time"])] for w, r in timing.items()},
              "time_all_ranks": {w: [x["time"] for x in r] for w, r in timing.items()},
              "balance_blocks": balance}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for path, text in ((args.out, json.dumps(result, indent=1) + "\n"), (args.out.with_suffix(".md"), table(result))):
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text)
        tmp.replace(path)
    print(table(result))


def table(r: dict[str, Any]) -> str:
    """The results as the Markdown tables docs/parallel.md quotes."""
    s = r["shape"]
    lines = [f"# Ring attention on CPU processes (gloo, {r['machine']['cpus']} cores, torch {r['machine']['torch']})",
             "", f"Causal, float32, batch {s['batch']}, {s['heads']} heads of {s['dim']}; forward + backward.", "",
             "## Peak memory per rank (MB over the process before the step; zigzag, ring schedule)", "",
             "| length | 1 rank | 2 ranks | 4 ranks | 1 rank / 2 | 1 rank / 4 |", "|---|---|---|---|---|---|"]
    memory = {int(w): rows for w, rows in r["memory"].items()}  # JSON keys are strings
    for i, row in enumerate(memory[1]):
        m = {w: memory[w][i]["peak_mb"] for w in (1, 2, 4)}
        lines.append(f"| {row['length']} | {m[1]:.0f} | {m[2]:.0f} | {m[4]:.0f} | {m[1] / 2:.0f} | {m[1] / 4:.0f} |")
    slopes = {int(w): v for w, v in r["memory_bytes_per_token"].items()}
    lines += ["", "Growth per token of the full sequence, per rank (the slope between the two longest lengths): " +
              ", ".join(f"{w} rank{'s' * (w > 1)}: {v / 1024:.1f} KiB ({v / slopes[1]:.2f} of one rank's)"
                        for w, v in slopes.items()) + "."]
    lim = r["limit"]
    lines += ["", "## The longest sequence", "",
              f"Per rank, peak = fixed + slope x length; one rank grows by "
              f"{lim['bytes_per_token_one_rank'] / 1024:.0f} KiB per token.  Under an address-space limit "
              f"(RLIMIT_AS) of {lim['budget_mb']:.0f} MB per rank, one rank is predicted to hold about "
              f"{lim['predicted_one_rank']} tokens and four ranks about "
              f"{lim['predicted_four_ranks']}; checked on each side:", "",
              "| length | ranks | ran |", "|---|---|---|"]
    for c in lim["checks"]:
        lines.append(f"| {c['length']} | {c['ranks']} | {'yes' if c['ran'] else 'no (out of memory)'} |")
    m24 = {int(w): v for w, v in lim["machine_24gb"].items()}
    lines += ["", f"The same arithmetic with 22 GB per rank (24 GB less about 2 GB for the process and the system): "
              f"one rank up to about {m24[1]} tokens, two ranks {m24[2]}, four ranks {m24[4]} (each rank with its "
              f"own 22 GB; four ranks sharing one 24 GB machine hold no more in total than one)."]
    lines += [
              "", f"## Time per step at length {r['time_length']} (median of 3; seconds)", "",
              "| ranks | layout | schedule | step (rank 0) | slowest rank | exposed communication | share |",
              "|---|---|---|---|---|---|---|"]
    for w, rows in r["time"].items():
        for x in rows:
            lines.append(f"| {w} | {x['layout']} | {x['schedule']} | {x['seconds']:.3f} | "
                         f"{x['slowest_rank_seconds']:.3f} | {x['comm_seconds']:.3f} | {x['comm_share']:.0%} |")
    lines += ["", "## Work balance from the schedule (busiest rank's score blocks / mean), causal", "",
              "| | " + " | ".join(r["balance_blocks"]) + " |", "|---" * (len(r["balance_blocks"]) + 1) + "|",
              "| ratio | " + " | ".join(f"{v:.3f}" for v in r["balance_blocks"].values()) + " |", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
