"""The options every training run shares, in one frozen config; what a checkpoint must agree with to be resumed.

A task's own config subclasses :class:`RunConfig`: it adds its own fields and may give a shared field another
default (the translator's bigger batch, say); the shared fields keep one type, one check and one meaning."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from .. import _validate as check
from ..errors import ConfigError

__all__ = ["RunConfig", "differing_keys"]


@dataclass(frozen=True)
class RunConfig:
    """How to train, whatever the task (the model's shape is the model's own config)."""

    TOKENIZERS: ClassVar[tuple[str, ...]] = ("char",)  # the ``tokenizer`` values a task takes

    epochs: int = 3  # passes over the training split (early stopping may end sooner)
    batch_size: int = 32  # the global batch: items per optimizer step over all processes together
    lr: float = 1e-3  # peak learning rate of AdamW, reached after the warm-up
    weight_decay: float = 0.01  # AdamW's decoupled weight decay, on matrices only (not biases, norms, embeddings)
    warmup: float = 0.1  # share of the steps with a linear warm-up; a cosine decay to 0 follows
    clip_norm: float = 1.0  # gradient norm clipping; 0 = off
    label_smoothing: float = 0.0  # cross-entropy against (1 - x) on the target and x spread over all classes
    patience: int = 2  # early stopping: stop after this many validations without a better metric; 0 = off
    eval_every: int = 0  # optimizer steps between validations; 0 = at the end of each epoch
    checkpoint_every: int = 100  # optimizer steps between checkpoints (and one after each validation)
    seed: int = 0  # fixes everything: initialisation, data order, dropout
    max_steps: int = 0  # stop after this many optimizer steps in all; 0 = no limit
    bucket: int = 0  # length buckets: batches cut from windows of this many batches sorted by length; 0 = off
    tokenizer: str = "char"  # how the input is cut into tokens (one of the task's TOKENIZERS)
    vocab_size: int = 8000  # the most tokens a learned tokenizer (wordpiece, bpe) keeps
    min_frequency: int = 2  # a token must occur this often in the training split to get an id
    ema: float = 0.0  # keep an exponential moving average of the weights (decay, e.g. 0.999): validated,
    # kept and saved instead of the raw weights; 0 = off
    fused: bool = False  # AdamW's fused implementation (much faster on CPU with large embedding tables)

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "vocab_size", "min_frequency", "checkpoint_every"):
            check.positive_int(name, getattr(self, name))
        for name in ("patience", "eval_every", "max_steps", "seed"):
            check.non_negative_int(name, getattr(self, name))
        check.non_negative_int("bucket", self.bucket, fix="e.g. bucket=50 (windows of 50 batches), 0 = off")
        check.positive_float("lr", self.lr, fix="e.g. lr=1e-3")
        for name in ("weight_decay", "clip_norm"):
            non_negative(name, getattr(self, name))
        check.probability("warmup", self.warmup)
        check.probability("label_smoothing", self.label_smoothing)
        if isinstance(self.ema, bool) or not isinstance(self.ema, (int, float)) or not 0 <= self.ema < 1:
            raise ConfigError(f"ema must be a decay in [0, 1), got {check.got(self.ema)}; e.g. 0.999, or 0 for off")
        check.boolean("fused", self.fused, "True = fused AdamW")
        check.one_of("tokenizer", self.tokenizer, self.TOKENIZERS)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def non_negative(name: str, value: object) -> None:
    """A finite number >= 0, where 0 turns the option off."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
        raise ConfigError(f"{name} must be a finite number >= 0, got {check.got(value)}; 0 turns it off")


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
