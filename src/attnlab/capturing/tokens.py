"""Tokens on a trace: attach them, merge sub-word pieces into words, make them readable.

Three tokeniser styles mark word boundaries differently:

* ``"wordpiece"`` (BERT): a piece that continues a word starts with ``##`` (``un ##believ ##able``);
* ``"bytelevel"`` (GPT-2, RoBERTa, BART): a piece that starts a word after a space starts with ``Ġ``,
  and pieces are bytes written as printable characters (``Ġun believ able``);
* ``"sentencepiece"`` (T5, Marian, ...): a piece that starts a word starts with ``▁`` (``▁un bel iev able``).

Merging rule (``merge_words``): for each record, the weight from query word ``a`` to key word ``b`` is
**the mean over the query pieces of a of the sum over the key pieces of b** of the piece weights.
Summing over keys keeps the attention a distribution (each query row still sums to one, or to zero for
a row with no allowed key); averaging over queries gives a word the typical distribution of its pieces.
Special tokens (``[CLS]``, ``<s>``, ...) are never merged with their neighbours.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

import torch
from torch import Tensor

from ..errors import InputError
from ..trace import AttentionRecord, AttentionTrace

__all__ = ["STYLES", "WORD_START", "attach_tokens", "detect_style", "merge_words", "readable_tokens", "word_groups"]

STYLES = ("wordpiece", "bytelevel", "sentencepiece")
_SPECIAL = re.compile(r"^(\[[A-Za-z_]+\]|<[^<>\s]+>)$")  # [CLS], [SEP], <s>, </s>, <pad>, <|endoftext|>


def attach_tokens(
    trace: AttentionTrace, tokens: Sequence[str], target_tokens: Sequence[str] | None = None
) -> AttentionTrace:
    """A copy of ``trace`` whose records carry ``query_tokens`` and ``key_tokens``; ``trace`` is unchanged,
    so write ``trace = attach_tokens(trace, tokens)``.

    Args:
        tokens: the tokens of the input (the encoder's input in an encoder-decoder model; for a
            decoder-only generation, the final generated sequence).
        target_tokens: the decoder's tokens in an encoder-decoder model (for a generation, the final
            decoder sequence); None for encoders and decoder-only models.

    ``self`` records get ``tokens``; ``causal`` records get ``target_tokens`` (or ``tokens`` when
    there are none); ``cross`` records attend from ``target_tokens`` to ``tokens``.  A record with fewer
    queries than keys (decoding with a cache) gets the last tokens as queries (bottom-right aligned).
    The decoding steps of a generation each get their positions of the final sequence; its last token,
    which the model produced but never read, has no row.  The weights are shared with ``trace``, not copied.
    See :meth:`attnlab.AttentionTrace.with_tokens`.
    """
    return trace.with_tokens(tokens, target_tokens)


def detect_style(tokens: Iterable[str]) -> str | None:
    """The tokeniser style whose word mark (``##``, ``Ġ``, ``▁``) starts the most of ``tokens`` (a
    vocabulary or a text's tokens), or None when none does."""
    counts = dict.fromkeys(STYLES, 0)
    for t in tokens:
        for style, mark in zip(STYLES, ("##", "Ġ", "▁"), strict=True):
            counts[style] += t.startswith(mark)
    best = max(STYLES, key=counts.__getitem__)
    return best if counts[best] else None


def _is_special(token: str, special: frozenset[str] | None) -> bool:
    return token in special if special is not None else bool(_SPECIAL.match(token))


def word_groups(tokens: Sequence[str], style: str | None, special: Iterable[str] | None = None) -> list[list[int]]:
    """Indices of the pieces of each word, in order.  ``special``: the tokeniser's special tokens
    (default: tokens written like ``[CLS]`` or ``<s>``), each kept as a word of its own."""
    spec = frozenset(special) if special is not None else None
    groups: list[list[int]] = []
    prev_special = True
    for i, tok in enumerate(tokens):
        is_special = _is_special(tok, spec)
        if style == "wordpiece":
            continues = tok.startswith("##") and len(tok) > 2
        elif style == "bytelevel":
            continues = not tok.startswith(("Ġ", "Ċ", "ĉ"))  # space, newline, tab start a word
        elif style == "sentencepiece":
            continues = not tok.startswith("▁")
        else:
            continues = False
        if groups and continues and not is_special and not prev_special:
            groups[-1].append(i)
        else:
            groups.append([i])
        prev_special = is_special
    return groups


def _join(pieces: Sequence[str], style: str | None) -> str:
    if style == "wordpiece":
        return pieces[0] + "".join(p[2:] if p.startswith("##") else p for p in pieces[1:])
    return "".join(pieces)


def _group_matrix(groups: list[list[int]], n: int, mean: bool, like: Tensor) -> Tensor:
    """``(n, words)`` one-hot map of pieces to words; each column divided by its size when ``mean``."""
    m = torch.zeros(n, len(groups), dtype=like.dtype, device=like.device)
    for g, idx in enumerate(groups):
        m[idx, g] = 1.0 / len(idx) if mean else 1.0
    return m


def merge_words(
    trace: AttentionTrace, style: str | None = None, special: Iterable[str] | None = None
) -> AttentionTrace:
    """A copy of ``trace`` with one row and one column per word instead of per sub-word piece.

    ``style`` is one of :data:`STYLES` (default: detected from the tokens, see :func:`detect_style`).
    Weights: **sum over the key pieces of a word, mean over its query pieces**, so every row still
    sums to one.  A generation's decoding steps are assembled first (one record per layer; the merged
    records carry no ``step``, ``q`` or ``k``).  The tokens must still carry the tokeniser's marks
    (``##``, ``Ġ``, ``▁``): merge before :func:`readable_tokens`; ``attnlab.trace_text(..., merge="words")``
    does both in order.
    """
    if style is not None and style not in STYLES:
        raise InputError(f"style must be one of {STYLES} or None, got {style!r}")
    spec = list(special) if special is not None else None
    records = []
    for r in trace.assembled:  # a word of a generation spans several decoding steps: merge assembled matrices
        if r.query_tokens is None or r.key_tokens is None:
            raise InputError(
                f"record {r.name!r} has no tokens to merge; attach them first with "
                f"attnlab.capturing.attach_tokens(trace, tokens)"
            )
        s = style or detect_style([*r.query_tokens, *r.key_tokens])
        qg, kg = word_groups(r.query_tokens, s, spec), word_groups(r.key_tokens, s, spec)
        w = r.weights
        to_keys = _group_matrix(kg, w.shape[-1], mean=False, like=w)  # (S, Wk)
        to_queries = _group_matrix(qg, w.shape[-2], mean=True, like=w).T  # (Wq, L)
        merged = torch.matmul(torch.matmul(to_queries, w), to_keys)  # (B, H, Wq, Wk)
        records.append(
            AttentionRecord(
                name=r.name, kind=r.kind, layer=r.layer, weights=merged,
                query_tokens=[_join([r.query_tokens[i] for i in g], s) for g in qg],
                key_tokens=[_join([r.key_tokens[i] for i in g], s) for g in kg],
            )
        )
    return AttentionTrace(records=records, meta={**trace.meta, "merge": "words"})


@lru_cache(maxsize=1)
def _byte_level() -> Any:
    """The tokenizers library's byte-level decoder (GPT-2's printable alphabet back to UTF-8 bytes)."""
    from tokenizers.decoders import ByteLevel

    return ByteLevel()


WORD_START = "\u2581"  # ▁: marks a piece that starts a word, in byte-level and SentencePiece tokens


def readable_tokens(
    tokens: Sequence[str], style: str | None, special: Iterable[str] | None = None, *, mark_word_starts: bool = True
) -> list[str]:
    """Tokens as a person reads them: byte-level pieces decoded to text (``Ġcaf Ã©`` -> ``▁caf``, ``é``),
    special tokens unchanged, WordPiece's ``##`` kept (it tells a piece from a word).

    A byte-level (``Ġ``) or SentencePiece (``▁``) piece that starts a word is shown with ``▁``, so the pieces
    ``▁c at`` (one word) do not read like the words ``▁c ▁at``; pass ``mark_word_starts=False`` for tokens
    that are whole words already (after :func:`merge_words`).  A byte-level piece holding part of a
    character shows ``�``."""
    spec = frozenset(special) if special is not None else None
    out = []
    for tok in tokens:
        if _is_special(tok, spec) or style not in ("bytelevel", "sentencepiece"):
            out.append(tok)
            continue
        mark = "▁" if style == "sentencepiece" else "Ġ"
        starts = tok.startswith(mark)
        if style == "sentencepiece":
            text = tok.replace("▁", " ").strip() or tok
        else:
            decoded = _byte_level().decode([tok])  # a piece holding part of a character decodes to U+FFFD
            text = decoded.strip() or decoded
        out.append(WORD_START + text if starts and mark_word_starts and text != tok else text)
    return out
