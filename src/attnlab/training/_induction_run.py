"""The induction toy's training task: a two-layer attention-only :class:`~attnlab.models.lm.CausalLM` (no MLP, no
LayerNorm) on sequences ``[x1..xL, x1..xL]`` of random tokens, ``L`` drawn per batch, whose repeated half (the
part trained on: the first half is noise) only an induction circuit can predict (Olsson et al., 2022; Elhage et al.,
2021).  The run catches the phase change as it
happens: every validation measures the loss on the repeated half of fixed sequences of every length and every
head's previous-token and induction scores (:mod:`attnlab.functional.detectors`), and ``final.json`` records the
step of the change.  :func:`train_induction` builds it and runs it on the shared :class:`~._runtime.Runtime`.

Tokens: the 64 characters ``0-9 a-z A-Z + /`` (ids 1..64) after the house character vocabulary's ``[UNK]`` (id 0,
never drawn), so a sequence is a plain string and the model an ordinary ``lm`` model: ``attnlab generate``,
``show``, ``analyze`` and ``serve`` read it.

Exact resume: batch ``i`` of epoch ``e`` is drawn from a generator seeded with ``(seed, e, i)`` (its ``L`` and one
seed per sequence); the rest is the runtime's.

Letters: B sequences, L the length of a half (2L tokens), V vocabulary.
"""

from __future__ import annotations

import json
import math
import os
import string
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .. import _validate as check
from .._io import atomic_write_text
from ..data import CharTokenizer
from ..errors import ConfigError
from ..functional.detectors import detector_scores, repeated_tokens
from ..models.lm import CausalLM, LMConfig, load_lm, save_lm
from ..trained import SAMPLING_FILE
from ._config import InductionTrainConfig
from ._distributed import World
from ._runtime import Judged, Result, Start, StepLoss, seed_everything, start_run

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["ALPHABET", "INDUCTION_MODEL", "InductionTask", "InductionTrainConfig", "change_step", "induction_vocab",
           "repeated_half", "train_induction"]

ALPHABET = string.digits + string.ascii_lowercase + string.ascii_uppercase + "+/"  # ids 1..64
RUN = "run.json"
PHASE_FIGURE = "phase.png"
# the model the issue asks for; the CLI and the bundled recipe take it as it is
INDUCTION_MODEL: dict[str, Any] = {"context": 64, "d_model": 64, "n_heads": 4, "n_layers": 2, "mlp": False,
                                   "norm": False, "dropout": 0.0, "kernel": "dense"}
# the toy's own sampling defaults (trained.SAMPLING_FILE): greedy, no penalties, so that it copies
INDUCTION_SAMPLING: dict[str, Any] = {"greedy": True, "repetition_penalty": 1.0, "no_repeat_ngram": 0}
SEQ_SPACE = 1 << 31  # per-sequence seeds are drawn below this; an item is seed * 64 + L


def induction_vocab() -> CharTokenizer:
    """``[UNK]`` then ``0-9 a-z A-Z + /``: the house character vocabulary over the toy's 64 tokens."""
    return CharTokenizer(("[UNK]", *ALPHABET))


def repeated_half(length: int) -> slice:
    """The positions whose next token is a copy of an earlier one in ``[x1..xL, x1..xL]``: ``L .. 2L - 2`` (they
    predict ``x2 .. xL`` of the second copy; position ``L - 1``, before the second ``x1``, cannot know it)."""
    return slice(length, 2 * length - 1)


def sequences(items: list[int]) -> torch.Tensor:
    """``(B, 2L)`` the sequences of ``items`` (all of one ``L``): each from a generator seeded with its item."""
    length = items[0] % 64
    rows = []
    for item in items:
        g = torch.Generator().manual_seed(item)
        half = torch.randint(1, len(ALPHABET) + 1, (length,), generator=g)  # (L,), ids 1..64
        rows.append(torch.cat([half, half]))
    return torch.stack(rows)  # (B, 2L)


def change_step(rows: list[dict[str, Any]], rise: float = 0.3) -> dict[str, Any]:
    """The phase change in the validation ``rows`` (each with ``step``, ``loss`` on the repeated half and
    ``heads`` scores): the first step at which the loss has covered half of its fall from the first row to the
    lowest, counted only if some head's induction score rose by more than ``rise`` from the first row to the last
    (else ``step`` is None)."""
    if not rows:
        return {"step": None, "loss_start": None, "loss_end": None, "induction_rise": None, "head": None}
    losses = [float(r["loss"]) for r in rows]
    start, end = losses[0], min(losses)
    first = np.asarray(rows[0]["heads"]["induction"], dtype=np.float64)  # (layers, H)
    last = np.asarray(rows[-1]["heads"]["induction"], dtype=np.float64)
    gain = last - first
    layer, head = (int(i) for i in np.unravel_index(int(np.argmax(gain)), gain.shape))
    step = None
    if float(gain.max()) > rise and end < start:
        half = start - (start - end) / 2
        step = next(int(r["step"]) for r, loss in zip(rows, losses, strict=True) if loss <= half)
    return {"step": step, "loss_start": start, "loss_end": end, "induction_rise": float(gain.max()),
            "head": [layer, head], "induction_start": float(first[layer, head]),
            "induction_end": float(last[layer, head])}


class InductionTask:
    """The toy as a :class:`~._runtime.Task`: an item is one sequence (its seed and ``L``), a step's loss the mean
    cross-entropy of the repeated half's next tokens, validation the same on fixed sequences of every ``L`` (the
    metric is its negative: the runtime keeps the highest)."""

    judged = Judged(metric="repeated-half loss", shown_sign=-1.0, key="valid_neg_repeat_loss", unit="sequences",
                    per_token=True)

    def __init__(self, model: CausalLM, vocab: CharTokenizer, config: InductionTrainConfig, run: dict[str, Any],
                 out: Path, w: World) -> None:
        self.model, self.vocab, self.config, self.run, self.out, self.w = model, vocab, config, run, out, w
        self.n_train = config.max_steps * config.batch_size
        self.tokenizer_json = vocab.to_json()
        self.header: dict[str, str] = {}
        c = config
        lengths = range(c.min_length, c.max_length + 1)
        # the validation set, fixed by the seed and apart from every training sequence: one batch per L
        self.valid = {n: repeated_tokens(len(ALPHABET) + 1, n, c.eval_per_length, seed=c.seed + 7919 * n + 1,
                                         low=1) for n in lengths}  # {L: (E, 2L)}
        self.probe_tokens = repeated_tokens(len(ALPHABET) + 1, c.probe_length, c.probe_batch, seed=c.seed + 104729,
                                            low=1)  # (P, 2T)
        self.accuracy = 0.0  # the repeated-half accuracy of the last validation

    def batch(self, epoch: int, index: int) -> list[int]:
        c = self.config
        g = torch.Generator().manual_seed(c.seed * 1_000_003 + epoch * 100_003 + index)
        length = int(torch.randint(c.min_length, c.max_length + 1, (1,), generator=g))
        seeds = torch.randint(0, SEQ_SPACE, (c.batch_size,), generator=g)
        return [int(s) * 64 + length for s in seeds]

    def loss(self, net: nn.Module, items: list[int]) -> StepLoss:
        """The cross-entropy of the repeated half only: the first half is random, its loss ln 64 whatever the model
        does, and its gradient only noise (with it the change comes thousands of steps later)."""
        ids = sequences(items).to(self.w.device)  # (B, 2L)
        half = repeated_half(ids.shape[1] // 2)
        x, y = ids[:, :-1], ids[:, 1:][:, half]  # (B, 2L - 1), (B, L - 1)
        logits = net(x)[:, half]  # (B, L - 1, V)
        loss = F.cross_entropy(logits.flatten(0, 1).float(), y.flatten())
        correct = float((logits.detach().argmax(-1) == y).sum())
        return StepLoss(loss, float(loss.detach()) * y.numel(), correct, float(y.numel()))

    @torch.no_grad()
    def per_length(self) -> dict[int, tuple[float, float, int]]:
        """``{L: (mean loss in nats, accuracy, predictions)}`` on the repeated half of the validation sequences."""
        model = self.model
        was_training = model.training
        model.eval()
        out = {}
        for length, ids in self.valid.items():
            ids = ids.to(self.w.device)  # (E, 2L)
            logits = model(ids[:, :-1]).float()[:, repeated_half(length)]  # (E, L - 1, V)
            target = ids[:, 1:][:, repeated_half(length)]  # (E, L - 1)
            nll = F.cross_entropy(logits.transpose(1, 2), target, reduction="sum")
            out[length] = (float(nll) / target.numel(), float((logits.argmax(-1) == target).float().mean()),
                           target.numel())
        model.train(was_training)
        return out

    def evaluate(self) -> tuple[float, float, int]:
        """``(loss on the repeated half in nats, its negative, predictions)`` over every ``L``."""
        scores = self.per_length()
        n = sum(k for _, _, k in scores.values())
        loss = sum(v * k for v, _, k in scores.values()) / n
        self.accuracy = sum(a * k for _, a, k in scores.values()) / n
        return loss, -loss, n

    def probe(self) -> dict[str, Any]:
        """Every head's previous-token and induction score on the probe's repeated random tokens, and the
        repeated-half accuracy, for the validation row."""
        weights = self.model.attention_weights(self.probe_tokens.to(self.w.device))  # (P, layers, H, 2T, 2T)
        scores = detector_scores(weights.double().cpu().numpy(), self.probe_tokens.numpy())
        return {"repeat_accuracy": round(self.accuracy, 6),
                "heads": {name: np.round(scores[name], 6).tolist() for name in ("previous token", "induction")}}

    def save(self, folder: Path, model: nn.Module, meta: dict[str, str]) -> None:
        save_lm(folder, model, meta)  # type: ignore[arg-type]
        # how the toy writes by default: it copies, which the library's penalties (no repeated 4-gram) forbid
        atomic_write_text(folder / SAMPLING_FILE, json.dumps(INDUCTION_SAMPLING) + "\n")

    def load(self, folder: Path) -> tuple[nn.Module, dict[str, str]]:
        return load_lm(folder)

    def finish(self, state: dict[str, Any]) -> Result:
        """The best model's repeated-half loss and accuracy at every ``L``; the phase change from the validation rows
        in metrics.jsonl (cut back to the last checkpoint on a resume, so a resumed run finds the same)."""
        scores = self.per_length()
        n = sum(k for _, _, k in scores.values())
        rows = []
        if (self.out / "metrics.jsonl").is_file():
            rows = [r for r in (json.loads(line) for line in
                                (self.out / "metrics.jsonl").read_text(encoding="utf-8").splitlines())
                    if r.get("split") == "valid"]
        change = change_step(rows)
        final: dict[str, Any] = {
            "repeat_loss": sum(v * k for v, _, k in scores.values()) / n,
            "repeat_accuracy": sum(a * k for _, a, k in scores.values()) / n,
            "uniform_loss": math.log(len(ALPHABET)), "change_step": change["step"], "change": change,
            "per_length": {str(length): {"loss": v, "accuracy": a} for length, (v, a, _) in scores.items()},
            "best_step": state["best_step"], "steps": state["step"],
            "parameters": sum(p.numel() for p in self.model.parameters()), "vocabulary": len(self.vocab),
            "train_cpu_s": round(state["cpu_s"], 2), "train_wall_s": round(state["wall_s"], 2),
            "threads": torch.get_num_threads(), "processes": self.w.size}
        timings = ("train_cpu_s", "train_wall_s")  # kept out of the model's header: the same bytes each run
        header = {k: v for k, v in final.items() if not isinstance(v, dict) and k not in timings}
        at = f"step {change['step']}" if change["step"] is not None else "no phase change found"
        return Result(final, header, RUN, self.run,
                      f"induction toy, seed {self.config.seed}: repeated-half loss {final['repeat_loss']:.3f} nats; "
                      f"{at}")


def plot_phase(rows: list[dict[str, Any]], final: dict[str, Any], path: Path, title: str) -> Path:
    """The repeated-half loss and every head's previous-token and induction scores against steps, the change
    marked."""
    from .._io import atomic_write
    from ..viz.static import figure

    valid = [r for r in rows if r.get("split") == "valid"]
    steps = [r["step"] for r in valid]
    fig = figure(11, 4.2)
    loss_ax, prev_ax, ind_ax = fig.subplots(1, 3)
    loss_ax.plot(steps, [r["loss"] for r in valid], "-", color="#08519c", label="valid repeated-half loss")
    loss_ax.axhline(final["uniform_loss"], color="#969696", linestyle=":", label="ln 64 (uniform)")
    loss_ax.set_ylabel("nats")
    loss_ax.set_ylim(bottom=0)
    scores = {name: np.asarray([r["heads"][name] for r in valid]) for name in ("previous token", "induction")}
    layers, heads = scores["induction"].shape[1:]
    colors = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666"]
    for ax, name in ((prev_ax, "previous token"), (ind_ax, "induction")):
        for layer in range(layers):
            for h in range(heads):
                ax.plot(steps, scores[name][:, layer, h], "-" if layer else "--", linewidth=1.2,
                        color=colors[h % len(colors)], label=f"L{layer}H{h}")
        ax.set_ylabel(f"{name} score")
        ax.set_ylim(0, 1)
    step = final["change_step"]
    for ax in (loss_ax, prev_ax, ind_ax):
        if step is not None:
            ax.axvline(step, color="#cb181d", linewidth=1, label=f"change: step {step}")
        ax.set_xlabel("optimizer step")
        ax.grid(alpha=0.3)
    loss_ax.legend(fontsize=7)
    ind_ax.legend(fontsize=6, ncol=2, title="layer 0 dashed", title_fontsize=6)
    prev_ax.set_title("previous-token scores", fontsize=9)
    ind_ax.set_title("induction scores", fontsize=9)
    loss_ax.set_title("loss on the repeated half", fontsize=9)
    fig.suptitle(title, fontsize=10)
    return atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=100))


def train_induction(
    out: str | os.PathLike[str],
    *,
    config: InductionTrainConfig | None = None,
    model: dict[str, Any] | None = None,
    **start: Unpack[Start],
) -> dict[str, Any]:
    """Train the induction toy; write the run into ``out``.

    Args:
        out: the run's folder: the best model by valid repeated-half loss (``model.safetensors`` and
            ``config.json``, the character vocabulary in the header), ``tokenizer.json``, ``run.json``,
            ``metrics.jsonl`` (each validation row holds every head's previous-token and induction scores and the
            repeated-half accuracy), ``train.log``, ``curves.png``, ``phase.png``, ``final.json`` and
            ``checkpoints/``.
        config: the :class:`InductionTrainConfig`.
        model: :class:`LMConfig` fields over :data:`INDUCTION_MODEL` (tests use a smaller one).
        start: how the run starts, as for every task (:class:`~._runtime.Start`): ``resume``, ``device``, ``log``,
            ``progress``.

    Returns:
        final.json's content: the best model's repeated-half loss and accuracy (overall and per ``L``), the change
        step (None when no head's induction score rose by more than 0.3) and what it was found from, the CPU time.
    """
    config = config if config is not None else InductionTrainConfig()
    check.instance("config", config, InductionTrainConfig, "an InductionTrainConfig",
                   "build one with InductionTrainConfig(...)")
    options = {**INDUCTION_MODEL, **(model or {})}
    if "vocab_size" in options:
        raise ConfigError("the model option vocab_size is fixed by the toy's 64 tokens (and [UNK]); leave it out")
    vocab = induction_vocab()
    lm_config = LMConfig(vocab_size=len(vocab), **options)  # the model's own checks, before anything is written
    if 2 * config.max_length > lm_config.context:
        raise ConfigError(f"max_length={config.max_length} makes sequences of {2 * config.max_length} tokens, longer "
                          f"than the context ({lm_config.context}); lower max_length to {lm_config.context // 2}")
    with start_run(out, {"data": "induction", "model": options, "train": config.to_dict()}, config,
                   **start) as opened:
        w, out = opened.w, opened.out
        say = opened.open_log()
        seed_everything(config.seed)
        net = CausalLM(lm_config)
        # without LayerNorm nothing rescales the stream: embeddings of norm ~1 (not the house's 0.02 per entry,
        # which leaves attention uniform and the logits flat for thousands of steps)
        nn.init.normal_(net.embed.weight, std=lm_config.d_model ** -0.5)
        net = net.to(w.device)
        task = InductionTask(net, vocab, config, opened.run, out, w)
        runtime = opened.runtime(task)
        say(f"model: {sum(p.numel() for p in net.parameters()):,} parameters ({lm_config.n_layers} attention-only "
            f"layers of {lm_config.n_heads} heads, width {lm_config.d_model}), {len(ALPHABET)} tokens; "
            f"{runtime.total} steps of {config.batch_size} sequences [x1..xL, x1..xL], L from {config.min_length} "
            f"to {config.max_length}, on {w.size} process(es), {w.device}, {torch.get_num_threads()} thread(s)")
        started = time.process_time()
        final = runtime.loop()
        if w.main:
            rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text(encoding="utf-8").splitlines()]
            plot_phase(rows, final, out / PHASE_FIGURE, f"induction toy, seed {config.seed}")
        change = final["change"]
        at = (f"the phase change at step {change['step']} (head L{change['head'][0]}H{change['head'][1]}'s induction "
              f"score {change['induction_start']:.2f} -> {change['induction_end']:.2f})"
              if change["step"] is not None else "no phase change (no head's induction score rose by more than 0.3)")
        say(f"repeated-half loss {final['repeat_loss']:.4f} nats (accuracy {final['repeat_accuracy']:.4f}; uniform "
            f"{final['uniform_loss']:.4f}); {at}; training took {final['train_cpu_s'] / 60:.2f} CPU minutes "
            f"({final['train_wall_s']:.0f} s wall; this process {(time.process_time() - started) / 60:.2f})")
        return final
