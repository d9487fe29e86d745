"""The tutorials' attention text classifier, built from one frozen config.

Letters: B batch, L length (tokens, padding included), M d_model, C classes.

``ids (B, L)`` -> token embedding + positional encoding -> ``n_layers`` encoder layers (any registered
kernel) -> pooling ([CLS], mean over real tokens, or additive attention with a learned query) -> linear head
-> ``logits (B, C)``.  With ``bigrams=N`` each position also embeds the token pair that starts there (the N
most frequent pairs of the training split, looked up in the ``bigram_keys`` buffer, saved with the weights) and
adds it to the token's embedding: the sequence keeps its length; ``trigrams=N`` does the same for the token triple
that starts there (``trigram_keys``).  With ``n_layers=0`` and
``pooling="attention"`` it is the tutorials' single additive-attention pooling model.  Padding is always
masked: every attention gets ``key_padding_mask`` (True = real token) built from ``ids != pad_id``, and mean
(and max) pooling read real tokens only.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import torch
from torch import Tensor, nn

from .. import _validate as check
from ..errors import ConfigError, InputError
from ..layers import BahdanauAttention, TransformerEncoder
from ._configs import POOLINGS, POSITIONALS, ClassifierConfig

__all__ = ["POOLINGS", "POSITIONALS", "AttentionClassifier", "ClassifierConfig", "PositionalEncoding",
           "count_bigrams", "count_trigrams"]

NO_BIGRAM, UNKNOWN_BIGRAM = 0, 1  # rows of the bigram table: padding / the last position, and a pair not kept


class PositionalEncoding(nn.Module):
    """Adds position information to ``(B, L, M)`` embeddings: the fixed sinusoids of Vaswani et al. (2017),
    a learned table, or nothing (``"none"``, and ``"rotary"``, whose positions act inside the attention)."""

    def __init__(self, kind: str, max_length: int, d_model: int) -> None:
        super().__init__()
        self.kind = check.one_of("positional", kind, POSITIONALS)
        self.table: Tensor | nn.Parameter | None
        if kind == "learned":
            self.table = nn.Parameter(torch.randn(max_length, d_model) * 0.02)  # (L_max, M)
        elif kind == "sinusoidal":
            self.register_buffer("table", sinusoids(max_length, d_model), persistent=False)
        else:
            self.table = None

    def forward(self, x: Tensor) -> Tensor:  # (B, L, M) -> (B, L, M)
        if self.table is None:
            return x
        return x + self.table[: x.shape[1]].to(x.dtype)  # (L, M) broadcast over B


def sinusoids(length: int, d_model: int) -> Tensor:
    """``PE[p, 2i] = sin(p / 10000^(2i/M))``, ``PE[p, 2i+1] = cos(...)``: ``(length, d_model)``."""
    position = torch.arange(length, dtype=torch.float64)[:, None]  # (L, 1)
    rate = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64) * (-math.log(10000.0) / d_model))  # (M/2,)
    pe = torch.zeros(length, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(position * rate)
    pe[:, 1::2] = torch.cos(position * rate)[:, : d_model // 2]
    return pe.float()


class AttentionClassifier(nn.Module):
    """Token ids to class logits through attention; see the module docstring.

    ``AttentionClassifier(config)`` or ``AttentionClassifier.from_config(config)``; the config is ``self.config``.
    ``capture(model)`` records every encoder layer (kind ``self``) and, with ``pooling="attention"``, the pooling
    query's attention over the tokens (kind ``cross``, one query).
    """

    bigram_keys: Tensor  # (bigrams,) a buffer, when the config has bigrams
    trigram_keys: Tensor  # (trigrams,) a buffer, when the config has trigrams

    def __init__(self, config: ClassifierConfig) -> None:
        super().__init__()
        check.instance("config", config, ClassifierConfig, "a ClassifierConfig",
                       "build one with ClassifierConfig(vocab_size, ...)")
        self.config = config
        m = config.d_model
        self.embed = nn.Embedding(config.vocab_size, m, padding_idx=config.pad_id)
        # BERT-style with embed_norm (N(0, 0.02), no scale: the LayerNorm sets it, and Adam's steps stay large
        # next to the weights); else N(0, 1/M) times sqrt(M), as in the paper, so positions do not drown them
        std = 0.02 if config.embed_norm else m**-0.5
        nn.init.normal_(self.embed.weight, std=std)
        with torch.no_grad():
            self.embed.weight[config.pad_id].zero_()
        self.position = PositionalEncoding(config.positional, config.max_length, m)
        self.scale = 1.0 if config.embed_norm else math.sqrt(m)
        self.bigram = self._ngram_table("bigram", 2, config.bigrams, std)
        self.trigram = self._ngram_table("trigram", 3, config.trigrams, std)
        self.embed_norm = nn.LayerNorm(m) if config.embed_norm else None
        self.embed_drop = nn.Dropout(config.dropout if config.embed_dropout is None else config.embed_dropout)
        self.head_drop = nn.Dropout(config.dropout if config.head_dropout is None else config.head_dropout)
        self.encoder = TransformerEncoder(config.encoder(), config.n_layers) if config.n_layers else None
        if config.pooling == "attention":
            self.pool_query = nn.Parameter(torch.randn(m) * m**-0.5)  # (M,) the learned "what matters" query
            self.pool = BahdanauAttention(m, m)
        self.head = nn.Linear(2 * m if config.pooling == "meanmax" else m, config.n_classes)

    @classmethod
    def from_config(cls, config: ClassifierConfig) -> AttentionClassifier:
        return cls(config)

    def _ngram_table(self, name: str, order: int, n: int, std: float) -> nn.Embedding | None:
        """The embedding of ``n`` kept n-grams of ``order`` tokens (None when ``n`` is 0), and their keys as the
        buffer ``{name}_keys``.  Row 0: no n-gram (padding, the last positions); row 1: one not kept; then the
        keys, sorted, each ``((first * V + second) * V + ...)``; until set_bigrams()/set_trigrams() they are keys
        no n-gram can have."""
        if not n:
            return None
        table = nn.Embedding(n + 2, self.config.d_model, padding_idx=NO_BIGRAM)
        nn.init.normal_(table.weight, std=std)
        with torch.no_grad():
            table.weight[NO_BIGRAM].zero_()
        self.register_buffer(f"{name}_keys", torch.arange(n, dtype=torch.long) + self.config.vocab_size**order)
        return table

    def set_bigrams(self, keys: Tensor) -> None:
        """Keep the token pairs ``keys`` (``(N,)`` int64, ``first * vocab_size + second``): see count_bigrams."""
        self._set_keys("bigram", 2, keys)

    def set_trigrams(self, keys: Tensor) -> None:
        """Keep the token triples ``keys`` (``(N,)`` int64, ``(first * V + second) * V + third``, V the
        vocabulary size): see count_trigrams."""
        self._set_keys("trigram", 3, keys)

    def _set_keys(self, name: str, order: int, keys: Tensor) -> None:
        if getattr(self, name) is None:
            raise ConfigError(f"this model has no {name} table ({name}s=0); build it with {name}s=N")
        n = getattr(self.config, f"{name}s")
        if not isinstance(keys, Tensor) or keys.dtype != torch.long or keys.dim() != 1 or len(keys) > n:
            raise InputError(f"keys must be a 1-d int64 tensor of at most {name}s={n} keys, got {check.got(keys)}; "
                             f"use count_{name}s(ids, {n}, vocab_size)")
        filler = torch.arange(n - len(keys), dtype=torch.long) + self.config.vocab_size**order  # (n - K,) no match
        with torch.no_grad():
            getattr(self, f"{name}_keys").copy_(torch.cat([keys.sort().values, filler]))

    def bigram_ids(self, ids: Tensor) -> Tensor:
        """``(B, L)`` rows of the bigram table: the pair starting at each position (0 where there is none)."""
        return _ngram_rows(ids, 2, self.bigram_keys, self.config.vocab_size, self.config.pad_id)

    def trigram_ids(self, ids: Tensor) -> Tensor:
        """``(B, L)`` rows of the trigram table: the triple starting at each position (0 where there is none)."""
        return _ngram_rows(ids, 3, self.trigram_keys, self.config.vocab_size, self.config.pad_id)

    def forward(self, ids: Tensor, key_padding_mask: Tensor | None = None) -> Tensor:
        """``ids (B, L)`` integer token ids to ``logits (B, C)``.

        ``key_padding_mask`` ``(B, L)`` bool, True = real token; default ``ids != pad_id``.  A row with no
        real token gets the head's bias as logits (zeros go in), never NaN.
        """
        x, real = self.encode(ids, key_padding_mask)
        return self.classify_states(x, real)  # (B, C)

    def classify_states(self, x: Tensor, real: Tensor) -> Tensor:
        """The logits ``(B, C)`` of encoder states ``x`` ``(B, L, M)`` with the real-token mask ``real`` ``(B, L)``:
        the pooling and the head.  ``L`` may exceed ``max_length``: a long text's windows, encoded one by one and
        stitched, are pooled here as one text (``attnlab.trained.Classifier``)."""
        return self.head(self.head_drop(self._pool(x, real)))  # (B, C)

    def encode(self, ids: Tensor, key_padding_mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """``ids (B, L)`` to the encoder's output states ``(B, L, M)`` and the real-token mask ``(B, L)``."""
        cfg = self.config
        if not isinstance(ids, Tensor) or ids.dtype not in (torch.int32, torch.int64) or ids.dim() != 2:
            raise InputError(f"ids must be a (batch, length) tensor of int64 token ids, got {check.got(ids)}"
                             f"{f' of {ids.dtype}' if isinstance(ids, Tensor) else ''}; batch the texts "
                             f"(pad with pad_id={cfg.pad_id})")
        if ids.numel() and not 0 <= int(ids.min()) <= int(ids.max()) < cfg.vocab_size:
            raise InputError(f"ids must lie in [0, {cfg.vocab_size}) (the vocabulary), got values from "
                             f"{int(ids.min())} to {int(ids.max())}; encode with the model's own tokenizer")
        if ids.shape[1] > cfg.max_length:
            raise InputError(f"ids has {ids.shape[1]} tokens per row but the model takes at most "
                             f"{cfg.max_length}; truncate to max_length={cfg.max_length}")
        real = ids != cfg.pad_id if key_padding_mask is None else check.key_padding(
            key_padding_mask, ids.shape[0], ids.shape[1])  # (B, L)
        x = self.embed(ids)  # (B, L, M)
        if self.bigram is not None:
            x = x + self.bigram(self.bigram_ids(ids))
        if self.trigram is not None:
            x = x + self.trigram(self.trigram_ids(ids))
        x = self.position(x * self.scale)
        if self.embed_norm is not None:
            x = self.embed_norm(x)
        x = self.embed_drop(x)
        if self.encoder is not None:
            x = self.encoder(x, key_padding_mask=real)  # (B, L, M)
        return x, real

    def _pool(self, x: Tensor, real: Tensor) -> Tensor:  # (B, L, M), (B, L) -> (B, M)
        pooling = self.config.pooling
        if pooling == "cls":
            return x[:, 0]
        if pooling in ("mean", "meanmax"):
            weights = real.to(x.dtype)[:, :, None]  # (B, L, 1)
            mean = (x * weights).sum(1) / weights.sum(1).clamp(min=1.0)  # (B, M)
            if pooling == "mean":
                return mean
            top = x.masked_fill(~real[:, :, None], float("-inf")).amax(1)  # (B, M); -inf on a row with no token
            return torch.cat([mean, top.masked_fill(~real.any(1)[:, None], 0.0)], dim=-1)  # (B, 2M)
        query = self.pool_query.to(x.dtype).expand(x.shape[0], -1)  # (B, M)
        return self.pool(query, x, key_padding_mask=real)[0]


def _ngram_rows(ids: Tensor, order: int, keys: Tensor, vocab_size: int, pad: int) -> Tensor:
    """``(B, L)`` rows of an n-gram table (``order`` tokens starting at each position): ``NO_BIGRAM`` where the
    n-gram would reach padding or past the end, ``UNKNOWN_BIGRAM`` for one not kept, else 2 + its key's index."""
    span = ids.shape[1] - order + 1
    if span <= 0:
        return torch.full_like(ids, NO_BIGRAM)
    key = ids[:, :span]  # (B, L-order+1)
    hits_pad = ids[:, :span] == pad
    for k in range(1, order):
        key = key * vocab_size + ids[:, k: k + span]
        hits_pad = hits_pad | (ids[:, k: k + span] == pad)
    where = torch.searchsorted(keys, key).clamp(max=len(keys) - 1)  # (B, L-order+1)
    found = keys[where] == key
    rows = torch.where(found, where + 2, torch.full_like(where, UNKNOWN_BIGRAM)).masked_fill(hits_pad, NO_BIGRAM)
    return torch.cat([rows, torch.full_like(ids[:, : order - 1], NO_BIGRAM)], dim=1)  # (B, L)


def _count_ngrams(ids: Sequence[Sequence[int]], order: int, n: int, vocab_size: int, min_count: int,
                  pad_id: int) -> Tensor:
    counts: Counter[int] = Counter()
    for row in ids:
        for gram in zip(*(row[k:] for k in range(order)), strict=False):
            if pad_id not in gram:
                key = 0
                for t in gram:
                    key = key * vocab_size + t
                counts[key] += 1
    ranked = sorted((key for key, c in counts.items() if c >= min_count), key=lambda k: (-counts[k], k))
    return torch.tensor(sorted(ranked[:n]), dtype=torch.long)


def count_bigrams(ids: Sequence[Sequence[int]], n: int, vocab_size: int, *, min_count: int = 1,
                  pad_id: int = 0) -> Tensor:
    """The keys (``first * vocab_size + second``, int64) of the ``n`` most frequent neighbouring token pairs of
    ``ids`` (the training split's encoded texts) that occur at least ``min_count`` times; ties go to the
    smaller key, so the choice is deterministic."""
    return _count_ngrams(ids, 2, n, vocab_size, min_count, pad_id)


def count_trigrams(ids: Sequence[Sequence[int]], n: int, vocab_size: int, *, min_count: int = 1,
                   pad_id: int = 0) -> Tensor:
    """As :func:`count_bigrams` for three neighbouring tokens: keys ``(first * V + second) * V + third``."""
    return _count_ngrams(ids, 3, n, vocab_size, min_count, pad_id)
