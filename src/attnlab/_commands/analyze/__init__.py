"""``attnlab analyze``: what every head of a model does, measured.  One module per mode, each only parsing and
printing around ``attnlab.analysis``: ``_text`` (TEXT, ``--treebank``, ``--trace``, with ``--attribution``),
``_corpus`` (``--corpus``) and ``_segmented`` (``--segmented``); ``_common`` holds their file names.

Nothing is written until everything is computed (files go to a temporary folder next to ``--out`` and
are moved into place at the end), so bad input leaves no partial file behind.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .._output import TRACE_FILE, VIEWER_FILE
from ._common import CORPUS_FILE, DEFAULT_OUT, JSON_FILE, SNOWNLP

EXAMPLES = f"""\
Files written into --out (default: {DEFAULT_OUT}/<first words>-<hash>):
  {JSON_FILE}  (metrics, labels with their evidence, distances, rollout, flow, syntax)
  labels.FMT (layers x heads label grid)  metrics.FMT (one heatmap per metric)  mds.FMT (heads by
  Jensen-Shannon distance)  rollout.FMT  flow.FMT  {TRACE_FILE}  {VIEWER_FILE} (labels on hover)
The labels, their thresholds and their reasons: the guide's Analysis page ("The labels, their thresholds and why").

examples:
  attnlab analyze "The quick brown fox jumps over the lazy dog."
  attnlab analyze "The cat sat on the mat." --treebank cat.conllu     # syntactic heads against a parse
  attnlab analyze "The cat sat on the mat." --parse spacy             # parse with spaCy (attnlab[parse])
  attnlab analyze --treebank ud-sample.conllu                         # the treebank's own sentences
  attnlab analyze "some text" --model ./my-gpt2-folder                # causal: induction heads too
  attnlab analyze --model zh-lm                                       # the bundled character LM's heads
  attnlab analyze --trace out/{TRACE_FILE}                              # a saved trace
  attnlab analyze --corpus sentences.txt --batch-size 32              # per-head means over a corpus
  attnlab analyze --model zh-sentiment --segmented                    # Chinese word and POS heads (People's Daily)
  attnlab analyze --model zh-sentiment --segmented mine.txt --sentences 500   # on your own 'word/TAG' lines
  attnlab analyze "这本书很好" --model zh-sentiment --attribution       # + the prediction and each token's share
  torchrun --nproc_per_node 2 -m attnlab.cli analyze --corpus sentences.txt   # the same, two processes
With --corpus (one text per line) the model runs batch by batch and each batch is reduced to per-head
sums at once (no attention matrix is kept); {CORPUS_FILE} holds the per-head means, the table their
per-layer average.  Under torchrun the ranks share the lines and all-reduce the sums; rank 0 writes.
"""


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "analyze",
        help="measure what every head does: metrics, pattern labels, syntactic heads, rollout and flow",
        description="Run the bundled encoder (or --model) on TEXT offline and measure every head: entropy, "
        "mass on [CLS]/[SEP]/punctuation/self/previous/next, attention distance, labels with their "
        "evidence, agreement with a dependency parse, rollout and flow.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(p)
    p.set_defaults(run=run)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options; a new input source (a corpus, say) adds its own next to TEXT and --trace."""
    source = p.add_argument_group("input")
    source.add_argument("text", nargs="?", metavar="TEXT", help="the text to run the model on (quote it)")
    source.add_argument("--trace", metavar="FILE", type=Path, help=f"analyse a saved trace (a {TRACE_FILE} file)")
    source.add_argument("--corpus", metavar="FILE", type=Path,
                        help="per-head metrics over a corpus, one text per line, streamed in batches")
    source.add_argument("--batch-size", type=int, default=32, metavar="N", help="texts per batch with --corpus")
    source.add_argument("--model", metavar="NAME_OR_FOLDER",
                        help="'minilm' (the bundled all-MiniLM-L6-v2, the default), a local Hugging Face folder, or a "
                        "character language model (zh-lm, the --out of `attnlab train lm`; TEXT then defaults to a "
                        "People's Daily sentence said twice)")
    source.add_argument("--max-length", type=int, metavar="N", help="the most tokens to accept (default: the model's)")
    syntax = p.add_argument_group("syntax")
    syntax.add_argument("--treebank", metavar="FILE.conllu", type=Path,
                        help="dependency parses of TEXT (CoNLL-U); without TEXT, its sentences are the input")
    syntax.add_argument("--parse", choices=("spacy",), help="parse TEXT with spaCy's en_core_web_sm (attnlab[parse])")
    syntax.add_argument("--segmented", metavar="FILE", nargs="?", type=Path, const=SNOWNLP,
                        help="Chinese head labels (same word, word's first/last character, POS patterns) over a "
                        "segmented corpus of 'word/TAG' lines (default: snownlp's People's Daily, January 1998)")
    syntax.add_argument("--sentences", type=int, default=100, metavar="N",
                        help="with --segmented: the first N sentences of at most 120 characters (default 100)")
    out = p.add_argument_group("output")
    out.add_argument("--out", metavar="DIR", type=Path, help=f"the folder to write into (default: {DEFAULT_OUT}/...)")
    out.add_argument("--format", choices=("png", "svg", "pdf"), default="png", help="figure format (default: png)")
    out.add_argument("--attribution", action="store_true",
                     help="also norm-based attention, value zeroing, ALTI and (classifiers) gradient x input: "
                     "norm.FMT, value-zeroing.FMT, alti.FMT, grad-x-input.FMT and 'attribution' in the JSON "
                     "(for a classifier also each method's share of the prediction per input token, read through "
                     "its pooling and its embedding layer, printed as a table under the prediction)")
    out.add_argument("--flow-target", metavar="N", action="append",
                     help="an output position for the flow (repeatable; default: all up to 64 tokens, else the "
                     "first and last)")


def run(args: argparse.Namespace) -> int:
    """The mode the options name: ``--corpus``, ``--segmented``, else one text."""
    from . import _corpus, _segmented, _text

    mode = _corpus if args.corpus is not None else _segmented if args.segmented is not None else _text
    return int(mode.run(args))
