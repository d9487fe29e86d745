"""``attnlab generate``: continue a prompt with a character language model (the bundled zh-lm or the folder of
`attnlab train lm`), streaming each character to stdout as it is sampled, then write the generation's trace and its
offline viewer.  The work lives in ``attnlab.training`` (the model, sampling, capture); this module orchestrates.

The characters stream as they come; the files are computed into a temporary folder next to --out and moved into
place at the end, so bad input leaves no file behind and overwrites nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path
from typing import Any

from ._output import DEFAULT_OUT, TRACE_FILE, VIEWER_FILE, check_out, publish, run_name, staging

EXAMPLES = f"""\
The prompt and what follows print on stdout as they are sampled. {TRACE_FILE} holds the attention captured while
the model generated (the prompt's pass and one step per character, assembled into one causal matrix per layer;
past the model's context, one pass over the last context instead) and {VIEWER_FILE} shows it offline.
Default --out: {DEFAULT_OUT}/<prompt>-<hash>. Characters the model never saw are read as [UNK] (one warning line);
a prompt of nothing but such characters is refused.

examples:
  attnlab generate "中国"                                   # the bundled zh-lm
  attnlab generate --model zh-lm "今天" --max-tokens 200 --temperature 0.8 --top-k 20 --seed 1
  attnlab generate --model ./book-lm "It was" --out book-gen    # the --out of `attnlab train lm`
"""


def add_parser(sub: Any) -> None:
    p = sub.add_parser("generate", help="continue a prompt with a character language model; trace its attention",
                       description="Continue PROMPT with a character language model (the bundled zh-lm or the "
                       "folder of `attnlab train lm`), streaming the text, and write the generation's trace and "
                       "viewer.", epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("prompt", metavar="PROMPT", help="the text to continue (quote it)")
    p.add_argument("--model", default="zh-lm", metavar="NAME_OR_FOLDER",
                   help="zh-lm (default) | the --out folder of `attnlab train lm`")
    p.add_argument("--max-tokens", type=int, default=100, metavar="N", help="characters to generate (default 100)")
    p.add_argument("--temperature", type=float, default=1.0, metavar="T",
                   help="divide the logits by T > 0 before sampling (default 1: the model's own distribution)")
    p.add_argument("--top-k", type=int, default=0, metavar="K", help="sample among the K likeliest only (default 0 "
                   "= all)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="the sampler's seed: the same seed, the same text "
                   "(default 0)")
    p.add_argument("--out", type=Path, metavar="DIR", help=f"the folder to write into (default {DEFAULT_OUT}/"
                   f"<prompt>-<hash>)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..capturing import trace_generation
    from ..trained import check_sampling, load_language_model
    from ..viz import save_html

    check_sampling(args.max_tokens, args.temperature, args.top_k)
    key = repr((args.prompt, args.model, args.max_tokens, args.temperature, args.top_k, args.seed))
    out_arg = args.out if args.out is not None else Path(DEFAULT_OUT) / run_name(args.prompt, key)
    out, base = check_out(out_arg)
    lm = load_language_model(args.model)
    with warnings.catch_warnings():  # the check alone: the generation below warns about unknown characters, once
        warnings.simplefilter("ignore")
        lm.encode_prompt(args.prompt)  # refuses a prompt of unknown characters before anything is written or printed

    def stream(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    with staging(out, base) as stage:
        stream(args.prompt)
        generated, trace = trace_generation(lm, args.prompt, max_tokens=args.max_tokens,
                                            temperature=args.temperature, top_k=args.top_k, seed=args.seed,
                                            on_text=stream)
        print()
        trace.save(stage / TRACE_FILE, dtype="float32")
        save_html(trace, stage / VIEWER_FILE)
        publish(stage, out, [TRACE_FILE, VIEWER_FILE])
    mean = sum(generated.log_probs) / len(generated.log_probs)
    print(f"\n{len(generated.ids)} characters, mean log-probability {mean:.3f} per character (temperature "
          f"{args.temperature:g}{f', top-k {args.top_k}' if args.top_k else ''}, seed {args.seed})"
          f"{'; the trace replays the last context (the window slid)' if generated.slid else ''}")
    print(f"wrote 2 files to {out_arg}{os.sep}: {TRACE_FILE}  {VIEWER_FILE}")
    return 0
