"""``attnlab predict``: the label and its calibrated probability for each TEXT, from a trained classifier; with
``--explain``, the characters that matter most (leave-one-out) and that built the logit (ALTI-Logit, signed) beside
the ones the pooled classifier attends to."""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Iterator
from typing import Any

from ..errors import InputError
from ._output import read_stdin_lines

TOP = 5  # --explain shows this many characters of each kind
# --explain blanks out each character in turn: as many runs of the whole text as it has characters, so its cost grows
# with the square of the length (300 characters 3 s here, 1,000 about 35 s); longer texts are refused before running
EXPLAIN_MOST = 1_000

EXAMPLES = """\
Each line: the label, its probability (calibrated on the model's valid split when the model folder holds a
calibration.json, as the bundled zh-sentiment does) and the text, separated by tabs (a tab, a line break or another
control character in the text is written escaped, \\t, \\n, \\x1b, so that each answer stays one line of three
fields).  Every text is answered in its place: one the model cannot read (empty, or nothing it knows) gets
"-<tab>-<tab>TEXT" and its reason on stderr, and the command exits 2 when any was refused.  A text with any
character unknown to the model gets a one-line warning on stderr naming them and their share; a text of nothing
else is refused (the rule of every model, attnlab.trained.unknown_warning).  A text longer
than the model's window (127 characters for zh-sentiment) is read whole, in overlapping windows pooled as one text;
nothing is cut.

--explain adds three lines per text: the characters whose blanking out (each replaced by one the model never saw)
lowers the predicted label's probability the most, with that drop; the characters that built the predicted label's
logit, ALTI-Logit's signed shares (largest in size first; + pushed the label up, - pushed it down; the method that
met the faithfulness goal: the guide's Analysis page, "Faithfulness"); and the characters the pooled classifier
attends to most (last encoder layer, mean over heads and over the queries the pooling reads), with their attention
share.

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
    p.add_argument("--explain", action="store_true", help="also print the characters that matter most (leave-one-out), "
                   "the ones that built the logit (ALTI-Logit, signed) and the ones attended most (the pooled "
                   "attention)")
    p.set_defaults(run=run)


def read_texts(given: list[str]) -> list[str]:
    """The TEXT arguments, or with ``-`` the lines of stdin (a blank line is a text like any other: it is answered
    as refused, in its place)."""
    if "-" not in given:
        return given
    if given != ["-"]:
        raise InputError(f"'-' (read the texts from stdin) takes no other TEXT, got {given}; give either texts or '-'")
    lines = read_stdin_lines()
    if not lines:
        raise InputError("stdin holds no text; give one text per line")
    return lines


def each(model: Any, texts: list[str]) -> Iterator[tuple[str, Any]]:
    """``(text, outcome)`` for each text in order, batched; a text the model refuses gets its
    :class:`~attnlab.errors.InputError` in place of an outcome, and the others are still answered."""
    try:
        yield from zip(texts, model.run_many(texts), strict=True)
        return
    except InputError:
        pass
    for text in texts:  # one of them is refused: each on its own
        try:
            [outcome] = model.run_many([text])
        except InputError as exc:
            yield text, exc
        else:
            yield text, outcome


def _explain(model: Any, text: str) -> list[str]:
    """The three --explain lines of ``text``: leave-one-out drops, ALTI-Logit, and the pooled attention of the run
    that made the prediction (one run: the trace is that run's)."""
    from ..analysis import pooled_attention
    from ..data import CLS

    clf = model.loaded
    with warnings.catch_warnings():  # run_many has said this text's warnings already: each is said once
        warnings.simplefilter("ignore")
        outcome = model.run(text)
    label = outcome.output["label"]
    _, _, drops = clf.blank_out(text)
    top = sorted(drops, key=lambda d: -d[1])[:TOP]
    pieces = [text[a:b] for a, b in clf.tokenizer.spans(text)]  # each token's characters ("" for [CLS])
    attended = [(pieces[i] if i < len(pieces) and pieces[i] else t, w)  # an [UNK] shown as the character it hides
                for i, (t, w) in enumerate(pooled_attention(outcome.traced, clf.model.config.pooling))
                if t != CLS]
    shown = sorted(attended, key=lambda a: -a[1])[:TOP]
    return [f"  matters most (drop in P({label}) when blanked out): "
            + "  ".join(f"{text[i]} {signed(d, 3)}" for i, d in top),
            _alti_line(clf, text, label, pieces),
            "  attended most (pooled attention, share): "
            + ("  ".join(f"{t} {w:.3f}" for t, w in shown) if shown else "(the model has no attention before its "
               "pooling)")]


def _alti_line(clf: Any, text: str, label: str, pieces: list[str]) -> str:
    """ALTI-Logit's signed share of the predicted label's logit, the characters with the largest in size: where the
    verdict was built (leave-one-out above says what removing one character would change)."""
    import torch

    from ..analysis import alti_logit

    head = f"  built the {label} logit (ALTI-Logit, signed: + pushed it up): "
    ids = clf.tokenizer.encode(text)
    if len(ids) > clf.model.config.max_length:
        return head + f"(the text is {len(ids)} tokens, read in windows; ALTI-Logit reads one window of " \
                      f"{clf.model.config.max_length})"
    try:
        got = alti_logit(clf.model.eval(), torch.tensor([ids]), clf.labels.index(label))
    except InputError as exc:  # a post-norm encoder, or none (the tutorials' pooling model)
        return head + f"(not for this model: {str(exc).split(';')[0]})"
    named = [(pieces[i] if i < len(pieces) and pieces[i] else None, float(v)) for i, v in enumerate(got.tokens)]
    top = sorted([(t, v) for t, v in named if t], key=lambda a: -abs(a[1]))[:TOP]
    return head + "  ".join(f"{t} {signed(v, 2)}" for t, v in top)


def signed(x: float, digits: int) -> str:
    """``x`` with its sign and ``digits`` decimals, but a value that rounds to zero without a sign (``0.000``): its
    sign is float noise, which differs between machines and thread counts."""
    shown = f"{x:+.{digits}f}"
    return shown[1:] if float(shown) == 0 else shown


def one_field(text: str) -> str:
    """``text`` as one tab-separated field: tabs, line breaks, escape characters and every other control character
    written as Python escapes (``\\t``, ``\\n``, ``\\x1b``), a backslash as ``\\\\``; anything else as it is."""
    return "".join(c if c.isprintable() or c == " " else c.encode("unicode_escape").decode("ascii")
                   for c in text.replace("\\", "\\\\"))


def run(args: argparse.Namespace) -> int:
    from ..kinds import Model

    texts = read_texts(args.text)
    if args.explain:
        longest = max(texts, key=len)
        if len(longest) > EXPLAIN_MOST:
            raise InputError(f"--explain blanks out each character of a text in turn (a run of the whole text for "
                             f"each), so it takes texts of at most {EXPLAIN_MOST:,} characters; one has "
                             f"{len(longest):,}; shorten it, or leave out --explain (predict reads any length whole)")
    model = Model.load(args.model, "classifier")
    refused = 0
    for number, (text, outcome) in enumerate(each(model, texts), 1):
        if isinstance(outcome, InputError):  # answered in its place, the reason on stderr
            refused += 1
            print(f"-\t-\t{one_field(text)}", flush=True)
            where = f"text {number}: " if len(texts) > 1 else ""
            print(f"attnlab predict: error: {where}{str(outcome).replace(chr(10), ' ')}", file=sys.stderr, flush=True)
            continue
        o = outcome.output
        print(f"{o['label']}\t{o['probability']:.4f}\t{one_field(outcome.text)}")
        if args.explain:
            print("\n".join(_explain(model, outcome.text)))
    return 2 if refused else 0
