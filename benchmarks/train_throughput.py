"""Training throughput (samples/s) of attnlab's AttentionClassifier against a plain PyTorch loop over
``torch.nn.TransformerEncoder`` of the same size and batch, and of ``attnlab train`` under DDP at 2 ranks vs 1.

    python benchmarks/train_throughput.py                       # d_model 128, 2 layers, batch 32, length 128
    python benchmarks/train_throughput.py --quick --out bench-train.json

Both models get the same token batches (random lengths, padding masked), AdamW and gradient clipping; one step is
forward + backward + optimizer step.  The two loops are timed in interleaved rounds and each reports its fastest
round, which is what a loaded machine disturbs least.  The DDP figure runs this script under
``torch.distributed.run`` (gloo, one thread per rank) and compares with one process on one thread, same global batch.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from attnlab.models import AttentionClassifier, ClassifierConfig
from attnlab.models.classifier import sinusoids


class PlainClassifier(nn.Module):
    """The same architecture written directly on torch.nn: embedding * sqrt(M) + sinusoids, pre-norm
    TransformerEncoder with a padding mask, [CLS] pooling, linear head."""

    def __init__(self, vocab: int, d_model: int, heads: int, layers: int, d_ff: int, max_length: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model, padding_idx=0)
        self.register_buffer("pe", sinusoids(max_length, d_model), persistent=False)
        layer = nn.TransformerEncoderLayer(d_model, heads, d_ff, dropout=0.1, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, norm=nn.LayerNorm(d_model), enable_nested_tensor=False)
        self.drop = nn.Dropout(0.1)
        self.head = nn.Linear(d_model, 2)
        self.scale = math.sqrt(d_model)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.drop(self.embed(ids) * self.scale + self.pe[: ids.shape[1]])  # (B, L, M)
        x = self.encoder(x, src_key_padding_mask=ids == 0)  # torch: True = padding
        return self.head(self.drop(x[:, 0]))


def batches(n: int, batch: int, length: int, vocab: int, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        lengths = torch.randint(length // 4, length + 1, (batch,), generator=g)
        ids = torch.randint(3, vocab, (batch, length), generator=g)
        ids[torch.arange(length)[None, :] >= lengths[:, None]] = 0
        ids[:, 0] = 2
        out.append((ids, torch.randint(0, 2, (batch,), generator=g)))
    return out


def step_fn(model: nn.Module):  # type: ignore[no-untyped-def]
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step(ids: torch.Tensor, y: torch.Tensor) -> None:
        loss = F.cross_entropy(model(ids), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def compare(args: argparse.Namespace) -> dict[str, float]:
    torch.manual_seed(0)
    cfg = ClassifierConfig(args.vocab, d_model=args.d_model, n_heads=args.heads, n_layers=args.layers,
                           d_ff=4 * args.d_model, dropout=0.1, max_length=args.length, pooling="cls")
    ours = AttentionClassifier(cfg).train()
    plain = PlainClassifier(args.vocab, args.d_model, args.heads, args.layers, 4 * args.d_model, args.length).train()
    n_ours, n_plain = (sum(p.numel() for p in m.parameters()) for m in (ours, plain))
    data = batches(args.steps, args.batch, args.length, args.vocab)
    steps = {"attnlab": step_fn(ours), "torch": step_fn(plain)}
    for step in steps.values():  # warm-up
        step(*data[0])
    best = {name: float("inf") for name in steps}
    for _ in range(args.rounds):  # interleaved rounds; keep each loop's fastest
        for name, step in steps.items():
            start = time.perf_counter()
            for ids, y in data:
                step(ids, y)
            best[name] = min(best[name], time.perf_counter() - start)
    rate = {name: args.steps * args.batch / t for name, t in best.items()}
    return {"attnlab_samples_per_s": rate["attnlab"], "torch_samples_per_s": rate["torch"],
            "ratio": rate["attnlab"] / rate["torch"], "attnlab_params": n_ours, "torch_params": n_plain}


def ddp_worker(args: argparse.Namespace) -> None:
    """One rank: the attnlab model under DDP, this rank's share of the global batch; rank 0 prints samples/s."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:
        dist.init_process_group("gloo")
    torch.manual_seed(0)
    model: nn.Module = AttentionClassifier(ClassifierConfig(args.vocab, d_model=args.d_model, n_heads=args.heads,
                                                            n_layers=args.layers, max_length=args.length))
    if world > 1:
        model = DistributedDataParallel(model)
    step = step_fn(model)
    data = [(ids[rank::world], y[rank::world]) for ids, y in batches(args.steps, args.batch, args.length, args.vocab)]
    step(*data[0])
    best = float("inf")
    for _ in range(args.rounds):
        if world > 1:
            dist.barrier()
        start = time.perf_counter()
        for ids, y in data:
            step(ids, y)
        best = min(best, time.perf_counter() - start)
    if rank == 0:
        print(json.dumps({"world": world, "samples_per_s": args.steps * args.batch / best}))
    if world > 1:
        dist.destroy_process_group()


def ddp(args: argparse.Namespace) -> dict[str, float]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    shared = ("d_model", "heads", "layers", "batch", "length", "vocab", "steps", "rounds")
    own = [sys.argv[0], "--ddp-worker", *(f"--{k}={getattr(args, k)}" for k in shared)]
    rates = {}
    for n in (1, 2):
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={n}", *own]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
        rates[n] = json.loads(done.stdout.strip().splitlines()[-1])["samples_per_s"]
    return {"ddp_1_rank_samples_per_s": rates[1], "ddp_2_ranks_samples_per_s": rates[2],
            "ddp_speedup": rates[2] / rates[1]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--d_model", "--d-model", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--length", type=int, default=128)
    p.add_argument("--vocab", type=int, default=5000)
    p.add_argument("--steps", type=int, default=10, help="steps per timed round")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="d_model 64, length 64, 5 steps x 3 rounds")
    p.add_argument("--out", type=Path, help="also write the figures as JSON")
    p.add_argument("--ddp-worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.quick:
        args.d_model, args.length, args.steps, args.rounds = 64, 64, 5, 3
    if args.ddp_worker:
        ddp_worker(args)
        return
    result = {"config": {k: getattr(args, k) for k in ("d_model", "heads", "layers", "batch", "length", "steps",
                                                      "rounds")},
              "threads": torch.get_num_threads(), **compare(args), **ddp(args),
              "load_average": os.getloadavg()}
    print(json.dumps(result, indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
