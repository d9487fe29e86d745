"""Every registered kernel on a CUDA device, forward and backward, float32 and bfloat16, against float64.

    python benchmarks/cuda_check.py --out cuda-check        # on a machine with a GPU

The unit tests run on CPU (CI has no GPU). This script is the check for the device: for each kernel of
``attnlab.functional.KERNELS`` and each case (odd lengths, cross-attention, a padding mask, causal), the
kernel runs on CUDA in float32 and bfloat16 and on CPU in float64 with the same inputs and options; the
error is the largest absolute difference of the output and of the gradients of q, k and v (of
``sum(out * g)`` for a fixed random ``g``), divided by the largest absolute value of the float64 result.
The yardstick is the same kernel in the same dtype on CPU: a CUDA error more than 4 times that, and above
16 units in the last place of the dtype (2**-20 for float32, 2**-4 for bfloat16's 8 bits), fails. Dense
attention is also checked against the tests' independent float64 reference and against PyTorch's own
``scaled_dot_product_attention`` on the device, whose error is reported beside ours.

Writes ``cuda_check.json`` (one row per kernel, case, dtype) into ``--out`` and prints a table; exits 1
if any row fails. Without a GPU it says so and exits 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from attnlab.errors import ConfigError
from attnlab.functional import KERNELS

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers.reference import attention_ref

# (name, B, H, L, S, E, Ev, padding mask, causal)
CASES = [
    ("self 37", 2, 3, 37, 37, 24, 17, False, False),
    ("self 37 causal", 2, 3, 37, 37, 24, 17, False, True),
    ("self 129 padded", 2, 2, 129, 129, 32, 32, True, False),
    ("cross 19x53 padded", 2, 3, 19, 53, 16, 8, True, False),
    ("self 256 causal", 1, 4, 256, 256, 64, 64, False, True),
]
# Per-kernel options that make the approximate kernels deterministic and comparable across devices.
OPTIONS: dict[str, dict[str, Any]] = {
    "local": {"window": 8},
    "performer": {"features": 64, "seed": 3},
    "lsh": {"n_buckets": 4, "n_hashes": 2, "seed": 3, "chunk": 16},
}
FLOOR = {torch.float32: 2.0**-20, torch.bfloat16: 2.0**-4}  # 16 units in the last place: errors below are rounding


def inputs(case: tuple[Any, ...]) -> dict[str, Tensor | None]:
    _, B, H, L, S, E, Ev, padded, _ = case
    g = torch.Generator().manual_seed(L * 1000 + S)
    x = {n: torch.randn(B, H, m, d, generator=g, dtype=torch.float64)
         for n, m, d in (("q", L, E), ("k", S, E), ("v", S, Ev), ("g", L, Ev))}
    mask = None
    if padded:  # the second batch row has its last third of keys padded
        mask = torch.ones(B, 1, 1, S, dtype=torch.bool)
        mask[-1, ..., S - S // 3:] = False
    return {**x, "mask": mask}


def run(fn: Any, x: dict[str, Tensor | None], device: str, dtype: torch.dtype, causal: bool) -> list[Tensor]:
    q, k, v = (x[n].to(device, dtype).clone().requires_grad_() for n in "qkv")  # type: ignore[union-attr]
    mask = None if x["mask"] is None else x["mask"].to(device)
    out = fn(q, k, v, mask=mask, causal=causal)
    out = out[0] if isinstance(out, tuple) else out
    (out.float() * x["g"].to(device, torch.float32)).sum().backward()  # type: ignore[union-attr]
    grads = [torch.zeros_like(t) if t.grad is None else t.grad for t in (q, k, v)]  # an input the kernel ignores
    return [t.detach().double().cpu() for t in (out, *grads)]


def error(got: list[Tensor], ref: list[Tensor]) -> float:
    return max(float((a - b).abs().max() / b.abs().max().clamp_min(1e-30)) for a, b in zip(got, ref, strict=True))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--device", default="cuda", help="cuda (default); cpu only to try the script itself")
    args = p.parse_args(argv)
    dev = args.device
    if dev == "cuda" and not torch.cuda.is_available():
        print("cuda_check: no CUDA device here (torch.cuda.is_available() is False); run it on a machine with a GPU")
        return 2
    rows = []
    t0 = time.perf_counter()
    for name in sorted(KERNELS):
        spec = KERNELS[name]
        opts = OPTIONS.get(name, {})

        def kernel(q: Tensor, k: Tensor, v: Tensor, *, spec: Any = spec, opts: Any = opts, **kw: Any) -> Any:
            return spec(q, k, v, **kw, **opts)

        for case in CASES:
            x = inputs(case)
            causal = case[-1]
            try:
                ref = run(kernel, x, "cpu", torch.float64, causal)
            except (ConfigError, ValueError, NotImplementedError) as e:  # the kernel does not take this case
                rows.append({"kernel": name, "case": case[0], "refused": str(e).splitlines()[0][:120]})
                continue
            exact = (run(lambda q, k, v, **kw: attention_ref(q, k, v, **kw)[0], x, "cpu", torch.float64, causal)
                     if name == "dense" else None)  # the tests' independent reference
            for dtype in (torch.float32, torch.bfloat16):
                row: dict[str, Any] = {"kernel": name, "case": case[0], "dtype": str(dtype).removeprefix("torch.")}
                try:
                    cuda = error(run(kernel, x, dev, dtype, causal), ref)
                    cpu = error(run(kernel, x, "cpu", dtype, causal), ref)
                except Exception as e:
                    row.update(ok=False, failure=f"{type(e).__name__}: {str(e).splitlines()[0][:200]}")
                    rows.append(row)
                    continue
                row.update(cuda_error=cuda, cpu_error=cpu, ok=cuda <= max(4 * cpu, FLOOR[dtype]))
                if exact is not None:  # dense: the independent reference, and PyTorch's SDPA on the device
                    row["ref_vs_independent"] = error(ref, exact)
                    sdpa = run(lambda q, k, v, mask=None, causal=False: F.scaled_dot_product_attention(
                        q, k, v, attn_mask=mask, is_causal=causal), x, dev, dtype, causal)
                    row["sdpa_cuda_error"] = error(sdpa, exact)
                    row["ok"] = row["ok"] and row["ref_vs_independent"] < 1e-12
                rows.append(row)
    failed = [r for r in rows if r.get("ok") is False]
    doc = {"device": torch.cuda.get_device_name() if dev == "cuda" else dev, "torch": torch.__version__,
           "seconds": time.perf_counter() - t0, "rows": rows, "failed": len(failed)}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "cuda_check.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{doc['device']}, torch {doc['torch']}, {doc['seconds']:.1f} s")
    print(f"{'kernel':18} {'case':20} {'dtype':9} {'cuda err':>9} {'cpu err':>9} {'sdpa err':>9}  ok")
    for r in rows:
        if "refused" in r:
            print(f"{r['kernel']:18} {r['case']:20} refused: {r['refused']}")
        elif "failure" in r:
            print(f"{r['kernel']:18} {r['case']:20} {r['dtype']:9} FAILED {r['failure']}")
        else:
            sd = f"{r['sdpa_cuda_error']:9.2e}" if "sdpa_cuda_error" in r else " " * 9
            print(f"{r['kernel']:18} {r['case']:20} {r['dtype']:9} {r['cuda_error']:9.2e} {r['cpu_error']:9.2e} "
                  f"{sd}  {'ok' if r['ok'] else 'FAIL'}")
    print(f"{len(rows)} rows, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
