"""The classifier's tokenizers, trained on the training split and saved with the model.

``"char"``: one token per character (NFKC, whitespace dropped), for Chinese: the one
:class:`~attnlab.data.CharTokenizer`; ``"char_bigram"`` adds each pair of neighbouring characters as a token after
the characters; ``"wordpiece"`` / ``"bpe"``: sub-words learned from the training texts, for English (lower-cased).
The last three are ``tokenizers``-library tokenizers behind :class:`SubwordTokenizer`, which answers the
character tokenizer's interface (``encode``, ``tokens``, ``spans``, ``unknown``, ``token_of``, ``id_of``,
``vocabulary``, ``to_json``).  Every tokenizer puts ``[CLS]`` first; ids 0, 1, 2 are ``[PAD]``, ``[UNK]``,
``[CLS]``.  The vocabularies are trained by the ``tokenizers`` library's trainers (a ``"char"`` one then read as a
:class:`CharTokenizer`, the same ids).
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..errors import InputError, ModelLoadError
from ._chars import CharTokenizer, from_hf_dict

__all__ = ["CLS", "PAD", "TOKENIZERS", "UNK", "Encoded", "SubwordTokenizer", "Tokenizer", "build_tokenizer", "encode",
           "tokenizer_from_json"]

PAD, UNK, CLS = "[PAD]", "[UNK]", "[CLS]"
SPECIAL = (PAD, UNK, CLS)
TOKENIZERS = ("char", "char_bigram", "wordpiece", "bpe")


def build_tokenizer(kind: str, texts: Sequence[str], *, vocab_size: int = 8000,
                    min_frequency: int = 2) -> Tokenizer:
    """A tokenizer of ``kind`` trained on ``texts`` (the training split): a :class:`CharTokenizer` for ``"char"``,
    a :class:`SubwordTokenizer` for the others."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    if kind not in TOKENIZERS:
        raise InputError(f"unknown tokenizer {kind!r}; choose one of {', '.join(TOKENIZERS)}")
    if not texts:
        raise InputError("no training texts to build a tokenizer from; give a dataset with a training split")
    trainer: Any
    if kind in ("char", "char_bigram"):
        tok = Tokenizer(models.WordLevel(unk_token=UNK))
        tok.normalizer = normalizers.NFKC()
        split = pre_tokenizers.Split(Regex(r"\S"), behavior="isolated")  # every visible character
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), split])
        trainer = trainers.WordLevelTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                            special_tokens=list(SPECIAL))
    elif kind == "wordpiece":
        tok = Tokenizer(models.WordPiece(unk_token=UNK))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece()
        trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                            special_tokens=list(SPECIAL))
    else:
        tok = Tokenizer(models.BPE(unk_token=UNK))
        tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                      special_tokens=list(SPECIAL))
    tok.train_from_iterator(texts, trainer)
    tok.post_processor = processors.TemplateProcessing(single=f"{CLS} $A", special_tokens=[(CLS, 2)])
    if kind == "char":
        return from_hf_dict(json.loads(tok.to_str()), start=(CLS,))
    if kind == "char_bigram":
        return SubwordTokenizer(_with_bigrams(tok, texts, vocab_size, min_frequency))
    return SubwordTokenizer(tok)


def _with_bigrams(tok: Any, texts: Sequence[str], vocab_size: int, min_frequency: int) -> Any:
    """The character vocabulary plus the most frequent character bigrams (as ``a|b`` tokens)."""
    counts: Counter[str] = Counter()
    for text in texts:
        chars = "".join(text.split())
        counts.update(f"{a}|{b}" for a, b in itertools.pairwise(chars))
    vocab = dict(tok.get_vocab())
    for bigram, n in counts.most_common():
        if len(vocab) >= vocab_size or n < min_frequency:
            break
        vocab.setdefault(bigram, len(vocab))
    from tokenizers import Tokenizer, models

    out = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    out.normalizer, out.pre_tokenizer, out.post_processor = tok.normalizer, tok.pre_tokenizer, tok.post_processor
    return out


@dataclass(frozen=True)
class SubwordTokenizer:
    """A ``tokenizers``-library tokenizer (sub-words, or characters and their bigrams) behind the interface of
    :class:`CharTokenizer`: ids with ``[CLS]`` first, their labels and character ranges, the unknown pieces, the
    vocabulary, JSON (the library's own layout)."""

    hf: Any

    @cached_property
    def index(self) -> dict[str, int]:
        """Token -> id (read once: ``get_vocab()`` copies the whole table, about 10 ms for the bundled
        classifier's, and ``attnlab serve`` encodes text after text)."""
        return dict(self.hf.get_vocab())

    @cached_property
    def vocabulary(self) -> tuple[str, ...]:
        """The token of each id."""
        return tuple(sorted(self.index, key=self.index.__getitem__))

    @cached_property
    def bigrams(self) -> bool:
        """Whether it holds ``a|b`` bigram tokens (character tokens are one character long)."""
        return any(len(t) == 3 and t[1] == "|" for t in self.index)

    def __len__(self) -> int:
        return len(self.index)

    @property
    def vocab_size(self) -> int:
        return len(self.index)

    @property
    def unk_id(self) -> int:
        return self.index[UNK]

    def id_of(self, token: str) -> int | None:
        return self.index.get(token)

    def token_of(self, i: int) -> str:
        """The token of id ``i`` (``[UNK]`` for an id outside the vocabulary)."""
        return self.hf.id_to_token(int(i)) or UNK

    def _read(self, text: str) -> tuple[list[int], list[str], list[tuple[int, int]]]:
        enc = self.hf.encode(text)
        ids, tokens, spans = list(enc.ids), list(enc.tokens), [(int(a), int(b)) for a, b in enc.offsets]
        if self.bigrams:  # characters first, then their bigrams
            chars = [(t, s) for t, s in zip(tokens, spans, strict=True) if t != CLS]
            for (a, (s, _)), (b, (_, e)) in itertools.pairwise(chars):
                ids.append(self.index.get(f"{a}|{b}", self.unk_id))
                tokens.append(f"{a}|{b}")
                spans.append((s, e))
        return ids, tokens, spans

    def encode(self, text: str) -> list[int]:
        return self._read(text)[0]

    def tokens(self, text: str) -> list[str]:
        return [t if t in self.index else UNK for t in self._read(text)[1]]

    def spans(self, text: str) -> list[tuple[int, int]]:
        return self._read(text)[2]

    def unknown(self, text: str) -> list[str]:
        """The pieces of ``text`` read as ``[UNK]`` (a bigram of known characters is not one), in order."""
        enc = self.hf.encode(text)
        return [text[a:b] for t, (a, b) in zip(enc.tokens, enc.offsets, strict=True) if t == UNK]

    def units(self, text: str) -> list[tuple[str, bool]]:
        """``(piece of text, unknown)`` for each token of ``text`` (no ``[CLS]``, no bigram)."""
        enc = self.hf.encode(text)
        return [(text[a:b], t == UNK) for t, (a, b) in zip(enc.tokens, enc.offsets, strict=True) if t != CLS]

    def to_json(self) -> str:
        return str(self.hf.to_str())


Tokenizer = CharTokenizer | SubwordTokenizer  # what a classifier holds; both answer one interface


@dataclass(frozen=True)
class Encoded:
    """Token ids per text, and how many texts were cut to ``max_length``."""

    ids: list[list[int]]
    truncated: int


def encode(tok: Tokenizer, texts: Sequence[str], max_length: int) -> Encoded:
    """Ids of ``texts`` (``[CLS]`` first), each cut to at most ``max_length`` tokens."""
    out, cut = [], 0
    for text in texts:
        ids = tok.encode(text)
        if len(ids) > max_length:
            ids, cut = ids[:max_length], cut + 1
        out.append(ids)
    return Encoded(out, cut)


def tokenizer_from_json(text: str) -> Tokenizer:
    """The tokenizer saved with a classifier: a :class:`CharTokenizer` (its own layout, or the ``tokenizers`` JSON
    of a ``"char"`` tokenizer written before it), else a :class:`SubwordTokenizer`."""
    from tokenizers import Tokenizer as HFTokenizer

    try:
        data = json.loads(text)
        if isinstance(data, dict) and (data.get("format") == "attnlab.chars" or _is_char(data)):
            return CharTokenizer.from_dict(data)
        return SubwordTokenizer(HFTokenizer.from_str(text))
    except ModelLoadError:
        raise
    except Exception as exc:
        raise ModelLoadError(
            f"the saved tokenizer cannot be read ({exc}); the model file is corrupt: train again") from None


def _is_char(data: dict[str, Any]) -> bool:
    try:
        from_hf_dict(data)
    except (ModelLoadError, KeyError, TypeError, AttributeError):
        return False
    return True
