"""Ring attention on real ranks: torchrun with gloo at 2 and 4 ranks.  Every rank shards the same full inputs, runs
``ring_attention`` forward and backward, and reports its errors against the float64 dense reference; a bad input on
one rank raises the same error on every rank and leaves the group usable; at 2 ranks, sequence-parallel training of
a tiny causal model gives the losses of one process.  Like the other torchrun tests (tests/training), a run uses
``--standalone`` (a free port of its own), gloo, one thread per rank and a timeout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers.ring import train_steps

RANK_SCRIPT = r'''
import json, os, sys
import torch
from attnlab._process_group import join_process_group
from attnlab.errors import DTypeError, ShapeError
from attnlab.parallel import ring_attention, shard
from helpers.ring import dense, train_steps

rank, world, started = join_process_group("gloo")
import torch.distributed as dist
report = {"rank": rank, "world": world, "errors": {}}


def case(name, n, dtype, causal, layout, schedule, masked):
    g = torch.Generator().manual_seed(n)
    q, k = (torch.randn(2, 3, n, 5, generator=g, dtype=torch.float64) for _ in range(2))
    v = torch.randn(2, 3, n, 4, generator=g, dtype=torch.float64)
    mask = torch.rand(2, n, generator=g) > 0.3 if masked else None
    if masked:
        mask[1] = False  # fully masked rows
    dout = torch.randn(2, 3, n, 4, generator=g, dtype=torch.float64)
    mine = [shard(t, world, rank, layout=layout).to(dtype).requires_grad_() for t in (q, k, v)]
    out, lse = ring_attention(*mine, causal=causal, layout=layout, schedule=schedule, length=n, return_lse=True,
                              mask=None if mask is None else shard(mask, world, rank, layout=layout, dim=1))
    grads = torch.autograd.grad((out.double() * shard(dout, world, rank, layout=layout)).sum(), mine)
    qd, kd, vd = (t.clone().requires_grad_() for t in (q, k, v))
    ref, ref_lse = dense(qd, kd, vd, causal=causal, mask=mask)
    want = torch.autograd.grad((ref * dout).sum(), (qd, kd, vd))
    real = shard(torch.ones(n, dtype=torch.bool), world, rank, layout=layout, dim=0)  # not padding
    ref_lse = shard(ref_lse, world, rank, layout=layout, dim=-1)
    fin = torch.isfinite(ref_lse) & real
    assert torch.equal(torch.isinf(lse[..., real]), torch.isinf(ref_lse[..., real]))
    errs = [(out.double() - shard(ref, world, rank, layout=layout))[..., real, :].abs().max().item(),
            (lse.double() - ref_lse)[fin].abs().max().item()]
    errs += [(a.double() - shard(b, world, rank, layout=layout))[..., real, :].abs().max().item()
             for a, b in zip(grads, want)]
    report["errors"][name] = errs


for layout in ("contiguous", "zigzag"):
    for causal in (False, True):
        case(f"float64 {layout} causal={causal}", 4 * world + 3, torch.float64, causal, layout, "ring", False)
case("float64 zigzag causal allgather", 4 * world + 1, torch.float64, True, "zigzag", "allgather", False)
case("float64 contiguous causal masked", 4 * world + 3, torch.float64, True, "contiguous", "ring", True)
case("float64 zigzag masked", 4 * world + 3, torch.float64, False, "zigzag", "ring", True)
case("float32 zigzag causal", 8 * world + 5, torch.float32, True, "zigzag", "ring", False)

# bad input on one rank only: every rank raises the same error, and the group still works afterwards
x = torch.randn(1, 1, 4, 3, dtype=torch.float64)
bad = []
for dtypes, lengths in (([torch.float64, torch.float32], [4, 4]), ([torch.float64, torch.float64], [4, 3])):
    k = x[..., :lengths[min(rank, 1)], :].to(dtypes[min(rank, 1)])
    try:
        ring_attention(x[..., :lengths[min(rank, 1)], :], k, k, causal=True)
        bad.append(None)
    except (DTypeError, ShapeError) as e:
        bad.append(f"{type(e).__name__}: {e}")
report["bad"] = bad
report["after"] = ring_attention(x, x, x).shape[-2]

if world == 2:
    tokens = torch.randint(0, 11, (3, 24), generator=torch.Generator().manual_seed(0))
    report["losses"] = {layout: train_steps(tokens, 4, kernel="ring", layout=layout)
                        for layout in ("contiguous", "zigzag")}

dist.destroy_process_group()
with open(os.path.join(sys.argv[1], f"rank{rank}.json"), "w") as f:
    json.dump(report, f)
'''


def _torchrun(world: int, tmp_path: Path, env: dict[str, str]) -> list[dict]:  # type: ignore[type-arg]
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT, encoding="utf-8")
    env = {**env, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1]), env["PYTHONPATH"]])}
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
                           str(world), str(script), str(tmp_path)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(world)]


def _check(ranks: list[dict]) -> None:  # type: ignore[type-arg]
    for r in ranks:
        for name, errs in r["errors"].items():
            bound = 1e-5 if name.startswith("float32") else 1e-12
            assert max(errs) <= bound, (r["rank"], name, errs)
        assert r["after"] == 4
    dtype, shape = zip(*[r["bad"] for r in ranks], strict=True)  # per case, every rank's message
    for messages, kind in ((dtype, "DTypeError"), (shape, "ShapeError")):
        assert len(set(messages)) == 1 and messages[0].startswith(kind), messages  # the same error on every rank


@pytest.mark.slow
def test_two_ranks_match_dense_and_sequence_parallel_training_matches_one_process(
        tmp_path: Path, child_env: dict[str, str]) -> None:
    ranks = _torchrun(2, tmp_path, child_env)
    _check(ranks)
    tokens = torch.randint(0, 11, (3, 24), generator=torch.Generator().manual_seed(0))
    alone = train_steps(tokens, 4, kernel="dense", layout=None)
    assert alone[-1] < alone[0]  # it trains
    for r in ranks:
        for layout, losses in r["losses"].items():
            assert max(abs(a - b) for a, b in zip(losses, alone, strict=True)) <= 1e-5, (layout, losses, alone)


@pytest.mark.slow
def test_four_ranks_match_dense(tmp_path: Path, child_env: dict[str, str]) -> None:
    _check(_torchrun(4, tmp_path, child_env))
