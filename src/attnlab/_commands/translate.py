"""``attnlab translate``: translate a text with a bundled or trained translator, print the translation, and write
the alignment heatmap and the offline viewer with the captured cross-attention.  The work lives in
``attnlab.training`` (the translator), ``attnlab.capture`` and ``attnlab.viz``; this module orchestrates.

Nothing is written until everything has been computed (files go to a temporary folder next to --out and are
moved into place at the end), so bad input leaves no file behind and overwrites nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
from pathlib import Path
from typing import Any

from ..errors import InputError

DEFAULT_OUT = "attnlab-out"
ALIGNMENT_FILE = "alignment.png"
VIEWER_FILE = "viewer.html"
TRACE_FILE = "trace.attn"

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
                       description="Translate TEXT with a bundled translator (dates-zh, tutorial-en-zh) or the "
                       "folder of `attnlab train translate`; print the translation and write the alignment "
                       "heatmap and the viewer.", epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("text", metavar="TEXT", help="the text to translate (quote it)")
    p.add_argument("--model", required=True, metavar="NAME_OR_FOLDER",
                   help="dates-zh | tutorial-en-zh | the --out folder of `attnlab train translate`")
    p.add_argument("--beam", type=int, default=1, metavar="N", help="beam search with N hypotheses (default 1: "
                   "greedy)")
    p.add_argument("--out", type=Path, metavar="DIR", help=f"the folder to write into (default {DEFAULT_OUT}/"
                   f"<first words>-<hash>)")
    p.add_argument("--no-viewer", action="store_true", help=f"write {ALIGNMENT_FILE} only")
    p.set_defaults(run=run)


def _run_name(text: str, model: str, beam: int) -> str:
    slug = ""
    for word in re.findall(r"\w+", text.lower()):
        if slug and len(slug) + len(word) >= 40:
            break
        slug = f"{slug}-{word[:40]}" if slug else word[:40]
    return f"{slug or 'input'}-{hashlib.sha1(repr((text, model, beam)).encode()).hexdigest()[:6]}"


def capture_translation(translator: Any, text: str, beam: int) -> tuple[Any, Any]:
    """``(translation, trace)``: greedy decoding is captured as it runs (one record per layer and decoding step,
    assembled by the trace); a beam search's chosen hypothesis is replayed teacher-forced under capture, which
    gives the same weights that hypothesis had."""
    import torch

    from ..capture import capture
    from ..training._runtime import collate

    model = translator.model
    if beam == 1:
        with capture(model) as trace:
            (translation,) = translator.translate([text], beam=1)
        return translation, trace.with_tokens(translation.source_tokens,
                                              ["[BOS]", *translation.target_tokens, "[EOS]"])
    (translation,) = translator.translate([text], beam=beam)
    cfg = model.config
    # [BOS] and every generated token: the inputs of every step, the last one's output EOS (none when the search
    # stopped at max_length, which counts EOS)
    read = [int(cfg.bos_id), *translation.ids][: int(cfg.max_length)]
    with torch.no_grad(), capture(model) as trace:
        model(collate(translator.encode([text]), torch.device("cpu"), int(cfg.pad_id)),
              collate([read], torch.device("cpu"), int(cfg.pad_id)))
    labels = ["[BOS]", *translation.target_tokens][: len(read)]
    trace = trace.with_tokens(translation.source_tokens, labels)
    return translation, trace


def run(args: argparse.Namespace) -> int:
    from .. import viz
    from ..training import load_translator
    from .show import _check_out, _staging

    if args.beam < 1:
        raise InputError(f"--beam must be at least 1, got {args.beam}; 1 is greedy, 4 a usual beam")
    if not args.text.strip():
        raise InputError(f"the text to translate is empty (got {args.text!r}); give some text")
    out_arg = args.out if args.out is not None else Path(DEFAULT_OUT) / _run_name(args.text, args.model, args.beam)
    out, base = _check_out(out_arg)
    translator = load_translator(args.model)
    with _staging(out, base) as stage:
        translation, trace = capture_translation(translator, args.text, args.beam)
        fig = viz.alignment(translation.alignment, translation.source_tokens, translation.target_tokens,
                            title=f"{args.text}  →  {translation.text}")
        viz.save(fig, stage / ALIGNMENT_FILE)
        written = [ALIGNMENT_FILE]
        if not args.no_viewer:
            trace.save(stage / TRACE_FILE, dtype="float32")
            viz.save_html(trace, stage / VIEWER_FILE)
            written += [TRACE_FILE, VIEWER_FILE]
        out.mkdir(parents=True, exist_ok=True)
        for name in written:
            os.replace(stage / name, out / name)
    print(translation.text)
    print(f"\nwrote {len(written)} files to {out_arg}{os.sep}: {'  '.join(written)}")
    return 0
