"""``attnlab predict``: the label and its probability for each TEXT, from a trained classifier."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("predict", help="classify texts with a trained classifier (label and probability)",
                       description="Print the predicted label and its probability for each TEXT.")
    p.add_argument("text", nargs="+", metavar="TEXT", help="the texts to classify (quote each)")
    p.add_argument("--model", required=True, metavar="NAME_OR_FOLDER",
                   help="'zh-sentiment' (the bundled Chinese sentiment classifier) or the --out folder of "
                   "`attnlab train` (or a checkpoint)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..training import load_trained

    clf = load_trained(args.model)
    for text, (label, prob) in zip(args.text, clf.predict(args.text), strict=True):
        print(f"{label}\t{prob:.4f}\t{text}")
    return 0
