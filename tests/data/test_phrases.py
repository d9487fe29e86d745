"""attnlab.data.phrases: the composed phrases `make train-zh` trains on (attnlab.data.write_phrases). The same seed
writes the same phrases; a fingerprint of the recipe on a tiny training set (and, slow, of the whole shipped file:
the bytes the experiment script wrote for the bundle) is committed here; the miner, the degree/negation/contrast
phrases, the suite exclusion and the tables' "no sentiment word" rule are checked by hand; and the experiment script
benchmarks/classify/classify_compose.py writes the same file with the shipped recipe's flags."""

from __future__ import annotations

import collections
import hashlib
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from attnlab.data import compose_phrases, normalise, write_phrases
from attnlab.data import phrases as P
from attnlab.suites import suite_inputs

ROOT = Path(__file__).resolve().parents[2]
SUITES = ("zh-sentiment", "zh-sentiment-heldout")
# the shipped file (make train-zh; the bundled zh-sentiment model's "extra" texts): 27,638 phrases, 13,935 pos. The
# experiment script wrote these bytes with SHIPPED_FLAGS before the recipe moved into the package, and so did its
# version of the bundle's commit (ad860f0, the fourth edition), both run on 2026-12-06
SHIPPED_SHA256 = "961500acadf5ea1be2df6796d96d469528ef118869763a2c6a7c1d73077c6d3a"
SHIPPED_FLAGS = ["--contrast", "--family", "--events", "--more-events", "--more-frames", "--clean-mining",
                 "--more-kinds", "--seed", "0"]

# a training set small enough to reason about: 物流快 pos three times, 物流慢 neg twice; 房间干净 pos twice and once
# neg in a drawback clause (就是房间很干净, of a neg text), 房间脏 neg twice and once pos
TEXTS = ["物流很快，房间很干净", "物流很快，房间很干净。", "物流很快！", "房间很脏，物流很慢", "房间很脏",
         "物流很慢，就是房间很干净", "房间很脏，就是物流很快"]
LABELS = [1, 1, 1, 0, 0, 0, 1]
TINY_SHA256 = "09838611a42beb465561632c09217eb33b52141c2d15a079c4e5dcde64c21cf0"  # json.dumps of the list, seed 0


def fingerprint(items: list[tuple[str, int, str]]) -> str:
    return hashlib.sha256(json.dumps(items, ensure_ascii=False).encode()).hexdigest()


def test_the_miner_reads_a_pairs_polarity_from_its_clauses_and_clean_mining_skips_drawback_clauses() -> None:
    # 房间干净: 2 pos, 1 neg (the drawback clause) is under the 3:1 the pair needs; without that clause 2:0 is enough.
    # 房间脏: 2 neg, 1 pos, and the word alone as well: no polarity either way.
    assert P.mine(TEXTS, LABELS) == {("物流", "快"): 1, ("物流", "慢"): 0}
    assert P.mine(TEXTS, LABELS, clean=True) == {("物流", "快"): 1, ("物流", "慢"): 0, ("房间", "干净"): 1}


def test_compose_writes_degree_and_negation_of_each_pair_and_contrasts_decided_by_the_second_clause() -> None:
    lexicon = {("物流", "快"): 1, ("房间", "脏"): 0}
    items = P.compose(lexicon, random.Random(0), contrast=True)
    assert len(items) == 4 * len(lexicon) + 2 * len(lexicon)
    for (aspect, word), y in sorted(lexicon.items()):
        own = [(t, z) for t, z in items[:8] if t.startswith(aspect) and "，" not in t]
        assert (aspect + "太" + word + "了", y) in own
        assert any(t.rstrip("。！啊") == aspect + "不" + word and z == 1 - y for t, z in own), own
        assert sum(z == y for _, z in own) == 2 and sum(z == 1 - y for _, z in own) == 2
    for text, y in items[8:]:  # two clauses of opposite polarity: the one after the connective decides
        first, second = text.removeprefix("虽然").split("，")
        assert any(second.startswith(c) for c in P.CONNECTIVES), text
        assert y == (1 if "快" in second else 0) and ("快" in first) != ("快" in second), (text, y)


def test_the_same_seed_gives_the_same_phrases_and_the_recipe_matches_its_fingerprint() -> None:
    items = compose_phrases(TEXTS, LABELS, seed=0)
    assert items == compose_phrases(TEXTS, LABELS, seed=0)
    assert fingerprint(items) == TINY_SHA256
    assert compose_phrases(TEXTS, LABELS, seed=1) != items
    sources = collections.Counter(source for _, _, source in items)
    for source in ("compose", "family", "events", "more-events", "negation", "concession", "aspect-balance", "quoted"):
        assert sources[source] > 0, (source, sources)
    keys = [normalise(t) for t, _, _ in items]
    assert len(set(keys)) == len(keys) and {y for _, y, _ in items} == {0, 1}


def test_a_text_of_exclude_is_left_out_and_nothing_else_moves() -> None:
    items = compose_phrases(TEXTS, LABELS, seed=0)
    left_out = [items[0][0] + "。", items[100][0]]  # an excluded text matches normalised
    kept = compose_phrases(TEXTS, LABELS, seed=0, exclude=left_out)
    assert kept == [item for i, item in enumerate(items) if i not in (0, 100)]


def test_the_tables_hold_no_sentiment_word_where_the_recipe_promises_none() -> None:
    P.no_sentiment_word(choice for _, parts in P.MORE_EVENTS for part in parts for choice in part)
    P.no_sentiment_word([o for _, openers in P.DOMAIN_OPENERS for o in openers] + P.PREFIXES + P.SUFFIXES)
    P.no_sentiment_word([c for _, parts in P.IMPLICIT for part in parts for c in part]
                        + [c for row in P.DOMAIN_FACTS for choices in row[1:] for c in choices])
    with pytest.raises(ValueError, match="不错"):
        P.no_sentiment_word(["三天就到了", "房间不错"])


@pytest.mark.slow
def test_the_shipped_file_keeps_its_bytes_and_the_route_script_writes_the_same(tmp_path: Path) -> None:
    exclude = suite_inputs(*SUITES)
    written = write_phrases(tmp_path / "composed.jsonl", exclude=exclude)
    data = (tmp_path / "composed.jsonl").read_bytes()
    assert hashlib.sha256(data).hexdigest() == SHIPPED_SHA256
    rows = [json.loads(line) for line in data.decode("utf-8").splitlines()]
    assert len(rows) == len(written) == 27638 and sum(r["label"] == "pos" for r in rows) == 13935
    assert [r["text"] for r in rows] == [t for t, _, _ in written]
    keys = [normalise(r["text"]) for r in rows]  # one of each, and no suite input among them
    assert len(set(keys)) == len(keys) and not set(keys) & {normalise(t) for t in exclude}
    script = ROOT / "benchmarks" / "classify" / "classify_compose.py"  # the route script reuses the same parts
    done = subprocess.run([sys.executable, str(script), *SHIPPED_FLAGS, "--out", str(tmp_path / "script.jsonl")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "script.jsonl").read_bytes() == data
