"""The translator's training task: source/target pairs in length-bucketed batches, the token cross-entropy over the
global batch, validation by greedy exact match (ties broken by the loss); :func:`train_translator` builds it and runs
it on the shared :class:`~._runtime.Runtime` (progress bar, metrics.jsonl, train.log, curves, AdamW with warm-up and
cosine decay, clipping, early stopping, atomic checkpoints, exact resume, data parallelism under ``torchrun``).

Exact resume works as in :mod:`._classify_run`: the batches of epoch ``e`` are fixed by a generator seeded with
``(seed, e)``, so the position in the data is ``(epoch, batch)``; every RNG state, AdamW's moments and the step are
in each checkpoint.  Batches are length-bucketed: the shuffled pairs are cut into windows of ``bucket`` batches,
each window is sorted by length and cut into batches, and the batches are shuffled, so a batch pads little.

Under ``torchrun`` each rank takes every ``size``-th pair of each global batch; the loss is the sum over the
global batch's target tokens divided by their global count, so the gradient equals one process's.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F
from torch import nn

from .. import _validate as check
from ..data import Pairs, PairSplits, collate
from ..errors import ConfigError
from ._config import TranslateTrainConfig
from ._distributed import World
from ._runtime import Judged, Result, Start, StepLoss, accuracy_stderr, check_splits, seed_everything, start_run

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["ARCHITECTURES", "TranslateTask", "TranslateTrainConfig", "build_translator", "exact_match",
           "train_translator"]

ARCHITECTURES = ("bahdanau", "luong", "transformer")
RUN = "run.json"
FIXED = ("src_vocab", "tgt_vocab", "max_length", "pad_id", "bos_id", "eos_id", "attention")
SHOWN_ERRORS = 20  # wrong translations listed per test set in final.json


# --- data and model -----------------------------------------------------------------------------------------


def load_task(data: str | os.PathLike[str] | PairSplits, options: dict[str, Any] | None = None) -> PairSplits:
    """The splits of ``data``: "dates" / "sentences" (generated; ``options`` are make_dates's / make_sentences's
    keyword arguments, e.g. ``n_train``), a TSV file of pairs, or a :class:`PairSplits` itself."""
    from ..data import load_pairs

    if isinstance(data, PairSplits):
        return data
    return load_pairs(str(data), **dict(options or {}))


def _model_fields(arch: str) -> dict[str, Any]:
    """The defaults of the model config of ``arch``, without the fields the data fix."""
    from ..models import Seq2SeqConfig, TransformerSeq2SeqConfig

    cls = TransformerSeq2SeqConfig if arch == "transformer" else Seq2SeqConfig
    return {f.name: f.default for f in dataclasses.fields(cls)
            if f.name not in FIXED and f.default is not dataclasses.MISSING}


def build_translator(arch: str, options: dict[str, Any], src_vocab: int, tgt_vocab: int, max_length: int
                     ) -> nn.Module:
    """A fresh Seq2Seq (``arch`` "bahdanau" or "luong") or TransformerSeq2Seq with ``options`` as its config."""
    from ..models import Seq2Seq, Seq2SeqConfig, TransformerSeq2Seq, TransformerSeq2SeqConfig

    check.one_of("arch", arch, ARCHITECTURES)
    if arch == "transformer":
        return TransformerSeq2Seq(TransformerSeq2SeqConfig(src_vocab=src_vocab, tgt_vocab=tgt_vocab,
                                                           max_length=max_length, **options))
    return Seq2Seq(Seq2SeqConfig(src_vocab=src_vocab, tgt_vocab=tgt_vocab, max_length=max_length, attention=arch,
                                 **options))


def model_config(model: nn.Module) -> Any:
    """The config of a Seq2Seq or TransformerSeq2Seq."""
    return model.config


# --- decoding and exact match ----------------------------------------------------------------------------------


@torch.no_grad()
def decode_ids(model: nn.Module, ids: Sequence[list[int]], *, beam: int = 1, batch_size: int = 256,
               device: torch.device | None = None, alignment: bool = False
               ) -> tuple[list[list[int]], list[torch.Tensor] | None]:
    """The generated token ids for each source (in the given order), decoded in batches of similar length;
    with ``alignment`` also each generation's alignment ``(T_i, S_i)``."""
    device = device or torch.device("cpu")
    was_training = model.training
    model.eval()
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    tokens: list[list[int]] = [[] for _ in ids]
    maps: list[torch.Tensor] = [torch.empty(0) for _ in ids]
    pad = int(model_config(model).pad_id)
    for start in range(0, len(order), batch_size):
        part = order[start: start + batch_size]
        gen = model.generate(collate([ids[i] for i in part], device, pad), beam=beam)  # type: ignore[operator]
        for j, i in enumerate(part):
            tokens[i] = list(gen.tokens[j])
            if alignment:
                maps[i] = gen.alignment[j].detach().float().cpu()
    model.train(was_training)
    return tokens, (maps if alignment else None)


def _rate(correct: int, n: int) -> dict[str, Any]:
    acc = correct / n if n else float("nan")
    return {"exact_match": acc, "stderr": accuracy_stderr(acc, n), "n": n}


def exact_match(model: nn.Module, tokenizer: Any, pairs: Pairs, *, beam: int = 1, batch_size: int = 256,
                max_length: int | None = None, w: World | None = None) -> dict[str, Any]:
    """Exact match of the decoded translations against ``pairs.target``, with its standard error, per tag, and the
    first wrong translations; under torchrun each rank decodes its share and the counts are summed."""
    w = w or World(0, 1, torch.device("cpu"))
    limit = max_length or int(model_config(model).max_length)
    mine = list(range(w.rank, len(pairs), w.size))
    ids = tokenizer.encode_source([pairs.source[i] for i in mine], limit, truncate=True)
    out, _ = decode_ids(model, ids, beam=beam, batch_size=batch_size, device=w.device)
    hits = [tokenizer.decode_target(o) == pairs.target[i] for o, i in zip(out, mine, strict=True)]
    tags = sorted(set(pairs.tag))
    counts = [float(sum(hits))] + [float(sum(h for h, i in zip(hits, mine, strict=True) if pairs.tag[i] == t))
                                   for t in tags] + [float(sum(1 for i in mine if pairs.tag[i] == t)) for t in tags]
    counts = w.all_sum(counts)
    result = _rate(int(counts[0]), len(pairs))
    if len(tags) > 1 or (tags and tags[0]):
        k = len(tags)
        result["by_tag"] = {t: _rate(int(counts[1 + j]), int(counts[1 + k + j])) for j, t in enumerate(tags)}
    result["errors"] = [{"source": pairs.source[i], "target": pairs.target[i], "output": tokenizer.decode_target(o),
                         "tag": pairs.tag[i]}
                        for o, i, h in zip(out, mine, hits, strict=True) if not h][:SHOWN_ERRORS]
    return result


def _teacher_loss(model: nn.Module, src: list[list[int]], tgt: list[list[int]], device: torch.device,
                  smoothing: float) -> tuple[torch.Tensor, int, int, torch.Tensor]:
    """``(summed token loss, correct tokens, tokens, logits)`` of a teacher-forced pass over one batch."""
    pad = int(model_config(model).pad_id)
    x = collate(src, device, pad)  # (B, S)
    y = collate(tgt, device, pad)  # (B, T + 1): BOS ... EOS
    y_in, y_out = y[:, :-1], y[:, 1:]  # (B, T) each
    logits = model(x, y_in)  # (B, T, V)
    flat = logits.float().reshape(-1, logits.shape[-1])  # (B * T, V)
    loss = F.cross_entropy(flat, y_out.reshape(-1), ignore_index=pad, label_smoothing=smoothing, reduction="sum")
    keep = y_out != pad
    correct = int(((logits.detach().argmax(-1) == y_out) & keep).sum())
    return loss, correct, int(keep.sum()), logits


@torch.no_grad()
def teacher_loss(model: nn.Module, src: Sequence[list[int]], tgt: Sequence[list[int]], batch: int, w: World
                 ) -> float:
    """Mean token loss (no smoothing) of the teacher-forced model over every rank's share."""
    was_training = model.training
    model.eval()
    mine = list(range(w.rank, len(src), w.size))
    total = tokens = 0.0
    for start in range(0, len(mine), batch):
        part = mine[start: start + batch]
        loss, _, n, _ = _teacher_loss(model, [src[i] for i in part], [tgt[i] for i in part], w.device, 0.0)
        total, tokens = total + float(loss), tokens + n
    model.train(was_training)
    total, tokens = w.all_sum([total, tokens])
    return total / tokens if tokens else float("nan")


# --- the task --------------------------------------------------------------------------------------------------


class TranslateTask:
    """The translator as a :class:`~._runtime.Task`: a batch is pairs of similar length, a step's loss the
    teacher-forced token cross-entropy over the global batch, validation greedy exact match (ties broken by the
    loss), the model a folder (``model.safetensors`` and ``config.json``)."""

    def __init__(self, config: TranslateTrainConfig, run: dict[str, Any], splits: PairSplits, tokenizer: Any,
                 model: nn.Module, w: World, log: Callable[[str], None]) -> None:
        self.config, self.run, self.splits, self.w = config, run, splits, w
        self.tokenizer, self.model = tokenizer, model
        self.judged = Judged(metric="exact match", key="valid_exact_match", unit="pairs", per_token=True,
                             ties_by_loss=True, goal=config.stop_at)
        self.tokenizer_json = tokenizer.to_json()
        self.header: dict[str, str] = {}
        self.n_train = len(splits.train)
        limit = int(run["max_length"])
        self.src = {k: tokenizer.encode_source(list(getattr(splits, k).source), limit, truncate=True)
                    for k in ("train", "valid")}
        self.tgt = {k: tokenizer.encode_target(list(getattr(splits, k).target), limit, truncate=True)
                    for k in ("train", "valid")}
        cut = sum(len(s) >= limit for s in self.src["train"]) + sum(len(t) >= limit for t in self.tgt["train"])
        if cut:
            log(f"{cut} training sources or targets reach max_length={limit} tokens (longer ones were cut); "
                f"raise max_length if that is many")
        self.valid = splits.valid if not config.eval_size else Pairs(
            splits.valid.source[: config.eval_size], splits.valid.target[: config.eval_size],
            splits.valid.tag[: config.eval_size])
        self._batches: tuple[int, list[list[int]]] = (-1, [])

    def batches(self, epoch: int) -> list[list[int]]:
        """The batches of ``epoch`` (indices into the training split), fixed by the seed and the epoch alone."""
        c = self.config
        g = torch.Generator().manual_seed(c.seed * 1_000_003 + epoch)
        used = self.n_train // c.batch_size * c.batch_size
        perm = torch.randperm(self.n_train, generator=g).tolist()[:used]
        window = c.batch_size * (c.bucket or 1)
        batches: list[list[int]] = []
        for start in range(0, used, window):
            chunk = perm[start: start + window]
            if c.bucket:
                chunk = sorted(chunk, key=lambda i: (len(self.src["train"][i]), len(self.tgt["train"][i])))
            batches += [chunk[j: j + c.batch_size] for j in range(0, len(chunk), c.batch_size)]
        shuffled = torch.randperm(len(batches), generator=g).tolist()
        return [batches[i] for i in shuffled]

    def batch(self, epoch: int, index: int) -> list[int]:
        if self._batches[0] != epoch:
            self._batches = (epoch, self.batches(epoch))
        return self._batches[1][index]

    def loss(self, net: nn.Module, items: list[int]) -> StepLoss:
        """The summed token loss of this rank's pairs over the global batch's target tokens (times the ranks, as
        the runtime averages them): the gradient of the global mean token loss."""
        src, tgt = [self.src["train"][i] for i in items], [self.tgt["train"][i] for i in items]
        mine = sum(len(t) - 1 for t in tgt)  # target tokens this rank predicts
        n = self.w.all_sum([float(mine)])[0]
        loss, correct, _, _ = _teacher_loss(net, src, tgt, self.w.device, self.config.label_smoothing)
        return StepLoss(loss * self.w.size / n, float(loss.detach()), float(correct), float(mine))

    def evaluate(self) -> tuple[float, float, int]:
        """``(teacher-forced token loss, greedy exact match, n)`` on the (first ``eval_size``) valid pairs."""
        n_valid = len(self.valid)
        loss = teacher_loss(self.model, self.src["valid"][:n_valid], self.tgt["valid"][:n_valid], 256, self.w)
        result = exact_match(self.model, self.tokenizer, self.valid, max_length=int(self.run["max_length"]),
                             w=self.w)
        return loss, result["exact_match"], result["n"]

    def probe(self) -> dict[str, Any]:
        return {}

    def save(self, folder: Path, model: nn.Module, meta: dict[str, str]) -> None:
        from ..models import save_seq2seq

        save_seq2seq(folder, model, meta)  # type: ignore[arg-type]

    def load(self, folder: Path) -> tuple[nn.Module, dict[str, str]]:
        from ..models import load_seq2seq

        return load_seq2seq(folder)

    def finish(self, state: dict[str, Any]) -> Result:
        """Test the best model on test and every extra set; final.json, and run.json holding the run."""
        limit = int(self.run["max_length"])
        sets = {"test": self.splits.test, **self.splits.extra}
        results = {name: exact_match(self.model, self.tokenizer, pairs, max_length=limit, w=self.w)
                   for name, pairs in sets.items() if len(pairs)}
        final: dict[str, Any] = {
            "test_exact_match": results["test"]["exact_match"], "test_stderr": results["test"]["stderr"],
            "test_n": results["test"]["n"], "valid_exact_match": state["best"], "best_step": state["best_step"],
            "steps": state["step"], "early_stopped": state["stopped"],
            "parameters": sum(p.numel() for p in self.model.parameters()),
            "train_cpu_s": round(state["cpu_s"], 2), "train_wall_s": round(state["wall_s"], 2),
            "threads": torch.get_num_threads(), "processes": self.w.size, "sets": results}
        return Result(final, {k: v for k, v in final.items() if k != "sets"}, RUN, self.run,
                      f"{self.run['arch']} on {self.run['data']}: test exact match {final['test_exact_match']:.4f} "
                      f"± {final['test_stderr']:.4f} (n={final['test_n']}); train: token accuracy, valid: exact match")


def train_translator(
    data: str | os.PathLike[str] | PairSplits,
    out: str | os.PathLike[str],
    *,
    arch: str = "bahdanau",
    model: dict[str, Any] | None = None,
    config: TranslateTrainConfig | None = None,
    max_length: int = 64,
    data_options: dict[str, Any] | None = None,
    **start: Unpack[Start],
) -> dict[str, Any]:
    """Train a translator on ``data`` and write the run into ``out``.

    Args:
        data: ``"dates"``, ``"sentences"``, a TSV file of pairs (see :func:`attnlab.data.load_pairs`), or
            :class:`PairSplits`.
        out: the run's folder: the best model by valid exact match (``model.safetensors`` and ``config.json``,
            with the tokenizer and the run in its header), ``tokenizer.json``, ``run.json``, ``metrics.jsonl``,
            ``curves.png``, ``final.json``, ``train.log`` and ``checkpoints/``.
        arch: ``"bahdanau"`` or ``"luong"`` (:class:`attnlab.models.Seq2Seq`) or ``"transformer"``.
        model: fields of the model's config other than the vocabularies, ``max_length`` and the special ids.
        config: the :class:`TranslateTrainConfig`.
        max_length: the most tokens of a source or a target (EOS included), and the longest generation.
        data_options: keyword arguments of ``make_dates`` / ``make_sentences`` (e.g. ``{"n_train": 20000}``).
        start: how the run starts, as for every task (:class:`~._runtime.Start`): ``resume``, ``device``, ``log``,
            ``progress``.

    Returns:
        final.json's content: ``test_exact_match`` (greedy), ``test_stderr``, and under ``sets`` each test
        set's exact match with its standard error, per tag, and its first wrong translations.
    """
    from ..data import PairTokenizer, build_pair_tokenizer

    config = config if config is not None else TranslateTrainConfig()
    check.one_of("arch", arch, ARCHITECTURES)
    check.positive_int("max_length", max_length)
    options = dict(model or {})
    fixed = sorted(set(options) & set(FIXED))
    if fixed:
        raise ConfigError(f"model options {fixed} are fixed by the data, --arch and max_length; leave them out")
    unknown = sorted(set(options) - set(_model_fields(arch)))
    if unknown:
        raise ConfigError(f"model options {unknown} are not options of the {arch} model; it takes "
                          f"{', '.join(sorted(_model_fields(arch)))}")
    if isinstance(data, PairSplits):
        source = data.source
    else:
        source = str(data) if str(data) in ("dates", "sentences") else str(Path(data).resolve())
    run = {"data": source, "data_options": dict(data_options or {}), "arch": arch, "max_length": max_length,
           "model": {**_model_fields(arch), **options}, "train": config.to_dict()}
    build_translator(arch, options, 8, 8, max_length)  # the model's own checks, before anything is written
    with start_run(out, run, config, **start) as opened:
        w, checkpoint = opened.w, opened.checkpoint
        splits = load_task(data, data_options)
        check_splits(splits, ("train", "valid", "test"), source, "pairs", "pairs", config.batch_size)
        seed_everything(config.seed)
        tokenizer = (PairTokenizer.from_json((checkpoint / "tokenizer.json").read_text(encoding="utf-8"))
                     if checkpoint is not None else
                     build_pair_tokenizer(splits.train, source=config.tokenizer, vocab_size=config.vocab_size,
                                          min_frequency=config.min_frequency))
        seed_everything(config.seed)
        net = build_translator(arch, options, tokenizer.source_vocab_size, tokenizer.target_vocab_size,
                               max_length).to(w.device)
        say = opened.open_log()
        say(splits.summary())
        task = TranslateTask(config, opened.run, splits, tokenizer, net, w, say)
        runtime = opened.runtime(task)
        say(f"model: {arch}, {sum(p.numel() for p in net.parameters()):,} parameters; vocabularies "
            f"{tokenizer.source_vocab_size} source, {tokenizer.target_vocab_size} target tokens; {runtime.total} "
            f"steps of {config.batch_size} pairs on {w.size} process(es), {w.device}, "
            f"{torch.get_num_threads()} thread(s)")
        final = runtime.loop()
        for name, res in final["sets"].items():
            say(f"{name}: exact match {res['exact_match']:.4f} ± {res['stderr']:.4f} (standard error, "
                f"n={res['n']}, greedy)")
        say(f"best valid exact match {final['valid_exact_match']:.4f} at step {final['best_step']}; "
            f"training took {final['train_cpu_s'] / 60:.2f} CPU minutes ({final['train_wall_s']:.0f} s wall)")
        return final
