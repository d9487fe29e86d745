"""The CLI's cold start, as a user meets it: one fresh ``attnlab`` process per run, timed from start to exit.

Cases: ``attnlab --version``; ``attnlab show`` of the README sentence (13 tokens); ``attnlab show`` of 512 tokens
(the viewer benchmark's text, ``--truncate``d); and (``--cases predict translate analyze``) the README's ``predict``
on zh-sentiment, ``translate`` on dates-zh and ``analyze`` of the README sentence.  Given ``--before SRC`` (the
``src`` folder of another attnlab, e.g. ``git archive <commit> src | tar -x -C /tmp/before``) both versions run,
interleaved (before, after, after, before, ...) so that a change in the machine's load hits both alike; the table
gives the median of the repeats (and the fastest), wall and CPU (user + system) time.

    python benchmarks/cold_start.py --before /tmp/before/src --repeats 5
    python benchmarks/cold_start.py --cases version 13

Results go to benchmarks/results/cold_start.{json,md} (``--no-write`` to only print them).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def _show_benchmark() -> Any:
    spec = importlib.util.spec_from_file_location("show_benchmark", HERE / "show.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cases(names: list[str], out: Path) -> dict[str, list[str]]:
    show = _show_benchmark()
    known = {
        "version": ["--version"],
        "13": ["show", show.SENTENCE, "--out", str(out)],
        "512": ["show", show.long_text(), "--truncate", "--out", str(out)],
        "predict": ["predict", "--model", "zh-sentiment", "这本书写得很好"],
        "translate": ["translate", "--model", "dates-zh", "Friday, March 5, 2021", "--out", str(out)],
        "analyze": ["analyze", show.SENTENCE, "--out", str(out)],
    }
    unknown = sorted(set(names) - set(known))
    if unknown:
        raise SystemExit(f"unknown case(s) {unknown}; the cases are {sorted(known)}")
    return {n: known[n] for n in names}


def run_once(src: Path, args: list[str]) -> dict[str, float]:
    """One ``attnlab ARGS`` in a fresh interpreter with ``src`` first on the path: wall and CPU seconds."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    command = [sys.executable, "-m", "attnlab.cli", *args]
    load = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"`attnlab {args[0]} ...` failed:\n{stderr}")
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "load": load}


def summarise(runs: list[dict[str, float]]) -> dict[str, float]:
    return {
        "runs": len(runs),
        "median_wall_s": statistics.median(r["wall_s"] for r in runs),
        "fastest_wall_s": min(r["wall_s"] for r in runs),
        "median_cpu_s": statistics.median(r["cpu_s"] for r in runs),
        "load_min": min(r["load"] for r in runs),
        "load_max": max(r["load"] for r in runs),
    }


LABELS = {"version": "`attnlab --version`", "13": "`attnlab show`, 13 tokens", "512": "`attnlab show`, 512 tokens",
          "predict": "`attnlab predict --model zh-sentiment`", "translate": "`attnlab translate --model dates-zh`",
          "analyze": "`attnlab analyze`, 13 tokens"}


def table(results: dict[str, dict[str, dict[str, float]]]) -> str:
    lines = ["| command | version | median wall (s) | fastest wall (s) | median CPU (s) | load average |",
             "| --- | --- | ---: | ---: | ---: | --- |"]
    for case, versions in results.items():
        for version, s in versions.items():
            lines.append(f"| {LABELS[case]} | {version} | {s['median_wall_s']:.2f} | {s['fastest_wall_s']:.2f} | "
                         f"{s['median_cpu_s']:.2f} | {s['load_min']:.1f} to {s['load_max']:.1f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--after", type=Path, default=HERE.parent / "src", help="the src folder to measure")
    parser.add_argument("--before", type=Path, help="another src folder to compare with, run interleaved")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each case and version (default 5)")
    parser.add_argument("--cases", nargs="+", default=["version", "13", "512"],
                        help="version, 13, 512, predict, translate and/or analyze (default: the first three)")
    parser.add_argument("--no-write", action="store_true", help="print the results, do not write them")
    args = parser.parse_args()

    versions = {"after": args.after.resolve()}
    if args.before is not None:
        versions = {"before": args.before.resolve(), **versions}
    for name, src in versions.items():
        if not (src / "attnlab" / "__init__.py").is_file():
            raise SystemExit(f"--{name} {str(src)!r} is not a src folder holding attnlab/")
    with tempfile.TemporaryDirectory(prefix="attnlab-cold-") as tmp:
        todo = cases(args.cases, Path(tmp) / "out")
        runs: dict[str, dict[str, list[dict[str, float]]]] = {c: {v: [] for v in versions} for c in todo}
        for rep in range(args.repeats):
            for case, cli_args in todo.items():
                order = list(versions) if rep % 2 == 0 else list(reversed(versions))  # who goes first alternates
                for version in order:
                    run = run_once(versions[version], cli_args)
                    runs[case][version].append(run)
                    print(f"repeat {rep + 1} {case:>7} {version:>6}: {run['wall_s']:6.2f} s wall "
                          f"{run['cpu_s']:6.2f} s CPU (load {run['load']:.1f})", flush=True)
    results = {c: {v: summarise(r) for v, r in vs.items()} for c, vs in runs.items()}
    text = table(results)
    print("\n" + text)
    if args.no_write:
        return
    record = {
        "benchmark": "attnlab's cold start, one subprocess per run",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "versions": {k: str(v) for k, v in versions.items()},
        "repeats": args.repeats,
        "results": results,
        "runs": runs,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "cold_start.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    note = (f"`python benchmarks/cold_start.py` (see its docstring): each command as a fresh subprocess, median and "
            f"fastest of {args.repeats} interleaved runs; CPU time is user + system.\n\n")
    (RESULTS / "cold_start.md").write_text("# attnlab's cold start\n\n" + note + text + "\n", encoding="utf-8")
    print(f"\nwrote {RESULTS / 'cold_start.json'} and {RESULTS / 'cold_start.md'}")


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crashed run leaves no core file
    main()
