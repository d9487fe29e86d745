"""The runtime every training task runs on, and what it asks of a task (:class:`Task`).

A task (the classifier's in :mod:`._classify_run`, the translator's in :mod:`._translate_run`) knows its data, its
model, its loss, its validation metric and its model files.  :class:`Runtime` knows the rest, the same for every
task: the epoch/step loop and its progress bar, the learning rate schedule (linear warm-up, then cosine decay),
AdamW, clipping, the moving average of the weights, ``metrics.jsonl`` (its length in bytes kept in the run state,
so a resume cuts off the rows a killed run wrote after its last checkpoint), ``train.log``, validation bookkeeping
(best so far, patience, goal, the log line), checkpoints every ``checkpoint_every`` steps and after each
validation, exact restore (weights, AdamW's moments, the run state, every RNG) and the barriers that keep the ranks
together.  :meth:`Runtime.loop` reads in one sitting.

The set-up every ``train_*`` function shares is :func:`start_run`, written once: the refusal to overwrite or to
resume with other settings (:func:`prepare_out`), joining the processes, the global batch check, then (through the
:class:`Opened` run it gives) the run's folder and log, and the :class:`Runtime` restored from the checkpoint.
"""

from __future__ import annotations

import json
import math
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

import numpy as np
import torch
from torch import nn

from .._progress import progress_bar as make_progress_bar
from ..errors import ConfigError, InputError
from ._checkpoint import latest_checkpoint, read_checkpoint, restore_rng, write_checkpoint, write_json
from ._config import RunConfig, differing_keys
from ._curves import plot_curves
from ._distributed import World, world

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["Judged", "Opened", "Result", "Runtime", "Start", "StepLoss", "Task", "accuracy_stderr", "lr_at",
           "prepare_out", "seed_everything", "start_run"]

METRICS = "metrics.jsonl"
FINAL = "final.json"
CURVES = "curves.png"
LOG = "train.log"
ESTIMATE_AFTER = 5  # steps timed before the expected duration of the run is said


# --- what a task is ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Judged:
    """How a task's validation metric is named and compared (higher is better)."""

    metric: str  # its name in the log line: "accuracy", "exact match"
    key: str  # its key in the best model's header: "valid_accuracy"
    unit: str  # what a batch holds: "texts", "pairs" (the progress bar shows units per second)
    per_token: bool = False  # the step's loss and accuracy are per target token (rows also get tokens_per_s)
    ties_by_loss: bool = False  # an equal metric with a lower validation loss also counts as better
    goal: float = 0.0  # stop once the validation metric reaches this; 0 = never
    shown_sign: float = 1.0  # the log prints the metric times this (-1: a language model's -bits/char as bits/char)


@dataclass(frozen=True)
class StepLoss:
    """One rank's forward pass over its share of a batch."""

    objective: torch.Tensor  # what to differentiate; the runtime averages the ranks' gradients (sums: sum_gradients)
    loss: float  # the summed loss over this rank's share (the runtime sums the ranks)
    correct: float  # items (or target tokens) predicted right
    count: float  # items (or target tokens) in this rank's share


@dataclass(frozen=True)
class Result:
    """What a task found at the end, for the runtime to write."""

    final: dict[str, Any]  # final.json
    header: dict[str, Any]  # the metrics in the best model's header
    run_file: str  # the file of the run's options ("config.json", "run.json") ...
    run_data: dict[str, Any]  # ... and what it holds
    title: str  # the learning curves' title


class Task(Protocol):
    """What the runtime asks of a training task.  A new task is one file that implements this and a ``train_*``
    function that builds it, hands it to :class:`Runtime` and calls :meth:`Runtime.loop`."""

    @property
    def model(self) -> nn.Module:
        """The bare model (under torchrun the runtime averages its gradients over the ranks)."""
        ...

    @property
    def judged(self) -> Judged: ...

    @property
    def n_train(self) -> int:
        """Items in the training split."""
        ...

    @property
    def tokenizer_json(self) -> str:
        """The tokenizer, as written beside the model and into each checkpoint."""
        ...

    @property
    def header(self) -> dict[str, str]:
        """More entries for the model file's header (the classifier's label names), beside tokenizer/run/metrics."""
        ...

    def batch(self, epoch: int, index: int) -> list[int]:
        """The global batch ``index`` of ``epoch``: indices into the training split, fixed by the seed alone."""
        ...

    def loss(self, net: nn.Module, items: list[int]) -> StepLoss:
        """The forward pass of ``net`` over ``items``, this rank's share of a batch."""
        ...

    def evaluate(self) -> tuple[float, float, int]:
        """``(loss, metric, n)`` on the validation split, over every rank."""
        ...

    def save(self, folder: Path, model: nn.Module, meta: dict[str, str]) -> None:
        """Write ``model`` with ``meta`` in its header into ``folder`` (the run's, or a checkpoint's)."""
        ...

    def load(self, folder: Path) -> tuple[nn.Module, dict[str, str]]:
        """The model :meth:`save` wrote into ``folder``, with its header."""
        ...

    def finish(self, state: dict[str, Any]) -> Result:
        """Test the best model (already in :attr:`model`) and say what the run found."""
        ...

    def probe(self) -> dict[str, Any]:
        """More figures for each validation row, measured right after :meth:`evaluate` (the language model's head
        scores); ``{}`` for none."""
        ...


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


def schedule(config: RunConfig, n_train: int) -> tuple[int, int, int]:
    """``(steps per epoch, steps in all, warm-up steps)`` for a training split of ``n_train`` items."""
    per_epoch = n_train // config.batch_size
    total = config.epochs * per_epoch
    total = min(total, config.max_steps) if config.max_steps else total
    return per_epoch, total, round(config.warmup * total)


def snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    """A copy of ``model``'s weights that later steps do not change."""
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def adamw(model: nn.Module, config: RunConfig) -> torch.optim.AdamW:
    """AdamW with weight decay on the matrices only: not on biases, norms, or embeddings (names with "embed")."""
    def decays(name: str, p: nn.Parameter) -> bool:
        return p.dim() >= 2 and "embed" not in name

    decay = [p for n, p in model.named_parameters() if decays(n, p)]
    rest = [p for n, p in model.named_parameters() if not decays(n, p)]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": config.weight_decay}, {"params": rest, "weight_decay": 0.0}],
        lr=config.lr, fused=config.fused or None)


@contextmanager
def memory_guard(items: int, unit: str, config: RunConfig) -> Iterator[None]:
    """Turn running out of memory on a share of ``items`` into an InputError that says what to lower."""
    try:
        yield
    except (RuntimeError, MemoryError) as exc:
        text = str(exc).lower()
        if not (isinstance(exc, torch.OutOfMemoryError) or "out of memory" in text
                or "can't allocate memory" in text):
            raise
        first = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
        raise InputError(f"a batch of {items} {unit} does not fit in memory ({first}); lower --batch-size (now "
                         f"{config.batch_size}) or --max-length, or use a smaller model") from None


def progress_bar(total: int, done: int, shown: bool) -> Any:
    """The bar of a run's steps, on stderr (tqdm's on a terminal, a plain line every 5% elsewhere:
    :func:`attnlab._progress.progress_bar`); ``shown`` False gives one that draws nothing."""
    return make_progress_bar(total, initial=done, shown=shown, unit="step", file=sys.stderr)


def append_line(path: Path, line: str) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")


def logger(path: Path, say: Callable[[str], None]) -> Callable[[str], None]:
    """``say`` that also appends each line to ``path``."""
    def log(text: str) -> None:
        say(text)
        append_line(path, text)
    return log


def duration(seconds: float) -> str:
    """``seconds`` as a person reads it: "45 s", "12 min", "2 h 05 min"."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 120 else f"{minutes // 60} h {minutes % 60:02d} min"


# --- the run ------------------------------------------------------------------------------------------------------


class Runtime:
    """One training run of ``task``: build it (after the task has its data and model), :meth:`restore` it from a
    checkpoint or not, then :meth:`loop`."""

    def __init__(self, task: Task, config: RunConfig, run: dict[str, Any], out: Path, w: World,
                 log: Callable[[str], None], progress: bool, *, sum_gradients: bool = False) -> None:
        self.task, self.config, self.run, self.out, self.w = task, config, run, out, w
        # False: data parallel, each rank a share of the batch, gradients averaged; True: sequence parallel, every
        # rank the whole batch and its part of each sequence, its objective already over all ranks' tokens: summed
        self.sum_gradients = sum_gradients
        self.log, self.progress = log, progress  # log: rank 0's lines, to stdout and train.log
        self.model = task.model
        self.steps_per_epoch, self.total, self.warmup = schedule(config, task.n_train)
        self.optimizer = adamw(self.model, config)
        w.share_weights(self.model)  # under torchrun every rank starts from rank 0's weights
        self.state: dict[str, Any] = {  # the run state a checkpoint saves
            "step": 0, "epoch": 0, "in_epoch": 0, "best": None, "best_loss": None, "best_step": 0, "bad": 0,
            "stopped": False, "metrics_bytes": 0, "sums": [0.0, 0.0, 0.0], "cpu_s": 0.0, "wall_s": 0.0}
        self.ema = snapshot_parameters(self.model) if config.ema else None  # the moving average of the weights
        self.best_state = snapshot(self.model)
        self.timed: list[float] = []  # this process's first step times, for the expected duration
        self.resumed_at: int | None = None  # the step this process resumed from (None: it started the run)
        self.step_started = time.process_time()  # the CPU clock at the start of the current step

    # --- the loop ---------------------------------------------------------------------------------------------

    def loop(self) -> dict[str, Any]:
        """Train until the last step or a stop, validating and checkpointing on the way; then test and write."""
        c, st = self.config, self.state
        bar = progress_bar(self.total, st["step"], self.w.main and self.progress)
        try:
            while st["step"] < self.total and not st["stopped"]:
                wall, cpu = time.perf_counter(), time.process_time()
                self.step_started = cpu
                loss, acc, n = self.train_step(self.task.batch(st["epoch"], st["in_epoch"]))
                seconds = max(time.perf_counter() - wall, 1e-9)
                st["step"] += 1
                st["in_epoch"] += 1
                self.record_step(loss, acc, n, seconds, bar)
                self.expect(seconds, bar)
                validate = self.advance()
                if validate:
                    self.validate(bar)
                st["cpu_s"] += time.process_time() - cpu
                st["wall_s"] += time.perf_counter() - wall
                if validate or st["step"] % c.checkpoint_every == 0 or st["stopped"]:
                    self.checkpoint()
        finally:
            bar.close()
        self.model.load_state_dict(self.best_state)
        result = self.task.finish(self.state)
        self.publish(result)
        return result.final

    def train_step(self, batch: list[int]) -> tuple[float, float, float]:
        """One optimizer step on ``batch``: ``(global mean loss, global accuracy, global count)``."""
        w = self.w
        items = batch if self.sum_gradients else batch[w.rank:: w.size]  # this rank's share
        for group in self.optimizer.param_groups:  # the scheduled rate of the coming step
            group["lr"] = lr_at(self.state["step"] + 1, self.total, self.warmup, self.config.lr)
        with memory_guard(len(items), self.task.judged.unit, self.config):
            step = self.task.loss(self.model, items)
            step.objective.backward()
        self.w.average_gradients(self.model.parameters(), mean=not self.sum_gradients)
        if self.config.clip_norm:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.clip_norm)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        if self.ema is not None:
            self.update_ema(self.state["step"] + 1)
        loss, correct, n = w.all_sum([step.loss, step.correct, step.count])
        sums = self.state["sums"]  # what the next validation row reports as the training figures
        sums[0], sums[1], sums[2] = sums[0] + loss, sums[1] + correct, sums[2] + n
        return loss / n, correct / n, n

    def record_step(self, loss: float, acc: float, n: float, seconds: float, bar: Any) -> None:
        """The training row of the step just taken, and the progress bar moved on."""
        c, st, judged = self.config, self.state, self.task.judged
        rate = c.batch_size / seconds
        row = {"split": "train", "step": st["step"], "epoch": st["epoch"] + 1, "loss": loss, "accuracy": acc,
               "lr": self.optimizer.param_groups[0]["lr"], "samples_per_s": round(rate, 1)}
        if judged.per_token:
            row["tokens_per_s"] = round(int(n) / seconds, 1)
        self.record(row)
        bar.set_postfix(**{"loss": f"{loss:.3f}", "tok_acc" if judged.per_token else "acc": f"{acc:.3f}",
                           f"{judged.unit}_s": f"{rate:.0f}"}, refresh=False)
        bar.update(1)  # after the figures, so a line printed by this step carries them

    def expect(self, seconds: float, bar: Any) -> None:
        """After the first few steps of this process, say how long the steps left will take."""
        self.timed.append(seconds)
        left = self.total - self.state["step"]
        if len(self.timed) == ESTIMATE_AFTER and left > 0:
            per_step = statistics.median(self.timed)
            self.say(f"expected time: about {duration(per_step * left)} for the {left} steps left ({per_step:.3g} s "
                     f"a step over the first {ESTIMATE_AFTER}; validations add to it)", bar)

    def advance(self) -> bool:
        """Move to the next epoch at the end of one; whether to validate after this step."""
        c, st = self.config, self.state
        evaluate = bool(c.eval_every) and st["step"] % c.eval_every == 0
        if st["in_epoch"] == self.steps_per_epoch:
            evaluate = evaluate or not c.eval_every
            st["epoch"], st["in_epoch"] = st["epoch"] + 1, 0
        return evaluate or st["step"] == self.total

    # --- the moving average of the weights ---------------------------------------------------------------------

    @torch.no_grad()
    def update_ema(self, step: int) -> None:
        """``ema <- d * ema + (1 - d) * weights`` with ``d = min(ema, (1 + step) / (10 + step))`` (a short start)."""
        assert self.ema is not None
        decay = min(self.config.ema, (1 + step) / (10 + step))
        for name, p in self.model.named_parameters():
            self.ema[name].lerp_(p.detach(), 1 - decay)

    @contextmanager
    def averaged(self) -> Iterator[None]:
        """The moving average in the model's place (when there is one), the live weights back afterwards."""
        self.swap_ema()
        try:
            yield
        finally:
            self.swap_ema()

    @torch.no_grad()
    def swap_ema(self) -> None:
        if self.ema is None:
            return
        for name, p in self.model.named_parameters():
            live = p.detach().clone()
            p.copy_(self.ema[name])
            self.ema[name] = live

    # --- validation and stopping ------------------------------------------------------------------------------

    def validate(self, bar: Any) -> None:
        """Evaluate (the moving average, when there is one), record the row, keep the best model, count validations
        without progress, stop at the goal, log the line."""
        st, c, judged = self.state, self.config, self.task.judged
        with self.averaged():
            loss, metric, n = self.task.evaluate()
            s = st["sums"]
            self.record({"split": "valid", "step": st["step"], "epoch": st["epoch"] + (st["in_epoch"] > 0),
                         "loss": loss, "accuracy": metric, "n": n, "train_loss": s[0] / s[2] if s[2] else None,
                         "train_accuracy": s[1] / s[2] if s[2] else None,
                         "cpu_s": round(st["cpu_s"] + time.process_time() - self.step_started, 3),
                         **self.task.probe()})
            st["sums"] = [0.0, 0.0, 0.0]
            best = st["best"]
            better = best is None or metric > best or (judged.ties_by_loss and metric == best
                                                       and loss < st["best_loss"])
            if better:
                st["best"], st["best_loss"], st["best_step"], st["bad"] = metric, loss, st["step"], 0
                self.best_state = snapshot(self.model)
                if self.w.main:
                    self.task.save(self.out, self.model, self.meta({judged.key: metric, "step": st["step"]}))
            else:
                st["bad"] += 1
        mark = ""
        if judged.goal and metric >= judged.goal:
            st["stopped"], mark = True, f"  stop: reached {judged.goal:g}"
        elif not better and c.patience and st["bad"] >= c.patience:
            st["stopped"], mark = True, "  early stop"
        self.say(f"step {st['step']}: valid loss {loss:.4f}, {judged.metric} {judged.shown_sign * metric:.4f} (n={n})"
                 f"{'  best so far' if better else ''}{mark}", bar)

    def say(self, line: str, bar: Any) -> None:
        """``line`` into the log, above the progress bar where it shows."""
        if self.w.main and self.progress:
            bar.write(line)
            append_line(self.out / LOG, line)
        else:
            self.log(line)

    # --- files: metrics, checkpoints, resume, results ----------------------------------------------------------

    def meta(self, metrics: dict[str, Any] | None = None) -> dict[str, str]:
        """The header written with the model: its tokenizer, the task's entries, the run and ``metrics``."""
        return {"tokenizer": self.task.tokenizer_json, **self.task.header, "run": json.dumps(self.run),
                "metrics": json.dumps(metrics or {})}

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
            ema = {f"ema.{n}": t for n, t in self.ema.items()} if self.ema is not None else None
            write_checkpoint(self.out, self.state["step"], self.model, self.meta(), self.optimizer,
                             {**self.state, "run": self.run}, self.task.tokenizer_json, self.task.save, ema)
        self.w.barrier()

    def restore(self, folder: Path) -> None:
        """Continue from the checkpoint ``folder``: weights, optimizer, run state, the moving average, the best model
        so far, and metrics.jsonl cut back to the checkpoint; the RNGs come last, since loading a model draws from
        torch's."""
        ckpt = read_checkpoint(folder, self.task.load)
        self.model.load_state_dict(ckpt.model.state_dict())
        self.optimizer.load_state_dict(ckpt.optimizer)
        rng_info = ckpt.state.pop("rng")
        ckpt.state.pop("run", None)
        self.state.update(ckpt.state)
        if self.ema is not None:
            self.ema = {n: ckpt.extra[f"ema.{n}"].to(p.device) for n, p in self.model.named_parameters()}
        if self.state["best"] is not None:
            best, _ = self.task.load(self.out)
            self.best_state = {k: v.detach().clone().to(self.best_state[k].dtype)
                               for k, v in best.state_dict().items()}
        if self.w.main and (self.out / METRICS).exists():  # drop the rows written after the last checkpoint
            with open(self.out / METRICS, "r+b") as f:
                f.truncate(self.state["metrics_bytes"])
        restore_rng(ckpt.rng, rng_info)
        self.resumed_at = self.state["step"]
        self.log(f"resumed from {folder.name}: step {self.state['step']} of {self.total}, epoch "
                 f"{self.state['epoch'] + 1}, batch {self.state['in_epoch']} of {self.steps_per_epoch}")

    def publish(self, result: Result) -> None:
        """Rank 0 writes the best model (with ``result.header``), final.json, tokenizer.json, the run's file and
        the curves; every rank waits for it."""
        if self.w.main:
            self.task.save(self.out, self.model, self.meta(result.header))
            write_json(self.out / FINAL, result.final)
            (self.out / "tokenizer.json").write_text(self.task.tokenizer_json, encoding="utf-8")
            write_json(self.out / result.run_file, result.run_data)
            rows = [json.loads(line) for line in (self.out / METRICS).read_text(encoding="utf-8").splitlines()]
            plot_curves(rows, self.out / CURVES, result.title)
        self.w.barrier()


def snapshot_parameters(model: nn.Module) -> dict[str, torch.Tensor]:
    """A copy of ``model``'s parameters (not its buffers), the start of a moving average."""
    return {n: p.detach().clone() for n, p in model.named_parameters()}


# --- setting a run up ---------------------------------------------------------------------------------------------


class Start(TypedDict, total=False):
    """How a run starts, whatever the task: the keyword arguments every ``train_*`` function takes beside its own."""

    resume: bool  # continue from out/checkpoints/latest; the settings must equal those it was started with
    device: str | None  # "cpu" or "cuda" (default: cuda when available)
    log: Callable[[str], None]  # where rank 0 says its lines (they also go into train.log); default print
    progress: bool  # the progress bar; default True


@dataclass
class Opened:
    """A run being set up (:func:`start_run`): its folder checked, its processes joined.  The task builds its data
    and model, then :meth:`open_log` (the first write) and :meth:`runtime`."""

    out: Path
    run: dict[str, Any]  # the run's options as JSON holds them: what a resume must agree with
    config: RunConfig
    w: World
    checkpoint: Path | None  # the checkpoint to resume from; None for a new run
    log: Callable[[str], None]
    progress: bool
    say: Callable[[str], None] = field(default=lambda _: None)  # rank 0's lines, once the log is open

    def open_log(self) -> Callable[[str], None]:
        """Create the run's folder and log (after the data and model are built, so that a refusal on the way
        writes nothing); this rank's log function (:func:`open_log`)."""
        self.say = open_log(self.out, self.w, self.checkpoint is None, self.log)
        return self.say

    def runtime(self, task: Task, *, sum_gradients: bool = False) -> Runtime:
        """The :class:`Runtime` of ``task`` (its checkpoints record :attr:`run`), restored from the checkpoint when
        resuming."""
        runtime = Runtime(task, self.config, self.run, self.out, self.w, self.say, self.progress,
                          sum_gradients=sum_gradients)
        if self.checkpoint is not None:
            runtime.restore(self.checkpoint)
        return runtime


@contextmanager
def start_run(out: str | os.PathLike[str], run: dict[str, Any], config: RunConfig, *, whole_batch: bool = False,
              **start: Unpack[Start]) -> Iterator[Opened]:
    """The start every ``train_*`` function shares: refuse what would lose work before anything is written
    (:func:`prepare_out`: an ``out`` that holds a run without ``resume``, a resume with other options than ``run``),
    join the processes (:func:`~._distributed.world`), check the global batch shares out over them (not with
    ``whole_batch``, where every rank takes the whole batch), and leave them cleanly at the end."""
    out = Path(out)
    run = json.loads(json.dumps(run))  # as a checkpoint records it (tuples are lists)
    checkpoint = prepare_out(out, start.get("resume", False), run, type(config))
    w = world(start.get("device"))
    try:
        if not whole_batch:
            check_global_batch(config, w)
        yield Opened(out, run, config, w, checkpoint, start.get("log", print), start.get("progress", True))
    finally:
        w.close()


def prepare_out(out: Path, resume: bool, run: dict[str, Any], config: type[RunConfig] = RunConfig) -> Path | None:
    """Refuse what would lose work before anything is written; the checkpoint to resume from, if any (its saved
    ``train`` options are read without the keys ``config`` retired)."""
    folder = latest_checkpoint(out) if out.is_dir() else None
    if resume and folder is None:
        raise InputError(f"--resume: {str(out)!r} holds no checkpoint to continue; run without --resume to start")
    if not resume and folder is not None:
        raise InputError(f"{str(out)!r} already holds a run (checkpoint {folder.name}); pass --resume to continue "
                         f"it, or choose another --out (nothing was changed)")
    if folder is not None:
        saved = saved_run(out)
        if saved is not None and isinstance(saved.get("train"), dict):
            saved = {**saved, "train": config.retire(saved["train"])}
        diffs = differing_keys(saved, run) if saved is not None else ["run (missing from the checkpoint)"]
        if diffs:
            raise ConfigError(f"cannot resume {str(out)!r} with other settings: {'; '.join(diffs)}; resume with the "
                              f"options it was started with, or start a new run with another --out")
    return folder


def saved_run(out: Path) -> dict[str, Any] | None:
    """The options the run in ``out`` was started with, from its newest checkpoint; None without one."""
    folder = latest_checkpoint(out) if out.is_dir() else None
    state_file = folder / "state.json" if folder is not None else None
    if state_file is None or not state_file.is_file():
        return None
    saved = json.loads(state_file.read_text(encoding="utf-8")).get("run")
    return saved if isinstance(saved, dict) else None


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


def open_log(out: Path, w: World, fresh: bool, say: Callable[[str], None]) -> Callable[[str], None]:
    """Rank 0 creates the run's folder (every rank waits for it) and, on a new run, an empty metrics.jsonl and
    train.log; the log function of this rank: rank 0 says a line and appends it to train.log, the others are
    silent."""
    if w.main:
        out.mkdir(parents=True, exist_ok=True)
        if fresh:
            (out / METRICS).write_bytes(b"")
            (out / LOG).write_text("", encoding="utf-8")
    w.barrier()
    return logger(out / LOG, say) if w.main else (lambda _: None)
