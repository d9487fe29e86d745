"""benchmarks/classify/classify_compose.py --invariants (a route tried for the zh-sentiment model, not the phrases
`make train-zh` trains on: tests/data/test_phrases.py checks those): every decoration (a brand, a neutral clause, a
tail, a frame) is written as often on a positive phrase as on a negative one, so none can carry a label; no phrase
repeats a base phrase; the same seed gives the same phrases."""

from __future__ import annotations

import collections
import importlib.util
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest

from attnlab.data import normalise
from attnlab.data.phrases import SENTIMENT_WORDS

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "classify" / "classify_compose.py"


@pytest.fixture(scope="module")
def compose() -> ModuleType:
    spec = importlib.util.spec_from_file_location("classify_compose", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


BASE = [("屏幕很清楚", 1), ("电池不耐用", 0), ("房间很干净", 1), ("早餐太难吃了", 0), ("这本书很好看", 1),
        ("印刷质量很差", 0), ("衣服面料很舒服", 1), ("鞋子穿着磨脚", 0), ("送货很快", 1), ("客服不理人", 0)]
TRAIN = [("外卖送得很快，菜还是热的", 1), ("酒店的位置不好找", 0), ("手机拍照效果不错", 1), ("电脑开机很慢", 0),
         ("书的纸张很好", 1), ("菜太咸了", 0), ("质量很好，物超所值", 1), ("物流太慢了！", 0)]


def test_every_decoration_is_written_on_both_labels_alike(compose: ModuleType) -> None:
    marks: dict[str, str] = {}
    items = compose.invariants(BASE, random.Random(0), 200, train=TRAIN, marks=marks)
    assert len(items) >= 100 and {y for _, y, _ in items} == {0, 1}
    kinds = collections.Counter(kind for _, _, kind in items)
    assert set(kinds) == {"inv-brand", "inv-clause", "inv-tail", "inv-frame"}, kinds
    by_mark = collections.Counter((marks[text], y) for text, y, _ in items)
    assert all(by_mark[m, 1] == by_mark[m, 0] for m, _ in by_mark), by_mark
    keys = [normalise(text) for text, _, _ in items]
    assert len(set(keys)) == len(keys) and not set(keys) & {normalise(t) for t, _ in BASE}
    for text, y, _ in items:  # the phrase is kept whole inside its decoration, with its own label
        assert any(t.rstrip("！!") in text and z == y for t, z in BASE + TRAIN), (text, y)


def test_the_same_seed_gives_the_same_phrases(compose: ModuleType) -> None:
    def draw(seed: int) -> list[tuple[str, int, str]]:
        return list(compose.invariants(BASE, random.Random(seed), 60, train=TRAIN))

    assert draw(3) == draw(3) and draw(3) != draw(4)


def test_no_decoration_holds_a_sentiment_word(compose: ModuleType) -> None:
    words = [name for _, _, names in compose.INV_BRANDS for name in names.split("|")] + compose.INV_FRAMES + [
        c for clauses in compose.INV_CLAUSES.values() for c in clauses.split()]
    assert not [w for w in words if any(s in w for s in SENTIMENT_WORDS)]
