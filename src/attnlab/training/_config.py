"""The options every training run shares, in one frozen config; what a checkpoint must agree with to be resumed.

A task's own config subclasses :class:`RunConfig`: it adds its own fields and may give a shared field another
default (the translator's bigger batch, say); the shared fields keep one type, one check and one meaning."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from .. import _checks as check
from ..errors import ConfigError

__all__ = ["ClassifyTrainConfig", "InductionTrainConfig", "LMTrainConfig", "RunConfig", "TranslateTrainConfig",
           "differing_keys", "teacher_folders", "teachers_file"]

CLASSIFY_TOKENIZERS = ("char", "char_bigram", "wordpiece", "bpe")  # attnlab.data.TOKENIZERS (a test keeps them equal)


@dataclass(frozen=True)
class RunConfig:
    """How to train, whatever the task (the model's shape is the model's own config)."""

    TOKENIZERS: ClassVar[tuple[str, ...]] = ("char",)  # the ``tokenizer`` values a task takes
    # options a task had and no longer has, as an older run's config.json or checkpoint still holds them: the value
    # that meant "off" (a key named here is dropped with that value, refused with another), or None for a key whose
    # value mattered only when another retired option was on
    RETIRED: ClassVar[dict[str, Any]] = {}

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
        check.probability("warmup", self.warmup, fix="0 = no warm-up, e.g. 0.05")
        check.probability("label_smoothing", self.label_smoothing, fix="0 turns it off, e.g. 0.1")
        if isinstance(self.ema, bool) or not isinstance(self.ema, (int, float)) or not 0 <= self.ema < 1:
            raise ConfigError(f"ema must be a decay in [0, 1), got {check.got(self.ema)}; e.g. 0.999, or 0 for off")
        check.boolean("fused", self.fused, "True = fused AdamW")
        check.one_of("tokenizer", self.tokenizer, self.TOKENIZERS)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def retire(cls, train: dict[str, Any]) -> dict[str, Any]:
        """``train`` (the options of a run's ``train`` section) without the :attr:`RETIRED` keys it may hold; one
        set to anything but its "off" value is a ConfigError, since the run asked for what no longer exists."""
        for key, off in cls.RETIRED.items():
            if off is not None and key in train and train[key] != off:
                raise ConfigError(f"{key}={train[key]!r}: this option of {cls.__name__} was removed (the guide's "
                                  f"Training page says why); only {key}={off!r} (off) still reads: set it so or "
                                  f"leave it out")
        return {k: v for k, v in train.items() if k not in cls.RETIRED}


# --- the tasks' configs: each task's module (_classify_run, ...) uses its own ------------------------------------


@dataclass(frozen=True)
class ClassifyTrainConfig(RunConfig):
    """How to train the classifier: the shared :class:`RunConfig` and the routes that add training items or targets
    (the model's shape is :class:`attnlab.models.ClassifierConfig`)."""

    TOKENIZERS: ClassVar[tuple[str, ...]] = CLASSIFY_TOKENIZERS  # "char", "char_bigram" (Chinese), "wordpiece", "bpe"
    # masked-language pre-training, removed (docs/training.md says why): config.json files written before still
    # hold these keys (the bundled zh-sentiment's does), with pretrain_epochs 0
    RETIRED: ClassVar[dict[str, Any]] = {"pretrain_epochs": 0, "pretrain_lr": None, "mask_rate": None,
                                         "pretrain_data": None}

    extra: str = ""  # a CSV/TSV/JSONL file of labelled texts added to the training split alone (the same
    # columns and labels; a text equal to a valid or test text, once normalised, is left out); "" = none
    teachers: str = ""  # distillation: trained classifiers (folders, comma-separated) whose mean probability on
    # every training item is a second target beside its label; "" = none
    distill: float = 0.5  # the teachers' share of the loss (the label's is the rest)
    crops: float = 0.0  # also train on this share of the clauses of multi-clause training texts (their text's
    # label), so that short inputs are in the training distribution; 0 = off
    rdrop: float = 0.0  # R-Drop (Liang et al. 2021): each batch runs twice under different dropout, and this
    # weight times the symmetric KL divergence of the two predictions joins the mean of their losses; 0 = off
    # clause-level supervision (issue 30): every clause of a training text that starts with a contrast word (但是,
    # 可是, 不过...) is also a training item with the text's label, the clause that usually decides it
    contrast_clauses: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        check.probability("crops", self.crops, fix="0 turns it off, e.g. 0.3")
        non_negative("rdrop", self.rdrop)
        check.boolean("contrast_clauses", self.contrast_clauses, "True = train on the clauses after contrast words")
        check.probability("distill", self.distill, fix="the teachers' share of the loss, e.g. 0.5")
        if self.teachers and not teacher_folders(self.teachers):
            raise ConfigError(f"teachers names no folder, got {self.teachers!r}; give trained classifiers' folders, "
                              f"comma-separated")


def teacher_folders(teachers: str) -> list[str]:
    """The folders of the comma-separated ``teachers``."""
    return [f.strip() for f in teachers.split(",") if f.strip()]


def teachers_file(teachers: str) -> str | None:
    """The one ``.safetensors`` file ``teachers`` names (the teachers' probabilities a distilling run wrote), or
    None when it names the teachers' folders."""
    folders = teacher_folders(teachers)
    return folders[0] if len(folders) == 1 and folders[0].endswith(".safetensors") else None


@dataclass(frozen=True)
class TranslateTrainConfig(RunConfig):
    """How to train a translator: the shared :class:`RunConfig` with a translator's defaults, and its own stop and
    validation size (the model's shape is its Seq2SeqConfig / TransformerSeq2SeqConfig)."""

    TOKENIZERS: ClassVar[tuple[str, ...]] = ("char", "bpe", "wordpiece", "word")  # the source side; the target
    # side is characters

    epochs: int = 10
    batch_size: int = 64
    lr: float = 2e-3
    warmup: float = 0.05
    checkpoint_every: int = 200
    bucket: int = 50
    min_frequency: int = 1
    stop_at: float = 0.0  # early stopping: stop once the valid exact match reaches this; 0 = off
    eval_size: int = 0  # validate on the first this-many valid pairs; 0 = all of them

    def __post_init__(self) -> None:
        super().__post_init__()
        check.non_negative_int("eval_size", self.eval_size)
        check.share("stop_at", self.stop_at, fix="an exact match to stop at, e.g. 0.99; 0 turns it off")


@dataclass(frozen=True)
class LMTrainConfig(RunConfig):
    """How to train the language model: the shared :class:`RunConfig` with a language model's defaults (a step is
    ``batch_size`` random windows; ``max_steps`` sets the length of the run), and the baseline and the probes."""

    epochs: int = 1
    batch_size: int = 32
    lr: float = 2e-3
    warmup: float = 0.05
    patience: int = 0
    eval_every: int = 100
    checkpoint_every: int = 100
    max_steps: int = 2000
    ngram_order: int = 5  # the Kneser-Ney baselines have orders 2 .. ngram_order (the best on valid is reported)
    probe_length: int = 0  # the repeated random sequences of the head probe: this many tokens twice; 0 = context // 2
    probe_batch: int = 8  # how many such sequences
    sequence_parallel: bool = False  # under torchrun: each rank holds 1/world of every window (ring attention)
    copy_share: float = 0.0  # share of training windows with a span of their own text repeated later (copy_spans)
    ngram_mix: bool = False  # at the end: the model mixed per character with the chosen n-gram, lambda fit on valid
    # distillation from the n-gram: this share of the loss is the cross-entropy against the chosen Kneser-Ney
    # model's next-character distribution at each position (the rest against the character itself); 0 = off
    ngram_teach: float = 0.0
    # the teacher cross-fitted: two n-grams of the chosen order, each fit on one half of the training split, each
    # teaching the windows of the other half, so that no teacher has seen the window it teaches (the n-gram fit on
    # the whole split is far sharper on its own training text, 2.08 bits/char, than on held-out text, 5.51)
    ngram_teach_halves: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        check.boolean("sequence_parallel", self.sequence_parallel, "True = shard every window over the ranks")
        check.boolean("ngram_teach_halves", self.ngram_teach_halves, "True = teachers cross-fitted on the halves")
        if self.ngram_teach_halves and not self.ngram_teach > 0:
            raise ConfigError("ngram_teach_halves says how the n-gram teacher is fit, and there is none: ngram_teach "
                              "is 0; give ngram_teach, e.g. 0.5, or leave ngram_teach_halves off")
        check.share("ngram_teach", self.ngram_teach, fix="the n-gram's share of the loss, e.g. 0.5; 0 turns it off")
        if self.ngram_teach > 0 and self.sequence_parallel:
            raise ConfigError("ngram_teach (distillation from the n-gram) is not written for sequence-parallel "
                              "training; use one or the other")
        check.positive_int("ngram_order", self.ngram_order)
        check.non_negative_int("probe_length", self.probe_length)
        check.positive_int("probe_batch", self.probe_batch)
        check.probability("copy_share", self.copy_share, fix="0 turns it off, e.g. 0.25")
        check.boolean("ngram_mix", self.ngram_mix, "True = report the model mixed with the n-gram")
        if self.ngram_order < 2:
            raise ConfigError(f"ngram_order must be at least 2 (the baselines have orders 2 .. ngram_order), got "
                              f"{self.ngram_order}; e.g. 5")


@dataclass(frozen=True)
class InductionTrainConfig(RunConfig):
    """How to train the toy: the shared :class:`RunConfig` with the toy's defaults (one epoch of ``max_steps``
    batches of fresh sequences), the lengths drawn and the size of the validation and probe sets."""

    epochs: int = 1
    batch_size: int = 32
    lr: float = 2e-3  # 3e-3 lets a layer-0 positional copy win; at 1e-3 the change comes later
    warmup: float = 0.05
    patience: int = 0
    eval_every: int = 20
    checkpoint_every: int = 100
    max_steps: int = 5000
    min_length: int = 4  # L, the length of a half, is drawn per batch from min_length .. max_length
    max_length: int = 31
    eval_per_length: int = 4  # validation: this many fixed sequences at every L
    probe_length: int = 16  # the head probe: this many random tokens twice ...
    probe_batch: int = 8  # ... in this many sequences

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("min_length", "max_length", "eval_per_length", "probe_length", "probe_batch", "max_steps"):
            check.positive_int(name, getattr(self, name))
        if not 2 <= self.min_length <= self.max_length < 64:
            raise ConfigError(f"need 2 <= min_length <= max_length < 64, got min_length={self.min_length}, "
                              f"max_length={self.max_length}; e.g. 4 and 31")
        if self.probe_length < 2:
            raise ConfigError(f"probe_length must be at least 2, got {self.probe_length}; e.g. 16")


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
