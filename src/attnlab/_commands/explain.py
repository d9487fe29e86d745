"""``attnlab explain [TOPIC]``: the tutorials' claims, checked.  The work lives in :mod:`attnlab.explain`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .._bundled import locate
from ..errors import ConfigError

DEFAULT_OUT = "attnlab-explain"

EXAMPLES = """\
examples:
  attnlab explain                      # every topic with its claim and verdict
  attnlab explain scaling              # the numbers; writes attnlab-explain/scaling.png
  attnlab explain cost --full          # a bigger grid of n (a minute or more)
  attnlab explain seeing --classifier zh-sentiment   # also a trained classifier (or its --out folder)
  attnlab explain masks --out figs     # figures into figs/
"""


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "explain",
        help="the tutorials' claims, reproduced and checked: numbers and figures",
        description="Without TOPIC, list the topics with their one-line verdicts. With a TOPIC, compute its numbers "
        "(seeded, offline), print them with the verdict, and write its figures as PNG into --out.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("topic", nargs="?", metavar="TOPIC", help="a topic name (run without it for the list)")
    p.add_argument("--out", type=Path, default=Path(DEFAULT_OUT), metavar="DIR",
                   help=f"folder for the figures (default: {DEFAULT_OUT}); written all or nothing")
    p.add_argument("--full", action="store_true", help="cost: the bigger grid of n (up to 8192) and more repeats")
    p.add_argument("--classifier", metavar="NAME_OR_FOLDER",
                   help="seeing: also read a classifier: 'zh-sentiment' (the bundled one) or the --out folder of "
                   "`attnlab train classify`")
    p.add_argument("--no-figures", action="store_true", help="print the numbers only")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..explain import TOPICS, get_topic, write_figures

    if args.topic is None:
        width = max(map(len, TOPICS))
        for name, topic in TOPICS.items():
            print(f"{name:<{width}}  {topic.summary}")
        print("\nrun `attnlab explain TOPIC` for the numbers and figures")
        return 0
    topic = get_topic(args.topic)  # a bad name: one line naming the topics, exit 2, nothing written
    if args.full and topic.name != "cost":
        raise ConfigError(f"--full applies to the cost topic only, got topic {topic.name!r}; drop --full")
    if args.out.exists() and not args.out.is_dir():
        raise ConfigError(f"--out {str(args.out)!r} exists and is not a folder; choose another path")
    if args.classifier is not None and topic.name != "seeing":
        raise ConfigError(f"--classifier applies to the seeing topic only, got topic {topic.name!r}; drop it")
    if args.classifier is not None:
        locate(args.classifier, "classifier")  # a translator, an encoder, a missing folder: one line, exit 2
    if args.full:
        finding = topic.run(quick=False)
    elif args.classifier is not None:
        finding = topic.run(classifier=args.classifier)
    else:
        finding = topic.run()
    print(finding.text)
    if finding.figures and not args.no_figures:
        paths = write_figures(finding, args.out)
        print(f"\nwrote {len(paths)} figure{'s' if len(paths) != 1 else ''} to {args.out}/: "
              + "  ".join(p.name for p in paths))
    return 0
