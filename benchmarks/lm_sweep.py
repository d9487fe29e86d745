"""The search behind configs/zh-lm.json: train several character language models on People's Daily side by side,
each on one thread for the same CPU budget, and print each one's best valid bits per character.

    python benchmarks/lm_sweep.py OUT BUDGET_S [--scale S]

Each configuration runs in its own process (OMP_NUM_THREADS=1); its number of steps is the budget divided by its
own CPU time per step (measured over a few steps first), times ``--scale`` (the ratio of this machine's speed to the
machine the budget is meant for).  Results: OUT/<name>/final.json and OUT/sweep.jsonl.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

CONFIGS = {
    "c128-d128-l4-b32": ({"context": 128, "d_model": 128, "n_layers": 4}, {"batch_size": 32, "lr": 2e-3}),
    "c64-d128-l4-b32": ({"context": 64, "d_model": 128, "n_layers": 4}, {"batch_size": 32, "lr": 2e-3}),
    "c64-d128-l4-b32-lr4": ({"context": 64, "d_model": 128, "n_layers": 4}, {"batch_size": 32, "lr": 4e-3}),
    "c128-d128-l4-b16": ({"context": 128, "d_model": 128, "n_layers": 4}, {"batch_size": 16, "lr": 2e-3}),
    "c64-d192-l3-b32": ({"context": 64, "d_model": 192, "n_layers": 3, "n_heads": 6}, {"batch_size": 32, "lr": 2e-3}),
    "c64-d128-l2-b64": ({"context": 64, "d_model": 128, "n_layers": 2}, {"batch_size": 64, "lr": 3e-3}),
    "c128-d96-l4-b32": ({"context": 128, "d_model": 96, "n_layers": 4}, {"batch_size": 32, "lr": 3e-3}),
    "c64-d256-l2-b32": ({"context": 64, "d_model": 256, "n_layers": 2, "n_heads": 8}, {"batch_size": 32, "lr": 1.5e-3}),
    "c32-d128-l4-b64": ({"context": 32, "d_model": 128, "n_layers": 4}, {"batch_size": 64, "lr": 2e-3}),
    "c64-d128-l4-b32-drop": ({"context": 64, "d_model": 128, "n_layers": 4, "dropout": 0.1},
                             {"batch_size": 32, "lr": 2e-3}),
    "c64-d160-l4-b32": ({"context": 64, "d_model": 160, "n_layers": 4, "n_heads": 5}, {"batch_size": 32, "lr": 2e-3}),
    "c96-d128-l3-b32": ({"context": 96, "d_model": 128, "n_layers": 3}, {"batch_size": 32, "lr": 3e-3}),
    "c64-d128-l6-b32": ({"context": 64, "d_model": 128, "n_layers": 6}, {"batch_size": 32, "lr": 2e-3}),
    "c128-d64-l4-b32": ({"context": 128, "d_model": 64, "n_layers": 4}, {"batch_size": 32, "lr": 4e-3}),
}


def seconds_per_step(model: dict, batch: int) -> float:
    import torch
    import torch.nn.functional as F

    from attnlab.models.lm import CausalLM, LMConfig

    net = CausalLM(LMConfig(vocab_size=4108, **model))
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    x = torch.randint(0, 4108, (batch, net.config.context + 1))
    times = []
    for _ in range(5):
        t = time.process_time()
        F.cross_entropy(net(x[:, :-1]).flatten(0, 1), x[:, 1:].flatten()).backward()
        opt.step()
        opt.zero_grad()
        times.append(time.process_time() - t)
    return sorted(times[1:])[1]


def one(name: str, out: Path, budget: float, scale: float) -> None:
    from attnlab.training import LMTrainConfig, train_lm

    model, train = CONFIGS[name]
    per_step = seconds_per_step(model, train["batch_size"])
    steps = max(20, int(budget * scale / per_step * 0.93))  # validations and probes take the rest
    config = LMTrainConfig(max_steps=steps, eval_every=max(10, steps // 10), checkpoint_every=10_000, **train)
    final = train_lm("peoples-daily", out / name, model=model, config=config, progress=False, log=lambda _: None)
    row = {"name": name, "per_step_s": per_step, "steps": steps, **{k: final[k] for k in (
        "valid_bits_per_char", "below_ngram", "train_cpu_s", "parameters")}}
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "--one":
        one(sys.argv[2], Path(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]))
        sys.exit(0)
    out, budget = Path(sys.argv[1]), float(sys.argv[2])
    scale = float(sys.argv[sys.argv.index("--scale") + 1]) if "--scale" in sys.argv else 1.0
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    procs = [subprocess.Popen([sys.executable, __file__, "--one", name, str(out), str(budget), str(scale)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for name in CONFIGS]
    with open(out / "sweep.jsonl", "w") as f:
        for p in procs:
            text = p.communicate()[0]
            line = text.strip().splitlines()[-1] if text.strip() else ""
            print(line, flush=True)
            f.write(line + "\n")
