"""attnlab.data.make_sentences: the toy English-Chinese grammar, its hand-checked translations and its splits."""

from __future__ import annotations

import re

import pytest

from attnlab.data import PairSplits, make_sentences
from attnlab.data._grammar import NP, TUTORIAL_PAIR, Clause
from attnlab.data._grammar_lexicon import (
    ADJECTIVES,
    HELD_OUT,
    NAMES,
    NOUNS,
    NUMBERS,
    PREPOSITIONS,
    TIMES,
    VERBS,
    chinese_characters,
    english_words,
)
from attnlab.errors import AttnLabError


@pytest.fixture(scope="module")
def splits() -> PairSplits:
    return make_sentences()  # the defaults: 30k train, the size a training run uses


# --- hand-checked translations: a tree built by hand, both spellings checked by hand -------------------------

def n(word: str, det: str = "the", count: int = 1, adj: str = "", rel: Clause | None = None) -> NP:
    for name in NAMES:
        if name.en == word:
            return NP(name, "name")
    noun = next(x for x in NOUNS if x.en == word)
    adjective = next(a for a in ADJECTIVES if a.en == adj) if adj else None
    return NP(noun, det, count, adjective, rel)  # type: ignore[arg-type]


def v(base: str):
    return next(x for x in VERBS if x.base == base)


def at(prep: str, place: NP):
    return next(p for p in PREPOSITIONS if p.en == prep), place


def when(text: str):
    return next(t for t in TIMES if t.en == text)


HAND_CHECKED = [
    # locative: a posture verb keeps 在... after it, an activity verb takes it before
    (Clause(n("cat"), v("sit"), loc=at("on", n("mat"))), "The cat sat on the mat.", "猫坐在垫子上。"),
    (Clause(n("dog"), v("play"), loc=at("in", n("garden"))), "The dog played in the garden.", "狗在花园里玩。"),
    (Clause(n("boy"), v("read"), n("book"), loc=at("in front of", n("house"))),
     "The boy read the book in front of the house.", "男孩在房子前面看了书。"),
    # time: from the end of the English to just after the Chinese subject
    (Clause(n("cat"), v("sit"), loc=at("on", n("mat")), time=when("yesterday")),
     "The cat sat on the mat yesterday.", "猫昨天坐在垫子上。"),
    (Clause(n("girl"), v("sing"), time=when("every day"), tense="present"),
     "The girl sings every day.", "女孩每天唱歌。"),
    # measure words; two is 两
    (Clause(n("girl"), v("buy"), n("book", "num", 3)), "The girl bought three books.", "女孩买了三本书。"),
    (Clause(n("dog", "num", 2), v("chase"), n("cat"), tense="present"), "Two dogs chase the cat.", "两只狗追猫。"),
    (Clause(n("Tom"), v("have"), n("umbrella", "a"), tense="present"), "Tom has an umbrella.", "汤姆有一把伞。"),
    (Clause(n("cat", "num", 3), v("sit"), loc=at("on", n("mat", adj="red"))), "Three cats sat on the red mat.",
     "三只猫坐在红垫子上。"),
    (Clause(n("Lily"), v("buy"), n("book", "a", adj="old")), "Lily bought an old book.", "莉莉买了一本旧书。"),
    # relative clauses before the noun; no 了 inside them
    (Clause(n("dog", rel=Clause(n("cat"), v("see"), gap="object")), v("run")),
     "The dog that the cat saw ran.", "猫看见的狗跑了。"),
    (Clause(n("cat", rel=Clause(None, v("see"), n("dog"), gap="subject")), v("sleep"), loc=at("under", n("table"))),
     "The cat that saw the dog slept under the table.", "看见狗的猫睡在桌子下。"),
    (Clause(n("boy"), v("find"), n("book", rel=Clause(n("Mary"), v("buy"), gap="object"))),
     "The boy found the book that Mary bought.", "男孩找到了玛丽买的书。"),
    # questions: 吗, no inversion; past 了 moves to the end unless the object is counted
    (Clause(n("cat"), v("see"), n("dog"), question=True), "Did the cat see the dog?", "猫看见狗了吗？"),
    (Clause(n("cat"), v("like"), n("dog"), tense="present", question=True), "Does the cat like the dog?",
     "猫喜欢狗吗？"),
    (Clause(n("girl"), v("buy"), n("book", "num", 3), question=True), "Did the girl buy three books?",
     "女孩买了三本书吗？"),
    (Clause(n("cat"), v("sit"), loc=at("on", n("mat")), question=True), "Did the cat sit on the mat?",
     "猫坐在垫子上了吗？"),
    (Clause(n("Tom"), v("read"), n("book"), loc=at("in", n("park")), time=when("last night"), question=True),
     "Did Tom read the book in the park last night?", "汤姆昨天晚上在公园里看书了吗？"),
    # negation: 没有 in the past, 不 in the present and for statives, 没有 for 有 always
    (Clause(n("cat"), v("see"), n("dog"), neg=True), "The cat did not see the dog.", "猫没有看见狗。"),
    (Clause(n("boy"), v("have"), n("ball"), tense="present", neg=True), "The boy does not have the ball.",
     "男孩没有球。"),
    (Clause(n("boy"), v("like"), n("dog"), neg=True), "The boy did not like the dog.", "男孩不喜欢狗。"),
    # adjectives before the noun; statives never take 了; bare past intransitives end in 了
    (Clause(n("dog", adj="big"), v("chase"), n("cat", adj="small")), "The big dog chased the small cat.",
     "大狗追了小猫。"),
    (Clause(n("child", adj="happy"), v("sit"), loc=at("next to", n("door", adj="old"))),
     "The happy child sat next to the old door.", "快乐的孩子坐在旧门旁边。"),
    (Clause(n("cat"), v("like"), n("dog")), "The cat liked the dog.", "猫喜欢狗。"),
    (Clause(n("dog", "num", 2), v("run"), tense="present"), "Two dogs run.", "两只狗跑。"),
    (Clause(n("dog"), v("run")), "The dog ran.", "狗跑了。"),
    # two nested relative clauses (the compositional set's depth)
    (Clause(n("boy"), v("see"), n("dog", rel=Clause(None, v("chase"), n(
        "cat", rel=Clause(n("girl"), v("like"), gap="object")), gap="subject"))),
     "The boy saw the dog that chased the cat that the girl liked.", "男孩看见了追女孩喜欢的猫的狗。"),
]


@pytest.mark.parametrize(("tree", "english", "chinese"), HAND_CHECKED, ids=[e for _, e, _ in HAND_CHECKED])
def test_hand_checked_translations(tree: Clause, english: str, chinese: str) -> None:
    assert (tree.en_sentence(), tree.zh_sentence()) == (english, chinese)


def test_relations_and_depth_of_a_tree() -> None:
    """What the compositional split is built on: each (verb, object) of a tree, gaps filled, and its depth."""
    nested = HAND_CHECKED[-1][0]
    assert sorted(nested.relations()) == [("chase", "cat"), ("like", "cat"), ("see", "dog")]
    assert nested.depth() == 2 and HAND_CHECKED[0][0].depth() == 0 and HAND_CHECKED[0][0].relations() == []


@pytest.mark.slow
def test_the_tutorial_pair_is_in_training(splits: PairSplits) -> None:
    assert TUTORIAL_PAIR == ("The cat sat on the mat.", "猫坐在垫子上。") == HAND_CHECKED[0][1:]
    i = splits.train.source.index("The cat sat on the mat.")
    assert splits.train.target[i] == "猫坐在垫子上。" and splits.train.tag[i] == "locative"
    others = splits.valid.source + splits.test.source + splits.extra["compositional"].source
    assert "The cat sat on the mat." not in others


def test_generated_pairs_agree_with_the_hand_checked_ones(splits: PairSplits) -> None:
    """Any hand-checked sentence the generator happened to write has the hand-checked translation."""
    everything = {**dict(zip(splits.train.source, splits.train.target, strict=True)),
                  **dict(zip(splits.test.source, splits.test.target, strict=True))}
    for _, english, chinese in HAND_CHECKED:
        assert everything.get(english, chinese) == chinese


# --- the splits -----------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_sizes_tags_and_disjoint_splits(splits: PairSplits) -> None:
    assert (len(splits.train), len(splits.valid), len(splits.test)) == (30_000, 2_000, 2_000)
    comp = splits.extra["compositional"]
    assert len(comp) == 2_000 and comp.counts() == {"unseen_pair": 1_000, "nested_relative": 1_000}
    sets = [set(p.source) for p in (splits.train, splits.valid, splits.test, comp)]
    assert sum(map(len, sets)) == len(set.union(*sets)) == 36_000  # no duplicates, no sentence in two sets
    tags = splits.train.counts()
    assert set(tags) == {"transitive", "intransitive", "locative", "time", "measure", "adjective", "relative",
                         "question", "negation"}
    assert min(tags.values()) > 300 and set(splits.test.counts()) == set(tags)


def test_same_english_same_chinese_across_seeds(splits: PairSplits) -> None:
    """The grammar is a function of the English: a sentence drawn under two seeds gets one translation."""
    other = make_sentences(n_train=6_000, n_valid=0, n_test=0, n_compositional=400, seed=1)
    mine = {}
    for p in (splits.train, splits.valid, splits.test, splits.extra["compositional"]):
        mine.update(zip(p.source, p.target, strict=True))
    shared = [(s, t) for p in (other.train, other.extra["compositional"])
              for s, t in zip(p.source, p.target, strict=True) if s in mine]
    assert len(shared) > 500
    assert [(s, t) for s, t in shared if mine[s] != t] == []


def _held_out_patterns() -> list[tuple[tuple[str, str], re.Pattern[str]]]:
    """Surface patterns of "V [det] [adj] N" and "N that SUBJ V" for each held-out (verb, noun) pair."""
    dets = "|".join(["the", "a", "an"] + [e for e, _ in NUMBERS])
    adjs = "|".join(a.en for a in ADJECTIVES)
    out = []
    for verb_base, noun in HELD_OUT:
        verb = next(x for x in VERBS if x.base == verb_base)
        entry = next(x for x in NOUNS if x.en == noun)
        forms = f"(?:{verb.base}|{verb.s3}|{verb.past})"
        nouns = f"(?:{entry.en}|{entry.plural})"
        direct = rf"\b{forms} (?:(?:{dets}) )?(?:(?:{adjs}) )?{nouns}\b"
        relative = rf"\b{nouns} that (?:the \w+|[A-Z]\w+) {forms}\b"
        out.append(((verb_base, noun), re.compile(f"{direct}|{relative}", re.IGNORECASE)))
    return out


def test_held_out_pairs_only_in_the_compositional_set(splits: PairSplits) -> None:
    patterns = _held_out_patterns()
    for part in (splits.train, splits.valid, splits.test):
        hits = [s for s in part.source for _, p in patterns if p.search(s)]
        assert hits == []
    comp = splits.extra["compositional"]
    unseen = [s for s, tag in zip(comp.source, comp.tag, strict=True) if tag == "unseen_pair"]
    assert all(any(p.search(s) for _, p in patterns) for s in unseen)
    seen_pairs = {pair for s in unseen for pair, p in patterns if p.search(s)}
    assert len(seen_pairs) == len(HELD_OUT)  # every held-out pair is tested
    # each held-out verb has other objects in training and each held-out noun is the object of other verbs
    dets = "|".join(["the", "a", "an"] + [e for e, _ in NUMBERS])
    verb_object = re.compile(rf"\b([a-z]+) (?:(?:{dets}) )?(?:\w+ )?([a-z]+)\b")
    forms = {f: x.base for x in VERBS if x.transitive for f in (x.base, x.s3, x.past)}
    singular = {x.plural: x.en for x in NOUNS} | {x.en: x.en for x in NOUNS}
    found = {(forms[a], singular[b]) for s in splits.train.source for a, b in verb_object.findall(s.lower())
             if a in forms and b in singular}
    for verb_base, noun in HELD_OUT:
        assert (verb_base, noun) not in found
        assert len({o for v_, o in found if v_ == verb_base}) >= 2, verb_base
        assert len({v_ for v_, o in found if o == noun}) >= 2, noun


def test_nesting_depth(splits: PairSplits) -> None:
    """Every "that" is a relative pronoun: training has at most one, the nested set exactly two."""
    for part in (splits.train, splits.valid, splits.test):
        assert max(s.split().count("that") for s in part.source) == 1
    comp = splits.extra["compositional"]
    depths = [s.split().count("that") for s, tag in zip(comp.source, comp.tag, strict=True)]
    assert {d for d, tag in zip(depths, comp.tag, strict=True) if tag == "nested_relative"} == {2}
    assert max(d for d, tag in zip(depths, comp.tag, strict=True) if tag == "unseen_pair") <= 1


def test_only_lexicon_words_and_characters(splits: PairSplits) -> None:
    words, chars = english_words(), chinese_characters() | {"。", "？"}
    assert len(words) >= 300 and len(chars) >= 200
    for part in (splits.train, splits.valid, splits.test, splits.extra["compositional"]):
        assert {w for s in part.source for w in s.lower().rstrip(".?").split()} <= words
        assert {c for t in part.target for c in t} <= chars
        assert all(t[-1] in "。？" and t[-1] not in t[:-1] for t in part.target)
        assert all((s[-1] == "?") == (t[-1] == "？") for s, t in zip(part.source, part.target, strict=True))
        assert all(s[0].isupper() for s in part.source)


def test_rules_that_hold_over_every_pair(splits: PairSplits) -> None:
    """Rules a single example cannot show: no 不 before a result verb, no 了 in a negation, 吗 exactly on
    questions, 两 for two and never 二."""
    results = "|".join(x.zh for x in VERBS if x.resultative)
    pairs = [(s, t) for p in (splits.train, splits.test, splits.extra["compositional"])
             for s, t in zip(p.source, p.target, strict=True)]
    assert not [t for _, t in pairs if re.search(f"不(?:{results})", t)]
    assert not [t for s, t in pairs if " not " in s and "了" in t]
    assert all(("?" in s) == t.endswith("吗？") for s, t in pairs)
    assert not [t for _, t in pairs if "二" in t]
    assert all(("two " in s.lower()) <= ("两" in t) for s, t in pairs)


def test_deterministic_for_a_seed() -> None:
    a = make_sentences(n_train=800, n_valid=50, n_test=50, n_compositional=60, seed=3)
    b = make_sentences(n_train=800, n_valid=50, n_test=50, n_compositional=60, seed=3)
    c = make_sentences(n_train=800, n_valid=50, n_test=50, n_compositional=60, seed=4)
    assert a == b and a.train != c.train
    assert "The cat sat on the mat." in c.train.source


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"n_train": 0}, "n_train must be an int >= 1, got 0"),
    ({"n_test": -1}, "n_test must be an int >= 0, got -1"),
    ({"seed": True}, "seed must be an int >= 0, got True"),
    ({"n_train": 300_000}, "asks for 304000 random pairs, at most 200000"),
])
def test_bad_arguments(kwargs: dict, words: str) -> None:
    with pytest.raises(AttnLabError, match=re.escape(words)):
        make_sentences(**kwargs)
