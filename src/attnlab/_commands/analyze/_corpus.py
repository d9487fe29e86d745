"""``attnlab analyze --corpus``: per-head means over every real query token of a corpus; rank 0 writes and prints."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from ...errors import InputError
from .._output import check_out, publish, staging
from ._common import CORPUS_FILE, DEFAULT_OUT, model_name, refuse_others


def run(args: argparse.Namespace) -> int:
    from ...analysis import corpus_metrics
    from ...capturing import load_encoder

    refuse_others(args, ("text", "trace", "treebank", "parse", "flow_target", "segmented", "attribution"),
                  "--corpus measures a corpus on its own")
    if not args.corpus.is_file():
        raise InputError(f"no corpus file at {str(args.corpus)!r}; give a text file with one text per line")
    out_arg = args.out if args.out is not None else Path(DEFAULT_OUT) / f"corpus-{args.corpus.stem}"
    out, base = check_out(out_arg)
    model, tokenizer, name = load_encoder(model_name(args))  # attnlab's BertEncoder for a plain BERT folder
    result = corpus_metrics(model, tokenizer, args.corpus, batch_size=args.batch_size, max_length=args.max_length)
    if int(os.environ.get("RANK", "0")) != 0:
        return 0
    with staging(out, base) as stage:
        (stage / CORPUS_FILE).write_text(json.dumps(result.to_json(name, str(args.corpus)), ensure_ascii=False,
                                                    allow_nan=False) + "\n", encoding="utf-8")
        publish(stage, out, [CORPUS_FILE])
    print(result.table(name))
    print(f"\nwrote {out_arg}{os.sep}{CORPUS_FILE} (per-head means)")
    return 0
