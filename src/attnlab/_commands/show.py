"""``attnlab show``: run a model on a text (or load a saved trace), draw its attention, write it all
into one folder and print a per-layer summary.  The work itself lives in ``attnlab.capturing`` and
``attnlab.viz``; this module only checks the arguments and orchestrates.

Nothing is written until everything has been computed: the files go to a temporary folder next to
``--out`` and are moved into place at the end, so bad input leaves no partial file behind.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import Any

from ..errors import InputError, TooLongError
from ._output import (
    DEFAULT_OUT,
    TRACE_FILE,
    VIEWER_FILE,
    check_out,
    parse_int,
    publish,
    run_name,
    staging,
    trace_run_name,
)

FIGURES = ("heatmap", "heads", "model")
FORMATS = ("png", "svg", "pdf")
KINDS = ("self", "causal", "cross")
# Every file show writes into --out: a run replaces them all and removes the ones it does not write
# (another --format, --no-viewer), so a folder never mixes two runs.
OWNED = (TRACE_FILE, VIEWER_FILE, *(f"{f}.{ext}" for f in FIGURES for ext in FORMATS))
# attention weights a run may keep for the figures and the viewer (float32: 80 MB); a longer text is refused before
# it runs (attnlab.kinds.Budget), since they grow with the square of its length
SHOW_KEPT = 20_000_000
ANNOTATE_UP_TO = 20  # write the weights into the heatmap's cells when it shows at most this many tokens
SCALES = ("auto", "linear", "power", "log")  # attnlab.viz.static.SCALES, without importing matplotlib here
AUTO_LINEAR_UP_TO = 64  # attnlab.viz.static.AUTO_LINEAR_UP_TO

EXAMPLES = f"""\
The heatmap shows --layer/--head (default: the last layer, mean of its heads); heads.FMT shows every
head of that layer; model.FMT shows all layers x heads as thumbnails.  Keys (attended to) run along x,
queries (attending) along y.  Files written into --out (default: a folder of its own for each input,
{DEFAULT_OUT}/<first words>-<hash>; created if missing):
  {TRACE_FILE}  heatmap.FMT  heads.FMT  model.FMT  {VIEWER_FILE}
A run replaces these files and removes the ones of an earlier run that it does not write (another
--format, --no-viewer), so one folder never mixes two runs; other files in it are left alone.
The printed summary gives, per layer, the key tokens that receive the largest share of attention (mean
over heads and queries; a repeated token shows its position, the@1) and the heads that put more than
half of their weight on [CLS], [SEP], the previous token, the next token, or themselves (self).
Long inputs: a figure is at most 4000 pixels a side (each cell the mean of a block of weights when there
are more cells than pixels), every k-th token is labelled, and beyond 64 tokens the colour scale is log
(a linear one shows one dark field when each weight is about 1/length); --tokens draws a range of
positions, --scale chooses the colour scale, and --compact halves the size of {TRACE_FILE}.

examples:
  attnlab show "The cat sat on the mat because it was tired."
  attnlab show "The cat sat." --layer 0 --head 3 --format svg
  attnlab show "这本书写得很好" --model zh-sentiment      # the bundled Chinese classifier: which characters count
  attnlab show "我喜欢这部电影" --model ./my-chinese-bert   # the bundled MiniLM knows few Chinese characters
  attnlab show "Where is the cat?" --pair "The cat is on the mat." --out pair-out
  attnlab show "unbelievably good" --merge words          # one row/column per word, not per sub-word
  attnlab show "The cat sat." --out cat && attnlab show --trace cat/{TRACE_FILE} --layer 2 --out redraw
  attnlab show "Hello there" --model ./my-t5-folder --kind cross   # decoder -> encoder attention
  attnlab show "some text" --model ./my-bert-folder       # any local Hugging Face encoder folder
  attnlab show "$(cat essay.txt)" --truncate --tokens 100:160 --compact   # positions 100..159 of a long text
  attnlab show "The cat sat." --scale power --gamma 0.3   # brighten small weights on a short input
  attnlab show "Friday, March 5, 2021" --model dates-zh  # a translator's cross-attention (see attnlab translate)
"""


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "show",
        help="capture a model's attention on a text; write figures, the trace and the viewer; print a summary",
        description="Run the bundled encoder (or --model) on TEXT offline, save what every attention head\n"
        "did, draw it, and print which tokens each layer attends to.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("text", nargs="?", metavar="TEXT", help="the text to run the model on (quote it)")
    p.add_argument("--pair", metavar="TEXT", help="a second text, encoded together with TEXT as a pair")
    p.add_argument(
        "--model", metavar="NAME_OR_FOLDER", help="'minilm' (the bundled all-MiniLM-L6-v2, the default), "
        "'zh-sentiment' (the bundled Chinese sentiment classifier, one token per character), a local Hugging Face "
        "model folder, the --out folder of `attnlab train classify`, or a translator (dates-zh, dates-zh/luong, "
        "dates-zh/transformer, tutorial-en-zh, the --out of `attnlab train translate`: its cross-attention while it "
        "translates TEXT); a "
        "bundled name wins over a folder of that name (write ./NAME for the folder); nothing is downloaded"
    )
    p.add_argument("--merge", choices=("words",), help="'words': merge sub-word tokens into whole words")
    p.add_argument("--max-length", type=int, metavar="N", help="the most tokens to accept (default: the model's limit)")
    p.add_argument("--truncate", action="store_true", help="cut a too-long text to the limit instead of refusing it")
    p.add_argument(
        "--trace", metavar="FILE", type=Path, help=f"redraw a saved trace (a {TRACE_FILE} file) instead of running "
        "a model; then give no TEXT"
    )
    p.add_argument("--out", metavar="DIR", type=Path,
                   help=f"the folder to write into (default: {DEFAULT_OUT}/<first words of TEXT>-<hash of the input>)")
    p.add_argument("--kind", choices=KINDS, help="which attention to draw: 'self' (encoder), 'causal' (decoder "
                   "self-attention) or 'cross' (decoder to encoder); default: self, or causal for a decoder-only model")
    p.add_argument("--layer", metavar="N", default="-1",
                   help="the layer of heatmap.FMT and heads.FMT, from 0; negative counts from the end (default: -1)")
    p.add_argument("--head", metavar="N|mean", default="mean",
                   help="the head of heatmap.FMT, from 0, or 'mean' for the mean of the layer's heads (default: mean)")
    p.add_argument("--format", choices=("png", "svg", "pdf"), default="png", help="figure file format (default: png)")
    p.add_argument("--tokens", metavar="START:STOP", help="draw only positions START..STOP-1 (from 0; either end "
                   "may be left out, e.g. 100: or :60) in the figures; the trace, viewer and summary keep them all")
    p.add_argument("--scale", choices=SCALES, default="auto", help="the figures' colour scale: linear, power "
                   f"(weight ** --gamma) or log; auto (default): linear up to {AUTO_LINEAR_UP_TO} tokens, log beyond")
    p.add_argument("--gamma", metavar="G", type=float, help="the exponent of --scale power (default: 0.5, the "
                   "square root; below 1 brightens small weights)")
    p.add_argument("--compact", action="store_true", help=f"store {TRACE_FILE} in float16: half the size, each "
                   "weight within 2**-11 of its value (relative); the figures and viewer use the exact weights")
    p.add_argument("--no-viewer", action="store_true", help=f"do not write {VIEWER_FILE}")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from .. import viz
    from ..capturing import AttentionTrace
    from ..viz.html import save_html

    layer = parse_int(args.layer, "--layer")
    head = "mean" if args.head == "mean" else parse_int(args.head, "--head", " or 'mean'")
    span = _parse_span(args.tokens)
    gamma = _check_gamma(args.gamma, args.scale)
    if args.text is None and args.trace is None:
        raise InputError("nothing to show: give a TEXT to run the model on, or --trace FILE to redraw a saved trace")
    if args.text is not None and args.trace is not None:
        raise InputError("give either TEXT (to run the model) or --trace FILE (to redraw a saved trace), not both")
    if args.trace is not None:
        given = [o for o, v in (("--pair", args.pair), ("--model", args.model), ("--merge", args.merge),
                                ("--max-length", args.max_length), ("--truncate", args.truncate)) if v]
        if given:
            raise InputError(f"{', '.join(given)} apply to a TEXT run, not to --trace (a saved trace is drawn as is)")
    trace = AttentionTrace.load(args.trace) if args.trace is not None else None
    found = None  # the model, located once
    if trace is None:
        from .._bundled import locate
        from ..kinds import KIND

        found = locate(args.model or "minilm")
        spec = KIND[found.kind]
        config = spec.config(found)
        if config is not None:  # check what the model's config.json can tell before the slow load
            _check_against_config(args.model or "minilm", config, args.kind, layer, head)
        if spec.cut:  # a model that reads at most its window: the span must fit it
            _check_span_against_limit(args, span)
    out_arg = args.out if args.out is not None else Path(DEFAULT_OUT) / _run_name(args, trace)
    out, base = check_out(out_arg)

    with staging(out, base) as stage:  # fails here, before the model runs, when --out cannot be written
        outcome = _run(args, found) if trace is None else None
        trace = outcome.traced if outcome is not None else trace
        assert trace is not None
        kind = args.kind
        if kind is not None and kind not in trace.kinds:
            raise InputError(f"--kind {kind}: this trace has no {kind} attention, only {', '.join(trace.kinds)}; "
                             f"choose one of those")
        shown = _check_span(args.tokens, span, trace, kind)
        style: dict[str, Any] = {"kind": kind, "span": span, "scale": args.scale, "gamma": gamma}
        figures = {
            "heatmap": viz.heatmap(trace, layer, head, annotate=shown <= ANNOTATE_UP_TO, **style),
            "heads": viz.heads(trace, layer, **style),
            "model": viz.model_grid(trace, **style),
        }
        summary = viz.summarize(trace, kind=kind)
        written = [TRACE_FILE]
        trace.save(stage / TRACE_FILE, dtype="float16" if args.compact else "float32")
        for name, fig in figures.items():
            viz.save(fig, stage / f"{name}.{args.format}")
            written.append(f"{name}.{args.format}")
        if not args.no_viewer:
            save_html(trace, stage / VIEWER_FILE)
            written.append(VIEWER_FILE)
        publish(stage, out, written, OWNED)

    told = outcome.told() if outcome is not None else None
    if told is not None:
        print(told)
    print(summary)
    print(f"\nwrote {len(written)} files to {out_arg}{os.sep}: {'  '.join(written)}")
    return 0


def _run(args: argparse.Namespace, found: Any = None) -> Any:
    """The :class:`attnlab.Outcome` of the model on TEXT: the output the user is told and the trace of that run."""
    from ..kinds import Budget, Model, TooCostlyError

    model = Model.load(found if found is not None else args.model or "minilm")
    options = {"text_pair": args.pair, "merge": args.merge, "max_length": args.max_length, "truncate": args.truncate}
    given = [o for o, (k, v) in zip(("--pair", "--merge", "--max-length", "--truncate"), options.items(), strict=True)
             if v and k not in model.spec.options]
    if given:
        raise InputError(f"{', '.join(given)} apply to encoders, not to the {model.spec.noun} {args.model!r}")
    options = {k: v for k, v in options.items() if k in model.spec.options}
    budget = Budget(kept=SHOW_KEPT, how="shorten the text")
    try:
        return model.run(args.text, budget=budget, **options)
    except TooCostlyError as exc:
        raise InputError(str(exc)) from None
    except TooLongError as exc:
        raise InputError(
            f"the input is {exc.n_tokens} tokens long (special tokens included) but at most {exc.limit} are taken; "
            f"shorten the text, or add --truncate to keep the first {exc.limit} tokens"
        ) from None


def _run_name(args: argparse.Namespace, trace: Any) -> str:
    """The default folder of a run: the first words of the text and a hash of everything that changes the result."""
    if trace is not None:
        return trace_run_name(args.trace, trace)
    return run_name(args.text, repr((args.text, args.pair, args.model or "minilm", args.merge, args.max_length,
                                     args.truncate)))


def _check_against_config(model: str, config: dict[str, Any], kind: str | None, layer: int, head: int | str) -> None:
    """Refuse --layer, --head or --kind that the model's config.json already rules out, before loading it."""
    from ..capturing.pretrained import config_counts

    enc_dec = bool(config.get("is_encoder_decoder"))
    decoder_only = not enc_dec and (bool(config.get("is_decoder")) or "n_layer" in config)
    if kind == "cross" and not enc_dec:
        raise InputError(f"--kind cross needs an encoder-decoder model; {model!r} has no cross-attention")
    if kind == "causal" and not (enc_dec or decoder_only):
        raise InputError(f"--kind causal: {model!r} is an encoder; its attention is --kind self")
    if kind == "self" and decoder_only:
        raise InputError(f"--kind self: {model!r} is a decoder-only model; its attention is --kind causal")
    side = "self" if (kind or ("causal" if decoder_only else "self")) == "self" else "decoder"
    for what, n, value in zip(("layers", "heads"), config_counts(config, side), (layer, head), strict=True):
        if n is None or not isinstance(value, int):
            continue
        if not -n <= value < n:
            option = "--layer" if what == "layers" else "--head"
            raise InputError(f"{option} {value} is out of range: the model has {n} {what} (0..{n - 1}, or "
                             f"negative from the end)")


def _parse_span(value: str | None) -> tuple[int | None, int | None] | None:
    """``--tokens START:STOP`` as ``(start, stop)``; either end may be left out."""
    if value is None:
        return None
    match = re.fullmatch(r"\s*(\d*)\s*:\s*(\d*)\s*", value)
    if match is None:
        raise InputError(f"--tokens takes START:STOP, positions from 0 with STOP excluded (e.g. 100:160, 100: or "
                         f":60), got {value!r}")
    start, stop = (int(g) if g else None for g in match.groups())
    if start is not None and stop is not None and start >= stop:
        raise InputError(f"--tokens {value}: START must be less than STOP (STOP is excluded), e.g. "
                         f"{start}:{start + 60}")
    return start, stop


def _check_span(option: str | None, span: tuple[int | None, int | None] | None, trace: Any, kind: str | None) -> int:
    """How many tokens the heatmap shows on its longer axis; a --tokens range the input does not have is refused.

    As in attnlab.viz: a square stack (self-attention) is cut on both axes, any other on its queries."""
    rec = trace.select(kind=kind or trace.main_kind)[0]
    n_q, n_k = int(rec.weights.shape[2]), int(rec.weights.shape[3])
    if span is None:
        return max(n_q, n_k)
    start, stop = span[0] or 0, n_q if span[1] is None else span[1]
    if stop > n_q or start >= stop:
        raise InputError(f"--tokens {option} does not fit: the input has {n_q} tokens (positions 0..{n_q - 1}); "
                         f"e.g. --tokens {max(0, n_q - 60)}:{n_q}")
    return stop - start if n_q == n_k else max(stop - start, n_k)


def _check_span_against_limit(args: argparse.Namespace, span: tuple[int | None, int | None] | None) -> None:
    """A --tokens STOP beyond the most tokens the model takes can be refused before the model loads."""
    from ..capturing import model_config

    if span is None or span[1] is None:
        return
    limit = args.max_length or model_config(args.model or "minilm").get("max_position_embeddings")
    if isinstance(limit, int) and span[1] > limit:
        raise InputError(f"--tokens {args.tokens} does not fit: the model takes at most {limit} tokens "
                         f"(positions 0..{limit - 1})")


def _check_gamma(gamma: float | None, scale: str) -> float:
    if gamma is None:
        return 0.5
    if scale != "power":
        raise InputError(f"--gamma applies to --scale power, not to --scale {scale}; add --scale power or drop --gamma")
    if not 0 < gamma < float("inf"):
        raise InputError(f"--gamma must be a number > 0, got {gamma}; e.g. --gamma 0.5 (square root)")
    return gamma
