"""``attnlab predict``: the label and its calibrated probability for each TEXT, from a trained classifier; with
``--explain``, the characters that matter most (leave-one-out) beside the ones the pooled classifier attends to."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import InputError

TOP = 5  # --explain shows this many characters of each kind

EXAMPLES = """\
Each line: the label, its probability (calibrated on the model's valid split when the model folder holds a
calibration.json, as the bundled zh-sentiment does) and the text, separated by tabs.  A text with more than 10% of
its characters unknown to the model gets a one-line warning on stderr (its prediction says little).

--explain adds two lines per text: the characters whose blanking out (each replaced by one the model never saw)
lowers the predicted label's probability the most, with that drop, and the characters the pooled classifier attends
to most (last encoder layer, mean over heads and over the queries the pooling reads), with their attention share.

examples:
  attnlab predict --model zh-sentiment "这本书写得很好" "送货太慢了"
  attnlab predict --model zh-sentiment --explain "这本书写得很好"
  cat reviews.txt | attnlab predict --model zh-run -     # one text per line
"""


def add_parser(sub: Any) -> None:
    p = sub.add_parser("predict", help="classify texts with a trained classifier (label and probability)",
                       description="Print the predicted label and its probability for each TEXT.", epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("text", nargs="+", metavar="TEXT", help="the texts to classify (quote each); '-' reads them from "
                   "stdin, one per line")
    p.add_argument("--model", required=True, metavar="NAME_OR_FOLDER",
                   help="'zh-sentiment' (the bundled Chinese sentiment classifier) or the --out folder of "
                   "`attnlab train` (or a checkpoint)")
    p.add_argument("--explain", action="store_true", help="also print the characters that matter most (leave-one-out) "
                   "and the ones attended most (the pooled attention)")
    p.set_defaults(run=run)


def read_texts(given: list[str]) -> list[str]:
    """The TEXT arguments, or with ``-`` the lines of stdin (an empty line is refused, naming it)."""
    if "-" not in given:
        return given
    if given != ["-"]:
        raise InputError(f"'-' (read the texts from stdin) takes no other TEXT, got {given}; give either texts or '-'")
    lines = sys.stdin.read().splitlines()
    if not lines:
        raise InputError("stdin holds no text; give one text per line")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            raise InputError(f"line {number} of stdin is empty (got {line!r}); give one text per line, with no "
                             f"blank lines")
    return lines


def pooled_attention(trace: Any, pooling: str) -> list[tuple[str, float]]:
    """``(token, share of attention)`` per key token of what the classifier's pooling reads: the pooling query's
    attention (``pooling="attention"``), or the last encoder layer's, mean over heads, from [CLS] (``"cls"``) or
    from every token (``"mean"``, ``"meanmax"``: the mean pools every token's state).  Empty without attention."""
    cross = trace.select(kind="cross") if "cross" in trace.kinds else []
    own = cross if pooling == "attention" and cross else trace.select(kind="self") if "self" in trace.kinds else []
    if not own:
        return []
    rec = own[-1]
    weights = rec.weights[0].float().mean(0)  # (Lq, Lk), mean over heads
    shares = weights[0] if pooling == "cls" else weights.mean(0)  # (Lk,)
    return [(tok, float(w)) for tok, w in zip(rec.key_tokens, shares, strict=True)]


def _explain(clf: Any, model: str, text: str) -> list[str]:
    from ..capturing import trace_text
    from ..data import CLS

    label, _, drops = clf.blank_out(text)
    top = sorted(drops, key=lambda d: -d[1])[:TOP]
    pieces = [text[a:b] for a, b in clf.tokenizer.encode(text).offsets]  # each token's characters ("" for [CLS])
    attended = [(pieces[i] if i < len(pieces) and pieces[i] else t, w)  # an [UNK] shown as the character it hides
                for i, (t, w) in enumerate(pooled_attention(trace_text(text, model=model), clf.model.config.pooling))
                if t != CLS]
    shown = sorted(attended, key=lambda a: -a[1])[:TOP]
    return [f"  matters most (drop in P({label}) when blanked out): "
            + "  ".join(f"{text[i]} {d:+.3f}" for i, d in top),
            "  attended most (pooled attention, share): "
            + ("  ".join(f"{t} {w:.3f}" for t, w in shown) if shown else "(the model has no attention before its "
               "pooling)")]


def run(args: argparse.Namespace) -> int:
    from ..trained import load_trained

    texts = read_texts(args.text)
    clf = load_trained(args.model)
    for text, (label, prob) in zip(texts, clf.predict(texts), strict=True):
        print(f"{label}\t{prob:.4f}\t{text}")
        if args.explain:
            print("\n".join(_explain(clf, args.model, text)))
    return 0
