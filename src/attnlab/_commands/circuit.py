"""``attnlab circuit``: the composition graph of a model's heads (Q-, K- and V-composition scores of every pair,
Elhage et al. 2021) with its strongest edges, as a figure and a JSON of every score.  The work lives in
``attnlab.circuits``; this module orchestrates, writing nothing until everything is computed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ._output import DEFAULT_OUT, check_out, publish, run_name, staging

JSON_FILE = "circuit.json"
FIGURE_FILE = "circuit.png"

EXAMPLES = f"""\
Each score says how much a later head's queries (Q), keys (K) or values (V) read what an earlier head writes,
from the weights alone (no text). {JSON_FILE} holds every pair's three scores and the strongest edges;
{FIGURE_FILE} draws the heads and those edges. Default --out: {DEFAULT_OUT}/<model>-<hash>.

examples:
  attnlab circuit --model zh-lm
  attnlab circuit --model ./toy --top 5 --out toy-circuit
"""


def add_parser(sub: Any) -> None:
    p = sub.add_parser("circuit", help="the composition graph of a model's heads (Q/K/V-composition scores)",
                       description="Compute the Q-, K- and V-composition scores of every pair of heads and draw "
                       "the strongest edges (attnlab.circuits).", epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="zh-lm", metavar="NAME_OR_FOLDER",
                   help="zh-lm (default) | zh-sentiment | the --out folder of `attnlab train lm` or `train classify`")
    p.add_argument("--top", type=int, default=8, metavar="N", help="edges to draw and list (default 8)")
    p.add_argument("--out", type=Path, metavar="DIR", help=f"the folder to write into (default {DEFAULT_OUT}/"
                   f"<model>-<hash>)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from .. import _validate
    from ..circuits import circuit_json, composition_baseline, composition_scores, load_text_model
    from ..circuits.figures import composition_figure
    from ..viz import save

    _validate.positive_int("--top", args.top)
    out, base = check_out(args.out if args.out is not None else Path(DEFAULT_OUT) / run_name(
        Path(args.model).name, repr(("circuit", args.model, args.top))))
    tm = load_text_model(args.model)
    comp = composition_scores(tm.model)
    baseline = composition_baseline(tm.model)
    found = circuit_json(tm.name, comp, args.top, baseline)
    with staging(out, base) as stage:
        (stage / JSON_FILE).write_text(json.dumps(found, ensure_ascii=False) + "\n", encoding="utf-8")
        save(composition_figure(comp, top=args.top, title=f"{tm.name}: the {args.top} strongest composition edges"),
             stage / FIGURE_FILE)
        publish(stage, out, [JSON_FILE, FIGURE_FILE])
    print(f"random matrices of these shapes score {baseline:.3f}: an edge means something only above it")
    for edge in found["strongest"][:5]:
        print(f"{edge['mode']}-composition {edge['sender']} -> {edge['receiver']}: {edge['score']:.3f} "
              f"({edge['score'] / baseline:.1f} x the random score)")
    print(f"wrote {out / FIGURE_FILE} and {out / JSON_FILE}")
    return 0
