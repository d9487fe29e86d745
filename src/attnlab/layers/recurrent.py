"""Attention for recurrent encoder-decoders: one decoder state attends over the encoder states.

Letters: B batch, S source length, Eq query (decoder state) size, Ek key size, Ev value size,
A attention size of the additive score.  Bahdanau et al. (2015) score the previous decoder state with
an additive network; Luong et al. (2015) the current one with *dot*, *general* (bilinear), *concat*
(the same additive network) or *location* (``W_a h_t``: one score per source position from the query
alone, so it needs the longest source it will see, ``max_length``).  Both return a context vector and
the weights over the source.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from .. import _validate as check
from ..errors import ConfigError, ShapeError
from ..functional import masked_softmax, scores
from ..trace import Kind
from ._config import Configured, build
from ._hook import AttentionCall, AttentionHook

__all__ = ["BahdanauAttention", "LuongAttention", "RecurrentAttentionConfig"]

SCORES = ("dot", "general", "concat", "location", "additive")


@dataclass(frozen=True)
class RecurrentAttentionConfig:
    """Sizes and score of a single-query attention (Bahdanau ``additive``, Luong ``dot``/``general``/``concat``/
    ``location``);
    :class:`LuongAttention` takes exactly these, :class:`BahdanauAttention` these with ``score="additive"``."""

    d_query: int  # decoder state size Eq
    d_key: int  # encoder state size Ek
    score: str = "dot"  # how a query and a key are compared
    d_attn: int | None = None  # hidden size A of the additive/concat score (None: d_query); unused otherwise
    max_length: int | None = None  # score="location" only: the most source positions it scores (rows of W_a)

    def __post_init__(self) -> None:
        check.positive_int("d_query", self.d_query)
        check.positive_int("d_key", self.d_key)
        check.one_of("score", self.score, SCORES)
        check.positive_int("d_attn", self.d_attn, optional=True)
        check.positive_int("max_length", self.max_length, optional=True)
        if (self.score == "location") != (self.max_length is not None):
            raise ConfigError(
                f"max_length goes with score='location' (one score per source position, up to max_length) and "
                f"only with it, got score={self.score!r}, max_length={self.max_length}; "
                + ("pass max_length=the longest source" if self.score == "location" else "leave max_length=None")
            )
        if self.score == "dot" and self.d_query != self.d_key:
            raise ConfigError(
                f"score='dot' compares the query and the key directly, so d_query and d_key must be equal, "
                f"got d_query={self.d_query}, d_key={self.d_key}; use score='general' for different sizes"
            )
        additive = self.score in ("concat", "additive")
        if additive and self.d_attn is None:
            object.__setattr__(self, "d_attn", self.d_query)  # the default hidden size of the scoring network
        if not additive and self.d_attn is not None:
            raise ConfigError(
                f"d_attn only applies to score='concat' or 'additive', got d_attn={self.d_attn} with "
                f"score={self.score!r}; leave d_attn=None"
            )


def _uniform(t: Tensor, fan_in: int) -> None:
    bound = 1.0 / math.sqrt(fan_in)
    nn.init.uniform_(t, -bound, bound)


class _SingleQueryAttention(Configured, nn.Module):
    """Shared forward: score one query against the keys, masked softmax, weighted sum of values."""

    config_type = RecurrentAttentionConfig

    def __init__(self, *args: Any, **options: Any) -> None:
        super().__init__()
        config = build(RecurrentAttentionConfig, type(self).__name__, *args, **options)
        self.config = config
        a = config.d_attn
        if a is not None:  # v^T tanh(W_q q + W_k k)
            self.w_query = nn.Parameter(torch.empty(a, config.d_query))
            self.w_key = nn.Parameter(torch.empty(a, config.d_key))
            self.v = nn.Parameter(torch.empty(a))
            _uniform(self.w_query, config.d_query + config.d_key)
            _uniform(self.w_key, config.d_query + config.d_key)
            _uniform(self.v, a)
        elif config.score == "general":  # q^T W k
            self.weight = nn.Parameter(torch.empty(config.d_query, config.d_key))
            _uniform(self.weight, config.d_key)
        elif config.score == "location":  # W_a q, one row per source position
            assert config.max_length is not None  # __post_init__ requires it
            self.weight = nn.Parameter(torch.empty(config.max_length, config.d_query))
            _uniform(self.weight, config.d_query)
        self.attn_hook = AttentionHook()

    def project_keys(self, keys: Tensor) -> Tensor | None:
        """``W_k k`` ``(B, S, A)``, the part of an additive or concat score that depends on the keys alone; None for
        the other scores.  A decoder attends over the same keys at every step: it computes this once per source
        and passes it to each call as ``keys_projection=`` (the result is the same, one matmul cheaper)."""
        if self.config.d_attn is None:
            return None
        check.features("keys", keys, 3, self.config.d_key, "(batch, src_len, d_key)", self.w_key)
        return torch.matmul(keys, self.w_key.t())  # (B, S, A)

    def score(self, query: Tensor, keys: Tensor, keys_projection: Tensor | None = None) -> Tensor:
        """``(B, 1, Eq)`` queries and ``(B, S, Ek)`` keys to ``(B, 1, S)`` scores."""
        name = self.config.score
        if keys_projection is not None:
            if self.config.d_attn is None:
                raise ConfigError(f"keys_projection only applies to score='concat' or 'additive', got score={name!r}; "
                                  f"leave it None (project_keys returns None for this score)")
            want = (*keys.shape[:2], self.config.d_attn)
            if tuple(keys_projection.shape) != want:
                raise ShapeError(f"keys_projection must be (batch, src_len, d_attn) = {want}, got "
                                 f"{tuple(keys_projection.shape)}; compute it with project_keys(keys)")
            return scores.additive_projected(torch.matmul(query, self.w_query.t()), keys_projection, self.v)
        if name == "dot":
            return scores.dot(query, keys)
        if name == "general":
            return scores.general(query, keys, self.weight)
        if name == "location":
            return scores.location(query, self.weight, keys.shape[-2])
        return scores.additive(query, keys, self.w_query, self.w_key, self.v)

    def forward(
        self,
        query: Tensor,
        keys: Tensor,
        values: Tensor | None = None,
        key_padding_mask: Tensor | None = None,
        *,
        keys_projection: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        """Attend from one decoder state per sequence to the encoder states.

        Args:
            query: ``(B, d_query)``, the decoder state.
            keys: ``(B, S, d_key)``, the encoder states.
            values: ``(B, S, Ev)``; None means ``keys``.
            key_padding_mask: ``(B, S)`` bool, **True = real token**.
            keys_projection: ``project_keys(keys)``, precomputed once for many calls over the same keys
                (additive and concat scores only).

        Returns:
            ``(context (B, Ev), weights (B, S))``; a sequence with no real token gets zeros.
        """
        cfg = self.config
        like = next(self.parameters(), None)
        check.features("query", query, 2, cfg.d_query, "(batch, d_query)", like)
        check.features("keys", keys, 3, cfg.d_key, "(batch, src_len, d_key)", query)
        values = keys if values is None else values
        check.ndim("values", check.tensor("values", values, "(batch, src_len, d_v)"), 3, "(batch, src_len, d_v)")
        check.features("values", values, 3, values.shape[-1], "(batch, src_len, d_v)", query)
        check.same_batch(("query", "keys", "values"), (query, keys, values))
        b, s = keys.shape[:2]
        check.agree(("keys", "values"), [s, values.shape[1]], "length (dim 1)", "every key needs one value")
        mask = None
        if key_padding_mask is not None:
            mask = check.key_padding(key_padding_mask, b, s)[:, None, :]  # (B, 1, S)
        e = self.score(query[:, None, :], keys, keys_projection)  # (B, 1, S)
        w = masked_softmax(e, mask).to(values.dtype)  # (B, 1, S)
        kind: Kind = "cross"  # a decoder state attends over the encoder states
        w = _weights_of(self.attn_hook(AttentionCall(kind, w[:, None])))[:, 0]  # (B, 1, 1, S) for capture; (B, 1, S)
        context = torch.matmul(w, values)  # (B, 1, Ev)
        return context[:, 0], w[:, 0]


def _weights_of(call: AttentionCall) -> Tensor:
    """The weights a hook returned (a listener may replace the payload, never drop the weights)."""
    if call.weights is None:
        raise ShapeError("a listener of the attention hook returned a payload without weights; the layer needs "
                         "them: return dataclasses.replace(call, ...) keeping weights")
    return call.weights


class BahdanauAttention(_SingleQueryAttention):
    r"""Additive attention (Bahdanau et al., 2015): ``e_j = v^T tanh(W_q q + W_k k_j)``.

    ``BahdanauAttention(d_query, d_key, d_attn=None)`` takes the fields of :class:`RecurrentAttentionConfig`
    with ``score="additive"``: ``d_query`` the decoder state size, ``d_key`` the encoder state size,
    ``d_attn`` the hidden size of the scoring network (default ``d_query``).
    """

    def __init__(self, d_query: int, d_key: int, d_attn: int | None = None, **options: Any) -> None:
        score = options.pop("score", "additive")
        if score != "additive":
            raise ConfigError(
                f"BahdanauAttention's score is always 'additive', got score={score!r}; "
                f"use LuongAttention(score={score!r}) for another score"
            )
        super().__init__(d_query, d_key, score=score, d_attn=d_attn, **options)


class LuongAttention(_SingleQueryAttention):
    r"""Multiplicative attention (Luong et al., 2015).

    ``score="dot"``: ``q . k`` (needs ``d_query == d_key``); ``"general"``: ``q^T W k``;
    ``"concat"``: ``v^T tanh(W [q; k])`` with hidden size ``d_attn`` (default ``d_query``);
    ``"location"``: ``W_a q``, one score per source position whatever the keys hold (the keys are still the
    values), for sources of at most ``max_length`` positions.
    ``LuongAttention(d_query, d_key, score="dot", d_attn=None, max_length=None)`` takes the fields of
    :class:`RecurrentAttentionConfig`, in that order.
    """

    def __init__(self, d_query: int, d_key: int, *args: Any, **options: Any) -> None:
        super().__init__(d_query, d_key, *args, **options)
