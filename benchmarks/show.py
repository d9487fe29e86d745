"""Benchmark ``attnlab show`` end to end, as a user runs it: one subprocess per run, timed from start to exit.

For each case (the README's 13-token sentence; 512 tokens of varied English, ``--truncate``d from about 600)
it measures the wall time, the CPU time (user + system, which a loaded machine inflates less than the wall
time) and the peak resident memory of the process.  Given ``--before SRC`` (the ``src`` folder of another
attnlab, e.g. ``git archive <commit> src | tar -x -C /tmp/before``), it runs both versions, interleaved
(before, after, before, after, ...) so that a change in the machine's load hits both alike, and reports the
fastest of the repeats and the load average during the runs.

    python benchmarks/show.py                                   # this checkout, 3 repeats
    python benchmarks/show.py --before /tmp/before/src --repeats 5
    python benchmarks/show.py --cases 13 --extra=--no-viewer    # one case, extra show options

Results go to benchmarks/results/show.{json,md} (``--no-write`` to only print them).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
SENTENCE = "The cat sat on the mat because it was tired."


def long_text() -> str:
    """The viewer benchmark's text (about 600 word pieces of varied English, some Chinese at the end)."""
    spec = importlib.util.spec_from_file_location("viewer_benchmark", HERE / "viewer.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.TEXT)


def cases(names: list[str]) -> dict[str, list[str]]:
    known = {"13": [SENTENCE], "512": [long_text(), "--truncate"]}
    unknown = sorted(set(names) - set(known))
    if unknown:
        raise SystemExit(f"unknown case(s) {unknown}; the cases are {sorted(known)}")
    return {n: known[n] for n in names}


def run_once(src: Path, args: list[str], out: Path) -> dict[str, float]:
    """One ``attnlab show`` in a fresh interpreter with ``src`` first on the path: wall, CPU, peak RSS."""
    env = {**os.environ, "PYTHONPATH": str(src), "PYTHONDONTWRITEBYTECODE": "1"}
    command = [sys.executable, "-m", "attnlab.cli", "show", *args, "--out", str(out)]
    load = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"`{' '.join(command[:5])} ...` failed with exit code {proc.returncode}:\n{stderr}")
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_mb": usage.ru_maxrss / 1024,  # Linux reports KiB
        "load": load,
        "trace_mb": (out / "trace.attn").stat().st_size / 1e6,
    }


def summarise(runs: list[dict[str, float]]) -> dict[str, float]:
    return {
        "runs": len(runs),
        "fastest_wall_s": min(r["wall_s"] for r in runs),
        "fastest_cpu_s": min(r["cpu_s"] for r in runs),
        "peak_mb": max(r["peak_mb"] for r in runs),
        "trace_mb": runs[-1]["trace_mb"],
        "load_min": min(r["load"] for r in runs),
        "load_max": max(r["load"] for r in runs),
    }


def table(results: dict[str, dict[str, dict[str, float]]]) -> str:
    lines = [
        "| case | version | fastest wall (s) | fastest CPU (s) | peak memory (MB) | trace.attn (MB) | load average |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for case, versions in results.items():
        for version, s in versions.items():
            lines.append(
                f"| {case} tokens | {version} | {s['fastest_wall_s']:.1f} | {s['fastest_cpu_s']:.1f} | "
                f"{s['peak_mb']:.0f} | {s['trace_mb']:.1f} | {s['load_min']:.1f} to {s['load_max']:.1f} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--after", type=Path, default=HERE.parent / "src", help="the src folder to measure")
    parser.add_argument("--before", type=Path, help="another src folder to compare with, run interleaved")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each case and version (default 3)")
    parser.add_argument("--cases", nargs="+", default=["13", "512"], help="13 and/or 512 (default both)")
    parser.add_argument("--extra", action="append", default=[], help="an extra option for show (repeatable)")
    parser.add_argument("--no-write", action="store_true", help="print the results, do not write them")
    args = parser.parse_args()

    versions = {"after": args.after.resolve()}
    if args.before is not None:
        versions = {"before": args.before.resolve(), **versions}
    for name, src in versions.items():
        if not (src / "attnlab" / "__init__.py").is_file():
            raise SystemExit(f"--{name} {str(src)!r} is not a src folder holding attnlab/")
    todo = cases(args.cases)
    runs: dict[str, dict[str, list[dict[str, float]]]] = {c: {v: [] for v in versions} for c in todo}
    with tempfile.TemporaryDirectory(prefix="attnlab-show-bench-") as tmp:
        for rep in range(args.repeats):
            for case, show_args in todo.items():
                order = list(versions) if rep % 2 == 0 else list(reversed(versions))  # who goes first alternates
                for version in order:
                    out = Path(tmp) / f"{case}-{version}"
                    run = run_once(versions[version], [*show_args, *args.extra], out)
                    shutil.rmtree(out)
                    runs[case][version].append(run)
                    print(f"repeat {rep + 1} {case:>3} tokens {version:>6}: {run['wall_s']:6.2f} s wall "
                          f"{run['cpu_s']:6.2f} s CPU {run['peak_mb']:6.0f} MB  (load {run['load']:.1f})", flush=True)
    results = {c: {v: summarise(r) for v, r in vs.items()} for c, vs in runs.items()}
    text = table(results)
    print("\n" + text)
    if args.no_write:
        return
    record: dict[str, Any] = {
        "benchmark": "attnlab show, one subprocess per run",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "versions": {k: str(v) for k, v in versions.items()},
        "repeats": args.repeats,
        "extra": args.extra,
        "results": results,
        "runs": runs,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "show.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    note = (
        "`python benchmarks/show.py` (see its docstring): `attnlab show` as a subprocess, fastest of "
        f"{args.repeats} interleaved runs; peak memory is the largest of them. CPU time is user + system.\n\n"
    )
    (RESULTS / "show.md").write_text("# attnlab show: time and memory\n\n" + note + text + "\n", encoding="utf-8")
    print(f"\nwrote {RESULTS / 'show.json'} and {RESULTS / 'show.md'}")


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crashed run leaves no core file
    main()
