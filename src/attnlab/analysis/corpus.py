"""Per-head attention metrics over a whole corpus, reduced batch by batch to sums (Clark et al. 2019, Sec. 3).

Letters: B batch, H heads, S tokens (padded length of the batch), M captured modules.

A corpus is a text file with one text per line.  Each batch of lines is tokenised (padded to its
longest text), run through the model under :func:`attnlab.capture`, and every captured self-attention
record ``(B, H, S, S)`` is reduced at once to per-head sums over its real (not padded) query tokens:
the metrics are those of a single text, the one table :data:`attnlab.analysis.METRICS` with its special
tokens (:mod:`attnlab.functional.head_metrics`), and the sums are a :class:`~attnlab.analysis.HeadSums`
(a total and a count per metric and head; a query where a metric is undefined, such as the first token's
``previous``, is in neither).  So a one-line corpus gives exactly the numbers of ``attnlab analyze TEXT``
on that line, nothing ``n x n`` outlives its batch, and the means are the totals over the counts.  Under
``torchrun`` (or any initialised ``torch.distributed`` group) rank ``r`` of ``W`` takes the texts ``i``
with ``i % W == r`` and the sums are all-reduced (gloo on the CPU), so every rank returns the corpus totals.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch import Tensor, nn

from .._io import not_utf8
from .._process_group import join_process_group
from .._progress import progress_bar
from ..capturing import capture
from ..errors import CaptureError, InputError
from ..functional.head_metrics import Keys, per_query
from .metrics import METRICS as _TABLE
from .metrics import HeadSums

__all__ = ["METRICS", "CorpusMetrics", "corpus_metrics", "head_sums"]

METRICS = tuple(_TABLE)  # the names of the metrics a corpus reduces: every metric of the one table


@dataclass(frozen=True)
class CorpusMetrics:
    """Per-head sums of :data:`METRICS` over every real query token of a corpus."""

    names: tuple[str, ...]  # captured attention modules in call order: the rows of every sum
    sums: HeadSums  # metric -> (modules, heads) totals and counts over the query tokens where it is defined
    rows: np.ndarray  # (modules,) float64: real query tokens per module
    texts: int  # texts (non-empty lines) in the corpus
    processes: int = 1  # processes (torch.distributed ranks) the corpus was shared between

    def means(self) -> dict[str, np.ndarray]:
        """metric -> (modules, heads): the average over the query tokens where the metric is defined."""
        return self.sums.means()

    def to_json(self, model: str, corpus: str) -> dict[str, Any]:
        """``corpus.json``: the model and corpus names, the counts, and every metric's per-head means."""
        return {"model": model, "corpus": corpus, "texts": self.texts, "processes": self.processes,
                "modules": list(self.names), "query_tokens": self.rows.tolist(),
                "means": {m: v.tolist() for m, v in self.means().items()}}

    def table(self, model: str) -> str:
        """What ``analyze --corpus`` prints: a line of counts, then each layer's mean over its heads per metric."""
        means = self.means()
        lines = [f"{model} over {self.texts} texts ({int(self.rows.sum())} query tokens, {self.processes} "
                 f"process{'es' if self.processes > 1 else ''}): per-layer mean over heads",
                 "layer  " + "  ".join(f"{m:>14}" for m in means)]
        for i in range(len(self.names)):
            lines.append(f"{i:>5}  " + "  ".join(f"{float(v[i].mean()):14.4f}" for v in means.values()))
        return "\n".join(lines)


def head_sums(weights: Tensor, real: Tensor, tokens: Sequence[Sequence[str]], causal: bool = False) -> HeadSums:
    """The sums of every metric over the real query rows of one module's batch, per head: ``(1, H)`` totals and
    counts.

    ``weights`` ``(B, H, S, S)``; ``real`` ``(B, S)`` bool, True for tokens that are not padding (right padding:
    real tokens first); ``tokens`` the B token lists (S each, padding included) of the batch.
    """
    values = per_query(weights.float(), Keys(causal, real.sum(-1), tokens))  # name -> (B, H, S), NaN: padding
    return HeadSums().add({m: v.transpose(0, 1)[None].numpy() for m, v in values.items()})  # (1, H, B, S) each


def corpus_metrics(
    model: nn.Module,
    tokenizer: Any,
    path: str | os.PathLike[str],
    *,
    batch_size: int = 32,
    max_length: int | None = None,
    progress: bool = True,
) -> CorpusMetrics:
    """Per-head metrics of ``model`` over the texts of ``path`` (one per line; blank lines skipped).

    Args:
        model: a Hugging Face transformers model (called as ``model(input_ids=..., attention_mask=...)``);
            its self-attention (or causal self-attention) records are reduced.
        tokenizer: its tokenizer (pads to the right, marks special tokens).
        path: the corpus file, UTF-8.
        batch_size: texts per forward pass.
        max_length: truncate texts to this many tokens; None = the tokenizer's limit.
        progress: a progress bar on stderr (rank 0 only; a plain line every 5% off a terminal).

    Runs unchanged under ``torchrun``: with ``WORLD_SIZE > 1`` in the environment it joins (or starts, with
    gloo) the process group, processes its share of the texts and all-reduces the sums.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InputError(f"batch_size must be a positive integer, got {batch_size!r}")
    path = Path(path)
    total = _count_texts(path)
    rank, world, started = join_process_group()
    try:
        if total < world:
            raise InputError(f"{str(path)!r} holds {total} texts for {world} processes; give at least one per process")
        sums, rows, names = _reduce_shard(model, tokenizer, path, rank, world, total, batch_size, max_length, progress)
        if world > 1:
            sums, rows = _all_reduce(sums, rows)
    finally:
        if started:
            dist.destroy_process_group()
    return CorpusMetrics(tuple(names), sums, rows, total, world)


def _count_texts(path: Path) -> int:
    if not path.is_file():
        raise InputError(
            f"corpus file {str(path)!r} does not exist or is not a file; give a text file, one text a line"
        )
    try:
        n = sum(1 for _ in _texts(path))  # the whole file is read once before any batch: bad bytes stop it here
    except UnicodeDecodeError:
        raise not_utf8(path, f"corpus file {str(path)!r}") from None
    if not n:
        raise InputError(f"corpus file {str(path)!r} is empty (no non-blank line); give a file with one text a line")
    return n


def _texts(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield line.rstrip("\r\n")


def _batches(path: Path, rank: int, world: int, size: int) -> Iterator[list[str]]:
    batch: list[str] = []
    for i, text in enumerate(_texts(path)):
        if i % world == rank:
            batch.append(text)
            if len(batch) == size:
                yield batch
                batch = []
    if batch:
        yield batch


def _reduce_shard(
    model: nn.Module, tokenizer: Any, path: Path, rank: int, world: int, total: int, batch_size: int,
    max_length: int | None, progress: bool,
) -> tuple[HeadSums, np.ndarray, list[str]]:
    names: list[str] = []
    sums: list[HeadSums] = []  # one per module, (1, H) each
    rows = np.zeros(0)
    mine = len(range(rank, total, world))
    device = next(iter(model.parameters()), torch.empty(0)).device
    with progress_bar(mine, unit="text", shown=progress and rank == 0, desc="corpus metrics") as bar:
        for texts in _batches(path, rank, world, batch_size):
            enc = tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
            real = enc["attention_mask"].bool()  # (B, S)
            tokens = [tokenizer.convert_ids_to_tokens(ids) for ids in enc["input_ids"].tolist()]
            with torch.no_grad(), capture(model, kinds=("self", "causal")) as trace:
                model(input_ids=enc["input_ids"].to(device), attention_mask=enc["attention_mask"].to(device))
            records = [r for r in trace.records if r.weights.shape[-1] == r.weights.shape[-2] == real.shape[1]]
            if not records:
                raise CaptureError(f"{type(model).__name__} recorded no self-attention over its input tokens")
            if not names:
                names = [r.name for r in records]
                sums = [HeadSums() for _ in records]
                rows = np.zeros(len(records))
            elif [r.name for r in records] != names:
                raise CaptureError(f"the model's attention modules changed between batches: {names} then "
                                   f"{[r.name for r in records]}")
            for i, r in enumerate(records):
                sums[i] = sums[i].merge(head_sums(r.weights, real, tokens, causal=r.kind == "causal"))
            rows += float(real.sum())
            bar.update(len(texts))
    heads = {s.total[METRICS[0]].shape for s in sums}
    if len(heads) != 1:
        raise CaptureError(f"the attention modules have different numbers of heads {sorted(heads)}; a grid needs one")
    stacked = HeadSums({m: np.concatenate([s.total[m] for s in sums]) for m in METRICS},
                       {m: np.concatenate([s.count[m] for s in sums]) for m in METRICS})  # (M, H) each
    return stacked, rows, names


def _all_reduce(sums: HeadSums, rows: np.ndarray) -> tuple[HeadSums, np.ndarray]:
    """Sum every rank's totals, counts and rows (one float64 all-reduce)."""
    parts = [sums.total[m] for m in METRICS] + [sums.count[m] for m in METRICS] + [rows]
    flat = torch.from_numpy(np.concatenate([p.ravel() for p in parts]))  # (2 * metrics * M * H + M,)
    dist.all_reduce(flat, op=dist.ReduceOp.SUM)
    shape, n = sums.total[METRICS[0]].shape, sums.total[METRICS[0]].size
    out = flat.numpy()
    total = {m: out[i * n : (i + 1) * n].reshape(shape) for i, m in enumerate(METRICS)}
    count = {m: out[(len(METRICS) + i) * n : (len(METRICS) + i + 1) * n].reshape(shape) for i, m in enumerate(METRICS)}
    return HeadSums(total, count), out[2 * len(METRICS) * n :]
