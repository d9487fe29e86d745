"""The tutorials' attention text classifier, built from one frozen config.

Letters: B batch, L length (tokens, padding included), M d_model, C classes.

``ids (B, L)`` -> token embedding + positional encoding -> ``n_layers`` encoder layers (any registered
kernel) -> pooling ([CLS], mean over real tokens, or additive attention with a learned query) -> linear head
-> ``logits (B, C)``.  With ``n_layers=0`` and ``pooling="attention"`` it is the tutorials' single
additive-attention pooling model.  Padding is always masked: every attention gets ``key_padding_mask``
(True = real token) built from ``ids != pad_id``, and mean pooling averages real tokens only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
from torch import Tensor, nn

from .. import _validate as check
from ..errors import ConfigError, InputError
from ..layers import BahdanauAttention, TransformerConfig, TransformerEncoder
from ..layers._config import frozen_options

__all__ = ["POOLINGS", "POSITIONALS", "AttentionClassifier", "ClassifierConfig", "PositionalEncoding"]

POSITIONALS = ("sinusoidal", "learned", "rotary", "none")
POOLINGS = ("cls", "mean", "attention")


@dataclass(frozen=True)
class ClassifierConfig:
    """Everything that decides an :class:`AttentionClassifier`'s shape (its constructor takes exactly this)."""

    vocab_size: int  # rows of the token embedding (the tokenizer's vocabulary size)
    n_classes: int = 2  # outputs of the linear head
    d_model: int = 64  # width of the embeddings and of the residual stream
    n_heads: int = 4  # attention heads per encoder layer
    n_layers: int = 2  # encoder layers; 0 = the tutorials' model (embeddings straight into the pooling)
    d_ff: int | None = None  # hidden width of each feed-forward network; None = 4 * d_model
    dropout: float = 0.1  # on embeddings, attention weights, residual branches and before the head
    max_length: int = 256  # the most tokens per text (the learned position table has this many rows)
    positional: str = "sinusoidal"  # "sinusoidal" (Vaswani et al.), "learned" (a table), "rotary" or "none"
    pooling: str = "cls"  # "cls": the first token's state; "mean": mean of real tokens; "attention": additive
    kernel: str = "dense"  # attention kernel of the encoder layers (attnlab.functional.KERNELS)
    norm_first: bool = True  # pre-norm encoder layers (stabler for small data); False = the paper's post-norm
    pad_id: int = 0  # the padding token's id: masked everywhere
    kernel_options: Mapping[str, Any] = field(default_factory=dict, hash=False)  # the kernel's own options

    def __post_init__(self) -> None:
        check.positive_int("vocab_size", self.vocab_size)
        check.integer("n_classes", self.n_classes, low=2, fix="a classifier needs at least two classes")
        check.non_negative_int("n_layers", self.n_layers)
        check.positive_int("max_length", self.max_length)
        check.one_of("positional", self.positional, POSITIONALS)
        check.one_of("pooling", self.pooling, POOLINGS)
        check.boolean("norm_first", self.norm_first, "True = pre-norm, False = post-norm")
        check.non_negative_int("pad_id", self.pad_id)
        if self.pad_id >= self.vocab_size:
            raise ConfigError(f"pad_id={self.pad_id} is not below vocab_size={self.vocab_size}; "
                              f"pass the tokenizer's padding id")
        if self.n_layers == 0 and self.positional == "rotary":
            raise ConfigError("positional='rotary' rotates queries and keys inside the encoder layers, but "
                              "n_layers=0 has none (the model would see no positions); use 'sinusoidal' or "
                              "'learned' with n_layers=0, or n_layers >= 1")
        if self.n_layers == 0 and self.pooling == "cls":
            raise ConfigError("pooling='cls' with n_layers=0 would classify the [CLS] embedding alone (it sees no "
                              "other token); use pooling='attention' (the tutorials' model) or 'mean'")
        object.__setattr__(self, "kernel_options", frozen_options("kernel_options", self.kernel_options))
        self.encoder()  # d_model, n_heads, d_ff, dropout, kernel and its options are checked there

    def encoder(self) -> TransformerConfig:
        """The config of each encoder layer."""
        d_ff = self.d_ff if self.d_ff is not None else 4 * self.d_model
        return TransformerConfig(self.d_model, self.n_heads, d_ff, dropout=self.dropout, norm_first=self.norm_first,
                                 kernel=self.kernel, kernel_options=self.kernel_options,
                                 rotary=self.positional == "rotary")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (``ClassifierConfig(**d)`` rebuilds it)."""
        d = asdict(self)
        d["kernel_options"] = dict(self.kernel_options)
        return d


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

    def __init__(self, config: ClassifierConfig) -> None:
        super().__init__()
        check.instance("config", config, ClassifierConfig, "a ClassifierConfig",
                       "build one with ClassifierConfig(vocab_size, ...)")
        self.config = config
        m = config.d_model
        self.embed = nn.Embedding(config.vocab_size, m, padding_idx=config.pad_id)
        nn.init.normal_(self.embed.weight, std=m**-0.5)
        with torch.no_grad():
            self.embed.weight[config.pad_id].zero_()
        self.position = PositionalEncoding(config.positional, config.max_length, m)
        self.scale = math.sqrt(m)  # embeddings times sqrt(M), as in the paper, so positions do not drown them
        self.drop = nn.Dropout(config.dropout)
        self.encoder = TransformerEncoder(config.encoder(), config.n_layers) if config.n_layers else None
        if config.pooling == "attention":
            self.pool_query = nn.Parameter(torch.randn(m) * m**-0.5)  # (M,) the learned "what matters" query
            self.pool = BahdanauAttention(m, m)
        self.head = nn.Linear(m, config.n_classes)

    @classmethod
    def from_config(cls, config: ClassifierConfig) -> AttentionClassifier:
        return cls(config)

    def forward(self, ids: Tensor, key_padding_mask: Tensor | None = None) -> Tensor:
        """``ids (B, L)`` integer token ids to ``logits (B, C)``.

        ``key_padding_mask`` ``(B, L)`` bool, True = real token; default ``ids != pad_id``.  A row with no
        real token gets the head's bias as logits (zeros go in), never NaN.
        """
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
        x = self.drop(self.position(self.embed(ids) * self.scale))  # (B, L, M)
        if self.encoder is not None:
            x = self.encoder(x, key_padding_mask=real)  # (B, L, M)
        return self.head(self.drop(self._pool(x, real)))  # (B, C)

    def _pool(self, x: Tensor, real: Tensor) -> Tensor:  # (B, L, M), (B, L) -> (B, M)
        pooling = self.config.pooling
        if pooling == "cls":
            return x[:, 0]
        if pooling == "mean":
            weights = real.to(x.dtype)[:, :, None]  # (B, L, 1)
            return (x * weights).sum(1) / weights.sum(1).clamp(min=1.0)
        query = self.pool_query.to(x.dtype).expand(x.shape[0], -1)  # (B, M)
        return self.pool(query, x, key_padding_mask=real)[0]
