"""``attnlab analyze TEXT`` (or ``--treebank``, ``--trace``): every head of a model on one text, measured, labelled
and drawn; with ``--attribution`` also what each input token contributes.  Nothing is written until everything is
computed (files go to a temporary folder next to ``--out`` and are moved into place at the end)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from ...errors import InputError
from .._output import TRACE_FILE, VIEWER_FILE, check_out, parse_int, publish, run_name, staging, trace_run_name
from ._common import DEFAULT_OUT, JSON_FILE, model_name


def run(args: argparse.Namespace) -> int:
    from ... import analysis
    from ...analysis import figures as draw
    from ...trace import AttentionTrace
    from ...viz import save
    from ...viz.html import save_html

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
    summary = None
    with staging(out, base) as stage:  # fails here, before the model runs, when --out cannot be written
        ratio: Any = None
        missing: str | None = "a saved --trace holds the attention alone, not the model's values"
        if loaded is not None:
            trace = loaded
        else:
            assert text is not None  # _check_args: a TEXT, a treebank's sentences or a trace
            trace, ratio, missing = _traced(text, args)
        causal = None
        if trace.records and trace.main_kind == "causal" and args.trace is None:
            causal = analysis.causal_head_scores(_model(args))
        report = analysis.analyze_trace(trace, sentences=sentences, causal_scores=causal, flow_targets=targets,
                                        value_norm_ratio=ratio, value_norm_missing=missing)
        trace.meta["heads"] = report.heads_meta()
        figures = {"labels": draw.label_grid(report), "metrics": draw.metric_heatmaps(report),
                   "mds": draw.mds_figure(report)}
        if report.flow is not None:
            figures["rollout"] = draw.rollout_figure(report)
            figures["flow"] = draw.flow_figure(report)
        doc = report.to_json()
        if args.attribution:
            assert text is not None  # _check_args: --attribution needs the model, so no --trace
            summary = analysis.summarize_attribution(analysis.attribute_text(text, model_name(args)),
                                                     list(trace.tokens or []))
            figures |= draw.attribution_figures(summary)
            doc["attribution"] = summary.to_json()
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
    if summary is not None:
        print("\n" + summary.table())
    print(f"\nwrote {len(written)} files to {out_arg}{os.sep}: {'  '.join(written)}")
    return 0


def _traced(text: str, args: argparse.Namespace) -> tuple[Any, Any, str | None]:
    """The model's attention on ``text`` and, from the same run, what each head's value at the first token writes
    over what the others' do (``(L, H)``, :func:`attnlab.circuits.value_norms`; no second run), or why not."""
    from ... import analysis
    from ...circuits import model_value_norms
    from ...errors import InputError as Missing

    model = _model(args)
    with model_value_norms(model, text) as kept:
        trace = analysis.trace_for_analysis(text, model, args.max_length)
    if not trace.records:
        return trace, None, None  # analyze_trace refuses it, saying why
    try:
        return trace, kept.first_value_ratio(int(trace.select(kind=trace.main_kind)[0].weights.shape[-1])), None
    except Missing as exc:
        return trace, None, str(exc)


def _check_args(args: argparse.Namespace) -> None:
    model = _model(args) if args.trace is None and (args.text is not None or args.model is not None) else None
    if args.text is None and args.trace is None and args.treebank is None and model is not None:
        args.text = model.spec.analysis_text(model)  # a language model's own default text
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
    if args.attribution and model is not None and not model.spec.able("explain"):  # refused before anything runs
        raise InputError(f"--attribution reads BERT-family encoders and attnlab classifiers, not a "
                         f"{model.spec.noun}; leave it out for --model {args.model}")


def _model(args: argparse.Namespace) -> Any:
    """The model of ``--model`` (default MiniLM), loaded once (Model.load's cache gives it again; a translator is
    refused here, before any run, with the command that reads it)."""
    from ...analysis import analyzed

    loaded = getattr(args, "_loaded", None)  # found and loaded once per command
    if loaded is None:
        loaded = args._loaded = analyzed(model_name(args))
    return loaded


def _run_name(args: argparse.Namespace, text: str | None, trace: Any) -> str:
    """The default folder of a run: the first words of the text and a hash of what changes the result (the same
    key as `attnlab show` without its pair, merge and truncate options, so the folder names stay those of before)."""
    if trace is not None:
        return trace_run_name(args.trace, trace)
    assert text is not None  # _check_args: a TEXT, a treebank's sentences or a trace
    return run_name(text, repr((text, None, model_name(args), None, args.max_length, False)))
