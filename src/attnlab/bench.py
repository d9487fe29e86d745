"""Speed and memory of the attention kernels against PyTorch, in one run on this machine.

Each case runs a kernel on ``(batch=1, heads=8, n, dim=64)`` float32 inputs and records the wall time
(the fastest of up to five runs that add up to under three seconds), the GFLOP/s of the work the
algorithm has to do, and the peak *extra* resident memory of the call.

Every case is timed first, with the allocator left as it is.  Then every case runs once more for its
memory: there is no ``torch.cuda.max_memory_allocated`` on CPU, so the peak resident set size of this
process is measured around the call.  For that pass glibc is told to serve every allocation above 64 KiB
with its own ``mmap`` (``mallopt``), so freed tensors go back to the kernel at once (this slows
allocation-heavy code, hence the separate pass); before the call the peak counter is reset
(``/proc/self/clear_refs``, value 5) and the resident size read (``VmRSS``); after it the peak
(``VmHWM``) is read.  The difference counts every page the call touched, PyTorch's internal buffers
included.  A calibration case (a 256 MiB tensor filled with ones) checks the method on every run.
Where ``/proc`` cannot be used (not Linux) memory is reported as missing.

:func:`run` is what ``attnlab bench`` and ``benchmarks/kernels.py`` call; it writes ``bench.json``,
``bench.md`` and ``time.png`` / ``memory.png`` into one folder.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from ._io import atomic_write, atomic_write_text
from .functional import attention_stats, linear_attention, local_attention, lsh_attention, memory_efficient_attention
from .masks import causal, window

__all__ = ["Case", "Config", "Result", "atomic_write_text", "measure_peak", "profile", "run"]

HEADS, DIM = 8, 64
WINDOW = 512  # the sliding window of the local cases: each query sees itself and the 511 keys before it
TOP_K = 32
LSH_HASHES, LSH_CHUNK = 4, 64  # the registered kernel "lsh": 4 rounds, chunks of 64, about n / 64 buckets
MIB = 2**20


@dataclass(frozen=True)
class Config:
    sizes: tuple[int, ...] = (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
    max_n: int = 65536
    quick: bool = False
    flex: bool = True  # also compile and time flex_attention (its compile time is reported apart)
    threads: int | None = None
    min_time: float = 3.0  # repeat a case while its runs add up to less than this (at most `max_repeats` runs)
    max_repeats: int = 5


@dataclass
class Result:
    case: str
    n: int
    seconds: float | None = None
    gflops: float | None = None
    peak_mib: float | None = None
    repeats: int = 0
    note: str = ""


@dataclass(frozen=True)
class Case:
    name: str
    label: str
    max_n: int  # the largest n this case is run at (memory / time of the dense baselines)
    flops: Callable[[int], float]  # the work the algorithm does at n
    make: Callable[[dict[str, Tensor], int], Callable[[], Any]]  # inputs, n -> the call to time
    backward: bool = False


# --- memory ------------------------------------------------------------------------------------------------


def _setup_malloc() -> bool:
    """Serve allocations above 64 KiB by mmap, so that freed memory leaves the resident set."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 64 * 1024)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 128 * 1024)  # M_TRIM_THRESHOLD
        return True
    except (OSError, AttributeError):
        return False


def _status(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise OSError(f"{key} not in /proc/self/status")


def _trim() -> None:
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def measure_peak(fn: Callable[[], Any]) -> tuple[Any, float | None]:
    """Run ``fn`` and return its result and the peak extra resident memory in MiB (None if unmeasurable).
    The result is dropped before returning the number when it is a tensor the caller does not need."""
    _trim()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        base = _status("VmRSS")
    except OSError:
        return fn(), None
    out = fn()
    peak = _status("VmHWM")
    return out, max(peak - base, 0) / MIB


# --- the cases ---------------------------------------------------------------------------------------------


def _naive(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1) @ v  # (B, H, n, D)


def _window_mask(n: int) -> Tensor:
    return (causal() & window(WINDOW - 1, 0)).materialize(n, n)[0, 0]  # (n, n): the query and 511 keys before


def _backward(f: Callable[[Tensor, Tensor, Tensor], Tensor], x: dict[str, Tensor]) -> Callable[[], None]:
    def call() -> None:
        q, k, v = (x[n].detach().requires_grad_() for n in "qkv")
        f(q, k, v).sum().backward()

    return call


def _dense_flops(n: int) -> float:
    return 4.0 * HEADS * n * n * DIM


def _window_flops(n: int) -> float:
    return 4.0 * HEADS * n * min(WINDOW, n) * DIM


def _linear_flops(n: int) -> float:
    return 4.0 * HEADS * n * DIM * DIM


def _lsh_flops(n: int) -> float:
    # per round: hashing (n x DIM x buckets/2) plus scores and weighted values over 2 * chunk keys per query
    return LSH_HASHES * HEADS * n * (2.0 * DIM * max(1, n // LSH_CHUNK // 2) + 4.0 * 2 * LSH_CHUNK * DIM)


def cases(cfg: Config) -> list[Case]:
    cap = 8192 if not cfg.quick else cfg.max_n  # the naive version holds two n x n matrices (2 GiB each at 8k)
    out = [
        Case("sdpa", "SDPA (torch)", 16384, _dense_flops,
             lambda x, n: lambda: F.scaled_dot_product_attention(x["q"], x["k"], x["v"])),
        Case("naive", "naive matmul-softmax-matmul", cap, _dense_flops,
             lambda x, n: lambda: _naive(x["q"], x["k"], x["v"])),
        Case("memory_efficient", "memory-efficient exact", 32768, _dense_flops,
             lambda x, n: lambda: memory_efficient_attention(x["q"], x["k"], x["v"])),
        Case("stats", f"streaming stats (entropy, distance, top-{TOP_K})", 16384, lambda n: _dense_flops(n) / 2,
             lambda x, n: lambda: attention_stats(x["q"], x["k"], top_k=TOP_K)),
        Case("sdpa_window_mask", f"SDPA + dense mask, window {WINDOW}", 16384, _dense_flops,
             lambda x, n: (lambda m: lambda: F.scaled_dot_product_attention(x["q"], x["k"], x["v"], attn_mask=m))(
                 _window_mask(n))),
        Case("local", f"local, causal window {WINDOW}", 65536, _window_flops,
             lambda x, n: lambda: local_attention(x["q"], x["k"], x["v"], window=(WINDOW - 1, 0))),
        Case("linear", "linear (elu+1)", 65536, _linear_flops,
             lambda x, n: lambda: linear_attention(x["q"], x["k"], x["v"])),
        Case("linear_relu", "linear (ReLU)", 65536, _linear_flops,
             lambda x, n: lambda: linear_attention(x["q"], x["k"], x["v"], feature_map="relu")),
        Case("linear_causal", "linear (elu+1), causal", 65536, _linear_flops,
             lambda x, n: lambda: linear_attention(x["q"], x["k"], x["v"], causal=True)),
        Case("lsh", f"LSH (Reformer), {LSH_HASHES} rounds, chunk {LSH_CHUNK}", 65536, _lsh_flops,
             lambda x, n: lambda: lsh_attention(x["q"], x["q"], x["v"], n_hashes=LSH_HASHES, chunk=LSH_CHUNK)),
        Case("memory_efficient_backward", "memory-efficient exact, fwd+bwd", 8192, lambda n: 2.5 * _dense_flops(n),
             lambda x, n: _backward(lambda q, k, v: memory_efficient_attention(q, k, v)[0], x), backward=True),
        Case("naive_backward", "naive, fwd+bwd (autograd)", cap, lambda n: 2.5 * _dense_flops(n),
             lambda x, n: _backward(_naive, x), backward=True),
        Case("sdpa_backward", "SDPA, fwd+bwd", 8192, lambda n: 2.5 * _dense_flops(n),
             lambda x, n: _backward(F.scaled_dot_product_attention, x), backward=True),
    ]
    if not cfg.quick:  # its first call compiles (tens of seconds): not in the quick run
        out.insert(4, Case("stats_compiled", f"streaming stats, compiled update (top-{TOP_K})", 16384,
                           lambda n: _dense_flops(n) / 2,
                           lambda x, n: lambda: attention_stats(x["q"], x["k"], top_k=TOP_K, compile=True)))
    return out


def _flex_case(n: int, notes: dict[str, Any]) -> Callable[[dict[str, Tensor], int], Callable[[], Any]] | None:
    """``torch.compile``d flex_attention with the sliding-window block mask; compile time goes into notes."""
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    except ImportError as exc:
        notes["flex"] = f"flex_attention unavailable: {exc}"
        return None

    def sliding(b: Tensor, h: Tensor, qi: Tensor, ki: Tensor) -> Tensor:
        return (qi >= ki) & (qi - ki < WINDOW)

    def make(x: dict[str, Tensor], n: int) -> Callable[[], Any]:
        if "flex_fn" not in notes:
            notes["flex_fn"] = torch.compile(flex_attention, dynamic=False)
        fn = notes["flex_fn"]
        mask = create_block_mask(sliding, None, None, n, n, device="cpu")
        t = time.perf_counter()
        fn(x["q"], x["k"], x["v"], block_mask=mask)  # compiles for this n
        notes.setdefault("flex_compile_s", {})[str(n)] = round(time.perf_counter() - t, 2)
        return lambda: fn(x["q"], x["k"], x["v"], block_mask=mask)

    return make


# --- running ------------------------------------------------------------------------------------------------


def _time(call: Callable[[], Any], cfg: Config) -> tuple[float, int]:
    """Runs while their total stays under ``min_time`` (at most ``max_repeats``).  The time is the fastest
    run: on a shared machine the others measure the neighbours too.  Runs longer than ``min_time`` are
    timed once (the first run then includes any warm-up)."""
    t = time.perf_counter()
    call()
    times = [time.perf_counter() - t]
    while len(times) < (2 if cfg.quick else cfg.max_repeats) and sum(times) < cfg.min_time:
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return min(times), len(times)


def run(cfg: Config, out_dir: Path, progress: Callable[[str], None] = print) -> dict[str, Any]:
    """Run every case at every size up to ``cfg.max_n``; write the JSON, the Markdown table and the plots
    into ``out_dir`` (created); return the JSON document."""
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    out_dir.mkdir(parents=True, exist_ok=True)
    notes: dict[str, Any] = {}
    all_cases = cases(cfg)
    flex = _flex_case(0, notes) if cfg.flex else None
    if flex is not None:
        # create_block_mask evaluates the mask densely on CPU: n^2 bytes x 8 (32 GiB at n = 65536).
        all_cases.append(Case("flex_window", f"flex_attention (compiled), window {WINDOW}", 32768,
                              _window_flops, flex))
    sizes = [n for n in cfg.sizes if n <= cfg.max_n]
    plan = [(c, n) for n in sizes for c in all_cases if n <= c.max_n]
    results = [Result(c.name, n) for c, n in plan]
    started = time.perf_counter()

    def each(phase: str, step: Callable[[Case, int, Callable[[], Any], Result], str]) -> None:
        for i, ((case, n), r) in enumerate(zip(plan, results, strict=True), 1):
            if r.note:  # failed in the timing pass
                continue
            g = torch.Generator().manual_seed(n)
            x = {name: torch.randn(1, HEADS, n, DIM, generator=g) for name in "qkv"}
            try:
                line = step(case, n, case.make(x, n), r)
            except Exception as exc:  # a baseline that cannot run here (flex compile, out of memory) is reported
                r.note = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
                line = f"failed ({r.note})"
            progress(f"{phase} [{i:3d}/{len(plan)}] {case.name:26s} n={n:6d}  {line}  "
                     f"(elapsed {time.perf_counter() - started:6.1f} s)")
            del x

    def timing(case: Case, n: int, call: Callable[[], Any], r: Result) -> str:
        r.seconds, r.repeats = _time(call, cfg)
        r.gflops = case.flops(n) / r.seconds / 1e9
        return f"{r.seconds:8.4f} s"

    def memory(case: Case, n: int, call: Callable[[], Any], r: Result) -> str:
        _, r.peak_mib = measure_peak(call)
        return "       - MiB" if r.peak_mib is None else f"{r.peak_mib:8.1f} MiB"

    # Times first, with the allocator as every user has it; then memory, with mmap for every allocation
    # above 64 KiB (which makes allocation-heavy code slower, so it must not be on while timing).
    each("time  ", timing)
    malloc_ok = _setup_malloc()
    calib = _calibrate()
    progress(f"memory calibration: a 256 MiB tensor measured as {calib} MiB" if calib is not None
             else "memory: /proc/self/clear_refs unavailable, peak memory not measured")
    if calib is not None:
        each("memory", memory)
    notes.pop("flex_fn", None)
    doc = {
        "machine": _machine(),
        "config": {**asdict(cfg), "sizes": sizes, "batch": 1, "heads": HEADS, "dim": DIM, "dtype": "float32",
                   "window": WINDOW, "top_k": TOP_K},
        "memory_method": "peak RSS (VmHWM after clear_refs) minus RSS before the call, glibc mmap threshold 64 KiB"
        if calib is not None else "unavailable",
        "memory_calibration_256mib": calib,
        "malloc_tuned": malloc_ok,
        "labels": {c.name: c.label for c in all_cases},
        "results": [asdict(r) for r in results],
        "goals": goals(results),
        "notes": notes,
        "total_seconds": round(time.perf_counter() - started, 1),
    }
    atomic_write_text(out_dir / "bench.json", json.dumps(doc, indent=2) + "\n")
    atomic_write_text(out_dir / "bench.md", markdown(doc))
    plot(doc, out_dir)
    return doc


def _calibrate() -> float | None:
    _, peak = measure_peak(lambda: torch.ones(256 * MIB // 4).sum())
    return None if peak is None else round(peak, 1)


def _machine() -> dict[str, Any]:
    try:
        load = os.getloadavg()
    except OSError:
        load = (float("nan"),) * 3
    return {
        "python": sys.version.split()[0], "torch": torch.__version__, "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(), "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(), "loadavg_at_end": [round(x, 2) for x in load],
    }


# --- goals, table, plots ------------------------------------------------------------------------------------


@dataclass
class Goal:
    name: str
    target: str
    value: float | None
    ok: bool | None
    detail: str = field(default="")


def goals(results: list[Result]) -> list[dict[str, Any]]:
    """The project's benchmark targets as ratios from this run (None where a case did not run at that size).

    Each target says what would make the kernel worth using over its dense alternative; the reasons are
    written out in docs/efficient.md ("Benchmark targets")."""
    by = {(r.case, r.n): r for r in results}

    def sec(case: str, n: int) -> float | None:
        r = by.get((case, n))
        return r.seconds if r else None

    def mem(case: str, n: int) -> float | None:
        r = by.get((case, n))
        return r.peak_mib if r else None

    def ratio(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None or b == 0 else a / b

    out = []

    def add(name: str, target: str, value: float | None, good: Callable[[float], bool]) -> None:
        out.append(asdict(Goal(name, target, None if value is None else round(value, 3),
                               None if value is None else bool(good(value)))))

    # Exactness costs little: blockwise softmax keeps most of the fused kernel's speed ...
    add("memory-efficient fwd throughput / SDPA, n=4096", ">= 0.6",
        ratio(sec("sdpa", 4096), sec("memory_efficient", 4096)), lambda v: v >= 0.6)
    # ... and its memory stays O(n) (the weights alone would be 8 GiB at n=32768).
    add("memory-efficient fwd peak extra MiB, n=32768", "<= 256", mem("memory_efficient", 32768), lambda v: v <= 256)
    # Per-head statistics should cost a small multiple of the attention they describe, in O(n) memory.
    add("stats time / SDPA fwd time, n=16384", "<= 2", ratio(sec("stats", 16384), sec("sdpa", 16384)),
        lambda v: v <= 2)
    add("stats peak extra MiB, n=16384", "<= 1024", mem("stats", 16384), lambda v: v <= 1024)
    add("stats (compiled update) time / SDPA fwd time, n=16384", "<= 2",
        ratio(sec("stats_compiled", 16384), sec("sdpa", 16384)), lambda v: v <= 2)
    # A banded kernel must pay off against the dense kernel with the same mask, and keep up with flex_attention.
    add("SDPA+dense window mask time / local time, n=16384", ">= 10",
        ratio(sec("sdpa_window_mask", 16384), sec("local", 16384)), lambda v: v >= 10)
    add("flex_attention (compiled) time / local time, n=16384", ">= 1",
        ratio(sec("flex_window", 16384), sec("local", 16384)), lambda v: v >= 1)
    # Linear attention is only worth its approximation when it is much faster at long n (O(n d^2) vs O(n^2 d)).
    add("SDPA time / linear time, n=16384", ">= 50", ratio(sec("sdpa", 16384), sec("linear", 16384)),
        lambda v: v >= 50)
    add("SDPA time / linear (ReLU) time, n=16384", ">= 50", ratio(sec("sdpa", 16384), sec("linear_relu", 16384)),
        lambda v: v >= 50)
    # The causal form (prefix sums) must stay within a small factor of the non-causal one.
    add("linear causal time / non-causal time, n=16384", "<= 3",
        ratio(sec("linear_causal", 16384), sec("linear", 16384)), lambda v: v <= 3)
    # Recomputing in the backward must save memory that matters for training.
    add("naive bwd peak / memory-efficient bwd peak, n=8192", ">= 8",
        ratio(mem("naive_backward", 8192), mem("memory_efficient_backward", 8192)), lambda v: v >= 8)
    return out


def _fmt(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def markdown(doc: dict[str, Any]) -> str:
    m = doc["machine"]
    lines = [
        "# attnlab bench",
        "",
        f"batch 1, {doc['config']['heads']} heads, dim {doc['config']['dim']}, float32; torch {m['torch']}, "
        f"{m['cpu_count']} CPUs, {m['torch_threads']} torch threads, load average at the end {m['loadavg_at_end']}.",
        f"Memory: {doc['memory_method']} (calibration: 256 MiB measured as {doc['memory_calibration_256mib']} MiB).",
        "",
        "## Benchmark targets (ratios from this run; reasons: the guide's Efficient attention page)",
        "",
        "| target | threshold | measured | met |",
        "|---|---|---|---|",
    ]
    for g in doc["goals"]:
        met = "-" if g["ok"] is None else ("yes" if g["ok"] else "**no**")
        lines.append(f"| {g['name']} | {g['target']} | {_fmt(g['value'], '.3g')} | {met} |")
    lines += ["", "## All cases", "", "| case | n | time (s) | GFLOP/s | peak extra (MiB) | repeats | note |",
              "|---|---:|---:|---:|---:|---:|---|"]
    for r in doc["results"]:
        lines.append(f"| {r['case']} | {r['n']} | {_fmt(r['seconds'], '.4f')} | {_fmt(r['gflops'], '.1f')} | "
                     f"{_fmt(r['peak_mib'], '.1f')} | {r['repeats']} | {r['note']} |")
    if doc["notes"]:
        lines += ["", "Notes: `" + json.dumps(doc["notes"]) + "`"]
    return "\n".join(lines) + "\n"


def plot(doc: dict[str, Any], out_dir: Path) -> None:
    """``time.png`` and ``memory.png``: log-log against n, with n^2 and n reference slopes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = (("seconds", "time.png", "time (s)"), ("peak_mib", "memory.png", "peak extra memory (MiB)"))
    for key, fname, ylabel in panels:
        fig, ax = plt.subplots(figsize=(11, 6))
        colors = [plt.get_cmap("tab20")(i) for i in range(20)]
        for i, (case, label) in enumerate(doc["labels"].items()):
            pts = [(r["n"], r[key]) for r in doc["results"] if r["case"] == case and r[key]]
            if pts:  # one colour and marker per case; forward + backward cases dashed
                ax.plot([n for n, _ in pts], [y for _, y in pts], color=colors[(2 * i) % 20 + (i >= 10)],
                        marker="osD^v<>ph*"[i % 10], ls="--" if case.endswith("backward") else "-", label=label)
        ns = sorted({r["n"] for r in doc["results"]})
        ys = [r[key] for r in doc["results"] if r[key]]
        if len(ns) > 1 and ys:
            y0 = min(ys)
            ax.plot(ns, [y0 * (n / ns[0]) ** 2 for n in ns], "k:", lw=1, label="slope n² (reference)")
            ax.plot(ns, [y0 * (n / ns[0]) for n in ns], "k--", lw=1, label="slope n (reference)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sequence length n")
        ax.set_ylabel(ylabel)
        ax.set_title(f"attnlab bench: {ylabel} vs n (batch 1, 8 heads, dim 64, float32)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
        fig.tight_layout()
        _save_png(fig, out_dir / fname)
        plt.close(fig)


def _save_png(fig: Any, path: Path) -> None:
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=110))


def profile(case_name: str, n: int, cfg: Config, rows: int = 15) -> str:
    """The ``torch.profiler`` table (operators by self CPU time) of one case at one size: where the time goes."""
    from .errors import ConfigError

    by_name = {c.name: c for c in cases(cfg)}
    if case_name not in by_name:
        raise ConfigError(f"--profile takes a case name, one of {sorted(by_name)}; got {case_name!r}")
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    g = torch.Generator().manual_seed(n)
    x = {name: torch.randn(1, HEADS, n, DIM, generator=g) for name in "qkv"}
    call = by_name[case_name].make(x, n)
    call()  # warm-up
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        t = time.perf_counter()
        call()
        took = time.perf_counter() - t
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows)
    return f"{case_name} at n={n}: {took:.3f} s (with the profiler on)\n{table}"
