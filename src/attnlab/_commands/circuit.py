"""``attnlab circuit``: the composition graph of a model's heads (Q-, K- and V-composition scores of every pair,
Elhage et al. 2021) with its strongest edges, as a figure and a JSON of every score; with ``--discover`` the circuit
of a task found edge by edge (EAP, EAP-IG or ACDC) with its faithfulness curve; with ``--sinks`` every head's
attention-sink metrics.  The work lives in ``attnlab.circuits``; this module orchestrates, writing nothing until
everything is computed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..errors import InputError
from ._output import DEFAULT_OUT, check_out, publish, run_name, staging

JSON_FILE = "circuit.json"
FIGURE_FILE = "circuit.png"
DISCOVERY_FILE = "discovery.json"
FAITHFULNESS_FILE = "faithfulness.png"
SINKS_FILE = "sinks.json"
QK_FILE = "qk.json"
SINK_TEXT = "经济建设取得新的成就，人民生活水平明显提高。我们要坚持改革开放，推动高质量发展。"
DELIMITERS = "，。！？；：、,.!?;:"

EXAMPLES = f"""\
Each score says how much a later head's queries (Q), keys (K) or values (V) read what an earlier head writes,
from the weights alone (no text). {JSON_FILE} holds every pair's three scores and the strongest edges;
{FIGURE_FILE} draws the heads and those edges. Default --out: {DEFAULT_OUT}/<model>-<hash>.

With --discover: the circuit of a task found edge by edge (every edge from a sender's output into a later head's
q, k or v, an MLP or the output), by EAP, EAP-IG or ACDC over --prompts clean/corrupted pairs; {FIGURE_FILE} draws
it, {FAITHFULNESS_FILE} its faithfulness against the edges kept (bootstrap 95% band), {DISCOVERY_FILE} holds every
number and the manifest. With --sinks: each head's attention on the first token and on delimiters, and what the
sink's value writes ({SINKS_FILE}). With --qk: one head's attention score at one query and key position split
exactly into query-side source x key-side source terms (the embeddings, earlier heads and MLPs; {QK_FILE}).

examples:
  attnlab circuit --model zh-lm
  attnlab circuit --model ./toy --top 5 --out toy-circuit
  attnlab circuit --discover --model induction-2l --task induction --method eap-ig --out ind-eapig
  attnlab circuit --discover --model induction-2l --method acdc --ablation mean --prompts 64 --out ind-acdc
  attnlab circuit --discover --model dates-zh/transformer --task dates-year --out dates-heads
  attnlab circuit --sinks --model zh-lm
  attnlab circuit --qk 1.0 --model induction-2l --text ABCDEFGHIJABCDEFGHIJ --query 13 --key 4
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
    d = p.add_argument_group("discovery (--discover)")
    d.add_argument("--discover", action="store_true", help="find the circuit of --task edge by edge")
    d.add_argument("--task", metavar="TASK", help="the task's prompt pairs and metric: induction (default; "
                   "induction-2l), zh-induction (zh-lm: held-out text said twice), zh-contrast (zh-sentiment: "
                   "A，但是B with B's polarity flipped), dates-year (a transformer translator of dates: which heads "
                   "carry the year; each head patched exactly)")
    d.add_argument("--method", choices=("eap", "eap-ig", "acdc"), help="how edges are scored (default eap-ig)")
    d.add_argument("--ablation", choices=("corrupt", "mean", "resample"),
                   help="what an ablated edge carries: the corrupted prompt's, the mean over the prompts, or "
                   "another prompt's (default corrupt)")
    d.add_argument("--prompts", type=int, metavar="N", help="prompt pairs (default 32)")
    d.add_argument("--seed", type=int, metavar="N", help="the prompts' and the bootstrap's seed (default 0)")
    d.add_argument("--steps", type=int, metavar="M", help="EAP-IG's integration steps (default 5)")
    d.add_argument("--tau", type=float, metavar="T", help="ACDC's threshold (default: the largest of its sweep "
                   "whose circuit reaches faithfulness 0.9)")
    d.add_argument("--objective", choices=("kl", "metric"), help="what ACDC keeps an edge for: the KL divergence to "
                   "the full model's output (default) or the task metric's distance")
    s_ = p.add_argument_group("attention sinks (--sinks)")
    s_.add_argument("--sinks", action="store_true", help="every head's attention-sink metrics")
    s_.add_argument("--text", action="append", metavar="TEXT", help="a text to measure on (repeatable; default: "
                    "a Chinese news sentence for a model that reads it, else 16 random sequences of its tokens); "
                    "with --qk the one text")
    q = p.add_argument_group("QK attribution (--qk)")
    q.add_argument("--qk", metavar="L.H", help="split head L.H's attention score at --query, --key on --text into "
                   "query-side x key-side sources")
    q.add_argument("--query", type=int, metavar="I", help="the query position (0-based, in the text's tokens)")
    q.add_argument("--key", type=int, metavar="J", help="the key position (0-based)")
    p.set_defaults(run=run)


DISCOVERY_ONLY = ("task", "method", "ablation", "prompts", "seed", "steps", "tau", "objective")


def run(args: argparse.Namespace) -> int:
    modes = [m for m, on in (("--discover", args.discover), ("--sinks", args.sinks), ("--qk", args.qk is not None))
             if on]
    if len(modes) > 1:
        raise InputError(f"{' and '.join(modes)} are {len(modes)} runs; give one")
    if not args.discover:
        given = [f"--{n}" for n in DISCOVERY_ONLY if getattr(args, n) is not None]
        if given:
            raise InputError(f"{', '.join(given)} {'goes' if len(given) == 1 else 'go'} with --discover")
    if args.text is not None and not (args.sinks or args.qk is not None):
        raise InputError("--text goes with --sinks or --qk")
    if args.qk is None and (args.query is not None or args.key is not None):
        raise InputError("--query and --key go with --qk")
    if args.discover:
        return _discover(args)
    if args.sinks:
        return _sinks(args)
    if args.qk is not None:
        return _qk(args)
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


def _discover(args: argparse.Namespace) -> int:
    from ..circuits import discover, load_text_model, task_named
    from ..circuits.discovery_figures import circuit_figure, faithfulness_figure
    from ..viz import save

    task_name = args.task or "induction"
    method = args.method or "eap-ig"
    ablation = args.ablation or "corrupt"
    prompts = 32 if args.prompts is None else args.prompts
    seed = 0 if args.seed is None else args.seed
    steps = 5 if args.steps is None else args.steps
    if prompts < 2:
        raise InputError(f"--prompts takes at least 2 (an interval needs them), got {prompts}")
    if steps < 1:
        raise InputError(f"--steps takes a positive integer, got {steps}")
    from ..circuits.translation import TRANSLATION_TASKS

    if task_name in TRANSLATION_TASKS:
        return _discover_heads(args, task_name, ablation, prompts, seed)
    if args.steps is not None and method != "eap-ig":
        raise InputError("--steps goes with --method eap-ig")
    if args.objective is not None and method != "acdc":
        raise InputError("--objective goes with --method acdc")
    if args.tau is not None and (method != "acdc" or not args.tau > 0):
        raise InputError("--tau takes a positive threshold, with --method acdc" if method == "acdc"
                         else "--tau goes with --method acdc")
    task_named(task_name)  # an unknown name is refused before the model loads
    out, base = check_out(args.out if args.out is not None else Path(DEFAULT_OUT) / run_name(
        Path(args.model).name, repr(("discover", args.model, task_name, method, ablation, prompts, seed, steps,
                                     args.tau))))
    tm = load_text_model(args.model)
    task = task_named(task_name, tm)
    found = discover(tm.model, tm.name, task, method, ablation=ablation, prompts=prompts, seed=seed, steps=steps,
                     tau=args.tau, objective=args.objective or "kl")
    result = found.to_json()
    g = found.graph
    value, low, high = found.circuit
    n = int(found.kept.sum())
    what = {"eap": "EAP", "eap-ig": f"EAP-IG ({steps} steps)", "acdc": "ACDC"}[method]
    with staging(out, base) as stage:
        (stage / DISCOVERY_FILE).write_text(json.dumps(result, ensure_ascii=False) + "\n", encoding="utf-8")
        save(circuit_figure(g, found.widths, found.kept, title=f"{tm.name}, {task.name}: {what}, {n} of "
                            f"{g.n_edges} edges (faithfulness {value:.2f})"), stage / FIGURE_FILE)
        title = (f"{tm.name}, {task.name}, ablation {ablation}: faithfulness (bootstrap 95% band, "
                 f"{found.curve.n_prompts} prompts)")
        save(faithfulness_figure({what: found.curve}, title=title), stage / FAITHFULNESS_FILE)
        publish(stage, out, [DISCOVERY_FILE, FIGURE_FILE, FAITHFULNESS_FILE])
    cpu = result["cpu_s"]
    print(f"{tm.name}: {g.n_edges} edges ({len(g.senders)} senders, each into every later head's q, k and v, MLP "
          f"and the output); task {task.name}, {found.curve.n_prompts} prompts (seed {seed}), ablation {ablation}")
    line = f"{what}: {cpu[method]:.2f} CPU s"
    if "against_exact" in result:
        c = result["against_exact"]
        tops = ", ".join(f"top-{k} overlap {v:.2f}" for k, v in c["top_k_overlap"].items())
        line += f"; against exact edge patching ({cpu['exact']:.2f} CPU s): Spearman {c['spearman']:.3f}, {tops}"
    elif "exact" in cpu:
        line += f"; exact edge patching {cpu['exact']:.2f} CPU s"
    if method == "acdc":
        which = "given" if args.tau is not None else f"of {len(found.sweep)} thresholds"
        line += f"; tau {result['acdc_tau']:g} ({which}; objective {args.objective or 'kl'})"
    print(line)
    f = found.curve
    below = ", below 0.9" + ("" if method == "acdc" else ": the top 10% kept")
    print(f"circuit: {n} of {g.n_edges} edges ({n / g.n_edges:.0%}), faithfulness {value:.3f} (95% CI {low:.3f}-"
          f"{high:.3f}){'' if found.reached else below}; full {f.m_full:.3f}, empty "
          f"{f.m_empty:.3f}; CPR {f.cpr:.3f}, CMD {f.cmd:.3f}")
    roc = result.get("roc")
    if roc is not None:
        n_ref = len(roc["reference_edges"])
        print(f"against the hand-found circuit ({n_ref} edges): ROC AUC {roc['auc']:.3f} (exact patching's ranking "
              f"{roc['exact_auc']:.3f}); the circuit keeps {round(roc['circuit_recall'] * n_ref)} of them")
    ranked = sorted(range(g.n_edges), key=lambda i: -abs(found.widths[i]))
    print("strongest: " + ", ".join(f"{g.names[i]} {found.widths[i]:+.2f}" for i in ranked[:5]))
    print(f"wrote {out / FIGURE_FILE}, {out / FAITHFULNESS_FILE} and {out / DISCOVERY_FILE}")
    return 0


def _discover_heads(args: argparse.Namespace, task_name: str, ablation: str, prompts: int, seed: int) -> int:
    """A translator's task: every head patched exactly (its graph has no edge methods)."""
    import time

    from ..circuits.discovery_figures import translator_heads_figure
    from ..circuits.translation import KINDS, TRANSLATION_TASKS, head_tag, patch_translator_heads
    from ..kinds import KIND, Model
    from ..viz import save

    given = [f"--{n}" for n in ("method", "steps", "tau", "objective") if getattr(args, n) is not None]
    if given:
        raise InputError(f"{', '.join(given)} {'does' if len(given) == 1 else 'do'} not apply to {task_name}: a "
                         f"translator's heads are each patched exactly (no edge methods); leave "
                         f"{'it' if len(given) == 1 else 'them'} out")
    out, base = check_out(args.out if args.out is not None else Path(DEFAULT_OUT) / run_name(
        Path(args.model).name, repr(("discover", args.model, task_name, ablation, prompts, seed))))
    model = Model.load(args.model, *[k for k, spec in KIND.items() if spec.able("heads")])
    translator = model.loaded
    started = time.process_time()
    pairs = TRANSLATION_TASKS[task_name](translator, prompts, seed)
    found = patch_translator_heads(translator.model, pairs, ablation=ablation)
    cpu = time.process_time() - started
    result = {"model": model.name, **found.to_json(), "cpu_s": round(cpu, 2)}
    tokens = translator.tokenizer.source_tokens(pairs.texts[0][0])
    with staging(out, base) as stage:
        (stage / DISCOVERY_FILE).write_text(json.dumps(result, ensure_ascii=False) + "\n", encoding="utf-8")
        save(translator_heads_figure(found, tokens, title=f"{model.name}, {task_name}: which heads carry the year "
                                     f"from the source into the output"), stage / FIGURE_FILE)
        publish(stage, out, [DISCOVERY_FILE, FIGURE_FILE])
    singles = found.ranked()
    print(f"{model.name}: {len(singles)} heads, each patched ({ablation}), then each kind's together, on "
          f"{found.n_prompts} prompt pairs (seed {seed}; a held-out date against the same date in another year); "
          f"metric clean {found.m_clean:.2f}, corrupted {found.m_corrupt:.2f}; {cpu:.2f} CPU s")
    for i in singles[:5]:
        h = found.heads[i]
        att = found.attention.get(h)
        looks = (f"; from the year's output positions {att['on_year']:.0%} of its attention on the source's year, "
                 f"{att['aligned']:.0%} on the digit being written" if att else "")
        print(f"{h} ({KINDS[head_tag(h)]}): removes {found.effect[i]:.1%} of the year's logit "
              f"difference (95% CI {found.low[i]:.1%} to {found.high[i]:.1%}){looks}")
    together = [f"{h[4:]} {found.effect[i]:.1%}" for i, h in enumerate(found.heads) if h.startswith("all ")]
    print("each kind's heads together: " + ", ".join(together))
    print(f"wrote {out / FIGURE_FILE} and {out / DISCOVERY_FILE}")
    return 0


def _sinks(args: argparse.Namespace) -> int:
    import torch

    from ..circuits import anatomy, attention_sinks, load_text_model

    texts = list(args.text or [])
    if any(not t for t in texts):
        raise InputError("--text is empty; give a text")
    out, base = check_out(args.out if args.out is not None else Path(DEFAULT_OUT) / run_name(
        Path(args.model).name, repr(("sinks", args.model, texts))))
    tm = load_text_model(args.model)
    if not texts:
        ids = [int(i) for i in tm.encoder.encode(SINK_TEXT)]
        if tm.skip is None or ids.count(tm.skip) < len(ids) / 4:
            texts = [SINK_TEXT]
    if texts:
        rows = [tm.encode(t, "given")[0][0] for t in texts]
        length = min(len(r) for r in rows)
        if length < 2:
            raise InputError("--text needs at least 2 tokens to measure a sink")
        batch = torch.stack([r[:length] for r in rows])
        said = f"{len(texts)} text(s), {length} tokens each"
    else:
        v = anatomy(tm.model).unembed
        vocab = int(v.shape[0]) if v is not None else len(tm.outputs)
        g = torch.Generator().manual_seed(0)
        batch = torch.randint(1, vocab, (16, min(tm.window, 40)), generator=g)
        said = f"16 random sequences of its tokens ({batch.shape[1]} each; it does not read the default text)"
    delim = [int(i) for c in DELIMITERS for i in tm.encoder.encode(c) if tm.skip is None or int(i) != tm.skip]
    rows_ = attention_sinks(tm.model, batch, delimiters=delim)
    with staging(out, base) as stage:
        (stage / SINKS_FILE).write_text(json.dumps({"model": tm.name, "texts": texts or None, "tokens": said,
                                                    "delimiters": DELIMITERS, "heads": [r.to_json() for r in rows_]},
                                                   ensure_ascii=False) + "\n", encoding="utf-8")
        publish(stage, out, [SINKS_FILE])
    print(f"{tm.name} on {said}; the first token's share of attention, the delimiters' ({DELIMITERS}), and what a "
          f"value there writes (||v W_O|| over the other positions')")
    print("head   first  delim  first-value  delim-value  written-from-first")

    def num(x: float | None) -> str:
        return "   -  " if x is None else f"{x:6.3f}"

    for r in rows_:
        print(f"{r.layer}.{r.head:<4} {r.first_share:5.3f}  {num(r.delimiter_share)} {r.value_norm_ratio:8.3f}    "
              f" {num(r.delimiter_value_ratio)}      {r.write_share:6.3f}{'  sink head' if r.sink else ''}")
    print(f"wrote {out / SINKS_FILE}")
    return 0


def _qk(args: argparse.Namespace) -> int:
    from ..circuits import load_text_model, parse_head, qk_attribution

    layer, head = parse_head(args.qk, "--qk")
    if args.text is None or len(args.text) != 1 or not args.text[0]:
        raise InputError("--qk reads one --text; give it once")
    if args.query is None or args.key is None:
        raise InputError("--qk needs --query and --key (0-based token positions)")
    out, base = check_out(args.out if args.out is not None else Path(DEFAULT_OUT) / run_name(
        args.text[0], repr(("qk", args.model, args.qk, args.text, args.query, args.key))))
    tm = load_text_model(args.model)
    ids, tokens = tm.encode(args.text[0], "given")
    found = qk_attribution(tm.model, ids[0], layer, head, args.query, args.key)
    js = {"model": tm.name, "text": args.text[0], "tokens": tokens, **found.to_json()}
    with staging(out, base) as stage:
        (stage / QK_FILE).write_text(json.dumps(js, ensure_ascii=False) + "\n", encoding="utf-8")
        publish(stage, out, [QK_FILE])
    print(f"{tm.name} head {layer}.{head}, query {args.query} ({tokens[args.query]!r}) -> key {args.key} "
          f"({tokens[args.key]!r}): score {found.score:.3f} = the table's sum"
          f"{f' + a position bias {found.mask_bias:.3f}' if found.mask_bias else ''}; positions: {found.positions}; "
          f"norm: {found.norm}")
    width = max(6, *(len(s) for s in found.sources))
    corner = "query \\ key"
    first = max(len(corner), width) + 1
    print(corner.ljust(first) + " ".join(s.rjust(width) for s in found.sources))
    for name, row in zip(found.sources, found.table, strict=True):
        print(name.ljust(first) + " ".join(f"{v:{width}.2f}" for v in row))
    print("largest: " + ", ".join(f"{a} x {b} {v:+.2f}" for a, b, v in found.top(3)))
    print(f"wrote {out / QK_FILE}")
    return 0
