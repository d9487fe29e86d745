"""The one character tokenizer: every model that reads or writes characters (the classifier's ``"char"``
tokenizer, a translator's character source and its target, the character language models) holds a
:class:`CharTokenizer`, with one interface and one JSON layout.

A text is read in three steps, each a field of the tokenizer:

1. ``normalize``: ``"none"`` (the characters as given) or ``"nfkc"`` (Unicode NFKC: full-width ``１`` reads as
   ``1``, ``ﬁ`` as ``fi``, U+00A0 as a space);
2. ``spaces``: ``"keep"`` (a space is a character like any other), ``"drop"`` (whitespace is not read) or
   ``"mark"`` (whitespace at the ends is not read, each run of it inside is one ``▁`` token);
3. each remaining character is one token, its id its place in ``vocabulary``, ``[UNK]``'s id when the vocabulary
   lacks it; the ``start`` tokens go first and the ``end`` tokens last (``[CLS]`` for a classifier, ``[BOS]`` and
   ``[EOS]`` for a translator's target). With ``widths="fold"`` a character the vocabulary lacks whose width twin
   it holds reads as that twin: half-width ``5``, ``G``, ``%`` as full-width ``５``, ``Ｇ``, ``％`` and back (U+0021-
   U+007E and U+FF01-U+FF5E, the space and U+3000), so that a model trained on People's Daily, whose digits and
   Latin letters are all full-width, reads ``2024年`` as it reads ``２０２４年``. The language models' tokenizers
   fold (:func:`attnlab.data.lm_tokenizer`); the others keep widths apart, as the ``tokenizers`` library does.

Whitespace is the Unicode ``White_Space`` property (:data:`WHITESPACE`), the set the Rust ``tokenizers`` library
uses (Python's ``str.isspace`` also counts U+001C-U+001F).  Saved with :meth:`CharTokenizer.to_json`;
:meth:`CharTokenizer.from_json` also reads the layouts written before this class (the language model's
``{"type": "char-lm"}`` and the classifier's ``tokenizers`` JSON of kind ``"char"``), giving the same ids.
"""

from __future__ import annotations

import functools
import json
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from ..errors import InputError, ModelLoadError

__all__ = ["BOS", "CHARS_FORMAT", "CLS", "EOS", "PAD", "SPACE", "UNK", "UNKNOWN_CHAR", "WHITESPACE", "CharTokenizer"]

PAD, UNK, CLS, BOS, EOS = "[PAD]", "[UNK]", "[CLS]", "[BOS]", "[EOS]"
SPECIALS = (PAD, UNK, CLS, BOS, EOS)
SPACE = "▁"  # a run of whitespace when spaces="mark"
UNKNOWN_CHAR = "\ufffd"  # what decode writes for [UNK]
CHARS_FORMAT = "attnlab.chars"
WHITESPACE = frozenset("\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
                       "\u2028\u2029\u202f\u205f\u3000")  # Unicode White_Space
NORMALIZE = ("none", "nfkc")
SPACES = ("keep", "drop", "mark")
WIDTHS = ("keep", "fold")
# characters of canonical combining class 0 that still join the character before them under NFKC (Hangul vowels
# and final consonants); a segment of the text never starts with one
_JOINING = ((0x1160, 0x11FF), (0xD7B0, 0xD7FF))


@dataclass(frozen=True)
class CharTokenizer:
    """One token per character (see the module's docstring for the reading rule).

    ``vocabulary``: the token of each id, special tokens included by name (``"[UNK]"`` must be there);
    ``normalize``: ``"none"`` or ``"nfkc"``; ``spaces``: ``"keep"``, ``"drop"`` or ``"mark"``;
    ``start`` / ``end``: the special tokens put before and after every text; ``widths``: ``"keep"`` or ``"fold"``
    (an unknown character reads as its known width twin)."""

    vocabulary: tuple[str, ...]
    normalize: Literal["none", "nfkc"] = "none"
    spaces: Literal["keep", "drop", "mark"] = "keep"
    start: tuple[str, ...] = ()
    end: tuple[str, ...] = ()
    widths: Literal["keep", "fold"] = "keep"

    def __post_init__(self) -> None:
        object.__setattr__(self, "vocabulary", tuple(self.vocabulary))
        object.__setattr__(self, "start", tuple(self.start))
        object.__setattr__(self, "end", tuple(self.end))
        if self.normalize not in NORMALIZE or self.spaces not in SPACES:
            raise InputError(f"a character tokenizer normalizes with one of {NORMALIZE} and reads spaces by one of "
                             f"{SPACES}, got normalize={self.normalize!r}, spaces={self.spaces!r}; pick from those")
        if self.widths not in WIDTHS:
            raise InputError(f"a character tokenizer's widths are one of {WIDTHS}, got {self.widths!r}; pick one")
        if UNK not in self.vocabulary:
            raise InputError(f"the vocabulary of a character tokenizer holds {UNK} (what an unknown character "
                             f"reads as), got {len(self.vocabulary)} tokens without it; add it")
        missing = [t for t in (*self.start, *self.end) if t not in self.vocabulary]
        if missing:
            raise InputError(f"the start/end tokens {missing} are not in the vocabulary; add them to it")
        if len(set(self.vocabulary)) != len(self.vocabulary):
            twice = [t for t, n in Counter(self.vocabulary).items() if n > 1][:5]
            raise InputError(f"a token appears twice in the vocabulary ({twice}); give each token once")

    # --- the vocabulary ------------------------------------------------------------------------------------------
    @cached_property
    def index(self) -> dict[str, int]:
        """Token -> id."""
        return {t: i for i, t in enumerate(self.vocabulary)}

    @cached_property
    def _twins(self) -> dict[str, str]:
        """A character the vocabulary lacks -> its width twin that it holds (empty unless ``widths="fold"``)."""
        if self.widths == "keep":
            return {}
        out = {}
        for c in self.vocabulary:
            twin = _width_twin(c)
            if twin is not None and twin not in self.index:
                out[twin] = c
        return out

    def __len__(self) -> int:
        return len(self.vocabulary)

    @property
    def vocab_size(self) -> int:
        return len(self.vocabulary)

    def id_of(self, token: str) -> int | None:
        """The id of ``token`` (a special token's name or a character), None when the vocabulary lacks it."""
        return self.index.get(token)

    def token_of(self, i: int) -> str:
        """The token of id ``i`` (``[UNK]`` for an id outside the vocabulary)."""
        return self.vocabulary[i] if 0 <= i < len(self.vocabulary) else UNK

    @property
    def unk_id(self) -> int:
        return self.index[UNK]

    @property
    def pad_id(self) -> int | None:
        return self.index.get(PAD)

    @property
    def bos_id(self) -> int | None:
        return self.index.get(BOS)

    @property
    def eos_id(self) -> int | None:
        return self.index.get(EOS)

    @property
    def cls_id(self) -> int | None:
        return self.index.get(CLS)

    @cached_property
    def specials(self) -> frozenset[int]:
        """The ids of the special tokens (``[PAD]``, ``[UNK]``, ``[CLS]``, ``[BOS]``, ``[EOS]``) it holds."""
        return frozenset(i for t, i in self.index.items() if t in SPECIALS)

    # --- reading a text ------------------------------------------------------------------------------------------
    def pieces(self, text: str) -> list[tuple[str, int, int]]:
        """``(token, start, end)`` for each character token of ``text`` (no start/end specials): the character as
        read (``▁`` for a run of spaces with ``spaces="mark"``) and the range of ``text`` it came from."""
        chars = _normalized(text, self.normalize)
        if self._twins:
            twin = self._twins.get
            chars = [(twin(c, c), a, b) for c, a, b in chars]
        if self.spaces == "keep":
            return chars
        if self.spaces == "drop":
            return [p for p in chars if p[0] not in WHITESPACE]
        out: list[tuple[str, int, int]] = []
        lo, hi = 0, len(chars)
        while lo < hi and chars[lo][0] in WHITESPACE:
            lo += 1
        while hi > lo and chars[hi - 1][0] in WHITESPACE:
            hi -= 1
        in_run = False  # the last token is a run of whitespace (not a ▁ of the text itself)
        for c, a, b in chars[lo:hi]:
            if c not in WHITESPACE:
                out.append((c, a, b))
            elif in_run:
                out[-1] = (SPACE, out[-1][1], b)
            else:
                out.append((SPACE, a, b))
            in_run = c in WHITESPACE
        return out

    def encode(self, text: str) -> list[int]:
        """The ids of ``text``: the start tokens, one id per character token (``[UNK]``'s when unknown), the end
        tokens."""
        get, unk = self.index.get, self.unk_id
        if self.normalize == "none" and self.spaces == "keep":  # the fast path of a language model's corpus
            twin = self._twins.get
            body = [get(twin(c, c), unk) for c in text] if self._twins else [get(c, unk) for c in text]
        else:
            body = [get(c, unk) for c, _, _ in self.pieces(text)]
        return [*(self.index[t] for t in self.start), *body, *(self.index[t] for t in self.end)]

    def tokens(self, text: str) -> list[str]:
        """The label of each id of :meth:`encode` (``[UNK]`` for an unknown character, the specials by name)."""
        return [*self.start, *(c if c in self.index else UNK for c, _, _ in self.pieces(text)), *self.end]

    def spans(self, text: str) -> list[tuple[int, int]]:
        """``(start, end)`` in ``text`` of each id of :meth:`encode`: ``text[start:end]`` is what the token read;
        ``(0, 0)`` for a start token, ``(len(text), len(text))`` for an end token."""
        n = len(text)
        return [*((0, 0) for _ in self.start), *((a, b) for _, a, b in self.pieces(text)), *((n, n) for _ in self.end)]

    def unknown(self, text: str) -> list[str]:
        """The pieces of ``text`` read as ``[UNK]``, in order (with repeats)."""
        return [text[a:b] for c, a, b in self.pieces(text) if c not in self.index]

    def units(self, text: str) -> list[tuple[str, bool]]:
        """``(piece of text, unknown)`` for each character token of ``text`` (no special token): what
        :func:`attnlab.trained.unknown_warning` judges."""
        return [(text[a:b], c not in self.index) for c, a, b in self.pieces(text)]

    def decode(self, ids: Iterable[int], *, unknown: str = UNKNOWN_CHAR) -> str:
        """The characters of ``ids`` joined, up to the first ``[EOS]``: ``[UNK]`` written as ``unknown``, the other
        special tokens dropped, ``▁`` as a space when spaces are marked.  ``decode(encode(text))`` is ``text`` as
        read (normalized, spaces as the tokenizer reads them) with each unknown character replaced by ``unknown``."""
        out, eos, unk = [], self.eos_id, self.unk_id
        space = " " if self.spaces == "mark" else SPACE
        for i in ids:
            i = int(i)
            if i == eos:
                break
            if i == unk:
                out.append(unknown)
            elif i not in self.specials and 0 <= i < len(self.vocabulary):
                token = self.vocabulary[i]
                out.append(space if token == SPACE and self.spaces == "mark" else token)
        return "".join(out)

    def read_as(self, text: str, *, unknown: str = UNKNOWN_CHAR) -> str:
        """``text`` as the tokenizer reads it, each unknown character as ``unknown``: what ``decode(encode(text))``
        gives."""
        return "".join(unknown if c not in self.index else " " if c == SPACE and self.spaces == "mark" else c
                       for c, _, _ in self.pieces(text))

    # --- building and saving -------------------------------------------------------------------------------------
    @classmethod
    def build(cls, texts: Iterable[str], *, specials: Sequence[str] = (UNK,), min_count: int = 1,
              max_size: int | None = None, normalize: Literal["none", "nfkc"] = "none",
              spaces: Literal["keep", "drop", "mark"] = "keep", start: Sequence[str] = (),
              end: Sequence[str] = (), widths: Literal["keep", "fold"] = "keep") -> CharTokenizer:
        """The character tokens of ``texts`` (as read with ``normalize`` and ``spaces``) seen at least ``min_count``
        times, by falling count then code point, after ``specials``; at most ``max_size`` tokens in all."""
        if min_count < 1:
            raise InputError(f"min_count must be at least 1, got {min_count}")
        reader = cls(tuple(dict.fromkeys([*specials, UNK])), normalize, spaces)
        counts: Counter[str] = Counter()
        for text in texts:
            if normalize == "none" and spaces == "keep":
                counts.update(text)
            else:
                counts.update(c for c, _, _ in reader.pieces(text))
        kept = sorted((c for c, n in counts.items() if n >= min_count and c not in reader.index),
                      key=lambda c: (-counts[c], c))
        if max_size is not None:
            kept = kept[:max(0, max_size - len(reader.vocabulary))]
        return cls((*reader.vocabulary, *kept), normalize, spaces, tuple(start), tuple(end), widths)

    def to_dict(self) -> dict[str, Any]:
        fold = {"widths": "fold"} if self.widths == "fold" else {}  # absent: "keep", as every file before it
        return {"format": CHARS_FORMAT, "version": 1, "normalize": self.normalize, "spaces": self.spaces, **fold,
                "start": list(self.start), "end": list(self.end), "vocabulary": list(self.vocabulary)}

    def to_json(self) -> str:
        """The JSON text :meth:`from_json` reads."""
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> CharTokenizer:
        """A tokenizer saved by :meth:`to_json`, or by an earlier version: a language model's ``{"type": "char-lm",
        "chars": [...]}`` or a classifier's ``tokenizers`` JSON of kind ``"char"``.  Anything else is a
        :class:`ModelLoadError`."""
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, TypeError) as exc:
            raise ModelLoadError(f"the saved character tokenizer is not JSON ({exc}); the model file is corrupt: "
                                 f"train again") from None
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: Any) -> CharTokenizer:
        """:meth:`from_json` of parsed JSON."""
        if not isinstance(data, dict):
            raise ModelLoadError(f"a saved character tokenizer is a JSON object, got {type(data).__name__}; give the "
                                 f"tokenizer.json written with the model")
        try:
            if data.get("format") == CHARS_FORMAT:
                if data.get("version") != 1:
                    raise ModelLoadError(f"this attnlab reads character tokenizers of version 1, got "
                                         f"{data.get('version')!r}; update attnlab")
                return cls(tuple(data["vocabulary"]), data["normalize"], data["spaces"], tuple(data["start"]),
                           tuple(data["end"]), data.get("widths", "keep"))
            if data.get("type") == "char-lm":  # attnlab train lm before the one tokenizer
                chars = data["chars"]
                if not isinstance(chars, list) or chars[:1] != [UNK]:
                    raise ModelLoadError("the language model's character list does not start with [UNK]; the model "
                                         "file is corrupt: train again")
                return cls(tuple(chars))
            if "model" in data and "pre_tokenizer" in data:  # a `tokenizers` JSON: a classifier's "char" tokenizer
                return from_hf_dict(data, start=(CLS,))
        except (KeyError, TypeError, InputError) as exc:
            raise ModelLoadError(f"the saved character tokenizer cannot be read ({type(exc).__name__}: {exc}); the "
                                 f"model file is corrupt: train again") from None
        raise ModelLoadError(f"not a saved character tokenizer (format {data.get('format')!r}, expected "
                             f"{CHARS_FORMAT!r}); give the tokenizer.json written with the model")


def from_hf_dict(data: Mapping[str, Any], *, start: Sequence[str] = (), end: Sequence[str] = ()) -> CharTokenizer:
    """The :class:`CharTokenizer` that reads as the ``tokenizers`` JSON ``data`` did, for the three character set-ups
    attnlab wrote before the one tokenizer (the classifier's ``"char"``, a translator's character source, its target);
    a :class:`ModelLoadError` for any other (a sub-word or bigram tokenizer: not a character tokenizer)."""
    setup = _hf_setup(data)
    if setup is None:
        raise ModelLoadError("the saved tokenizer is not one of attnlab's character tokenizers (it splits text into "
                             "sub-words or bigrams); read it with attnlab.data.tokenizer_from_json")
    vocab = data["model"]["vocab"]
    ids = sorted(vocab.values())
    if ids != list(range(len(ids))):
        raise ModelLoadError(f"the saved tokenizer's ids are not 0 to {len(ids) - 1}; the model file is corrupt: "
                             f"train again")
    by_id = sorted(vocab, key=vocab.__getitem__)
    normalize, spaces = setup
    return CharTokenizer(tuple(by_id), normalize, spaces, tuple(start), tuple(end))


def _hf_setup(data: Mapping[str, Any]) -> tuple[Literal["none", "nfkc"], Literal["keep", "drop", "mark"]] | None:
    """``(normalize, spaces)`` of a ``tokenizers`` JSON that attnlab wrote for characters, None for another."""
    model = data.get("model") or {}
    if model.get("type") != "WordLevel" or model.get("unk_token") != UNK:
        return None
    if any(len(t) == 3 and t[1] == "|" for t in model.get("vocab", {})):
        return None  # char_bigram: characters and their pairs
    norm, pre = data.get("normalizer"), data.get("pre_tokenizer") or {}
    split_any = {"type": "Split", "pattern": {"Regex": "."}, "behavior": "Isolated", "invert": False}
    split_visible = {"type": "Split", "pattern": {"Regex": "\\S"}, "behavior": "Isolated", "invert": False}
    if norm is None and pre == split_any:
        return "none", "keep"  # a translator's target
    marked = {"type": "Sequence", "normalizers": [
        {"type": "NFKC"}, {"type": "Strip", "strip_left": True, "strip_right": True},
        {"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": SPACE}]}
    if norm == marked and pre == split_any:
        return "nfkc", "mark"  # a translator's character source
    dropped = {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, split_visible]}
    if norm == {"type": "NFKC"} and pre == dropped:
        return "nfkc", "drop"  # the classifier's "char"
    return None


def _width_twin(c: str) -> str | None:
    """The half-width ASCII character of a full-width form and back (U+0021-U+007E and U+FF01-U+FF5E, the space
    and U+3000); None for any other character."""
    if c == " ":
        return "\u3000"
    if c == "\u3000":
        return " "
    if len(c) != 1:  # a special token's name
        return None
    o = ord(c)
    if 0x21 <= o <= 0x7E:
        return chr(o + 0xFEE0)
    if 0xFF01 <= o <= 0xFF5E:
        return chr(o - 0xFEE0)
    return None


def _normalized(text: str, normalize: str) -> list[tuple[str, int, int]]:
    """``(character, start, end)`` of each character of ``text`` after ``normalize``, with the range of ``text`` it
    comes from (a character NFKC makes of several, or several it makes of one, share that range).

    NFKC is the ``tokenizers`` library's (its Unicode tables, which the saved models were trained with; Python's
    ``unicodedata`` may know newer characters, such as U+32FF ``㋿``, that it leaves as they are)."""
    if normalize == "none" or text.isascii():  # NFKC leaves ASCII as it is
        return [(c, i, i + 1) for i, c in enumerate(text)]
    whole = _nfkc()(text)
    if whole == text:
        return [(c, i, i + 1) for i, c in enumerate(text)]
    starts = [i for i, c in enumerate(text) if i == 0 or not _joins(c)]
    out: list[tuple[str, int, int]] = []
    for a, b in zip(starts, [*starts[1:], len(text)], strict=True):
        out += [(c, a, b) for c in _nfkc_piece(text[a:b])]
    if "".join(c for c, _, _ in out) != whole:  # a composition across segments: the whole text is one range
        return [(c, 0, len(text)) for c in whole]
    return out


@functools.cache
def _nfkc() -> Callable[[str], str]:
    from tokenizers.normalizers import NFKC

    return NFKC().normalize_str


@functools.lru_cache(maxsize=1 << 16)
def _nfkc_piece(piece: str) -> str:
    """NFKC of one segment (mostly one character): read once per character, not once per text."""
    return piece if piece.isascii() else _nfkc()(piece)


@functools.lru_cache(maxsize=1 << 16)
def _joins(c: str) -> bool:
    """Whether ``c`` may join the character before it under NFKC."""
    code = ord(c)
    return unicodedata.combining(c) != 0 or any(lo <= code <= hi for lo, hi in _JOINING)
