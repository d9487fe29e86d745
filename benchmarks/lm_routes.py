"""The runs of `attnlab train lm` compared at equal CPU time (issue 31): one table row per run folder (its
final.json and the valid rows of its metrics.jsonl) and one figure of valid bits per character against CPU seconds,
the n-gram's line beside them.

    PYTHONPATH=src python benchmarks/lm_routes.py NAME=FOLDER... --out benchmarks/results/lm_routes.json \
        --figure docs/lm/zh-lm-routes.png

Each row: the run's steps and CPU seconds of training, valid bits per character at the CPU second every run
reached (``at_common_cpu_s``, read off its curve by linear interpolation between validations), its best valid and
its test figure, the mixture with the n-gram when the run made one, and the n-gram's valid figure.  A run stopped
before its end (no final.json) gets a row of its last validation, ``"finished": false``, and no test figure; a run
with no n-gram of its own (benchmarks/lm_bpe_screen.py) takes the other runs' line.
With ``--heads``, each run's heads.png is drawn again from its rows (for a stopped run, the only one there is) into
that folder as NAME-heads.png.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from attnlab.training import plot_head_scores
from attnlab.viz.static import figure


def curve(folder: Path) -> tuple[np.ndarray, np.ndarray]:
    """``(cpu seconds, valid bits per character)`` at each validation of the run in ``folder``."""
    rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text(encoding="utf-8").splitlines()]
    valid = [r for r in rows if r.get("split") == "valid"]
    return np.array([r["cpu_s"] for r in valid]), np.array([-r["accuracy"] for r in valid])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="NAME=FOLDER of a finished `attnlab train lm` run")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--figure", type=Path, required=True)
    parser.add_argument("--title", default="")
    parser.add_argument("--heads", type=Path, help="a folder for each run's head-score figure")
    parser.add_argument("--ngram", type=float, help="the n-gram's valid figure, for runs stopped before they wrote it")
    args = parser.parse_args()
    runs = dict(item.split("=", 1) for item in args.runs)
    curves = {name: curve(Path(folder)) for name, folder in runs.items()}
    common = min(float(c[0][-1]) for c in curves.values())  # the CPU second every run reached
    rows: list[dict[str, Any]] = []
    for name, folder in runs.items():
        cpu, bits = curves[name]
        lines = (Path(folder) / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
        metrics = [json.loads(line) for line in lines]
        valid = [r for r in metrics if r.get("split") == "valid"]
        row: dict[str, Any] = {"run": name, "folder": str(folder),
                               "at_common_cpu_s": round(float(np.interp(common, cpu, bits)), 4),
                               "common_cpu_s": round(common, 1)}
        if (Path(folder) / "final.json").is_file():
            final = json.loads((Path(folder) / "final.json").read_text(encoding="utf-8"))
            row.update({"finished": True, "steps": final["steps"], "train_cpu_s": final["train_cpu_s"],
                        "valid": round(final["valid_bits_per_char"], 4), "test": round(final["test_bits_per_char"], 4),
                        "best_step": final["best_step"],
                        **({"ngram_valid": final["ngram_valid_bits_per_char"][str(final["ngram_order"])],
                            "ngram_test": final["ngram_test_bits_per_char"]} if "ngram_order" in final else {}),
                        **{k: round(final[k], 4) for k in ("mix_lambda", "mix_valid_bits_per_char",
                                                            "mix_test_bits_per_char") if k in final}})
        else:
            ngram = json.loads((Path(folder) / "run.json").read_text(encoding="utf-8"))["ngram"] \
                if (Path(folder) / "run.json").is_file() else None
            row.update({"finished": False, "steps": valid[-1]["step"], "train_cpu_s": valid[-1]["cpu_s"],
                        "valid": round(float(bits.min()), 4)})
            if ngram is not None or args.ngram is not None:
                row["ngram_valid"] = (ngram["valid_bits_per_char"][str(ngram["chosen_order"])] if ngram is not None
                                      else args.ngram)
        text = [float(np.max(r["heads_text"]["induction"])) for r in valid if "heads_text" in r]
        row.update({"induction_random_max": round(max(float(np.max(r["heads"]["induction"])) for r in valid), 4),
                    "icl_last": round(valid[-1]["icl"], 4),
                    **({"induction_text_max": round(max(text), 4)} if text else {})})
        rows.append(row)
        if args.heads is not None:
            args.heads.mkdir(parents=True, exist_ok=True)
            plot_head_scores(metrics, args.heads / f"{name}-heads.png", f"{name}: heads across training")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for r in rows:
        print(json.dumps(r, ensure_ascii=False))
    fig = figure(8, 4.5)
    ax = fig.subplots()
    colour = {}
    for name, (cpu, bits) in curves.items():
        colour[name] = ax.plot(cpu, bits, "o-", markersize=2.5, label=name)[0].get_color()
    ngram = next(r["ngram_valid"] for r in rows if "ngram_valid" in r)
    ax.axhline(ngram, color="#a63603", linewidth=2, label=f"Kneser-Ney 5-gram: {ngram:.3f}")
    for r in rows:
        if "mix_valid_bits_per_char" in r:
            ax.axhline(r["mix_valid_bits_per_char"], linewidth=0.9, linestyle="-.", color=colour[r["run"]],
                       label=f"{r['run']} mixed with the 5-gram: {r['mix_valid_bits_per_char']:.3f}")
    ax.axvline(common, color="#636363", linewidth=0.8, linestyle=":", label=f"equal CPU time: {common:.0f} s")
    low = min([float(b.min()) for _, b in curves.values()] + [ngram] +
              [r.get("mix_valid_bits_per_char", ngram) for r in rows])
    ax.set_ylim(low - 0.15, min(10.0, max(float(b.max()) for _, b in curves.values()) + 0.1))
    ax.set_xlabel("CPU seconds of training (one thread; validations and head probes included)")
    ax.set_ylabel("valid bits per character")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(args.title, fontsize=10)
    args.figure.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.figure, dpi=110)


if __name__ == "__main__":
    main()
