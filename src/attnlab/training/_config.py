"""The options of a training run, in one frozen config; what a checkpoint must agree with to be resumed."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .. import _validate as check
from ..data import TOKENIZERS
from ..errors import ConfigError

__all__ = ["TrainConfig", "differing_keys"]


@dataclass(frozen=True)
class TrainConfig:
    """How to train (the model's shape is :class:`attnlab.models.ClassifierConfig`)."""

    epochs: int = 3  # passes over the training split (early stopping may end sooner)
    batch_size: int = 32  # the global batch: texts per optimizer step over all processes together
    lr: float = 1e-3  # peak learning rate of AdamW, reached after the warm-up
    weight_decay: float = 0.01  # AdamW's decoupled weight decay, on matrices only (not biases, norms)
    warmup: float = 0.1  # share of the steps with a linear warm-up; a cosine decay to 0 follows
    clip_norm: float = 1.0  # gradient norm clipping; 0 = off
    patience: int = 2  # early stopping: stop after this many validations without a better accuracy; 0 = off
    eval_every: int = 0  # optimizer steps between validations; 0 = at the end of each epoch
    checkpoint_every: int = 100  # optimizer steps between checkpoints (and one after each validation)
    seed: int = 0  # fixes everything: initialisation, data order, dropout
    max_steps: int = 0  # stop after this many optimizer steps in all; 0 = no limit
    tokenizer: str = "char"  # "char" (Chinese), "char_bigram", "wordpiece" or "bpe" (English)
    vocab_size: int = 8000  # the most tokens the tokenizer learns
    min_frequency: int = 2  # a token must occur this often in the training split to get an id (a bigram too)
    label_smoothing: float = 0.0  # cross-entropy against (1 - x) on the label and x spread over all classes
    ema: float = 0.0  # keep an exponential moving average of the weights (decay, e.g. 0.999): validated,
    # kept and saved instead of the raw weights; 0 = off
    fused: bool = False  # AdamW's fused implementation (much faster on CPU with large embedding tables)
    bucket: bool = False  # batches of texts of similar length (less padding), still shuffled by the seed
    pretrain_epochs: int = 0  # masked-language pre-training on the training texts before classifying; 0 = off
    pretrain_lr: float = 0.0  # peak learning rate of the pre-training; 0 = lr
    mask_rate: float = 0.15  # share of the tokens the pre-training masks and predicts

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "vocab_size", "min_frequency"):
            check.positive_int(name, getattr(self, name))
        for name in ("patience", "eval_every", "max_steps", "seed", "pretrain_epochs"):
            check.non_negative_int(name, getattr(self, name))
        check.positive_int("checkpoint_every", self.checkpoint_every)
        check.positive_float("lr", self.lr, fix="e.g. lr=1e-3")
        for name in ("weight_decay", "clip_norm", "pretrain_lr"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
                raise ConfigError(f"{name} must be a finite number >= 0, got {check.got(value)}; 0 turns it off")
        check.probability("warmup", self.warmup)
        check.probability("label_smoothing", self.label_smoothing)
        if isinstance(self.ema, bool) or not isinstance(self.ema, (int, float)) or not 0 <= self.ema < 1:
            raise ConfigError(f"ema must be a decay in [0, 1), got {check.got(self.ema)}; e.g. 0.999, or 0 for off")
        if isinstance(self.mask_rate, bool) or not isinstance(self.mask_rate, (int, float)) or not (
                0 < self.mask_rate < 1):
            raise ConfigError(f"mask_rate must lie in (0, 1), got {check.got(self.mask_rate)}; e.g. 0.15")
        check.boolean("fused", self.fused, "True = fused AdamW")
        check.boolean("bucket", self.bucket, "True = batches of similar length")
        check.one_of("tokenizer", self.tokenizer, TOKENIZERS)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def differing_keys(saved: dict[str, Any], now: dict[str, Any], prefix: str = "") -> list[str]:
    """The dotted keys whose values differ between two nested dicts (a key on one side only counts)."""
    keys = []
    for key in sorted(set(saved) | set(now)):
        a, b = saved.get(key, "<absent>"), now.get(key, "<absent>")
        if isinstance(a, dict) and isinstance(b, dict):
            keys += differing_keys(a, b, f"{prefix}{key}.")
        elif a != b:
            keys.append(f"{prefix}{key} ({a!r} then, {b!r} now)")
    return keys
