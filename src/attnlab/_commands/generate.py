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

ATTRIBUTION_FIGURE = "attribution.png"
ATTRIBUTION_FILE = "attribution.json"

EXAMPLES = f"""\
The prompt and what follows print on stdout as they are sampled. {TRACE_FILE} holds the attention captured while
the model generated (the prompt's pass and one step per character, assembled into one causal matrix per layer;
past the model's context, one pass over the last context instead) and {VIEWER_FILE} shows it offline.
Default --out: {DEFAULT_OUT}/<prompt>-<hash>. Characters the model never saw are read as [UNK] (one warning line);
a prompt of nothing but such characters is refused.

examples:
  attnlab generate "中国"                                   # the bundled zh-lm
  attnlab generate --model zh-lm "今天" --max-tokens 200 --temperature 0.8 --top-k 20 --seed 1
  attnlab generate "经济发展" --greedy                       # the likeliest each time; a loop is said
  attnlab generate "中国" --max-tokens 30 --attribute       # + attribution.png: which characters each one used
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
    p.add_argument("--temperature", type=float, default=None, metavar="T",
                   help="divide the logits by T > 0 before sampling (default 0.8; 1: the model's own distribution; "
                   "a T so small that the logits over it overflow, e.g. 1e-300, takes the likeliest character, as "
                   "--greedy does)")
    p.add_argument("--top-k", type=int, default=None, metavar="K", help="sample among the K likeliest only (default 0 "
                   "= all)")
    p.add_argument("--top-p", type=float, default=None, metavar="P", help="sample among the fewest likeliest "
                   "characters whose probability reaches P (nucleus sampling; default 0.9, 1 = off)")
    p.add_argument("--repetition-penalty", type=float, default=None, metavar="R", help="lower every character "
                   "already in the window the model reads: a positive logit divided by R, a negative one multiplied "
                   "(default 1.2, 1 = off)")
    p.add_argument("--no-repeat-ngram", type=int, default=None, metavar="N", help="never repeat an N-gram of the "
                   "prompt and the text so far (default 4, 0 = off)")
    p.add_argument("--greedy", action="store_true", help="take the likeliest character each time (after the "
                   "penalties) instead of sampling; a loop is detected and said")
    p.add_argument("--attribute", action="store_true", help="also attribute every generated character to the "
                   f"characters the model read (ALTI-Logit, gradient x input): {ATTRIBUTION_FIGURE} and "
                   f"{ATTRIBUTION_FILE}")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="the sampler's seed, 0 to 2**63 - 1: the same "
                   "seed, the same text (default 0)")
    p.add_argument("--out", type=Path, metavar="DIR", help=f"the folder to write into (default {DEFAULT_OUT}/"
                   f"<prompt>-<hash>)")
    p.set_defaults(run=run)


def sampling(args: argparse.Namespace, defaults: dict[str, Any] | None = None) -> dict[str, Any]:
    """The sampling settings of the command line over the model's ``defaults`` (``LanguageModel.defaults``; None:
    the library's, ``attnlab.trained.SAMPLING``).  A model whose defaults are greedy samples when a temperature,
    top-k or top-p is given."""
    from ..trained import SAMPLING

    base = defaults if defaults is not None else {**SAMPLING, "greedy": False}
    given = {"temperature": args.temperature, "top_k": args.top_k, "top_p": args.top_p,
             "repetition_penalty": args.repetition_penalty, "no_repeat_ngram": args.no_repeat_ngram}
    sampled = any(given[k] is not None for k in ("temperature", "top_k", "top_p"))
    greedy = bool(args.greedy) or (bool(base.get("greedy")) and not sampled)
    return {**base, **{k: v for k, v in given.items() if v is not None}, "greedy": greedy}


def described(settings: dict[str, Any], seed: int) -> str:
    """The settings as the summary line says them."""
    if settings["greedy"]:
        head = "greedy"
    else:
        head = f"temperature {settings['temperature']:g}" + (f", top-k {settings['top_k']}" if settings["top_k"]
                                                            else "") + f", top-p {settings['top_p']:g}"
    return (f"{head}, repetition penalty {settings['repetition_penalty']:g}, no-repeat-ngram "
            f"{settings['no_repeat_ngram']}{'' if settings['greedy'] else f', seed {seed}'}")


def run(args: argparse.Namespace) -> int:
    from .._bundled import locate
    from ..errors import InputError
    from ..kinds import KIND, Model
    from ..trained import check_sampling

    if not args.prompt.strip():  # as the lab and every other command refuse an empty text
        raise InputError(f"the prompt is empty (got {args.prompt!r}); give some text to continue, e.g. \"中国\"")
    found = locate(args.model, *(k for k, spec in KIND.items() if spec.able("sample")))  # the one time it is found
    if args.attribute:
        KIND[found.kind].require("attribute", found.given, "attributing a generation (--attribute)")
    model = Model.load(found)
    settings = sampling(args, model.loaded.defaults)  # the model's own defaults beneath (sampling.json)
    check_sampling(args.max_tokens, settings["temperature"], settings["top_k"], settings["top_p"],
                   settings["repetition_penalty"], settings["no_repeat_ngram"], seed=args.seed)
    key = repr((args.prompt, args.model, args.max_tokens, sorted(settings.items()), args.seed, args.attribute))
    out_arg = args.out if args.out is not None else Path(DEFAULT_OUT) / run_name(args.prompt, key)
    out, base = check_out(out_arg)
    with warnings.catch_warnings():  # the check alone: the generation below warns about unknown characters, once
        warnings.simplefilter("ignore")
        model.spec.check_prompt(model, args.prompt, args.max_tokens)  # refused before anything is written
    from ..viz import save_html

    def stream(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    files = [TRACE_FILE, VIEWER_FILE]
    with staging(out, base) as stage:
        stream(args.prompt)
        outcome = model.run(args.prompt, max_tokens=args.max_tokens, seed=args.seed, on_text=stream, **settings)
        generated, trace = outcome.result, outcome.traced
        print()
        trace.save(stage / TRACE_FILE, dtype="float32")
        save_html(trace, stage / VIEWER_FILE)
        if args.attribute:
            agreement = attribute(model.loaded, generated, args.prompt, stage, model.spec.unit)
            files += [ATTRIBUTION_FIGURE, ATTRIBUTION_FILE]
        publish(stage, out, files)
    mean = outcome.score  # the model's own, per character, before temperature and penalties: as every surface
    unit = model.spec.unit
    print(f"\n{len(generated.ids)} {unit}s, mean log-probability {mean:.3f} per {unit} "
          f"({described(settings, args.seed)})"
          f"{'; the trace replays the last context (the window slid)' if generated.slid else ''}")
    if args.attribute and agreement == agreement:
        print(f"attribution: ALTI-Logit and gradient x input of each generated {unit} over the {unit}s the "
              f"model read; their rankings agree with a mean Spearman correlation of {agreement:.2f}")
    elif args.attribute:  # a Hugging Face language model: ALTI-Logit is exact only through attnlab's own blocks
        print(f"attribution: gradient x input of each generated {unit} over the {unit}s the model read, at its token "
              f"embeddings (ALTI-Logit is left out: its decomposition is exact only through attnlab's own blocks)")
    print(f"wrote {len(files)} files to {out_arg}{os.sep}: {'  '.join(files)}")
    return 0


def attribute(lm: Any, generated: Any, prompt: str, stage: Path, unit: str = "character") -> float:
    """Write the attribution figure and its numbers into ``stage``; the two methods' mean rank agreement."""
    import json

    from .._io import atomic_write_text
    from ..analysis import attribute_generation, generation_attribution_figure
    from ..viz import save

    got = attribute_generation(lm.model, generated.prompt_ids, generated.ids)
    chars = lm.characters()
    title = f"{lm.name}: which earlier {unit}s each generated {unit} used (logit contributions)"
    save(generation_attribution_figure(got, chars, title, unit=unit), stage / ATTRIBUTION_FIGURE)
    agreement = got.agreement()

    def rows(matrix: Any) -> list[list[float | None]]:
        return [[None if x != x else round(float(x), 6) for x in row] for row in matrix]

    record = {"prompt": prompt, "sources": [chars[i] for i in got.sources],
              "generated": [chars[i] for i in got.generated], "n_prompt": got.n_prompt,
              "logits": [round(float(x), 6) for x in got.logits], "alti_logit": rows(got.alti_logit),
              "grad_x_input": rows(got.grad_x_input),
              "spearman_agreement": None if agreement != agreement else round(agreement, 4)}
    atomic_write_text(stage / ATTRIBUTION_FILE, json.dumps(record, ensure_ascii=False) + "\n")
    return agreement
