"""Cost (复杂度): dense, linear and local attention measured over n on this machine; the RNN's per-step cost;
which sparse pattern is O(n w), O(n sqrt n) or O(n log n).

Measured, with one seeded (1, heads, n, d) float32 input per n, under ``torch.inference_mode``:
    * time: the fastest of ``repeats`` calls after one warm-up call, the kernels' calls interleaved, on one
      torch thread (``time.perf_counter``; on a shared machine other work only adds time, so the minimum is the
      estimate least disturbed by it, and one thread is not preempted mid-matmul by a sibling thread's wait);
    * memory: the peak bytes of the tensors the call creates (:func:`._memory.peak_tensor_bytes`).
Kernels: ``dense`` is :func:`attnlab.functional.attention` with its weights (the readable path that
materialises the n x n matrix, as the tutorials write it), ``linear`` is :func:`linear_attention`
(elu + 1 features), ``local`` is :func:`local_attention` with ``window`` keys on each side.
The crossover is the smallest n of the grid from which a kernel is faster than dense at every larger n.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from .. import masks as M
from ..functional import KERNELS, attention, linear_attention, local_attention
from ..viz.static import figure
from ._finding import Finding
from ._memory import peak_tensor_bytes

if TYPE_CHECKING:
    from matplotlib.figure import Figure

QUICK_NS = (256, 512, 1024, 2048)
FULL_NS = (128, 256, 512, 1024, 2048, 4096, 8192)
PATTERN_NS = (256, 1024, 4096)  # quick: the first two
MiB = 2**20

Call = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], Any]


def _kernels(window: int) -> dict[str, Call]:
    kernels: dict[str, Call] = {
        "dense": lambda q, k, v: attention(q, k, v),
        "linear": lambda q, k, v: linear_attention(q, k, v),
        "local": lambda q, k, v: local_attention(q, k, v, window=window),
    }
    # Reformer's LSH attention (functional/lsh.py) with its default options: chunks of 64, about n / 64
    # buckets, 4 hash rounds.
    if "lsh" in KERNELS:
        lsh = KERNELS["lsh"]
        kernels["lsh"] = lambda q, k, v: lsh(q, k, v, return_weights=False)
    return kernels


def _once(call: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    call()
    return time.perf_counter() - t0


def _time(call: Callable[[], Any], repeats: int) -> float:
    """The fastest of ``repeats`` calls after a warm-up: on a shared machine other work only ever adds time."""
    call()  # warm-up
    return min(_once(call) for _ in range(repeats))


def _time_round_robin(calls: Mapping[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """The fastest of ``repeats`` calls of each, the calls interleaved so that a burst of other work on the
    machine cannot fall on one kernel's repeats only."""
    for call in calls.values():
        call()  # warm-up
    best = {name: math.inf for name in calls}
    for _ in range(repeats):
        for name, call in calls.items():
            best[name] = min(best[name], _once(call))
    return best


def _crossover(ns: tuple[int, ...], fast: list[float], dense: list[float]) -> int | None:
    for i, n in enumerate(ns):
        if all(f < d for f, d in zip(fast[i:], dense[i:], strict=True)):
            return n
    return None


def _rnn_steps(ds: tuple[int, ...], ns: tuple[int, ...], repeats: int) -> dict[tuple[int, int], float]:
    """Seconds per step of an RNN cell (h = tanh(W x + U h + b)) run over n steps, for each (d, n); the runs are
    interleaved and the fastest kept, so a burst of other work cannot fall on one size only."""
    calls = {}
    for d in ds:
        cell = torch.nn.RNNCell(d, d)
        for n in ns:
            x = torch.randn(n, 1, d)  # (N, 1, D): n steps of a batch of one

            def run(cell: torch.nn.RNNCell = cell, x: Tensor = x) -> None:
                h = torch.zeros(1, x.shape[-1])
                for t in range(x.shape[0]):
                    h = cell(x[t], h)

            calls[f"{d},{n}"] = run
    with torch.inference_mode():
        best = _time_round_robin(calls, repeats)
    return {(d, n): best[f"{d},{n}"] / n for d in ds for n in ns}


def _pattern_pairs(n: int, window: int) -> dict[str, int]:
    """Allowed (query, key) pairs of each sparse pattern at length n."""
    s = max(1, round(math.sqrt(n)))
    patterns = {
        "Longformer: window + global [CLS]": M.window(window) | M.global_tokens([0]),
        "BigBird: blocks of 16, 3 sliding + 1 global + 1 random": M.bigbird(16),
        "Sparse Transformer: causal, stride sqrt(n)": M.causal() & (M.window(s - 1, 0) | M.strided(s)),
    }
    return {name: int(m.materialize(n, n).sum()) for name, m in patterns.items()}


def cost(
    *, quick: bool = True, ns: tuple[int, ...] | None = None, d: int = 64, heads: int = 1, window: int = 64,
    repeats: int | None = None, seed: int = 0,
) -> Finding:
    """Measure time and memory of the kernels over ``ns`` (default: n up to 2048 with ``quick``, 8192 without);
    see the module docstring."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _cost(quick=quick, ns=ns, d=d, heads=heads, window=window, repeats=repeats, seed=seed)
    finally:
        torch.set_num_threads(threads)


def _cost(
    *, quick: bool, ns: tuple[int, ...] | None, d: int, heads: int, window: int, repeats: int | None, seed: int
) -> Finding:
    ns = tuple(ns) if ns is not None else (QUICK_NS if quick else FULL_NS)
    repeats = repeats if repeats is not None else (5 if quick else 9)
    kernels = _kernels(window)
    gen = torch.Generator().manual_seed(seed)
    seconds: dict[str, list[float]] = {name: [] for name in kernels}
    mib: dict[str, list[float]] = {name: [] for name in kernels}
    for n in ns:
        q, k, v = (torch.randn(1, heads, n, d, generator=gen) for _ in range(3))  # (B, H, N, D)
        calls = {name: partial(kernel, q, k, v) for name, kernel in kernels.items()}
        with torch.inference_mode():
            for name, s in _time_round_robin(calls, repeats).items():
                seconds[name].append(s)
        for name, call in calls.items():
            mib[name].append(peak_tensor_bytes(call, (q, k, v)) / MiB)
    cross = {name: _crossover(ns, seconds[name], seconds["dense"]) for name in kernels if name != "dense"}
    growth = {name: mib[name][-1] / mib[name][0] for name in kernels}  # memory from the first n to the last
    rnn_d = (128, 512)
    rnn = _rnn_steps(rnn_d, (64, 256), 7 if quick else 15)
    pattern_ns = PATTERN_NS[:2] if quick else PATTERN_NS
    pairs = {n: _pattern_pairs(n, window) for n in pattern_ns}
    numbers: dict[str, Any] = {
        "ns": list(ns), "d": d, "heads": heads, "window": window, "seconds": seconds, "mib": mib,
        "crossover": cross, "memory_growth": growth, "n_ratio": ns[-1] / ns[0],
        "lsh_available": "lsh" in KERNELS,
        "rnn_seconds_per_step": {f"d={dd}, n={n}": s for (dd, n), s in rnn.items()},
        "rnn_step_ratio_n": rnn[rnn_d[0], 256] / rnn[rnn_d[0], 64],
        "rnn_step_ratio_d": rnn[rnn_d[1], 256] / rnn[rnn_d[0], 256],
        "pattern_pairs": pairs,
    }
    return Finding("cost", _verdict(numbers), numbers, _lines(numbers),
                   {"cost": lambda: _draw(numbers)})


def _verdict(n: dict[str, Any]) -> str:
    lin = n["crossover"]["linear"]
    where = f"linear beats dense from n = {lin}" if lin else f"linear does not beat dense up to n = {n['ns'][-1]}"
    r = n["rnn_step_ratio_n"]  # O(d²) per step predicts x1 when n grows x4, the tutorial's O(n d²) per step x4
    rnn = (f"RNN is O(d²) per step (x{r:.1f} per step for x4 in n)" if r < 2
           else f"RNN per-step timing too noisy here to tell (x{r:.1f} per step for x4 in n)")
    return (
        f"measured: {where}; dense memory grows x{n['memory_growth']['dense']:.0f} over x{n['n_ratio']:.0f} in n "
        f"(n²), linear x{n['memory_growth']['linear']:.0f}; {rnn}; sparse patterns are O(n w) "
        "and O(n sqrt n), not O(n log n)"
    )


def _lines(n: dict[str, Any]) -> tuple[str, ...]:
    names = list(n["seconds"])
    head = "  n      " + "".join(f"{k + ' ms':>12}" for k in names) + "".join(f"{k + ' MiB':>12}" for k in names)
    rows = [
        f"  {size:<6d} " + "".join(f"{n['seconds'][k][i] * 1e3:12.2f}" for k in names)
        + "".join(f"{n['mib'][k][i]:12.2f}" for k in names)
        for i, size in enumerate(n["ns"])
    ]
    cross = [
        f"  {k} is faster than dense from n = {c} on" if c else f"  {k} is not faster than dense within the grid"
        for k, c in n["crossover"].items()
    ]
    lsh = (
        "  Reformer's LSH attention (kernel \"lsh\") is measured above."
        if n["lsh_available"]
        else "  Reformer's LSH attention (kernel \"lsh\") is not available in this build: not measured."
    )
    steps = n["rnn_seconds_per_step"]
    pattern_rows = []
    for size, counts in n["pattern_pairs"].items():
        for name, c in counts.items():
            pattern_rows.append(
                f"  n={size:<5d} {name:<56} pairs/n = {c / size:7.1f}  pairs/(n sqrt n) = {c / size**1.5:5.2f}  "
                f"pairs/(n log2 n) = {c / (size * math.log2(size)):6.2f}"
            )
    return (
        "«第二章：注意力机制的数学原理» 2.2.2: attention is O(n² d) time and O(n²) memory; linear attention O(n d²).",
        f"Measured on this machine (batch 1, heads {n['heads']}, d = {n['d']}, float32; local window = "
        f"{n['window']} each side; time: fastest of repeated calls on one thread; memory: peak bytes of the "
        "tensors a call creates):",
        head, *rows, *cross, lsh,
        f"  From n = {n['ns'][0]} to {n['ns'][-1]} (x{n['n_ratio']:.0f}) memory grows "
        + ", ".join(f"x{g:.1f} ({k})" for k, g in n["memory_growth"].items())
        + f" (n² predicts x{n['n_ratio'] ** 2:.0f}, n predicts x{n['n_ratio']:.0f}).",
        "",
        "The same chapter: an RNN costs O(n d²) per step. It is O(d²) per step (h = tanh(W x + U h + b): two d x d",
        "matrix-vector products) and O(n d²) in total; what it cannot do is run the n steps in parallel. Measured:",
        *(f"  {key}: {s * 1e6:8.1f} µs per step" for key, s in steps.items()),
        f"  per-step time from n = 64 to 256: x{n['rnn_step_ratio_n']:.2f} (O(d²) per step predicts x1, O(n d²) x4);",
        f"  from d = 128 to 512: x{n['rnn_step_ratio_d']:.1f} (d² predicts at most x16: small products are "
        "overhead-bound).",
        "",
        "«注意力机制的本质与计算原理»: sparse attention lowers O(n²) to O(n log n). It depends on the pattern:",
        "Longformer and BigBird are O(n w) (a fixed number of keys per query), the Sparse Transformer O(n sqrt n)",
        "(stride sqrt n); O(n log n) is Reformer's LSH attention (hash into buckets, sort, attend within chunks).",
        "Allowed (query, key) pairs, counted from attnlab.masks:",
        *pattern_rows,
        "  pairs/n constant: O(n w); pairs/(n sqrt n) constant: O(n sqrt n).",
    )


def _draw(n: dict[str, Any]) -> Figure:
    fig = figure(11.0, 4.0)
    left, right = fig.subplots(1, 2)
    ns = n["ns"]
    for name in n["seconds"]:
        left.plot(ns, [s * 1e3 for s in n["seconds"][name]], "o-", label=name)
        right.plot(ns, n["mib"][name], "o-", label=name)
    for ax, what in ((left, "time (ms, fastest of repeats)"), (right, "peak tensor memory (MiB)")):
        ax.set(xscale="log", yscale="log", xlabel="sequence length n", ylabel=what)
        ax.set_xticks(ns, [str(x) for x in ns])
        ax.minorticks_off()
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left")
    left.set_title(f"time (d = {n['d']}, window = {n['window']})")
    right.set_title("memory: dense grows as n², linear and local at most as n")
    for name, c in n["crossover"].items():
        if c:
            left.axvline(c, color="grey", lw=0.8, ls=":")
            left.annotate(f" {name} < dense\n from n = {c}", (c, left.get_ylim()[0]), fontsize=7, va="bottom",
                          ha="left")
    return fig
