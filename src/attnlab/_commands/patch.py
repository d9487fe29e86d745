"""``attnlab patch``: activation or path patching of a clean text into a corrupted one, on a language model or a
classifier, drawn as heatmaps with a JSON of every number.  The work lives in ``attnlab.circuits``; this module
orchestrates.

Everything is computed into a temporary folder next to --out and moved into place at the end, so bad input leaves
no file behind and overwrites nothing.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ._output import DEFAULT_OUT, check_out, publish, run_name, staging

JSON_FILE = "patch.json"
FIGURES = {"resid": "resid.png", "heads": "heads.png", "pattern": "pattern.png", "path": "path.png"}

EXAMPLES = f"""\
The corrupted text runs with one activation at a time taken from the clean run; each cell says what share of the
clean - corrupted difference in logit[TARGET] - logit[DISTRACTOR] (at the last position) that restores. Default
target: the clean run's top prediction; default distractor: the corrupted run's. {JSON_FILE} holds every number,
and the figure (resid: layer x position; heads, pattern, path: layer x head) outlines the cell that matters most.
The two texts must be the same number of tokens (characters for a language model). Default --out:
{DEFAULT_OUT}/<clean text>-<hash>.

examples:
  attnlab patch --model zh-lm --clean "中国人民中国人" --corrupt "美国朋友中国人" --what heads
  attnlab patch --model zh-lm --clean "中国人民中国人" --corrupt "美国朋友中国人" --what resid --target 民
  attnlab patch --model ./toy --clean "ab3Zab3" --corrupt "xy7Qab3" --what path --receiver 1.2 --into k
  attnlab patch --model zh-sentiment --clean "这本书写得很好" --corrupt "这本书写得很差" --what heads
"""


def add_parser(sub: Any) -> None:
    p = sub.add_parser("patch", help="activation / path patching of a clean text into a corrupted one",
                       description="Patch activations of the clean text's run into the corrupted text's, one at a "
                       "time, and draw which ones restore the clean behaviour (attnlab.circuits).",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="zh-lm", metavar="NAME_OR_FOLDER",
                   help="zh-lm (default) | zh-sentiment | the --out folder of `attnlab train lm` or `train classify`")
    p.add_argument("--clean", required=True, metavar="TEXT", help="the text whose behaviour is restored")
    p.add_argument("--corrupt", required=True, metavar="TEXT", help="the same number of tokens, changed")
    p.add_argument("--target", metavar="TOKEN", help="the output the metric favours (a character of a language "
                   "model, a label of a classifier; default: the clean run's top one)")
    p.add_argument("--distractor", metavar="TOKEN", help="the output it is compared with (default: the corrupted "
                   "run's top one)")
    p.add_argument("--what", default="heads", choices=tuple(FIGURES),
                   help="resid: the residual stream, layer x position; heads: each head's output; pattern: each "
                   "head's attention pattern; path: path patching from each head (default heads)")
    p.add_argument("--receiver", metavar="LAYER.HEAD", help="--what path: the receiving head (default: the logits)")
    p.add_argument("--sender", metavar="LAYER.HEAD", help="--what path: one sending head (default: every head below "
                   "the receiver)")
    p.add_argument("--into", default="k", choices=("q", "k", "v"), help="--what path: the receiver's input the path "
                   "reaches (default k)")
    p.add_argument("--out", type=Path, metavar="DIR", help=f"the folder to write into (default {DEFAULT_OUT}/"
                   f"<clean text>-<hash>)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..circuits import load_text_model, parse_head, patch_texts
    from ..circuits.figures import patching_figure
    from ..errors import InputError
    from ..viz import save

    receiver = parse_head(args.receiver, "--receiver") if args.receiver else None
    sender = parse_head(args.sender, "--sender") if args.sender else None
    if args.what != "path" and (receiver or sender):
        raise InputError(f"--receiver and --sender are for --what path, got --what {args.what}; drop them or "
                         f"pass --what path")
    key = repr((args.model, args.clean, args.corrupt, args.target, args.distractor, args.what, args.receiver,
                args.sender, args.into))
    out, base = check_out(args.out if args.out is not None else Path(DEFAULT_OUT) / run_name(args.clean, key))
    tm = load_text_model(args.model)
    found = patch_texts(tm, args.clean, args.corrupt, target=args.target, distractor=args.distractor,
                        what=args.what, receiver=receiver, into=args.into, sender=sender)
    figure = FIGURES[args.what]
    with staging(out, base) as stage:
        (stage / JSON_FILE).write_text(json.dumps(found.to_json(), ensure_ascii=False, indent=1) + "\n",
                                       encoding="utf-8")
        labels = [c if c == k else f"{c}/{k}" for c, k in zip(found.tokens, found.corrupt_tokens, strict=True)]
        save(patching_figure(found.result, labels), stage / figure)
        publish(stage, out, [JSON_FILE, figure], owned=[JSON_FILE, *FIGURES.values()])
    print(found.summary())
    print(f"wrote {out / figure} and {out / JSON_FILE}")
    return 0
