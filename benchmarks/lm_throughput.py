"""How fast does ``attnlab train lm`` train, against nanoGPT's loop of the same shape?  (issue 31, section 3)

    python benchmarks/lm_throughput.py                     # 4 x 128, context 64, batch 32, fp32, 1 thread
    python benchmarks/lm_throughput.py --quick --out benchmarks/results/lm_throughput.json

Two training steps on the same People's Daily characters (the vocabulary of ``attnlab train lm``, 4,108 ids):

* ``attnlab``: :meth:`attnlab.training._runtime.Runtime.train_step` on an :class:`~attnlab.training._lm_run.LMTask`,
  the very step ``attnlab train lm`` takes (its data draw, :class:`~attnlab.models.lm.CausalLM` with rotary
  positions, the loss and the per-step accuracy, backward, clipping, AdamW as the recipe configures it: not fused
  unless ``--fused``);
* ``nanogpt``: the plainest fast PyTorch causal LM as nanoGPT's ``model.py`` and ``train.py`` build it: token and
  learned position embeddings, pre-norm blocks whose attention is one fused ``c_attn`` projection and
  ``F.scaled_dot_product_attention(is_causal=True)``, exact GELU MLP, tied output embedding, nanoGPT's
  ``get_batch`` (random windows stacked from the token array), ``configure_optimizers``' AdamW (decay on the
  matrices, fused where the build allows), clipping at 1.0, the loss read only at log intervals.

The two are timed in alternating rounds (the order flips every round) in one process on the same threads; the
figures are the medians over rounds and the median of the per-round ratios, which is what a shared, loaded
machine disturbs least.  Beside them: the FLOPs of one step (``torch.utils.flop_counter``, forward + backward),
the machine's matmul roof (the best rate of a large fp32 matmul on the same threads) and the fraction of it a
step reaches; where attnlab's step goes (data, forward, backward, optimizer, bookkeeping, timed with
synchronising timers over extra steps), and what a validation with the head probes costs, per step at the
recipe's ``eval_every``.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from attnlab.data import PEOPLES_DAILY, CharTokenizer, lm_documents, lm_tokenizer, split_documents
from attnlab.models.lm import CausalLM, LMConfig
from attnlab.training import LMTask, LMTrainConfig, Runtime, World, lr_at, top1_hits

# --- nanoGPT, as its model.py builds it (biases on, as attnlab's layers have them; dropout 0) ----------------------


class NanoAttention(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.heads = heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)  # (B, T, C) each
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)  # (B, H, T, D)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)  # (B, H, T, D)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)  # (B, H, T, D)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, T, D)
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))  # (B, T, C)


class NanoBlock(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.ln_1, self.attn = nn.LayerNorm(d), NanoAttention(d, heads)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class NanoGPT(nn.Module):
    def __init__(self, vocab: int, context: int, d: int, heads: int, layers: int) -> None:
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(context, d)
        self.h = nn.ModuleList(NanoBlock(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.wte.weight = self.lm_head.weight  # tied
        self.apply(self._init)

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        t = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(t))  # (B, T, C)
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))  # (B, T, V)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def nanogpt_optimizer(model: nn.Module, lr: float, weight_decay: float) -> tuple[torch.optim.AdamW, bool]:
    """nanoGPT's configure_optimizers: decay on parameters of 2+ dims, fused AdamW where the build has it."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    fused = "fused" in inspect.signature(torch.optim.AdamW).parameters
    try:
        return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95), fused=fused or None), fused
    except RuntimeError:  # a build without the CPU fused kernel
        return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95)), False


def nanogpt_step(model: NanoGPT, data: np.ndarray, context: int, batch: int, lr: float,
                 total: int) -> Callable[[int], None]:
    """nanoGPT's train.py inner loop for one step (no gradient accumulation, no AMP: fp32 on CPU)."""
    opt, _ = nanogpt_optimizer(model, lr, 0.01)
    g = torch.Generator().manual_seed(0)

    def get_batch() -> tuple[torch.Tensor, torch.Tensor]:
        ix = torch.randint(len(data) - context, (batch,), generator=g)
        x = torch.stack([torch.from_numpy(data[i: i + context].astype(np.int64)) for i in ix.tolist()])  # (B, T)
        y = torch.stack([torch.from_numpy(data[i + 1: i + 1 + context].astype(np.int64)) for i in ix.tolist()])
        return x, y

    def step(i: int) -> None:
        for group in opt.param_groups:
            group["lr"] = lr_at(i + 1, total, round(0.05 * total), lr)
        x, y = get_batch()
        loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if i % 10 == 0:
            loss.item()  # nanoGPT reads the loss at its log interval only

    return step


# --- attnlab's step, the runtime's own ---------------------------------------------------------------------------


def attnlab_runtime(ids: dict[str, np.ndarray], vocab: CharTokenizer, args: argparse.Namespace, out: Path) -> tuple[
        Runtime, LMTask]:
    config = LMTrainConfig(batch_size=args.batch, max_steps=10_000, fused=args.fused, seed=0)
    torch.manual_seed(0)
    model = CausalLM(LMConfig(vocab_size=len(vocab), context=args.context, d_model=args.d_model,
                              n_heads=args.heads, n_layers=args.layers))
    w = World(0, 1, torch.device("cpu"))
    run: dict[str, Any] = {"data": PEOPLES_DAILY}
    task = LMTask(None, ids, vocab, model, config, run, w, lambda _: None)  # type: ignore[arg-type]
    return Runtime(task, config, run, out, w, lambda _: None, False), task


def attnlab_step(runtime: Runtime, task: LMTask) -> Callable[[int], None]:
    def step(i: int) -> None:
        runtime.train_step(task.batch(0, i))
        runtime.state["step"] += 1

    return step


def phases(runtime: Runtime, task: LMTask, steps: int, start: int) -> dict[str, float]:
    """Median milliseconds of each part of attnlab's step, the runtime's train_step taken apart in order."""
    from attnlab.training import lr_at as rate

    net, opt, c = runtime.model, runtime.optimizer, runtime.config
    times: dict[str, list[float]] = {k: [] for k in ("data", "forward", "accuracy", "backward", "optimizer")}
    for i in range(start, start + steps):
        t0 = time.perf_counter()
        for group in opt.param_groups:
            group["lr"] = rate(i + 1, runtime.total, runtime.warmup, c.lr)
        x, y = task.windows("train", task.batch(0, i), task.context)
        t1 = time.perf_counter()
        logits = net(x)
        loss = F.cross_entropy(logits.flatten(0, 1).float(), y.flatten())
        float(loss.detach())
        t2 = time.perf_counter()
        top1_hits(logits, y)  # the task's count of hits
        t3 = time.perf_counter()
        loss.backward()
        t4 = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(net.parameters(), c.clip_norm)
        opt.step()
        opt.zero_grad(set_to_none=True)
        t5 = time.perf_counter()
        for key, a, b in (("data", t0, t1), ("forward", t1, t2), ("accuracy", t2, t3), ("backward", t3, t4),
                          ("optimizer", t4, t5)):
            times[key].append(1000 * (b - a))
    return {k: statistics.median(v) for k, v in times.items()}


def step_flops(step_model: Callable[[], torch.Tensor]) -> int:
    """FLOPs of one forward + backward (matmuls and attention, as torch's flop counter counts them)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        step_model().backward()
    return int(counter.get_total_flops())


def matmul_roof(n: int = 1024, repeats: int = 20) -> float:
    """The best FLOP/s of an ``n x n`` fp32 matmul on this process's threads."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - start)
    return 2 * n**3 / best


def profile_top(step: Callable[[int], None], start: int, steps: int, rows: int) -> str:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for i in range(start, start + steps):
            step(i)
    return str(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--d-model", dest="d_model", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--steps", type=int, default=10, help="steps per timed round")
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--fused", action="store_true", help="attnlab's AdamW fused too (--fused of attnlab train lm)")
    p.add_argument("--profile", type=int, default=0, help="print torch.profiler's top N ops of each step")
    p.add_argument("--quick", action="store_true", help="5 steps x 5 rounds")
    p.add_argument("--out", type=Path, help="also write the figures as JSON")
    args = p.parse_args()
    if args.quick:
        args.steps, args.rounds = 5, 5
    torch.set_num_threads(args.threads)

    splits = split_documents(lm_documents(PEOPLES_DAILY))
    vocab = lm_tokenizer(splits.train, 2)
    ids = {name: np.asarray(vocab.encode(getattr(splits, name)), dtype=np.int64) for name in ("train", "valid", "test")}
    with tempfile.TemporaryDirectory() as tmp:
        runtime, task = attnlab_runtime(ids, vocab, args, Path(tmp))
        torch.manual_seed(0)
        nano = NanoGPT(len(vocab), args.context, args.d_model, args.heads, args.layers).train()
        total = args.rounds * args.steps * 4
        steps = {"attnlab": attnlab_step(runtime, task),
                 "nanogpt": nanogpt_step(nano, ids["train"], args.context, args.batch, 2e-3, total)}
        _, nano_fused = nanogpt_optimizer(nano, 1e-3, 0.01)
        at = {name: 0 for name in steps}
        for name, step in steps.items():  # warm-up: allocator, first-call costs
            for _ in range(3):
                step(at[name])
                at[name] += 1
        per_round: dict[str, list[float]] = {name: [] for name in steps}
        for r in range(args.rounds):  # alternating rounds, the order flipped every round
            for name in (list(steps) if r % 2 == 0 else list(steps)[::-1]):
                start = time.perf_counter()
                for _ in range(args.steps):
                    steps[name](at[name])
                    at[name] += 1
                per_round[name].append(time.perf_counter() - start)
        tokens = args.batch * args.context * args.steps
        rate = {name: [tokens / t for t in ts] for name, ts in per_round.items()}
        ratios = [a / b for a, b in zip(rate["attnlab"], rate["nanogpt"], strict=True)]

        x, y = task.windows("train", task.batch(0, 0), args.context)
        flops = {"attnlab": step_flops(lambda: F.cross_entropy(runtime.model(x).flatten(0, 1), y.flatten())),
                 "nanogpt": step_flops(lambda: nano(x, y))}
        runtime.model.zero_grad(set_to_none=True)
        nano.zero_grad(set_to_none=True)
        roof = matmul_roof()
        breakdown = phases(runtime, task, 2 * args.steps, at["attnlab"])
        at["attnlab"] += 2 * args.steps
        start = time.perf_counter()
        task.evaluate()
        valid_s = time.perf_counter() - start
        start = time.perf_counter()
        task.probe()
        probe_s = time.perf_counter() - start
        eval_every = LMTrainConfig().eval_every
        if args.profile:
            for name, step in steps.items():
                print(f"--- {name}: torch.profiler, {args.steps} steps, top {args.profile} by self CPU time")
                print(profile_top(step, at[name], args.steps, args.profile))

    medians = {name: statistics.median(v) for name, v in rate.items()}
    step_ms = {name: 1000 * args.batch * args.context / v for name, v in medians.items()}
    result = {
        "question": "tokens/s of attnlab train lm's step against nanoGPT's loop of the same shape (issue 31 s.3)",
        "config": {k: getattr(args, k) for k in ("d_model", "heads", "layers", "context", "batch", "threads",
                                                  "steps", "rounds", "fused")},
        "torch": torch.__version__, "nanogpt_fused_adamw": nano_fused,
        "parameters": {"attnlab": sum(p.numel() for p in runtime.model.parameters()),
                       "nanogpt": sum(p.numel() for p in nano.parameters())},
        "tokens_per_s_median": {k: round(v, 1) for k, v in medians.items()},
        "tokens_per_s_rounds": {k: [round(x, 1) for x in v] for k, v in rate.items()},
        "ratio_median": round(statistics.median(ratios), 4),
        "ratio_rounds": [round(r, 4) for r in ratios],
        "step_ms_median": {k: round(v, 2) for k, v in step_ms.items()},
        "step_gflop": {k: round(v / 1e9, 3) for k, v in flops.items()},
        "matmul_roof_gflops": round(roof / 1e9, 2),
        "roof_fraction": {k: round(flops[k] / (step_ms[k] / 1000) / roof, 4) for k in steps},
        "attnlab_phase_ms_median": {k: round(v, 2) for k, v in breakdown.items()},
        "validation_s": round(valid_s, 3), "probe_s": round(probe_s, 3),
        "validation_and_probe_ms_per_step": round(1000 * (valid_s + probe_s) / eval_every, 2),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(result, indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
