"""The runtime both training loops share: the classifier's (:mod:`._loop`) and the translator's (:mod:`._translate`).

:class:`Runtime` holds what does not depend on the task: the epoch/step loop with its progress bar, the learning
rate schedule (linear warm-up, then cosine decay), clipping, ``metrics.jsonl`` (with its length in bytes kept in
the run state, so a resume cuts off the rows a killed run wrote after its last checkpoint), validation
bookkeeping (best so far, patience, early stop, the log line), checkpoints every ``checkpoint_every`` steps and
after each validation, exact restore (weights, AdamW's moments, the run state, every RNG) and the barrier that
keeps DDP ranks together.  A task subclasses it and fills in its batches, its loss (:meth:`Runtime.train_step`),
its validation metric (:meth:`Runtime.evaluate`), how its model is saved and loaded, and its ``finish``.

The functions below it are the pieces of a run's set-up the two ``train_*`` functions share: the refusal to
overwrite or to resume with other settings (:func:`prepare_out`), the global batch check, the log that also
goes to a file.
"""

from __future__ import annotations

import json
import math
import random
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

from ..data import collate
from ..errors import ConfigError, InputError
from ._checkpoint import latest_checkpoint, read_checkpoint, restore_rng, write_checkpoint, write_json
from ._config import differing_keys
from ._distributed import World
from ._plot import plot_curves

__all__ = ["Runtime", "accuracy_stderr", "collate", "lr_at", "prepare_out", "seed_everything"]

METRICS = "metrics.jsonl"
FINAL = "final.json"
CURVES = "curves.png"


class RunConfig(Protocol):
    """The options of a training config that the runtime reads (TrainConfig and TranslateConfig have them)."""

    @property
    def epochs(self) -> int: ...
    @property
    def batch_size(self) -> int: ...
    @property
    def lr(self) -> float: ...
    @property
    def weight_decay(self) -> float: ...
    @property
    def warmup(self) -> float: ...
    @property
    def clip_norm(self) -> float: ...
    @property
    def patience(self) -> int: ...
    @property
    def eval_every(self) -> int: ...
    @property
    def checkpoint_every(self) -> int: ...
    @property
    def max_steps(self) -> int: ...


# --- small pieces -------------------------------------------------------------------------------------------------


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


def snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    """A copy of ``model``'s weights that later steps do not change."""
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def adamw(model: nn.Module, config: RunConfig, is_embedding: Callable[[str], bool], fused: bool = False
          ) -> torch.optim.AdamW:
    """AdamW with weight decay on the matrices only: not on biases, norms, or the parameters ``is_embedding`` names."""
    def decays(name: str, p: nn.Parameter) -> bool:
        return p.dim() >= 2 and not is_embedding(name)

    decay = [p for n, p in model.named_parameters() if decays(n, p)]
    rest = [p for n, p in model.named_parameters() if not decays(n, p)]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": config.weight_decay}, {"params": rest, "weight_decay": 0.0}],
        lr=config.lr, fused=fused or None)


def distributed(model: nn.Module, w: World) -> nn.Module:
    """``model`` wrapped in DistributedDataParallel under ``torchrun``; itself in a single process."""
    if not w.distributed:
        return model
    from torch.nn.parallel import DistributedDataParallel

    return DistributedDataParallel(model, device_ids=[w.device.index] if w.device.type == "cuda" else None)


def _memory_error(exc: BaseException, batch: int, length: int, config: RunConfig) -> InputError | None:
    text = str(exc).lower()
    if isinstance(exc, torch.OutOfMemoryError) or "out of memory" in text or "can't allocate memory" in text:
        first = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
        return InputError(f"a batch of {batch} texts of up to {length} tokens does not fit in memory ({first}); "
                          f"lower --batch-size (now {config.batch_size}) or --max-length, or use a smaller model")
    return None


@contextmanager
def memory_guard(seqs: Sequence[list[int]], config: RunConfig) -> Iterator[None]:
    """Turn running out of memory on the batch ``seqs`` into an InputError that says what to lower."""
    try:
        yield
    except (RuntimeError, MemoryError) as exc:
        error = _memory_error(exc, len(seqs), max(map(len, seqs)), config)
        if error is None:
            raise
        raise error from None


def progress_bar(total: int, done: int, shown: bool) -> Any:
    """The tqdm bar of a run's steps, on stderr; ``shown`` False gives one that draws nothing."""
    from tqdm import tqdm

    return tqdm(total=total, initial=done, disable=not shown, unit="step", file=sys.stderr, mininterval=0.5,
                dynamic_ncols=True)


def append_line(path: Path, line: str) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")


def logger(path: Path, say: Callable[[str], None]) -> Callable[[str], None]:
    """``say`` that also appends each line to ``path``."""
    def log(text: str) -> None:
        say(text)
        append_line(path, text)
    return log


# --- the run ------------------------------------------------------------------------------------------------------


class Runtime:
    """One training run's moving parts that every task shares; a task's ``_Run`` subclasses it.

    The subclass's ``__init__`` calls ``super().__init__``, prepares its data, then :meth:`plan`, and sets
    ``optimizer``, ``net``, ``state`` (the run state a checkpoint saves: ``step``, ``epoch``, ``in_epoch``,
    ``best``, ``best_step``, ``bad``, ``stopped``, ``metrics_bytes``, ``sums`` and its own keys), ``best_state``
    and ``tokenizer_json``.  It implements :meth:`batch`, :meth:`train_step`, :meth:`evaluate`, :meth:`meta`,
    :meth:`save_model`, :meth:`load_model` and ``finish`` (called by :meth:`loop` at the end).
    """

    METRIC = "accuracy"  # the validation metric's name in the log line
    BEST_KEY = "valid_accuracy"  # ... and in the best model's metadata
    STOP = "  early stop"  # the log line's mark once the run stops
    BAR_ACCURACY, BAR_RATE = "acc", "samples_s"  # the progress bar's names of the step's accuracy and speed

    optimizer: torch.optim.Optimizer
    net: nn.Module  # the model, wrapped in DistributedDataParallel under torchrun
    state: dict[str, Any]
    best_state: dict[str, torch.Tensor]
    tokenizer_json: str
    steps_per_epoch: int
    total: int
    warmup: int

    def __init__(self, out: Path, w: World, config: RunConfig, run: dict[str, Any], model: nn.Module,
                 log: Callable[[str], None], progress: bool, log_file: Path | None = None) -> None:
        self.out, self.w, self.config, self.run = out, w, config, run
        self.model, self.log, self.progress = model, log, progress
        self.log_file = log_file  # where the validation lines also go when the progress bar shows them

    def plan(self, n_train: int) -> None:
        """Steps per epoch, steps in all and warm-up steps for a training split of ``n_train`` items."""
        c = self.config
        self.steps_per_epoch = n_train // c.batch_size
        total = c.epochs * self.steps_per_epoch
        self.total = min(total, c.max_steps) if c.max_steps else total
        self.warmup = round(c.warmup * self.total)

    # --- what a task fills in ---------------------------------------------------------------------------------

    def batch(self, epoch: int, index: int) -> list[int]:
        """The global batch ``index`` of ``epoch``: indices into the training split, fixed by the seed alone."""
        raise NotImplementedError

    def train_step(self, batch: list[int]) -> tuple[float, float, int | None]:
        """One optimizer step on ``batch``: ``(global mean loss, global accuracy, tokens predicted or None)``."""
        raise NotImplementedError

    def evaluate(self) -> tuple[float, float, int]:
        """``(loss, metric, n)`` on the validation split, over every rank."""
        raise NotImplementedError

    def meta(self, extra: dict[str, Any] | None = None) -> dict[str, str]:
        """The metadata written with the model (``extra``: its metrics)."""
        raise NotImplementedError

    def save_model(self, folder: Path, model: nn.Module, meta: dict[str, str]) -> None:
        raise NotImplementedError

    def load_model(self, folder: Path) -> tuple[nn.Module, dict[str, str]]:
        raise NotImplementedError

    def finish(self) -> dict[str, Any]:
        raise NotImplementedError

    def checkpoint_tensors(self) -> dict[str, torch.Tensor] | None:
        """More tensors for the checkpoint (the classifier's moving average); none by default."""
        return None

    def restore_tensors(self, tensors: dict[str, torch.Tensor]) -> None:
        """Take back what :meth:`checkpoint_tensors` saved."""

    def add_time(self, cpu_s: float, wall_s: float) -> None:
        """The time one step (with its validation) took; a task that reports it keeps it in ``state``."""

    # --- the loop ---------------------------------------------------------------------------------------------

    def loop(self) -> dict[str, Any]:
        """Train until the last step or an early stop, validating and checkpointing on the way; then ``finish``."""
        c, st = self.config, self.state
        bar = progress_bar(self.total, st["step"], self.w.main and self.progress)
        try:
            while st["step"] < self.total and not st["stopped"]:
                wall, cpu = time.perf_counter(), time.process_time()
                loss, acc, tokens = self.train_step(self.batch(st["epoch"], st["in_epoch"]))
                seconds = max(time.perf_counter() - wall, 1e-9)
                st["step"] += 1
                st["in_epoch"] += 1
                self.record_step(loss, acc, tokens, seconds, bar)
                evaluate = self.advance()
                if evaluate:
                    self.validate(bar)
                self.add_time(time.process_time() - cpu, time.perf_counter() - wall)
                if evaluate or st["step"] % c.checkpoint_every == 0 or st["stopped"]:
                    self.checkpoint()
        finally:
            bar.close()
        return self.finish()

    def record_step(self, loss: float, acc: float, tokens: int | None, seconds: float, bar: Any) -> None:
        """The training row of the step just taken, and the progress bar moved on."""
        c, st = self.config, self.state
        rate = c.batch_size / seconds
        row = {"split": "train", "step": st["step"], "epoch": st["epoch"] + 1, "loss": loss, "accuracy": acc,
               "lr": self.optimizer.param_groups[0]["lr"], "samples_per_s": round(rate, 1)}
        if tokens is not None:
            row["tokens_per_s"] = round(tokens / seconds, 1)
        self.record(row)
        bar.update(1)
        bar.set_postfix(**{"loss": f"{loss:.3f}", self.BAR_ACCURACY: f"{acc:.3f}", self.BAR_RATE: f"{rate:.0f}"})

    def advance(self) -> bool:
        """Move to the next epoch at the end of one; whether to validate after this step."""
        c, st = self.config, self.state
        evaluate = bool(c.eval_every) and st["step"] % c.eval_every == 0
        if st["in_epoch"] == self.steps_per_epoch:
            evaluate = evaluate or not c.eval_every
            st["epoch"], st["in_epoch"] = st["epoch"] + 1, 0
        return evaluate or st["step"] == self.total

    # --- pieces of a training step ----------------------------------------------------------------------------

    def set_lr(self) -> None:
        """The scheduled learning rate of the coming step (``step + 1``) in every param group."""
        for group in self.optimizer.param_groups:
            group["lr"] = lr_at(self.state["step"] + 1, self.total, self.warmup, self.config.lr)

    def optimizer_step(self) -> None:
        """Clip the gradient norm (when ``clip_norm``), step, and drop the gradients."""
        if self.config.clip_norm:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.clip_norm)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)

    def add_sums(self, loss: float, correct: float, n: float) -> None:
        """Add a step's global summed loss, correct count and count to the sums the next validation reports."""
        sums = self.state["sums"]
        sums[0], sums[1], sums[2] = sums[0] + loss, sums[1] + correct, sums[2] + n

    # --- validation and early stopping -----------------------------------------------------------------------

    def validate(self, bar: Any) -> None:
        """Evaluate, record the row, keep the best model, count validations without progress, log the line."""
        st, c = self.state, self.config
        loss, acc, n = self.evaluate()
        s = st["sums"]
        self.record({"split": "valid", "step": st["step"], "epoch": st["epoch"] + (st["in_epoch"] > 0),
                     "loss": loss, "accuracy": acc, "n": n,
                     "train_loss": s[0] / s[2] if s[2] else None, "train_accuracy": s[1] / s[2] if s[2] else None})
        st["sums"] = [0.0, 0.0, 0.0]
        better = self.better(acc, loss)
        if better:
            self.keep_best(acc, loss)
        else:
            st["bad"] += 1
            if c.patience and st["bad"] >= c.patience:
                st["stopped"] = True
        if self.reached_goal(acc):
            st["stopped"] = True
        self.say(f"step {st['step']}: valid loss {loss:.4f}, {self.METRIC} {acc:.4f} (n={n})"
                 f"{'  best so far' if better else ''}{self.STOP if st['stopped'] else ''}", bar)

    def better(self, acc: float, loss: float) -> bool:
        """Whether a validation of ``acc`` (and ``loss``) beats the best so far."""
        return self.state["best"] is None or acc > self.state["best"]

    def keep_best(self, acc: float, loss: float) -> None:
        """Remember the model as the best so far and write it (rank 0)."""
        st = self.state
        st["best"], st["best_step"], st["bad"] = acc, st["step"], 0
        self.best_state = snapshot(self.model)
        if self.w.main:
            self.save_model(self.out, self.model, self.meta({self.BEST_KEY: acc, "step": st["step"]}))

    def reached_goal(self, acc: float) -> bool:
        """Whether ``acc`` is good enough to stop at; never by default."""
        return False

    def say(self, line: str, bar: Any) -> None:
        """``line`` above the progress bar where it shows (and into the log file), else through ``log``."""
        if self.w.main and self.progress:
            bar.write(line)
            if self.log_file is not None:
                append_line(self.log_file, line)
        else:
            self.log(line)

    # --- files: metrics, checkpoints, resume, results ----------------------------------------------------------

    def record(self, row: dict[str, Any]) -> None:
        """Append ``row`` to metrics.jsonl (rank 0) and keep the file's length for a resume."""
        if not self.w.main:
            return
        with open(self.out / METRICS, "ab") as f:
            f.write((json.dumps(row) + "\n").encode("utf-8"))
            self.state["metrics_bytes"] = f.tell()

    def checkpoint(self) -> None:
        """Rank 0 writes a checkpoint of this step; every rank waits for it."""
        if self.w.main:
            write_checkpoint(self.out, self.state["step"], self.model, self.meta(), self.optimizer,
                             {**self.state, "run": self.run}, self.tokenizer_json, self.checkpoint_tensors(),
                             save_model=self.save_model)
        self.w.barrier()

    def restore(self, folder: Path) -> None:
        """Continue from the checkpoint ``folder``: weights, optimizer, run state, the best model so far, and
        metrics.jsonl cut back to the checkpoint; the RNGs come last, since loading a model draws from torch's."""
        ckpt = read_checkpoint(folder, self.load_model)
        self.model.load_state_dict(ckpt.model.state_dict())
        self.optimizer.load_state_dict(ckpt.optimizer)
        rng_info = ckpt.state.pop("rng")
        ckpt.state.pop("run", None)
        self.state = ckpt.state
        self.restore_tensors(ckpt.extra)
        if self.state["best"] is not None:
            best, _ = self.load_model(self.out)
            self.best_state = {k: v.detach().clone().to(self.best_state[k].dtype)
                               for k, v in best.state_dict().items()}
        if self.w.main and (self.out / METRICS).exists():  # drop the rows written after the last checkpoint
            with open(self.out / METRICS, "r+b") as f:
                f.truncate(self.state["metrics_bytes"])
        restore_rng(ckpt.rng, rng_info)
        self.log(f"resumed from {folder.name}: step {self.state['step']} of {self.total}, epoch "
                 f"{self.state['epoch'] + 1}, batch {self.state['in_epoch']} of {self.steps_per_epoch}")

    def publish(self, final: dict[str, Any], header: dict[str, Any], run_file: str, run_data: dict[str, Any],
                title: str) -> None:
        """Rank 0 writes the best model (``header`` as its metrics), final.json, tokenizer.json, ``run_file`` and
        the curves under ``title``; every rank waits for it."""
        if self.w.main:
            self.save_model(self.out, self.model, self.meta(header))
            write_json(self.out / FINAL, final)
            (self.out / "tokenizer.json").write_text(self.tokenizer_json, encoding="utf-8")
            write_json(self.out / run_file, run_data)
            rows = [json.loads(line) for line in (self.out / METRICS).read_text(encoding="utf-8").splitlines()]
            plot_curves(rows, self.out / CURVES, title)
        self.w.barrier()


# --- setting a run up ---------------------------------------------------------------------------------------------


def prepare_out(out: Path, resume: bool, run: dict[str, Any]) -> Path | None:
    """Refuse what would lose work before anything is written; the checkpoint to resume from, if any."""
    folder = latest_checkpoint(out) if out.is_dir() else None
    if resume and folder is None:
        raise InputError(f"--resume: {str(out)!r} holds no checkpoint to continue; run without --resume to start")
    if not resume and folder is not None:
        raise InputError(f"{str(out)!r} already holds a run (checkpoint {folder.name}); pass --resume to continue "
                         f"it, or choose another --out (nothing was changed)")
    if folder is not None:
        state_file = folder / "state.json"
        state = json.loads(state_file.read_text(encoding="utf-8")) if state_file.is_file() else {}
        saved = state.get("run")
        diffs = differing_keys(saved, run) if isinstance(saved, dict) else ["run (missing from the checkpoint)"]
        if diffs:
            raise ConfigError(f"cannot resume {str(out)!r} with other settings: {'; '.join(diffs)}; resume with the "
                              f"options it was started with, or start a new run with another --out")
    return folder


def check_global_batch(config: RunConfig, w: World) -> None:
    """The global batch must share out evenly over the processes."""
    if config.batch_size % w.size:
        raise ConfigError(f"batch_size={config.batch_size} is the global batch and must divide evenly over "
                          f"{w.size} processes; pass a multiple of {w.size}")


def check_splits(splits: Any, names: Sequence[str], where: str, more: str, unit: str, batch_size: int) -> None:
    """Refuse an empty split among ``names`` ("give more ``more``") and a training split of fewer than one batch
    (counted in ``unit``, e.g. "texts")."""
    for name in names:
        if len(getattr(splits, name)) == 0:
            raise InputError(f"the {name} split of {where} is empty; give more {more}")
    if len(splits.train) < batch_size:
        raise InputError(f"the training split has {len(splits.train)} {unit}, fewer than one batch "
                         f"(batch_size={batch_size}); lower --batch-size")


def make_out(out: Path, w: World) -> None:
    """Rank 0 creates the run's folder; every rank waits until it is there."""
    if w.main:
        out.mkdir(parents=True, exist_ok=True)
    w.barrier()
