"""The data-parallel joint of training (``World``): gradients averaged over torchrun ranks equal the full batch's,
and closing the world leaves no gloo thread running, so a rank cannot die at interpreter exit (the SIGABRT of
"terminate called without an active exception": see attnlab/training/_distributed.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from attnlab.training._distributed import World

RANK_SCRIPT = r'''
import json, os, sys
import torch
from torch import nn
from attnlab.training._distributed import world

def threads():
    return sorted(open(f"/proc/self/task/{t}/comm").read().strip() for t in os.listdir("/proc/self/task"))

def train():
    """What a training command does: join, train, close."""
    w = world("cpu")
    import torch.distributed.nn  # as torch's own code does later, lazily: it must not keep the group alive
    torch.manual_seed(w.rank)  # different weights per rank: share_weights must give every rank rank 0's
    model = nn.Sequential(nn.Linear(5, 3), nn.Tanh(), nn.Linear(3, 2))
    w.share_weights(model)
    unused = nn.Parameter(torch.ones(2))  # no gradient on any rank: stays None
    partly = nn.Parameter(torch.ones(2))  # a gradient on rank 1 only: averaged with rank 0's zeros
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(6, 5, generator=g), torch.randn(6, 2, generator=g)
    mine = slice(3 * w.rank, 3 * w.rank + 3)
    loss = ((model(x[mine]) - y[mine]) ** 2).mean()
    if w.rank == 1:
        loss = loss + (partly * 3.0).sum()
    loss.backward()
    w.average_gradients([*model.parameters(), unused, partly])
    from attnlab.parallel import all_reduce_gradients  # the same reduce, summed (sequence parallelism)
    summed = nn.Parameter(torch.ones(2))
    if w.rank == 1:
        (summed * 3.0).sum().backward()
    all_reduce_gradients([summed, unused])
    during = threads()
    try:
        return {"rank": w.rank, "weights": [p.tolist() for p in model.parameters()],
                "grads": [p.grad.tolist() for p in model.parameters()], "unused": unused.grad is None,
                "partly": partly.grad.tolist(), "summed": summed.grad.tolist(), "during": during}
    finally:
        w.close()


result = train()
with open(os.path.join(sys.argv[1], f"rank{result['rank']}.json"), "w") as f:
    json.dump({**result, "after": threads()}, f)
'''


@pytest.mark.slow
def test_two_ranks_average_to_the_full_batch_gradient_and_close_joins_every_gloo_thread(
        tmp_path: Path, child_env: dict[str, str]) -> None:
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                           str(script), str(tmp_path)], env=child_env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]

    torch.manual_seed(0)  # rank 0's weights, which every rank took
    model = torch.nn.Sequential(torch.nn.Linear(5, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(6, 5, generator=g), torch.randn(6, 2, generator=g)
    # the mean of the two halves' mean losses is the full batch's mean loss
    ((model(x) - y) ** 2).mean().backward()
    for r in ranks:
        assert r["weights"] == [p.tolist() for p in model.parameters()]
        for got, want in zip(r["grads"], (p.grad for p in model.parameters()), strict=True):
            assert torch.allclose(torch.tensor(got), want, atol=1e-6), (got, want)
        assert r["unused"] and r["partly"] == [1.5, 1.5] and r["summed"] == [3.0, 3.0]
        assert any("gloo" in name for name in r["during"]), r["during"]  # the check below can see them
        assert not [name for name in r["after"] if "gloo" in name], r["after"]


def test_one_process_needs_no_process_group() -> None:
    w = World(0, 1, torch.device("cpu"))
    p = torch.nn.Parameter(torch.ones(3))
    (p * 2).sum().backward()
    w.average_gradients([p])
    assert p.grad.tolist() == [2.0, 2.0, 2.0]
    w.close()
