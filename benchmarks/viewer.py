"""Benchmark the interactive viewer against BertViz on the bundled model, in headless Chromium.

For 16, 128 and 512 tokens of all-MiniLM-L6-v2 (6 layers x 12 heads) it measures, for attnlab's viewer:
the file size, the time to the first drawn view (``performance.now()`` in the page when the head view
is drawn: navigation, parsing, decoding included; median of several loads), and the time to switch head
(median over switches; "draw" is the synchronous drawing, "frame" adds the wait for the next frame).
For BertViz's ``head_view`` on the same weights and tokens (optional extra ``attnlab[compare]``) it
measures the HTML size and whether the page draws anything with the network blocked.

    python benchmarks/viewer.py                     # all sizes, writes benchmarks/results/viewer.{json,md}
    python benchmarks/viewer.py --tokens 16 128 --loads 3 --no-bertviz

Chromium: Debian's /usr/bin/chromium (``make system``), driven by playwright.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
RESULTS = Path(__file__).resolve().parent / "results"

# About 600 word pieces of varied English, so that 512 tokens are real text and not one sentence repeated.
TEXT = (
    "Attention lets a model decide, for every position of a sequence, which other positions matter. "
    "Bahdanau and colleagues introduced it in 2014 to help a recurrent translation model align source words "
    "with target words; instead of squeezing a whole sentence into one fixed vector, the decoder looked back "
    "at every encoder state and weighted them. Luong proposed simpler scoring functions a year later: a dot "
    "product, a bilinear form, or a small feed-forward network over the concatenated states. In 2017 the "
    "Transformer dropped recurrence entirely. Each layer projects its input into queries, keys and values, "
    "compares every query with every key, scales the scores by the square root of the key dimension, turns "
    "each row into a probability distribution with a softmax, and mixes the values with those probabilities. "
    "Several heads do this in parallel on lower-dimensional projections, and their outputs are concatenated. "
    "Because the cost grows with the square of the length, many later papers looked for cheaper variants: "
    "local windows, strided or dilated patterns, a few global tokens that see everything, low-rank "
    "projections of the keys, kernel feature maps that linearise the softmax, and exact algorithms such as "
    "FlashAttention that never store the full matrix but stream blocks through fast on-chip memory. "
    "People also began to inspect the weights. Some heads attend to the previous token, some to the next, "
    "some to separators such as [SEP] or to the first token, and a few seem to track syntax, linking verbs "
    "to their subjects or pronouns to their antecedents. Whether the weights explain a prediction is debated: "
    "different weights can produce the same output, and gradients or rollout across layers sometimes tell a "
    "different story. Still, looking at them is the quickest way to see what a model does with its input. "
    "A good viewer therefore has to be honest about scale. A sentence of sixteen tokens has a few thousand "
    "weights per layer; a paragraph of five hundred tokens has a quarter of a million per head, eighteen "
    "million across a small six-layer model with twelve heads. Written as decimal text, that is hundreds of "
    "megabytes, which no notebook survives. Stored as bytes and compressed, it is a few megabytes, which any "
    "browser opens in a moment. The same care applies to drawing: a quarter of a million lines per head "
    "cannot all be elements on a page, but a canvas can draw the visible part quickly, and the faintest lines "
    "are invisible anyway. Finally, a viewer must run anywhere, including on a laptop on a train, so it "
    "cannot fetch its scripts from the network when it opens. Tokens are user text, too, so they must be "
    "shown as text and never interpreted as markup, whatever characters they contain, from angle brackets "
    "and quotes to right-to-left scripts, emoji and Chinese characters such as 注意力机制 and 自然语言处理."
)


def capture(n: int) -> Any:
    import attnlab as al

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = al.trace_text(TEXT, max_length=n, truncate=True)
    if trace.weights.shape[-1] != n:
        raise SystemExit(f"the benchmark text gave {trace.weights.shape[-1]} tokens, wanted {n}")
    return trace


def measure_attnlab(browser: Any, path: Path, loads: int, switches: int) -> dict[str, Any]:
    firsts, draws, frames, matrix_draws = [], [], [], []
    for _ in range(loads):
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        errors: list[str] = []
        page.on("console", lambda m, errors=errors: m.type == "error" and errors.append(m.text))
        page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
        page.route("http*://**/*", lambda route, errors=errors: (errors.append(route.request.url), route.abort()))
        page.goto(path.as_uri())
        page.wait_for_function("window.attnlab && attnlab.timings.firstView !== null", timeout=60_000)
        firsts.append(page.evaluate("attnlab.timings.firstView"))
        page.evaluate("attnlab.idle()")
        heads = [h % 12 for h in range(1, switches + 1)]
        for h in heads:  # head view: show one head
            draw, frame = page.evaluate(
                """async (h) => {
                    const t = performance.now(), draw = attnlab.set({heads: [h]});
                    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
                    return [draw, performance.now() - t];
                }""", h)
            draws.append(draw)
            frames.append(frame)
        page.evaluate("attnlab.set({view: 'matrix'})")
        matrix_draws += [page.evaluate("h => attnlab.set({head: h})", h) for h in heads]
        if errors:
            raise SystemExit(f"{path.name}: the page reported {errors}")
        page.close()
    return {
        "bytes": path.stat().st_size,
        "first_view_ms": statistics.median(firsts),
        "switch_head_draw_ms": statistics.median(draws),
        "switch_head_frame_ms": statistics.median(frames),
        "switch_matrix_head_draw_ms": statistics.median(matrix_draws),
        "loads": loads,
        "switches": len(draws),
    }


def measure_bertviz(browser: Any, trace: Any, folder: Path, render: bool) -> dict[str, Any]:
    try:
        from bertviz import head_view
    except ImportError:
        return {"installed": False}
    attention = tuple(trace.weights[i][None] for i in range(trace.n_layers))  # BertViz: one (1, H, L, L) per layer
    start = time.perf_counter()
    html = head_view(attention=attention, tokens=trace.tokens, html_action="return").data
    seconds = time.perf_counter() - start
    path = folder / f"bertviz-{len(trace.tokens)}.html"
    path.write_text(html, encoding="utf-8")
    out: dict[str, Any] = {"installed": True, "bytes": path.stat().st_size, "python_seconds": round(seconds, 1)}
    if render:
        page = browser.new_page()
        blocked: list[str] = []
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.route("http*://**/*", lambda route: (blocked.append(route.request.url), route.abort()))
        page.goto(path.as_uri())
        page.wait_for_timeout(3000)
        drawn = page.evaluate("document.querySelectorAll('svg line, svg rect, svg text').length")
        out.update(renders_offline=drawn > 0, drawn_svg_elements=drawn, blocked_requests=blocked,
                   page_errors=errors[:3])
        page.close()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tokens", type=int, nargs="+", default=[16, 128, 512])
    p.add_argument("--loads", type=int, default=3, help="page loads per size (median of first-view times)")
    p.add_argument("--switches", type=int, default=11, help="head switches per load")
    p.add_argument("--no-bertviz", action="store_true")
    p.add_argument("--bertviz-render-up-to", type=int, default=128,
                   help="open BertViz pages offline up to this many tokens (the 512-token page is hundreds of MB)")
    p.add_argument("--out", type=Path, default=RESULTS / "viewer.json")
    args = p.parse_args(argv)

    from playwright.sync_api import sync_playwright

    import attnlab as al

    rows = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        folder = Path(tmp)
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        for n in args.tokens:
            trace = capture(n)
            start = time.perf_counter()
            path = al.viz.save_html(trace, folder / f"attnlab-{n}.html")
            row: dict[str, Any] = {"tokens": n, "weights": trace.weights.numel(),
                                   "write_seconds": round(time.perf_counter() - start, 2)}
            row["attnlab"] = measure_attnlab(browser, path, args.loads, args.switches)
            if not args.no_bertviz:
                row["bertviz"] = measure_bertviz(browser, trace, folder, render=n <= args.bertviz_render_up_to)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
        browser.close()

    report = {"chromium": _chromium_version(), "cpus": os.cpu_count(), "loads": args.loads, "rows": rows}
    table = markdown(rows)
    print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    args.out.with_suffix(".md").write_text(table + "\n", encoding="utf-8")
    print(f"\nwrote {args.out} and {args.out.with_suffix('.md')}")
    return 0


def markdown(rows: list[dict[str, Any]]) -> str:
    mb = lambda b: f"{b / 1e6:.2f} MB" if b >= 1e5 else f"{b / 1e3:.0f} kB"  # noqa: E731
    lines = [
        "| tokens | weights | attnlab file | first view | switch head (draw / frame) | matrix head | "
        "BertViz file | BertViz offline |",
        "|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        a, b = r["attnlab"], r.get("bertviz", {})
        if not b:
            bsize, offline = "not run", ""
        elif not b.get("installed"):
            bsize, offline = "not installed", ""
        else:
            bsize = mb(b["bytes"])
            blocked = len(b.get("blocked_requests", []))
            offline = ("not opened" if "renders_offline" not in b
                       else "draws" if b["renders_offline"] else f"blank ({blocked} CDN request(s) blocked)")
        lines.append(
            f"| {r['tokens']} | {r['weights']:,} | {mb(a['bytes'])} | {a['first_view_ms']:.0f} ms | "
            f"{a['switch_head_draw_ms']:.1f} / {a['switch_head_frame_ms']:.1f} ms | "
            f"{a['switch_matrix_head_draw_ms']:.1f} ms | "
            f"{bsize} | {offline} |"
        )
    return "\n".join(lines)


def _chromium_version() -> str:
    try:
        return subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


if __name__ == "__main__":
    raise SystemExit(main())
