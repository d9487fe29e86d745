"""Tokenisers from the ``tokenizers`` library, trained on the training split and saved with the model.

``"char"``: one token per character (whitespace dropped), for Chinese; ``"char_bigram"`` adds each pair of
neighbouring characters as a token after the characters; ``"wordpiece"`` / ``"bpe"``: sub-words learned
from the training texts, for English (lower-cased).  Every tokenizer puts ``[CLS]`` first; ids 0, 1, 2 are
``[PAD]``, ``[UNK]``, ``[CLS]``.
"""

from __future__ import annotations

import contextlib
import itertools
import weakref
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InputError, ModelLoadError

__all__ = ["CLS", "PAD", "TOKENIZERS", "UNK", "Encoded", "build_tokenizer", "encode", "tokenizer_from_json"]

PAD, UNK, CLS = "[PAD]", "[UNK]", "[CLS]"
SPECIAL = (PAD, UNK, CLS)
TOKENIZERS = ("char", "char_bigram", "wordpiece", "bpe")


def build_tokenizer(kind: str, texts: Sequence[str], *, vocab_size: int = 8000, min_frequency: int = 2) -> Any:
    """A ``tokenizers.Tokenizer`` of ``kind`` trained on ``texts`` (the training split)."""
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
    if kind == "char_bigram":
        return _with_bigrams(tok, texts, vocab_size, min_frequency)
    return tok


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


# A tokenizer's vocabulary, read once per tokenizer object: `get_vocab()` copies the whole table (about 10 ms for the
# bundled classifier's), which `encode` needs on every call (`attnlab serve` encodes text after text). attnlab's
# tokenizers are built whole (trained or read from JSON) and never changed afterwards.
_VOCABS: weakref.WeakKeyDictionary[Any, tuple[dict[str, int], bool]] = weakref.WeakKeyDictionary()


def _vocab(tok: Any) -> tuple[dict[str, int], bool]:
    """The vocabulary of ``tok`` and whether it holds ``a|b`` bigram tokens (character tokens are one character
    long)."""
    try:
        return _VOCABS[tok]
    except (KeyError, TypeError):
        vocab = tok.get_vocab()
        found = vocab, any(len(t) == 3 and t[1] == "|" for t in vocab)
        with contextlib.suppress(TypeError):  # a tokenizer that cannot be weakly referenced is read every time
            _VOCABS[tok] = found
        return found


@dataclass(frozen=True)
class Encoded:
    """Token ids per text, and how many texts were cut to ``max_length``."""

    ids: list[list[int]]
    truncated: int


def encode(tok: Any, texts: Sequence[str], max_length: int) -> Encoded:
    """Ids of ``texts`` (``[CLS]`` first), each cut to at most ``max_length`` tokens."""
    vocab, bigrams = _vocab(tok)
    unk = tok.token_to_id(UNK)
    out, cut = [], 0
    for enc in tok.encode_batch(list(texts)):
        ids = list(enc.ids)
        if bigrams:  # characters first, then their bigrams; the length limit applies to the whole
            chars = [t for t in enc.tokens if t != CLS]
            ids += [vocab.get(f"{a}|{b}", unk) for a, b in itertools.pairwise(chars)]
        if len(ids) > max_length:
            ids, cut = ids[:max_length], cut + 1
        out.append(ids)
    return Encoded(out, cut)


def tokenizer_from_json(text: str) -> Any:
    """The tokenizer saved as ``tokenizer.to_str()``."""
    from tokenizers import Tokenizer

    try:
        return Tokenizer.from_str(text)
    except Exception as exc:
        raise ModelLoadError(
            f"the saved tokenizer cannot be read ({exc}); the model file is corrupt: train again") from None
