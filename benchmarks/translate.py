"""The three translators (GRU + Bahdanau, GRU + Luong, transformer) on both tasks (dates, the toy grammar's
sentences): exact match on the test split and on the extra test set (unseen years / compositional) with standard
errors, by locale or construction, parameters, training CPU time on one thread (and wall time), and decoding
speed, greedy and beam=4, in sentences per second.

Each (task, arch) is trained from configs/<task>.json with the architecture swapped in (the transformer gets
TRANSFORMER below), into RUNS/<bundle name>[-<arch>]: the folders `make train-dates` / `make train-sentences`
write, so a run made by make is reused, not repeated.  A run with a final.json is never trained again.

    PYTHONPATH=src python benchmarks/translate.py                    # everything (about 25 CPU minutes)
    PYTHONPATH=src python benchmarks/translate.py --only dates       # one task

Writes benchmarks/results/translate.json, benchmarks/results/translate.md and the alignment figures in
benchmarks/results/translate/ (the same inputs through each model).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import torch

from attnlab import viz
from attnlab.data import load_pairs
from attnlab.training import TranslateTrainConfig, decode_ids, load_translator, train_translator

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
TASKS = {"dates": ("dates-zh", "unseen_years"), "sentences": ("tutorial-en-zh", "compositional")}
ARCHS = ("bahdanau", "luong", "transformer")
LUONG = {"score": "general"}
LUONG_TRAIN = {"lr": 5e-3}  # as `make train-dates` trains the bundled Luong model
# a small pre-norm transformer with rotary positions (configs/dates-zh-transformer.json): more steps per CPU minute,
# a high peak lr, and no position table, so copying the year's digits is a relative lookup in every locale
TRANSFORMER = {"d_model": 64, "n_heads": 4, "n_encoder_layers": 2, "n_decoder_layers": 2, "d_ff": 128,
               "dropout": 0.1, "positions": "rotary"}
TRANSFORMER_TRAIN = {"lr": 5e-3, "warmup": 0.1, "stop_at": 0.0}
EXAMPLES = {"dates": ["Friday, March 5, 2021", "vendredi 5 mars 2021", "2021년 3월 5일 금요일"],
            "sentences": ["The cat sat on the mat.", "The dog that the cat saw slept under the table."]}
SPEED_N = 400  # test sources decoded per speed measurement
SPEED_REPEATS = 3  # interleaved repeats; the fastest is kept


def run_folder(runs: Path, task: str, arch: str, bundled_arch: str) -> Path:
    name = TASKS[task][0]
    return runs / (name if arch == bundled_arch else f"{name}-{arch}")


def train(task: str, arch: str, out: Path) -> dict[str, Any]:
    if (out / "final.json").is_file():
        return dict(json.loads((out / "final.json").read_text(encoding="utf-8")))
    spec = json.loads((ROOT / "configs" / f"{TASKS[task][0]}.json").read_text(encoding="utf-8"))
    model = dict(spec.get("model", {}))
    train_options = dict(spec["train"])
    if arch == "transformer":
        model = dict(TRANSFORMER)
        train_options.update(TRANSFORMER_TRAIN)
    elif arch == "luong":
        model.update(LUONG)
        train_options.update(LUONG_TRAIN)
    resume = (out / "checkpoints" / "latest").is_file()
    return train_translator(spec["data"], out, arch=arch, model=model, config=TranslateTrainConfig(**train_options),
                            max_length=int(spec.get("max_length", 64)), data_options=spec.get("data_options"),
                            resume=resume, progress=False)


def decoding_speed(folder: Path, sources: list[str]) -> dict[str, float]:
    """Sentences per second, greedy and beam=4, batches of 64 (fastest of interleaved repeats)."""
    t = load_translator(folder)
    ids = t.tokenizer.encode_source(sources, t.max_length, truncate=True)
    best = {1: float("inf"), 4: float("inf")}
    for _ in range(SPEED_REPEATS):
        for beam in best:
            start = time.perf_counter()
            decode_ids(t.model, ids, beam=beam, batch_size=64)
            best[beam] = min(best[beam], time.perf_counter() - start)
    return {"greedy": len(sources) / best[1], "beam4": len(sources) / best[4]}


def figures(task: str, arch: str, folder: Path) -> list[str]:
    t = load_translator(folder)
    out = RESULTS / "translate"
    out.mkdir(parents=True, exist_ok=True)
    names = []
    for i, text in enumerate(EXAMPLES[task]):
        (tr,) = t.translate([text])
        name = f"{task}-{arch}-{i}.png"
        viz.save(viz.alignment(tr.alignment, tr.source_tokens, tr.target_tokens,
                               title=f"{arch}: {text}  →  {tr.text}"), out / name)
        names.append(name)
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, default=ROOT / "translate-runs")
    parser.add_argument("--only", choices=tuple(TASKS))
    parser.add_argument("--arch", choices=ARCHS, action="append", help="only these models (repeatable)")
    parser.add_argument("--train-only", action="store_true", help="train the runs; measure and write nothing")
    args = parser.parse_args()
    torch.set_num_threads(1)
    path = RESULTS / "translate.json"
    results: dict[str, Any] = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    for task in [args.only] if args.only else list(TASKS):
        bundled_arch = json.loads((ROOT / "configs" / f"{TASKS[task][0]}.json").read_text())["arch"]
        sources = [] if args.train_only else list(load_pairs(task).test.source[:SPEED_N])
        for arch in args.arch or ARCHS:
            folder = run_folder(args.runs, task, arch, bundled_arch)
            load_before = os.getloadavg()[0]
            final = train(task, arch, folder)
            if args.train_only:
                continue
            speed = decoding_speed(folder, sources)
            results[f"{task}/{arch}"] = {
                "task": task, "arch": arch, "run": str(folder.relative_to(ROOT)) if folder.is_relative_to(ROOT)
                else str(folder), "parameters": final["parameters"], "train_cpu_s": final["train_cpu_s"],
                "train_wall_s": final["train_wall_s"], "decode_load": [load_before, os.getloadavg()[0]],
                "steps": final["steps"],
                "sets": {k: {kk: vv for kk, vv in v.items() if kk != "errors"} for k, v in final["sets"].items()},
                "errors": {k: v["errors"][:5] for k, v in final["sets"].items()},
                "speed": speed, "figures": figures(task, arch, folder)}
            print(task, arch, {k: v["exact_match"] for k, v in final["sets"].items()}, speed, flush=True)
            path.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if not args.train_only:
        (RESULTS / "translate.md").write_text(table(results), encoding="utf-8")


def _pct(res: dict[str, Any]) -> str:
    return f"{100 * res['exact_match']:.2f} ± {100 * res['stderr']:.2f}"


def table(results: dict[str, Any]) -> str:
    lines = ["# Translators: Bahdanau, Luong and transformer on dates and sentences", "",
             "Written by `benchmarks/translate.py` (figures in translate.json). Exact match of the greedy output, "
             "in % ± one standard error; training on one thread (`torch.set_num_threads(1)`), CPU time by "
             "`time.process_time` over the training loop (validations included); the wall time is long because the "
             "runs shared the machine's 2 cores with each other and with other jobs (load average 3-9 while they "
             "trained; 2-5 for the transformer rows, retrained later with rotary positions, see "
             "docs/translate.md). Decoding: 400 test sources in batches of 64, one thread, fastest of 3 interleaved "
             "repeats, with the 1-minute load average before and after.", "",
             "| task | model | params | test | extra set | train CPU min | train wall s | steps | greedy sent/s "
             "| beam=4 sent/s | load while decoding |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results.values():
        extra_name = TASKS[r["task"]][1]
        extra = r["sets"].get(extra_name)
        lines.append(f"| {r['task']} | {r['arch']} | {r['parameters']:,} | {_pct(r['sets']['test'])} | "
                     f"{extra_name}: {_pct(extra) if extra else '-'} | {r['train_cpu_s'] / 60:.2f} | "
                     f"{r['train_wall_s']:.0f} | {r['steps']} | {r['speed']['greedy']:.0f} | "
                     f"{r['speed']['beam4']:.0f} | "
                     f"{r['decode_load'][0]:.1f}-{r['decode_load'][1]:.1f} |")
    for task in TASKS:
        rows = [r for r in results.values() if r["task"] == task]
        if not rows:
            continue
        tags = sorted({t for r in rows for t in r["sets"]["test"].get("by_tag", {})})
        label = "locale" if task == "dates" else "construction"
        lines += ["", f"## {task}: test exact match by {label} (%)", "",
                  f"| {label} | n | " + " | ".join(r["arch"] for r in rows) + " |",
                  "|---|---|" + "---|" * len(rows)]
        for tag in tags:
            n = rows[0]["sets"]["test"]["by_tag"].get(tag, {}).get("n", 0)
            cells = [f"{100 * r['sets']['test']['by_tag'][tag]['exact_match']:.1f}"
                     if tag in r["sets"]["test"].get("by_tag", {}) else "-" for r in rows]
            lines.append(f"| {tag} | {n} | " + " | ".join(cells) + " |")
        extra_name = TASKS[task][1]
        extra_tags = sorted({t for r in rows for t in r["sets"].get(extra_name, {}).get("by_tag", {})})
        if extra_tags:
            lines += ["", f"## {task}: {extra_name} exact match by tag (%)", "",
                      "| tag | n | " + " | ".join(r["arch"] for r in rows) + " |", "|---|---|" + "---|" * len(rows)]
            for tag in extra_tags:
                n = rows[0]["sets"][extra_name]["by_tag"].get(tag, {}).get("n", 0)
                cells = [f"{100 * r['sets'][extra_name]['by_tag'][tag]['exact_match']:.1f}"
                         if tag in r["sets"][extra_name].get("by_tag", {}) else "-" for r in rows]
                lines.append(f"| {tag} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
