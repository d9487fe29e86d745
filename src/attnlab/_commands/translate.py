"""``attnlab translate``: translate a text with a bundled or trained translator, print the translation, and write
the alignment heatmap and the offline viewer with the captured cross-attention.  The work lives in
``attnlab.training`` (the translator), ``attnlab.capturing`` and ``attnlab.viz``; this module orchestrates.

Nothing is written until everything has been computed (files go to a temporary folder next to --out and are
moved into place at the end), so bad input leaves no file behind and overwrites nothing.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from ..errors import InputError
from ._output import DEFAULT_OUT, TRACE_FILE, VIEWER_FILE, check_out, publish, run_name, staging

ALIGNMENT_FILE = "alignment.png"

EXAMPLES = f"""\
The alignment heatmap ({ALIGNMENT_FILE}) puts the source tokens along x and the generated tokens along y: row i
is where the model looked while it generated token i (for the transformer: its last decoder layer, mean of the
heads).  {VIEWER_FILE} is the offline viewer with the cross-attention of every layer and head, and {TRACE_FILE}
the captured trace (`attnlab show --trace` redraws it).  Default --out: {DEFAULT_OUT}/<first words>-<hash>.
Characters the model never saw are read as [UNK] (with a warning); an empty text or one longer than the
model takes is refused.

examples:
  attnlab translate "Friday, March 5, 2021" --model dates-zh
  attnlab translate "vendredi 5 mars 2021" --model dates-zh --beam 4 --out fr-date
  attnlab translate "The cat sat on the mat." --model tutorial-en-zh
  attnlab translate "the dog that the cat saw" --model ./my-run     # the --out of `attnlab train translate`
"""


def add_parser(sub: Any) -> None:
    p = sub.add_parser("translate", help="translate a text with a trained translator; draw its alignment",
                       description="Translate TEXT with a bundled translator (dates-zh, dates-zh/luong, "
                       "tutorial-en-zh) or the folder of `attnlab train translate`; print the translation and write "
                       "the alignment heatmap and the viewer.", epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("text", metavar="TEXT", help="the text to translate (quote it)")
    p.add_argument("--model", required=True, metavar="NAME_OR_FOLDER",
                   help="dates-zh | dates-zh/luong | tutorial-en-zh | the --out folder of `attnlab train translate`")
    p.add_argument("--beam", type=int, default=1, metavar="N", help="beam search with N hypotheses (default 1: "
                   "greedy)")
    p.add_argument("--out", type=Path, metavar="DIR", help=f"the folder to write into (default {DEFAULT_OUT}/"
                   f"<first words>-<hash>)")
    p.add_argument("--no-viewer", action="store_true", help=f"write {ALIGNMENT_FILE} only")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from .. import viz
    from ..capturing import trace_translation
    from ..training import load_translator

    if args.beam < 1:
        raise InputError(f"--beam must be at least 1, got {args.beam}; 1 is greedy, 4 a usual beam")
    if not args.text.strip():
        raise InputError(f"the text to translate is empty (got {args.text!r}); give some text")
    key = repr((args.text, args.model, args.beam))
    out_arg = args.out if args.out is not None else Path(DEFAULT_OUT) / run_name(args.text, key)
    out, base = check_out(out_arg)
    translator = load_translator(args.model)
    with staging(out, base) as stage:
        translation, trace = trace_translation(translator, args.text, args.beam)
        fig = viz.alignment(translation.alignment, translation.source_tokens, translation.target_tokens,
                            title=f"{args.text}  →  {translation.text}")
        viz.save(fig, stage / ALIGNMENT_FILE)
        written = [ALIGNMENT_FILE]
        if not args.no_viewer:
            trace.save(stage / TRACE_FILE, dtype="float32")
            viz.save_html(trace, stage / VIEWER_FILE)
            written += [TRACE_FILE, VIEWER_FILE]
        publish(stage, out, written)
    print(translation.text)
    print(f"\nwrote {len(written)} files to {out_arg}{os.sep}: {'  '.join(written)}")
    return 0
