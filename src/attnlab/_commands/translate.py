"""``attnlab translate``: translate a text with a bundled or trained translator, print the translation and its
confidence, and write the alignment heatmap and the offline viewer with the captured cross-attention; or translate
several texts (arguments, or lines of ``--file``, ``-`` for stdin) and print one line each, writing no file.  The
work lives in ``attnlab.training`` (the translator), ``attnlab.capturing`` and ``attnlab.viz``; this module
orchestrates.

Nothing is written until everything has been computed (files go to a temporary folder next to --out and are
moved into place at the end), so bad input leaves no file behind and overwrites nothing.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from .._io import read_utf8
from ..errors import InputError
from ._output import DEFAULT_OUT, TRACE_FILE, VIEWER_FILE, check_out, publish, read_stdin_lines, run_name, staging

ALIGNMENT_FILE = "alignment.png"
ATTRIBUTION_FIGURE = "attribution.png"
ATTRIBUTION_FILE = "attribution.json"

EXAMPLES = f"""\
The alignment heatmap ({ALIGNMENT_FILE}) puts the source tokens along x and the generated tokens along y: row i
is where the model looked while it generated token i (for the transformer: its last decoder layer, mean of the
heads).  {VIEWER_FILE} is the offline viewer with the cross-attention of every layer and head, and {TRACE_FILE}
the captured trace (`attnlab show --trace` redraws it).  Default --out: {DEFAULT_OUT}/<first words>-<hash>.
Characters the model never saw are read as [UNK] (with a warning); an empty text or one longer than the
model takes is refused.

Every translation comes with its confidence: the mean log-probability per generated token (EOS included; 0 is
certain).  Below the threshold chosen for the model on held-out data (`bundled.json`), the command warns on one
line (`attnlab translate: warning: ...`, exit 0); a dates model also warns when its output is no real calendar
date (2021年2月30日, a wrong weekday), when a year lies outside 1900-2099, and when a numeric input has two
readings (3/5/2021: March 5 or 3 May).

Several texts (`TEXT TEXT ...`, or `--file F` with one text a line, blank lines skipped, `-` for stdin; a file
of one line too): one line each, `translation<TAB>confidence`, in order; no figure is written (give one text
for its figures).

examples:
  attnlab translate "Friday, March 5, 2021" --model dates-zh
  attnlab translate "vendredi 5 mars 2021" --model dates-zh --beam 4 --out fr-date
  attnlab translate "The cat sat on the mat." --model tutorial-en-zh
  attnlab translate "the dog that the cat saw" --model ./my-run     # the --out of `attnlab train translate`
  attnlab translate "3 March 2021" "4/5/2021" "Bonjour" --model dates-zh  # one line each, warnings on stderr
  attnlab translate --file dates.txt --model dates-zh             # `--file -` reads stdin
  attnlab translate "The cat sat on the mat." --model tutorial-en-zh --attribute  # + attribution.png

--attribute attributes every output token to the source tokens and to the output tokens before it: ALTI-Logit
(the transformer translator; signed logit contributions) and gradient x input (every translator), in
{ATTRIBUTION_FIGURE} and {ATTRIBUTION_FILE}.
"""


def add_parser(sub: Any) -> None:
    p = sub.add_parser("translate", help="translate a text with a trained translator; draw its alignment",
                       description="Translate TEXT with a bundled translator (dates-zh, dates-zh/luong, "
                       "dates-zh/transformer, tutorial-en-zh) or the folder of `attnlab train translate`; print the "
                       "translation and write the alignment heatmap and the viewer.", epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("text", metavar="TEXT", nargs="*", help="the text to translate (quote it); several texts print "
                   "one line each")
    p.add_argument("--file", metavar="F", help="translate every line of F (blank lines skipped); - reads stdin")
    p.add_argument("--model", required=True, metavar="NAME_OR_FOLDER",
                   help="dates-zh | dates-zh/luong | dates-zh/transformer | tutorial-en-zh | the --out folder of "
                   "`attnlab train translate`")
    p.add_argument("--beam", type=int, default=1, metavar="N", help="beam search with N hypotheses (default 1: "
                   "greedy)")
    p.add_argument("--out", type=Path, metavar="DIR", help=f"the folder to write into (default {DEFAULT_OUT}/"
                   f"<first words>-<hash>)")
    p.add_argument("--no-viewer", action="store_true", help=f"write {ALIGNMENT_FILE} only")
    p.add_argument("--attribute", action="store_true", help="also attribute every output token to the source and "
                   f"to the output before it (ALTI-Logit for the transformer, gradient x input): {ATTRIBUTION_FIGURE} "
                   f"and {ATTRIBUTION_FILE}")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from .. import viz
    from ..kinds import Model

    if args.beam < 1:
        raise InputError(f"--beam must be at least 1, got {args.beam}; 1 is greedy, 4 a usual beam")
    texts = _texts(args.text, args.file)
    if len(texts) > 1 or args.file is not None or args.text == ["-"]:
        if args.out is not None or args.no_viewer or args.attribute:
            raise InputError(f"--out, --no-viewer and --attribute draw one text's figures, but {len(texts)} text(s) "
                             f"were given as a list; give one TEXT for its figures")
        for outcome in Model.load(args.model, "translator").run_many(texts, beam=args.beam):
            print(f"{outcome.output['translation']}\t{outcome.output['confidence']:.4f}")
        return 0
    (text,) = texts
    key = repr((text, args.model, args.beam, args.attribute))
    out_arg = args.out if args.out is not None else Path(DEFAULT_OUT) / run_name(text, key)
    out, base = check_out(out_arg)
    model = Model.load(args.model, "translator")
    with staging(out, base) as stage:
        outcome = model.run(text, beam=args.beam)
        translation, trace = outcome.result, outcome.traced
        fig = viz.alignment(translation.alignment, translation.source_tokens, translation.target_tokens,
                            title=f"{text}  →  {translation.text}")
        viz.save(fig, stage / ALIGNMENT_FILE)
        written = [ALIGNMENT_FILE]
        if not args.no_viewer:
            trace.save(stage / TRACE_FILE, dtype="float32")
            viz.save_html(trace, stage / VIEWER_FILE)
            written += [TRACE_FILE, VIEWER_FILE]
        agreement = None
        if args.attribute:
            agreement = attribute(model.loaded, text, translation, stage)
            written += [ATTRIBUTION_FIGURE, ATTRIBUTION_FILE]
        publish(stage, out, written)
    print(translation.text)
    threshold = model.loaded.threshold
    shown = "" if threshold is None else f" (warns below {threshold:.4f})"
    print(f"confidence {translation.confidence:.4f}{shown}")
    if args.attribute:
        said = ("" if agreement is None or agreement != agreement else
                f"; ALTI-Logit and gradient x input rank the source tokens with a mean Spearman correlation of "
                f"{agreement:.2f}")
        print(f"attribution: each output token over the source and the output before it{said}")
    print(f"\nwrote {len(written)} files to {out_arg}{os.sep}: {'  '.join(written)}")
    return 0


def attribute(translator: Any, text: str, translation: Any, stage: Path) -> float | None:
    """Write the attribution figure and its numbers into ``stage``; the two methods' mean rank agreement on the
    source (None when there is no output token to attribute, NaN for a recurrent model)."""
    import json

    from .._io import atomic_write_text
    from ..analysis import attribute_translation, translation_attribution_figure
    from ..viz import save

    if not translation.ids:
        raise InputError(f"the translation of {text!r} is empty, so there is nothing to attribute; try another text")
    (source_ids,) = translator.encode([text])
    got = attribute_translation(translator.model, source_ids, translation.ids)
    source, output = list(translation.source_tokens), list(translation.target_tokens)
    title = f"{translator.name}: what each output token used (logit contributions)"
    save(translation_attribution_figure(got, source, output, title=title), stage / ATTRIBUTION_FIGURE)

    def rows(matrix: Any) -> list[list[float | None]] | None:
        if matrix is None:
            return None
        return [[None if x != x else round(float(x), 6) for x in row] for row in matrix]

    agreement = got.agreement()
    record = {"text": text, "translation": translation.text, "source_tokens": source, "output_tokens": output,
              "logits": [round(float(x), 6) for x in got.logits],
              "alti_logit": {"source": rows(got.alti_source), "output": rows(got.alti_target)},
              "grad_x_input": {"source": rows(got.grad_source), "output": rows(got.grad_target)},
              "spearman_agreement": None if agreement != agreement else round(agreement, 4)}
    atomic_write_text(stage / ATTRIBUTION_FILE, json.dumps(record, ensure_ascii=False) + "\n")
    return agreement


def _texts(given: list[str], file: str | None) -> list[str]:
    """The texts to translate: the arguments, or the non-blank lines of ``file`` (``-``: stdin; so is a lone
    ``-`` argument).  An empty argument, or no text at all, is refused."""
    if file is not None and given:
        raise InputError(f"give texts or --file, not both (got {len(given)} text(s) and --file {file!r})")
    if given == ["-"]:
        file = "-"
    if file is None:
        if not given:
            raise InputError("no text to translate; give TEXT, several texts, or --file F (- for stdin)")
        for text in given:
            if not text.strip():
                raise InputError(f"the text to translate is empty (got {text!r}); give some text")
        return list(given)
    if file == "-":
        lines = read_stdin_lines()
    else:
        try:
            lines = read_utf8(file, f"--file {file!r}").splitlines()  # bytes that are not UTF-8: their offset
        except OSError as exc:
            raise InputError(f"cannot read --file {file!r} ({exc}); give a UTF-8 text file, one text a line"
                             ) from None
    texts = [line for line in lines if line.strip()]
    if not texts:
        where = "stdin" if file == "-" else repr(file)
        raise InputError(f"{where} holds no text to translate (no non-blank line); give one text a line")
    return texts
