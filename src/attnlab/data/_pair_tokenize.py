"""The two vocabularies of a translation model, trained on the training pairs and saved with the model as one JSON
text (no pickle).  Every character side is the one :class:`attnlab.data.CharTokenizer`; a sub-word source is a
``tokenizers``-library tokenizer.

Target side: one token per character (a :class:`CharTokenizer` reading the characters as given), so
``decode_target(encode_target([t])[0]) == t`` for every text made of characters seen in training (the model is
judged on the exact string).  Source side, by ``source=``: ``"char"`` (a :class:`CharTokenizer`, one token per
character, for dates and for any script; NFKC, so U+202F and U+00A0 read as spaces and full-width digits as digits,
and each run of spaces becomes one ``"▁"`` token), or, for English, ``"word"`` (words and punctuation), ``"bpe"``
or ``"wordpiece"`` (sub-words learned from the training sources), all three NFKC and lower-cased.  Ids 0-3 are
``[PAD]``, ``[UNK]``, ``[BOS]``, ``[EOS]`` on both sides; a source gets ``[EOS]`` appended, a target
``[BOS] ... [EOS]``.

Labels and offsets line up with the ids: ``source_tokens(text)`` and ``source_spans(text)`` have one entry per
id of ``encode_source([text])[0]``, the final ``[EOS]`` included (its span is ``(len(text), len(text))``), so
they label the columns of a learned alignment; a span is the token's character range in the text as given.

Saved as ``{"format": "attnlab.pair_tokenizer", "version": 2, "source_kind", "source", "target"}``, each character
side in :class:`CharTokenizer`'s layout; version 1 (both sides as ``tokenizers`` JSON, what attnlab wrote before the
one character tokenizer) is still read, with the same ids.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from ..errors import InputError, ModelLoadError, TooLongError
from ._chars import CharTokenizer, from_hf_dict
from ._pairs import Pairs

__all__ = ["BOS_ID", "EOS_ID", "PAD_ID", "SOURCE_TOKENIZERS", "UNK_ID", "PairTokenizer", "build_pair_tokenizer"]

PAD, UNK, BOS, EOS = "[PAD]", "[UNK]", "[BOS]", "[EOS]"
SPECIAL = (PAD, UNK, BOS, EOS)
PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3
SOURCE_TOKENIZERS = ("char", "bpe", "wordpiece", "word")
SPACE = "▁"  # a run of whitespace, as a source token and as a label
FORMAT = "attnlab.pair_tokenizer"


def _char_tokenizer(*, normalise: bool) -> Any:
    """One token per character; ``normalise``: NFKC, ends stripped, each whitespace run one ``▁`` (sources)."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

    tok = Tokenizer(models.WordLevel(unk_token=UNK))
    if normalise:
        tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Strip(),
                                               normalizers.Replace(Regex(r"\s+"), SPACE)])
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"."), behavior="isolated")
    return tok


def _source_tokenizer(kind: str, texts: Sequence[str], vocab_size: int, min_frequency: int) -> Any:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    trainer: Any
    if kind == "char":
        tok = _char_tokenizer(normalise=True)
        trainer = trainers.WordLevelTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                            special_tokens=list(SPECIAL), show_progress=False)
    else:
        model: Any = {"word": models.WordLevel, "bpe": models.BPE, "wordpiece": models.WordPiece}[kind]
        tok = Tokenizer(model(unk_token=UNK))
        tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer() if kind == "wordpiece" else pre_tokenizers.Whitespace()
        trainer_type: Any = {"word": trainers.WordLevelTrainer, "bpe": trainers.BpeTrainer,
                             "wordpiece": trainers.WordPieceTrainer}[kind]
        trainer = trainer_type(vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=list(SPECIAL),
                               show_progress=False)
    tok.train_from_iterator(texts, trainer)
    return tok


def _target_tokenizer(texts: Sequence[str]) -> Any:
    """Every character of the training targets (no cap, no minimum count: the model must be able to write each)."""
    from tokenizers import trainers

    tok = _char_tokenizer(normalise=False)
    n_chars = len(set("".join(texts)))
    tok.train_from_iterator(texts, trainers.WordLevelTrainer(vocab_size=n_chars + len(SPECIAL), min_frequency=1,
                                                             special_tokens=list(SPECIAL), show_progress=False))
    return tok


def build_pair_tokenizer(pairs: Pairs, *, source: str = "char", vocab_size: int = 8000,
                         min_frequency: int = 1) -> PairTokenizer:
    """Source and target tokenizers trained on ``pairs`` (the training split).

    ``source``: one of :data:`SOURCE_TOKENIZERS`; ``vocab_size`` and ``min_frequency`` bound the source
    vocabulary (the target keeps every character it saw)."""
    if source not in SOURCE_TOKENIZERS:
        raise InputError(f"unknown source tokenizer {source!r}; choose one of {', '.join(SOURCE_TOKENIZERS)}")
    if len(pairs) == 0:
        raise InputError("no training pairs to build a tokenizer from; give a task with a training split")
    if vocab_size < len(SPECIAL) + 1 or min_frequency < 1:
        raise InputError(f"vocab_size must be > {len(SPECIAL)} and min_frequency >= 1, got {vocab_size} and "
                         f"{min_frequency}")
    return PairTokenizer(_source_tokenizer(source, pairs.source, vocab_size, min_frequency),
                         _target_tokenizer(pairs.target), source)


def _check_texts(texts: Sequence[str], max_length: int, least: int) -> None:
    if isinstance(texts, str):
        raise InputError(f"give a list of texts, got one string ({texts[:30]!r}); wrap it: [text]")
    if max_length < least:
        raise InputError(f"max_length must be at least {least} (room for the special tokens), got {max_length}")


def _as_char(tok: Any, end: tuple[str, ...], start: tuple[str, ...] = ()) -> CharTokenizer:
    """A character side as the one :class:`CharTokenizer` (a ``tokenizers`` one converted: the same ids)."""
    return tok if isinstance(tok, CharTokenizer) else from_hf_dict(json.loads(tok.to_str()), start=start, end=end)


class PairTokenizer:
    """A source and a target tokenizer with shared special ids (0 ``[PAD]``, 1 ``[UNK]``, 2 ``[BOS]``,
    3 ``[EOS]``); saved as JSON with :meth:`to_json`, restored with :meth:`from_json`.  The target, and a
    ``"char"`` source, are :class:`CharTokenizer` s; a sub-word source a ``tokenizers`` tokenizer."""

    def __init__(self, source: Any, target: Any, source_kind: str) -> None:
        target = _as_char(target, (EOS,), (BOS,))
        if source_kind == "char":
            source = _as_char(source, (EOS,))
        for side, tok in (("source", source), ("target", target)):
            ids = [tok.id_of(t) if isinstance(tok, CharTokenizer) else tok.token_to_id(t) for t in SPECIAL]
            if ids != [PAD_ID, UNK_ID, BOS_ID, EOS_ID]:
                raise ModelLoadError(f"the {side} tokenizer has special ids {ids} for {', '.join(SPECIAL)}, "
                                     f"expected [0, 1, 2, 3]; build it with build_pair_tokenizer")
        self.source, self.target, self.source_kind = source, target, source_kind

    def __repr__(self) -> str:
        return (f"PairTokenizer(source={self.source_kind!r}, source_vocab_size={self.source_vocab_size}, "
                f"target_vocab_size={self.target_vocab_size})")

    @property
    def _chars(self) -> bool:
        return isinstance(self.source, CharTokenizer)

    @property
    def source_vocab_size(self) -> int:
        return len(self.source) if self._chars else int(self.source.get_vocab_size())

    @property
    def target_vocab_size(self) -> int:
        return len(self.target)

    # --- ids ---------------------------------------------------------------------------------------

    def encode_source(self, texts: Sequence[str], max_length: int, *, truncate: bool = False) -> list[list[int]]:
        """Ids of each source text with ``[EOS]`` appended (no ``[BOS]``).

        A text of more than ``max_length`` ids (EOS included) raises :class:`TooLongError` naming both lengths,
        or with ``truncate=True`` is cut to ``max_length - 1`` tokens and ``[EOS]``."""
        _check_texts(texts, max_length, 1)
        rows = ([self.source.encode(t) for t in texts] if self._chars
                else [[*enc.ids, EOS_ID] for enc in self.source.encode_batch(list(texts))])
        return [self._fit("source", i, texts[i], ids, max_length, truncate) for i, ids in enumerate(rows)]

    def encode_target(self, texts: Sequence[str], max_length: int, *, truncate: bool = False) -> list[list[int]]:
        """``[BOS]``, the ids of each character, ``[EOS]`` (at most ``max_length`` in all; see
        :meth:`encode_source` for what happens to a longer text)."""
        _check_texts(texts, max_length, 2)
        return [self._fit("target", i, t, self.target.encode(t), max_length, truncate) for i, t in enumerate(texts)]

    @staticmethod
    def _fit(side: str, i: int, text: str, ids: list[int], max_length: int, truncate: bool) -> list[int]:
        if len(ids) > max_length:
            if not truncate:
                raise _too_long(side, i, text, len(ids), max_length)
            ids = [*ids[:max_length - 1], EOS_ID]
        return ids

    def decode_target(self, ids: Iterable[int]) -> str:
        """The characters of ``ids`` joined, up to the first ``[EOS]``; ``[PAD]``, ``[UNK]``, ``[BOS]`` dropped."""
        return str(self.target.decode(ids, unknown=""))

    # --- labels and offsets -------------------------------------------------------------------------

    def source_tokens(self, text: str) -> list[str]:
        """The label of each source id of ``text``, ``[EOS]`` last (a run of spaces is ``▁``)."""
        return self.source.tokens(text) if self._chars else [*self.source.encode(text).tokens, EOS]

    def target_tokens(self, ids: Iterable[int]) -> list[str]:
        """The label of each target id (every id, specials included; a space is shown as ``▁``)."""
        vocab = self.target.vocabulary
        return [(vocab[int(i)] if 0 <= int(i) < len(vocab) else UNK).replace(" ", SPACE) for i in ids]

    def source_spans(self, text: str) -> list[tuple[int, int]]:
        """``(start, end)`` character offsets in ``text`` of each source id, ``(len(text), len(text))`` for the
        final ``[EOS]``: ``text[start:end]`` is what the token read."""
        if self._chars:
            return list(self.source.spans(text))
        enc = self.source.encode(text)
        spans = [(int(a), int(b)) for a, b in enc.offsets]
        return [*spans, (len(text), len(text))]

    def source_units(self, text: str) -> list[tuple[str, bool]]:
        """``(piece of text, unknown)`` for each source token of ``text`` (no ``[EOS]``): what
        :func:`attnlab.trained.unknown_warning` judges."""
        if self._chars:
            return list(self.source.units(text))
        enc = self.source.encode(text)
        return [(text[a:b], i == UNK_ID) for i, (a, b) in zip(enc.ids, enc.offsets, strict=True)]

    def unknown_source(self, text: str) -> list[str]:
        """The pieces of ``text`` the source vocabulary does not know (each read as ``[UNK]``), in order."""
        if self._chars:
            return list(self.source.unknown(text))
        enc = self.source.encode(text)
        return [text[a:b] for i, (a, b) in zip(enc.ids, enc.offsets, strict=True) if i == UNK_ID]

    # --- saving ---------------------------------------------------------------------------------------

    def to_json(self) -> str:
        """Both tokenizers as one JSON text (what :meth:`from_json` reads)."""
        source = self.source.to_dict() if self._chars else json.loads(self.source.to_str())
        return json.dumps({"format": FORMAT, "version": 2, "source_kind": self.source_kind, "source": source,
                           "target": self.target.to_dict()}, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> PairTokenizer:
        """The tokenizer saved by :meth:`to_json` (version 2) or by an earlier attnlab (version 1, both sides as
        ``tokenizers`` JSON); anything else is a :class:`ModelLoadError`."""
        from tokenizers import Tokenizer

        try:
            data = json.loads(text)
        except (json.JSONDecodeError, TypeError) as exc:
            raise ModelLoadError(f"the saved pair tokenizer is not JSON ({exc}); the model file is corrupt: "
                                 f"train again") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") not in (1, 2):
            found = data.get("format") if isinstance(data, dict) else type(data).__name__
            raise ModelLoadError(f"not a saved pair tokenizer (format {found!r}, expected {FORMAT!r} version 1 or "
                                 f"2); give the tokenizer.json written with the model")
        kind = data.get("source_kind")
        if kind not in SOURCE_TOKENIZERS:
            raise ModelLoadError(f"the saved pair tokenizer has source kind {kind!r}, expected one of "
                                 f"{', '.join(SOURCE_TOKENIZERS)}; the model file is corrupt: train again")
        source: Any
        target: Any
        try:
            if data["version"] == 1:
                source, target = (Tokenizer.from_str(json.dumps(data[side])) for side in ("source", "target"))
            else:
                source = (CharTokenizer.from_dict(data["source"]) if kind == "char"
                          else Tokenizer.from_str(json.dumps(data["source"])))
                target = CharTokenizer.from_dict(data["target"])
        except ModelLoadError:
            raise
        except Exception as exc:
            raise ModelLoadError(f"the saved pair tokenizer cannot be read ({exc}); the model file is corrupt: "
                                 f"train again") from None
        return cls(source, target, kind)


def _too_long(side: str, index: int, text: str, n: int, limit: int) -> TooLongError:
    preview = text if len(text) <= 40 else text[:37] + "..."
    return TooLongError(f"{side} text {index} ({preview!r}) is {n} tokens with its special tokens, more than "
                        f"max_length {limit}; shorten it or raise max_length", n, limit)
