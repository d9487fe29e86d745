"""Cross-check: attnlab's ring attention against lucidrains' ring-attention-pytorch on the same inputs, on CPU.

lucidrains' package is not a dependency: it runs in its own scratch virtualenv (``--ref-python``), under
``torchrun --standalone`` with 2 gloo ranks (its ``ring_flash_attn`` with ``ring_reduce_col=True``: keys and
values passed around the ring), forward and backward, causal and not, on contiguous shards, in float32 (its
running statistics are float32 buffers whatever the input: float64 inputs fail there with "value cannot be
converted to type float without overflow").  Inputs and outputs travel as JSON.  Both are also compared with
float64 dense attention; the largest absolute differences of the outputs and of dq, dk, dv go to
``benchmarks/results/ring_crosscheck.json``.

    python3 -m venv /tmp/ringref && /tmp/ringref/bin/pip install -c constraints.txt ring-attention-pytorch
    python benchmarks/ring_crosscheck.py --ref-python /tmp/ringref/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

B, N, H, D = 2, 24, 2, 8  # lucidrains' layout is (batch, seq, heads, dim)
BUCKET = int(os.environ.get("RING_BUCKET", "12"))  # its tile size; 12 = a whole shard, as its own assert.py uses


def reference_worker(folder: Path) -> None:
    """Runs in the scratch venv under torchrun: lucidrains' ring attention on this rank's contiguous shard."""
    import torch.distributed as dist
    from ring_attention_pytorch.ring_flash_attention import ring_flash_attn

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    data = json.loads((folder / "inputs.json").read_text())
    n = N // world
    mine = slice(rank * n, (rank + 1) * n)
    result = {}
    for causal in (False, True):
        q, k, v, dout = (torch.tensor(data[name], dtype=torch.float32)[:, mine] for name in ("q", "k", "v", "dout"))
        q, k, v = (t.requires_grad_() for t in (q, k, v))
        out = ring_flash_attn(q, k, v, None, causal, BUCKET, True)
        out.backward(dout)
        result[str(causal)] = {"out": out.tolist(), "dq": q.grad.tolist(), "dk": k.grad.tolist(), "dv": v.grad.tolist()}
    (folder / f"rank{rank}.json").write_text(json.dumps(result))
    dist.destroy_process_group()


def _grads(f, data: dict[str, torch.Tensor], dtype: torch.dtype) -> dict[str, torch.Tensor]:  # type: ignore[no-untyped-def]
    """Output and input gradients of ``f`` on ``data`` (lucidrains' (B, N, H, D) layout in and out)."""
    q, k, v = (data[n].to(dtype).transpose(1, 2).clone().requires_grad_() for n in ("q", "k", "v"))  # (B, H, N, D)
    out = f(q, k, v)
    out.backward(data["dout"].to(dtype).transpose(1, 2))
    return {name: t.detach().transpose(1, 2) for name, t in (("out", out), ("dq", q.grad), ("dk", k.grad),
                                                             ("dv", v.grad))}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ref-python", default="/tmp/ringref/bin/python")
    p.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "ring_crosscheck.json")
    p.add_argument("--reference-worker", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.reference_worker:
        return reference_worker(args.reference_worker)
    from attnlab.functional import attention
    from attnlab.parallel import simulate_ring_attention

    g = torch.Generator().manual_seed(0)
    data = {name: torch.randn(B, N, H, D, generator=g) for name in ("q", "k", "v", "dout")}  # float32
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "inputs.json").write_text(json.dumps({k: t.tolist() for k, t in data.items()}))
        env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": ""}
        done = subprocess.run([args.ref_python, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                               __file__, "--reference-worker", tmp], env=env, capture_output=True, text=True,
                              timeout=300)
        if done.returncode:
            sys.exit(f"lucidrains' ring attention did not run: {done.stderr[-2000:]}")
        ranks = [json.loads(Path(tmp, f"rank{r}.json").read_text()) for r in range(2)]
    report: dict = {"shape_bshd": [B, N, H, D], "world": 2, "bucket_size": BUCKET,  # type: ignore[type-arg]
                    "dtype": "float32 (lucidrains' kernel fills float32 buffers: float64 inputs overflow there)",
                    "max_abs_difference": {}}
    for causal in (False, True):
        ours = _grads(lambda q, k, v, c=causal: simulate_ring_attention(q, k, v, 2, causal=c), data, torch.float32)
        dense = _grads(lambda q, k, v, c=causal: attention(q, k, v, causal=c, return_weights=False)[0], data,
                       torch.float64)
        theirs = {name: torch.cat([torch.tensor(r[str(causal)][name], dtype=torch.float32) for r in ranks], dim=1)
                  for name in ours}
        report["max_abs_difference"][f"causal={causal}"] = {
            f"{a} vs {b}": {name: (x[name].double() - y[name].double()).abs().max().item() for name in ours}
            for (a, x), (b, y) in (
                (("attnlab", ours), ("lucidrains", theirs)),
                (("attnlab", ours), ("dense float64", dense)),
                (("lucidrains", theirs), ("dense float64", dense)))}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = args.out.with_suffix(".json.tmp")
    tmp_out.write_text(json.dumps(report, indent=1) + "\n")
    tmp_out.replace(args.out)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
