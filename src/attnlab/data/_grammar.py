"""The tutorials' sentence as a task: a small synchronous English-Chinese grammar that writes parallel pairs.

"The cat sat on the mat." -> "猫坐在垫子上。"  Each sentence is built once as a tree (a :class:`Clause` whose
noun phrases are :class:`NP`) and written out twice, in English order and in Chinese order, so every pair is
an exact translation under the grammar's rules (docs/grammar.md lists them with an example each):

* articles are dropped; "a" and numerals take a measure word (三本书, 两只猫, 一把伞);
* a locative follows the verb in English and becomes 在 N 上/下/里/旁边/后面/前面 in Chinese, before the verb
  (在花园里玩) or, for the posture verbs sit/stand/lie/sleep/live, right after it (坐在垫子上);
* time expressions move from the end of the English sentence to just after the Chinese subject (猫昨天...);
* adjectives and relative clauses go before the noun (大狗, 猫看见的狗, 看见狗的猫);
* yes/no questions end in 吗 with no inversion;
* aspect: a past eventive verb takes 了 (猫看见了狗, 狗跑了), never in relative clauses, negations, stative
  verbs or an intransitive clause with a 在-phrase (猫坐在垫子上, 狗在花园里玩); in a past question it moves to
  the end (猫看见狗了吗？, 猫坐在垫子上了吗？) unless the object is counted (女孩买了三本书吗？);
  negation is 没有 in the past, 不 in the present and for statives, and 有's negation is always 没有.

:func:`make_sentences` draws train/valid/test from one distribution (deduplicated by the English sentence, so
disjoint) and a compositional test set of what training never shows: held-out (verb, object) pairs and
relative clauses nested two deep.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from .. import _validate as check
from ..errors import ConfigError, InputError
from ._grammar_lexicon import (
    ADJECTIVES,
    HELD_OUT,
    NAMES,
    NOUNS,
    NUMBERS,
    PREPOSITIONS,
    TIMES,
    VERBS,
    Adjective,
    Name,
    Noun,
    Preposition,
    Time,
    Verb,
    chinese_characters,
    english_words,
)
from ._pairs import Pairs, PairSplits

__all__ = ["CONSTRUCTIONS", "MAX_PAIRS", "NP", "TUTORIAL_PAIR", "Clause", "make_sentences"]

TUTORIAL_PAIR = ("The cat sat on the mat.", "猫坐在垫子上。")
MAX_PAIRS = 200_000  # train + valid + test; the grammar holds far more sentences, but draws repeat more and more

Tense = Literal["past", "present"]
Det = Literal["the", "a", "num", "name"]

_NOUN = {n.en: n for n in NOUNS}
_HELD_OUT = frozenset(HELD_OUT)
_VOWELS = "aeiou"


# --- the tree and its two spellings ---------------------------------------------------------------------


@dataclass(frozen=True)
class NP:
    """A noun phrase: "the cat", "three big dogs", "an umbrella", "Tom", "the dog that the cat saw"."""

    head: Noun | Name
    det: Det = "the"
    count: int = 1  # 2..10 with det "num"
    adj: Adjective | None = None
    rel: Clause | None = None  # a relative clause with a gap that this NP fills

    @property
    def plural(self) -> bool:
        return self.count > 1

    @property
    def kind(self) -> str:
        return self.head.kind

    @property
    def counted(self) -> bool:
        return self.det in ("a", "num")

    def en(self) -> str:
        if isinstance(self.head, Name):
            return self.head.en
        words = [self.adj.en] if self.adj else []
        assert isinstance(self.head, Noun)
        words.append(self.head.plural if self.plural else self.head.en)
        if self.det == "the":
            words.insert(0, "the")
        elif self.det == "a":
            words.insert(0, "an" if words[0][0] in _VOWELS else "a")
        elif self.det == "num":
            words.insert(0, NUMBERS[self.count - 2][0])
        if self.rel is not None:
            words += ["that", self.rel.en_relative()]
        return " ".join(words)

    def zh(self) -> str:
        if isinstance(self.head, Name):
            return self.head.zh
        assert isinstance(self.head, Noun)
        out = ""
        if self.det == "a":
            out += "一" + self.head.measure
        elif self.det == "num":
            out += NUMBERS[self.count - 2][1] + self.head.measure
        if self.rel is not None:
            out += self.rel.zh_relative() + "的"
        if self.adj is not None:
            out += self.adj.zh[self.head.kind]
        return out + self.head.zh

    def depth(self) -> int:
        """How many relative clauses this phrase holds (nested ones count once each)."""
        return 0 if self.rel is None else 1 + self.rel.depth()


@dataclass(frozen=True)
class Clause:
    """A clause: subject, verb, object, locative, time, tense, negation, question.

    In a relative clause one of ``subj`` / ``obj`` is None: the gap the modified noun fills (``gap``).
    """

    subj: NP | None
    verb: Verb
    obj: NP | None = None
    loc: tuple[Preposition, NP] | None = None
    time: Time | None = None
    tense: Tense = "past"
    neg: bool = False
    question: bool = False
    gap: Literal["", "subject", "object"] = ""

    # English ---------------------------------------------------------------------------------------------

    def _en_verb(self, plural_subject: bool) -> list[str]:
        """The verb group after the subject: "sat", "sits", "sit" (after do/did), "did not sit"."""
        v = self.verb
        if self.question:
            return [v.base]
        if self.neg:
            aux = "did" if self.tense == "past" else ("do" if plural_subject else "does")
            return [aux, "not", v.base]
        if self.tense == "past":
            return [v.past]
        return [v.base if plural_subject else v.s3]

    def _en_rest(self) -> list[str]:
        words = [self.obj.en()] if self.obj is not None else []
        if self.loc is not None:
            words += [self.loc[0].en, self.loc[1].en()]
        if self.time is not None:
            words.append(self.time.en)
        return words

    def en_sentence(self) -> str:
        assert self.subj is not None
        subj = self.subj.en()
        if self.question:
            aux = "Did" if self.tense == "past" else ("Do" if self.subj.plural else "Does")
            words = [aux, subj, *self._en_verb(self.subj.plural), *self._en_rest()]
            return " ".join(words) + "?"
        text = " ".join([subj, *self._en_verb(self.subj.plural), *self._en_rest()]) + "."
        return text[0].upper() + text[1:]

    def en_relative(self) -> str:
        """The clause after "that": "the cat saw" (object gap) or "saw the dog" (subject gap, head singular)."""
        if self.gap == "subject":
            return " ".join([*self._en_verb(False), *self._en_rest()])
        assert self.subj is not None
        return " ".join([self.subj.en(), *self._en_verb(self.subj.plural), *self._en_rest()])

    # Chinese ---------------------------------------------------------------------------------------------

    def _eventive_past(self) -> bool:
        return self.tense == "past" and not self.verb.stative and not self.neg and not self.gap

    def _zh_negation(self) -> str:
        if not self.neg:
            return ""
        if self.verb.zh == "有":
            return "没"  # 没有: 有 is never negated with 不
        return "没有" if self.tense == "past" and not self.verb.stative else "不"

    def _zh_predicate(self) -> str:
        """Negation, preverbal 在-phrase, verb, 了, object, postverbal 在-phrase, final 了: the rules above."""
        loc = ""
        if self.loc is not None:
            loc = "在" + self.loc[1].zh() + self.loc[0].zh
        le = self._eventive_past()
        verbal_le = le and self.obj is not None and (not self.question or self.obj.counted)
        final_le = le and not verbal_le and (self.question or (self.obj is None and self.loc is None))
        out = self._zh_negation()
        if not self.verb.posture:
            out += loc
        out += self.verb.zh + ("了" if verbal_le else "")
        if self.obj is not None:
            out += self.obj.zh()
        if self.verb.posture:
            out += loc
        return out + ("了" if final_le else "")

    def zh_sentence(self) -> str:
        assert self.subj is not None
        time = self.time.zh if self.time is not None else ""
        body = self.subj.zh() + time + self._zh_predicate()
        return body + ("吗？" if self.question else "。")

    def zh_relative(self) -> str:
        """The clause before 的: "猫看见" (object gap) or "看见狗" (subject gap)."""
        subj = "" if self.subj is None else self.subj.zh()
        return subj + self._zh_predicate()

    # what the tree holds -----------------------------------------------------------------------------------

    def depth(self) -> int:
        return max((p.depth() for p in self._phrases()), default=0)

    def _phrases(self) -> list[NP]:
        out = [p for p in (self.subj, self.obj) if p is not None]
        return out + ([self.loc[1]] if self.loc is not None else [])

    def relations(self, head: NP | None = None) -> list[tuple[str, str]]:
        """Every (verb base form, object noun) in the tree; ``head`` fills an object gap."""
        obj = head if self.gap == "object" else self.obj
        out = []
        if obj is not None and isinstance(obj.head, Noun):
            out.append((self.verb.base, obj.head.en))
        for p in self._phrases():
            if p.rel is not None:
                out += p.rel.relations(p)
        return out


# --- sampling trees ---------------------------------------------------------------------------------------


def _subjects(verb: Verb) -> list[Noun | Name]:
    return [n for n in NOUNS if n.kind in verb.subj] + ([*NAMES] if "person" in verb.subj else [])


def _objects(verb: Verb) -> list[Noun | Name]:
    if verb.objects:
        return [_NOUN[o] for o in verb.objects]
    return [n for n in NOUNS if n.kind in verb.obj] + ([*NAMES] if "person" in verb.obj else [])


_TRANSITIVE = [v for v in VERBS if v.transitive]
_EVENTIVE = [v for v in _TRANSITIVE if not v.stative]
_INTRANSITIVE = [v for v in VERBS if not v.transitive and v.loc != "req"]
_LOCATIVE = [v for v in VERBS if not v.transitive]
# eventive verbs whose action can take place somewhere: "read the book in the garden" -> 在花园里看了书
_TRANSITIVE_LOC = [v for v in _EVENTIVE if v.base not in ("see", "meet", "visit", "drive", "ride", "clean")]
_AGENTS = ("person", "animal", "legless")
# where an action can happen: the places and the big things, not "in the bag" or "on the book"
_SCENES = ("tree", "house", "car", "bus", "table", "desk", "sofa", "bed", "door", "window", "boat", "mat")


def _places(verb: Verb) -> list[Noun]:
    if verb.places:
        names: tuple[str, ...] = verb.places
    elif verb.posture:
        names = tuple(n.en for n in NOUNS if n.preps)
    else:
        names = tuple(n.en for n in NOUNS if n.kind == "place" and n.en != "river") + _SCENES  # only swim/live
    fits = [n for n in NOUNS if n.en in names and n.preps
            and (not verb.preps or any(p in verb.preps for p in n.preps))]
    return fits


_PLACES = {v.base: _places(v) for v in VERBS}
_SUBJECTS = {v.base: _subjects(v) for v in VERBS}
_OBJECTS = {v.base: _objects(v) for v in _TRANSITIVE}
_SUBJECT_NAMES = {v.base: frozenset(h.en for h in _SUBJECTS[v.base]) for v in VERBS}
# the objects each verb may take in train/valid/test: the held-out pairs taken away
_OBJECT_OK = {v.base: frozenset(o.en for o in _OBJECTS[v.base] if (v.base, o.en) not in _HELD_OUT)
              for v in _TRANSITIVE}


class _Sampler:
    """Random trees for one construction at a time.

    ``force`` (a held-out (verb, noun) pair) is spent by the first transitive clause built; otherwise held-out
    pairs are never chosen.  ``nest`` lets one relative clause hold a second (the compositional depth).
    """

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.force: tuple[Verb, Noun] | None = None
        self.nest = False

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def tense(self, verb: Verb) -> Tense:
        return "past" if len(verb.tenses) == 1 else self.rng.choice(("past", "present"))

    # noun phrases ------------------------------------------------------------------------------------------

    def adjective(self, head: Noun | Name) -> Adjective | None:
        fits = [a for a in ADJECTIVES if isinstance(head, Noun) and head.kind in a.zh]
        return self.rng.choice(fits) if fits else None

    def np(self, heads: Sequence[Noun | Name], *, det: Det = "the", adj: bool = False,
           avoid: tuple[str, ...] = ()) -> NP:
        choices = [h for h in heads if h.en not in avoid] or list(heads)
        if det != "the" or adj:  # names take no numeral, article or adjective
            choices = [h for h in choices if isinstance(h, Noun)] or choices
        head = self.rng.choice(choices)
        if isinstance(head, Name):
            return NP(head, "name")
        adjective = self.adjective(head) if adj else None
        if det == "num":
            return NP(head, "num", self.rng.randint(2, 10), adjective)
        return NP(head, det, 1, adjective)

    def object_np(self, verb: Verb, **kw) -> NP:
        """An object for ``verb``: the forced held-out noun if one is pending, never another held-out one."""
        if self.force is not None and self.force[0] is verb:
            noun = self.force[1]
            self.force = None
            return self.np([noun], **kw)
        return self.np([o for o in _OBJECTS[verb.base] if o.en in _OBJECT_OK[verb.base]], **kw)

    def transitive_verb(self, verbs: list[Verb]) -> Verb:
        if self.force is not None and self.force[0] in verbs:
            return self.force[0]
        return self.rng.choice(verbs)

    def location(self, verb: Verb, avoid: tuple[str, ...] = ()) -> tuple[Preposition, NP]:
        """Where: a posture verb's place may be small ("on the book"); an action happens in a scene."""
        places = [n for n in _PLACES[verb.base] if n.en not in avoid]
        place = self.rng.choice(places)
        prep = self.rng.choice([p for p in PREPOSITIONS if p.en in place.preps
                                and (not verb.preps or p.en in verb.preps)])
        return prep, NP(place)

    # relative clauses --------------------------------------------------------------------------------------

    def relative_np(self, heads: Sequence[Noun | Name]) -> NP:
        """ "the dog that the cat saw" / "the cat that saw the dog" / "the cat that sat on the mat"."""
        nouns = [h for h in heads if isinstance(h, Noun)]
        agents = [n for n in nouns if n.kind in _AGENTS]
        gap = "subject" if self.nest else self.rng.choice(("object", "subject", "subject"))
        if gap == "object" or not agents:
            names = {n.en for n in nouns}
            verbs = [v for v in _TRANSITIVE if any(self._object_ok(v, n) for n in names)]
            verb = self.transitive_verb(verbs)
            head = self.rng.choice([n for n in nouns if self._object_ok(verb, n.en)])
            if self.force is not None and self.force[0] is verb:
                self.force = None
            subj = self.np(_SUBJECTS[verb.base], avoid=(head.en,))
            clause = Clause(subj, verb, tense=self.tense(verb), gap="object")
            return NP(head, rel=clause)
        head = self.rng.choice(agents)
        verbs = [v for v in VERBS if head.en in _SUBJECT_NAMES[v.base]]
        transitive = [v for v in verbs if v.transitive]
        if (self.force is not None and self.force[0] in transitive) or self.nest or self.chance(0.6):
            verb = self.transitive_verb(transitive)
            if self.nest:
                self.nest = False
                fits = [o for o in _OBJECTS[verb.base] if isinstance(o, Noun) and o.en != head.en
                        and o.en in _OBJECT_OK[verb.base]]
                obj = self.relative_np(fits)
            else:
                obj = self.object_np(verb, avoid=(head.en,))
            return NP(head, rel=Clause(None, verb, obj, tense=self.tense(verb), gap="subject"))
        verb = self.rng.choice([v for v in verbs if not v.transitive])
        loc = self.location(verb) if verb.loc == "req" or self.chance(0.7) else None
        return NP(head, rel=Clause(None, verb, loc=loc, tense=self.tense(verb), gap="subject"))

    def _object_ok(self, verb: Verb, noun: str) -> bool:
        """Whether ``noun`` may be ``verb``'s object now: only the forced noun while a pair is forced."""
        if self.force is not None and self.force[0] is verb:
            return noun == self.force[1].en
        return noun in _OBJECT_OK[verb.base]

    # clauses -----------------------------------------------------------------------------------------------

    def transitive(self, *, verbs: list[Verb] | None = None, subj_det: Det = "the", obj_det: Det = "the",
                   adj: tuple[bool, bool] = (False, False), rel: str = "", loc: bool = False,
                   time: bool = False, neg: bool = False, question: bool = False) -> Clause:
        verb = self.transitive_verb(verbs or _TRANSITIVE)
        tense: Tense = "past" if neg and verb.resultative else self.tense(verb)  # 没有看见, never 不看见
        forced = self.force[1].en if self.force is not None and self.force[0] is verb else ""
        if rel == "subject":
            subj = self.relative_np([h for h in _SUBJECTS[verb.base] if h.en != forced])
        else:
            subj = self.np(_SUBJECTS[verb.base], det=subj_det, adj=adj[0], avoid=(forced,))
        if rel == "object":
            fits = [o for o in _OBJECTS[verb.base] if isinstance(o, Noun) and o.en != subj.head.en
                    and self._object_ok(verb, o.en)]
            if forced:  # the held-out noun heads the relative clause: "found the key that the girl bought"
                self.force = None
            obj = self.relative_np(fits)
        else:
            obj = self.object_np(verb, det=obj_det, adj=adj[1], avoid=(subj.head.en,))
        place = self.location(verb, avoid=(subj.head.en, obj.head.en)) if loc else None
        when = self.time_for(tense) if time else None
        return Clause(subj, verb, obj, place, when, tense, neg, question)

    def intransitive(self, *, loc: bool, subj_det: Det = "the", adj: bool = False, rel: bool = False,
                     time: bool = False, neg: bool = False, question: bool = False) -> Clause:
        verb = self.rng.choice(_LOCATIVE if loc else _INTRANSITIVE)
        tense = self.tense(verb)
        adj_place = adj and loc and self.chance(0.4)
        if rel:
            subj = self.relative_np(_SUBJECTS[verb.base])
        else:
            subj = self.np(_SUBJECTS[verb.base], det=subj_det, adj=adj and not adj_place)
        place = self.location(verb) if loc else None
        if adj_place and place is not None:  # "on the red mat": 在红垫子上
            place = (place[0], NP(place[1].head, adj=self.adjective(place[1].head)))
        when = self.time_for(tense) if time else None
        return Clause(subj, verb, None, place, when, tense, neg, question)

    def time_for(self, tense: Tense) -> Time:
        return self.rng.choice([t for t in TIMES if t.tense == tense])

    def base(self, **kw) -> Clause:
        """A plain transitive, intransitive or locative clause (for time, question, negation)."""
        roll = self.rng.random()
        if roll < 0.5:
            if self.chance(0.15) and not kw.get("neg"):
                return self.transitive(verbs=_TRANSITIVE_LOC, loc=True, **kw)
            return self.transitive(verbs=_EVENTIVE if kw.get("time") else _TRANSITIVE, **kw)
        return self.intransitive(loc=roll < 0.85, **kw)


def _locative(s: _Sampler) -> Clause:
    if s.chance(0.7):
        return s.intransitive(loc=True)  # "The cat sat on the mat." / "The dog played in the garden."
    return s.transitive(verbs=_TRANSITIVE_LOC, loc=True)  # "The boy read the book in the garden."


def _measure(s: _Sampler) -> Clause:
    roll = s.rng.random()
    if roll < 0.7:
        return s.transitive(obj_det=s.rng.choice(("a", "num", "num")))  # "The girl bought three books."
    if roll < 0.88:
        return s.transitive(subj_det="num", obj_det=s.rng.choice(("the", "a")))  # "Two dogs chased the cat."
    return s.intransitive(loc=True, subj_det="num")  # "Three cats sat on the mat."


def _adjective(s: _Sampler) -> Clause:
    if s.chance(0.6):
        return s.transitive(adj=s.rng.choice(((True, False), (False, True), (True, True))))
    return s.intransitive(loc=True, adj=True)  # on the subject or on the place


def _relative(s: _Sampler) -> Clause:
    if s.chance(0.75):
        return s.transitive(rel=s.rng.choice(("subject", "object", "object")))
    return s.intransitive(loc=s.chance(0.7), rel=True)


def _question(s: _Sampler) -> Clause:
    if s.chance(0.8):
        return s.base(question=True, time=s.chance(0.2))
    return s.transitive(obj_det=s.rng.choice(("a", "num")), question=True)  # "Did the girl buy three books?"


# Each construction: its share of the random splits and how to build one.  Tag = the construction's name.
CONSTRUCTIONS: dict[str, tuple[float, Callable[[_Sampler], Clause]]] = {
    "transitive": (0.16, lambda s: s.transitive()),
    "intransitive": (0.05, lambda s: s.intransitive(loc=False)),
    "locative": (0.16, _locative),
    "time": (0.10, lambda s: s.base(time=True)),
    "measure": (0.12, _measure),
    "adjective": (0.10, _adjective),
    "relative": (0.15, _relative),
    "question": (0.10, _question),
    "negation": (0.06, lambda s: s.base(neg=True)),
}


# --- the splits -------------------------------------------------------------------------------------------


def _draw(sampler: _Sampler, names: list[str], weights: list[float]) -> tuple[Clause, str]:
    name = sampler.rng.choices(names, weights)[0]
    return CONSTRUCTIONS[name][1](sampler), name


def _collect(n: int, make: Callable[[], tuple[Clause, str] | None], seen: set[str], what: str,
             attempts: int) -> list[tuple[str, str, str]]:
    """``n`` new pairs (English not in ``seen``) from ``make``; an error if the grammar runs out of them."""
    out: list[tuple[str, str, str]] = []
    tries = 0
    while len(out) < n:
        tries += 1
        if tries > attempts:
            raise InputError(f"the grammar gave only {len(out)} distinct {what} pairs in {attempts} draws, "
                             f"{n} were asked for; ask for fewer")
        made = make()
        if made is None:
            continue
        clause, tag = made
        en = clause.en_sentence()
        if en not in seen:
            seen.add(en)
            out.append((en, clause.zh_sentence(), tag))
    return out


def make_sentences(*, n_train: int = 30_000, n_valid: int = 2_000, n_test: int = 2_000,
                   n_compositional: int = 2_000, seed: int = 0) -> PairSplits:
    """English-Chinese pairs from the toy grammar: train/valid/test and ``extra["compositional"]``.

    Train, valid and test are one random draw, deduplicated by the English sentence and split at random, so
    no sentence is in two of them; the tutorial pair "The cat sat on the mat." -> "猫坐在垫子上。" is always
    in train.  They never hold a held-out (verb, object) pair (``HELD_OUT`` in the lexicon) nor a relative
    clause inside another.  ``extra["compositional"]`` holds exactly those: half sentences using a held-out
    pair (tag ``"unseen_pair"``), half with two nested relative clauses (tag ``"nested_relative"``).
    Tags elsewhere name the construction ("locative", "relative", "measure", ...).  Same seed, same pairs.
    """
    check.positive_int("n_train", n_train, fix="the tutorial pair alone needs n_train >= 1")
    for name, value in (("n_valid", n_valid), ("n_test", n_test), ("n_compositional", n_compositional)):
        check.non_negative_int(name, value)
    check.non_negative_int("seed", seed)
    total = n_train - 1 + n_valid + n_test
    if total + 1 > MAX_PAIRS:
        raise ConfigError(f"make_sentences asks for {total + 1} random pairs, at most {MAX_PAIRS} can be drawn "
                          "before duplicates dominate; lower n_train, n_valid or n_test")
    rng = random.Random(seed)
    sampler = _Sampler(rng)
    names = list(CONSTRUCTIONS)
    weights = [CONSTRUCTIONS[k][0] for k in names]

    seen = {TUTORIAL_PAIR[0]}
    pool = _collect(total, lambda: _draw(sampler, names, weights), seen, "random", 20 * total + 1000)
    rng.shuffle(pool)
    train = [(*TUTORIAL_PAIR, "locative"), *pool[: n_train - 1]]
    valid = pool[n_train - 1: n_train - 1 + n_valid]
    test = pool[n_train - 1 + n_valid:]

    def unseen() -> tuple[Clause, str] | None:
        verb_base, noun = rng.choice(HELD_OUT)
        verb = next(v for v in VERBS if v.base == verb_base)
        sampler.force = (verb, _NOUN[noun])
        clause, _ = _draw(sampler, names, weights)
        sampler.force = None  # unspent when the construction drawn had no clause for this verb: draw again
        return (clause, "unseen_pair") if (verb_base, noun) in clause.relations() and clause.depth() <= 1 else None

    def nested() -> tuple[Clause, str] | None:
        sampler.nest = True
        if rng.random() < 0.7:
            clause = sampler.transitive(rel=rng.choice(("subject", "object")))
        else:
            clause = sampler.intransitive(loc=rng.random() < 0.5, rel=True)
        sampler.nest = False
        return (clause, "nested_relative") if clause.depth() == 2 else None

    n_unseen = n_compositional // 2
    compositional = _collect(n_unseen, unseen, seen, "held-out-pair", 50 * n_unseen + 1000)
    compositional += _collect(n_compositional - n_unseen, nested, seen, "nested", 50 * n_compositional + 1000)
    every = [p for part in (train, valid, test, compositional) for p in part]
    stats = {"lexicon_english_words": len(english_words()), "lexicon_chinese_characters": len(chinese_characters()),
             "held_out_pairs": len(HELD_OUT),
             "longest_source_words": max(len(en.split()) for en, _, _ in every),
             "longest_source_characters": max(len(en) for en, _, _ in every),
             "longest_target_characters": max(len(zh) for _, zh, _ in every)}
    return PairSplits(Pairs.of(train), Pairs.of(valid), Pairs.of(test), "sentences",
                      {"compositional": Pairs.of(compositional)}, stats)
