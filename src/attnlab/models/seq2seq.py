"""Encoder-decoder translation models with attention: a recurrent one and a transformer.

Letters: B batch, S source length, T target length, E embedding size, H hidden size (``d_hidden``),
M ``d_model``, V target vocabulary, N rows being decoded (B, or B * beam).

:class:`Seq2Seq` is the recurrent model of Bahdanau et al. (2015) and Luong et al. (2015): a bidirectional GRU
reads the source (``H / 2`` units per direction, so the encoder states are ``(B, S, H)``, the decoder's size, and
Luong's *dot* score needs no projection); its two final states, concatenated, go through ``tanh(Linear)`` to
start the decoder, a GRU cell that attends over the encoder states once per target token:

* ``attention="bahdanau"``: the *previous* decoder state ``s_{t-1}`` scores the source (additive score), the
  context ``c_t`` enters the GRU with the previous token, ``s_t = GRU([y_{t-1}; c_t], s_{t-1})``, and the output is
  ``tanh(W [s_t; c_t; y_{t-1}])`` (Bahdanau's deep output, without the maxout);
* ``attention="luong"``: the GRU runs first, ``s_t = GRU([y_{t-1}; h~_{t-1}], s_{t-1})``, the *current* state
  scores the source (``dot``, ``general``, ``concat`` or ``location``), and the attentional vector
  ``h~_t = tanh(W_c [c_t; s_t])`` makes the output.  Feeding ``h~_{t-1}`` back in is *input feeding* (Luong's
  section 3.3; ``input_feeding=False`` feeds ``y_{t-1}`` alone).

:class:`TransformerSeq2Seq` is Vaswani et al. (2017) from attnlab's pre-norm encoder and decoder layers (the
encoder with any registered kernel, the decoder dense), embeddings times ``sqrt(M)``, and either sinusoidal
positions added to the embeddings (``positions="sinusoidal"``, the paper's) or rotary positions in every
self-attention and none added (``positions="rotary"``): the scores then depend on the offset between tokens only,
so "the digit two places after this one" is the same query wherever the source writes its year.
It decodes with a key/value cache per decoder layer, so each step projects only the new token.

Both take right-padded ``src (B, S)`` and ``tgt_in (B, T)`` (BOS first) and return logits ``(B, T, V)``; the source
padding (``pad_id``) is always masked.  ``generate`` decodes greedily or with beam search (see :mod:`._decode`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .. import _validate as check
from ..errors import InputError, TooLongError
from ..layers import (
    AttentionHook,
    BahdanauAttention,
    DecoderLayerCache,
    LuongAttention,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
)
from . import _decode
from ._configs import ATTENTIONS, POSITIONS, SCORES, Seq2SeqConfig, TransformerSeq2SeqConfig
from ._decode import Generation, Specials
from .classifier import sinusoids

__all__ = ["ATTENTIONS", "POSITIONS", "SCORES", "Seq2Seq", "Seq2SeqConfig", "TransformerSeq2Seq",
           "TransformerSeq2SeqConfig"]

# --- what both models share -------------------------------------------------------------------------


def _check_tokens(name: str, ids: object, vocab: int, config: Any) -> Tensor:
    """``ids`` is a right-padded ``(B, L)`` int64 tensor of ids in ``[0, vocab)`` with ``1 <= L <= max_length``."""
    layout = "(batch, length)"
    t = check.ndim(name, check.tensor(name, ids, layout), 2, layout)
    if t.dtype not in (torch.int32, torch.int64):
        raise InputError(f"{name} must hold integer token ids (int64), got {t.dtype}; encode the texts with the "
                         f"model's tokenizer")
    if t.shape[0] == 0 or t.shape[1] == 0:
        raise InputError(f"{name} must hold at least one sequence of at least one token, got shape "
                         f"{tuple(t.shape)}; an empty text encodes to its EOS")
    if t.shape[1] > config.max_length:
        raise TooLongError(f"{name} has {t.shape[1]} tokens per row but the model takes at most {config.max_length}; "
                           f"shorten the input to {config.max_length} tokens", t.shape[1], config.max_length)
    low, high = int(t.min()), int(t.max())
    if low < 0 or high >= vocab:
        raise InputError(f"{name} must hold ids in [0, {vocab}) (the vocabulary), got values from {low} to {high}; "
                         f"encode with the model's own tokenizer")
    real = t != config.pad_id  # (B, L)
    if bool((real[:, 1:] & ~real[:, :-1]).any()):
        raise InputError(f"{name} has a real token after a padding token (pad_id={config.pad_id}); pad on the "
                         f"right only")
    return t.long()


class _Translator(nn.Module):
    """``generate`` for a model whose ``_stepper(src)`` gives a :class:`._decode.Stepper`."""

    config: Any

    def _stepper(self, src: Tensor) -> _decode.Stepper:
        raise NotImplementedError

    def _source(self, src: object) -> Tensor:
        return _check_tokens("src", src, self.config.src_vocab, self.config)

    def generate(
        self, src: Tensor, *, beam: int = 1, max_length: int | None = None, length_penalty: float = 1.0
    ) -> Generation:
        """Translate the right-padded sources ``src`` ``(B, S)``: greedy search (``beam=1``) or beam search.

        Args:
            src: source ids, each row ending in EOS (as the pair tokenizer encodes), padded with ``pad_id``.
            beam: hypotheses kept per source; 1 is greedy search.
            max_length: the most tokens generated per source, EOS included (default: the config's
                ``max_length``); a hypothesis that reaches it without EOS is returned as it is.
            length_penalty: ``alpha`` of GNMT's length normalisation (Wu et al., 2016): beam search ranks a
                finished hypothesis by ``log p / ((5 + length) / 6) ** alpha`` with ``length`` its tokens, EOS
                included; 0 ranks by ``log p`` alone.  Greedy search ignores it.

        Returns:
            a :class:`Generation`: per source the tokens (no BOS/EOS), the log-probability and the alignment
            ``(T_i, S_i)`` (attention weights of each generated token over the real source tokens).

        Runs without gradients and in eval mode (the mode is restored afterwards).  Under
        :func:`attnlab.capture` the attention of each decoding step is recorded with ``step`` 0, 1, 2, ... (for
        beam search, one row per live hypothesis in the order of that step; the chosen hypothesis's alignment is
        the one in the result).
        """
        src = self._source(src)
        limit = self.config.max_length
        _decode.check_search(beam, max_length, length_penalty, limit)
        n = limit if max_length is None else max_length
        specials = Specials(self.config.pad_id, self.config.bos_id, self.config.eos_id)
        src_len = (src != self.config.pad_id).sum(dim=1)  # (B,)
        was_training = self.training
        self.eval()
        try:
            with torch.no_grad():
                stepper = self._stepper(src)
                if beam == 1:
                    return _decode.greedy(stepper, src_len, specials, n)
                return _decode.beam_search(stepper, src_len, specials, n, beam, float(length_penalty))
        finally:
            self.train(was_training)


# --- the recurrent model -------------------------------------------------------------------------


class Seq2Seq(_Translator):
    """The recurrent encoder-decoder with attention; see the module docstring.

    ``Seq2Seq(config)``; the config is ``self.config``.  ``capture(model)`` records the decoder's attention
    (kind ``cross``, one query per target token, assembled into the ``(T, S)`` alignment by the trace).
    """

    def __init__(self, config: Seq2SeqConfig) -> None:
        super().__init__()
        check.instance("config", config, Seq2SeqConfig, "a Seq2SeqConfig",
                       "build one with Seq2SeqConfig(src_vocab, tgt_vocab, ...)")
        self.config = config
        e, h = config.d_embed, config.d_hidden
        self.src_embed = nn.Embedding(config.src_vocab, e, padding_idx=config.pad_id)
        self.tgt_embed = nn.Embedding(config.tgt_vocab, e, padding_idx=config.pad_id)
        self.encoder = nn.GRU(e, h // 2, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(h, h)  # [forward final; backward final] -> the decoder's first state
        self.attention: BahdanauAttention | LuongAttention
        if config.attention == "bahdanau":
            self.attention = BahdanauAttention(h, h)
            self.cell = nn.GRUCell(e + h, h)  # [y_{t-1}; c_t]
            self.combine = nn.Linear(h + h + e, h)  # [s_t; c_t; y_{t-1}] -> the output vector
        else:
            location = config.max_length if config.score == "location" else None
            self.attention = LuongAttention(h, h, score=config.score, max_length=location)
            self.cell = nn.GRUCell(e + h if config.input_feeding else e, h)  # [y_{t-1}; h~_{t-1}] or y_{t-1}
            self.combine = nn.Linear(h + h, h, bias=False)  # W_c [c_t; s_t] -> h~_t
        self.drop = nn.Dropout(config.dropout)
        self.out = nn.Linear(h, config.tgt_vocab)

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """``src (B, S)`` to ``(encoder states (B, S, H), real-token mask (B, S), first decoder state (B, H))``.

        The GRU runs over each source's real tokens only (packed), so padding changes nothing; a row with no
        real token reads one padding embedding (zeros) and attends to nothing."""
        src = self._source(src)
        real = src != self.config.pad_id  # (B, S)
        lengths = real.sum(dim=1).clamp(min=1).cpu()  # (B,)
        x = self.drop(self.src_embed(src))  # (B, S, E)
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, last = self.encoder(packed)  # last: (2, B, H / 2), the final state of each direction
        memory, _ = pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])  # (B, S, H)
        state = torch.tanh(self.bridge(torch.cat([last[0], last[1]], dim=-1)))  # (B, H)
        return memory, real, state

    def _stepper(self, src: Tensor) -> _RecurrentStepper:
        return _RecurrentStepper(self, *self.encode(src))

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher forcing: ``src (B, S)`` and the decoder inputs ``tgt_in (B, T)`` (BOS, y_1, ..., y_{T-1}) to
        logits ``(B, T, V)``."""
        tgt_in = _check_tokens("tgt_in", tgt_in, self.config.tgt_vocab, self.config)
        stepper = self._stepper(src)
        check.same_batch(("src", "tgt_in"), (stepper.memory, tgt_in))
        logits = [stepper.step(tgt_in[:, t], t)[0] for t in range(tgt_in.shape[1])]  # T x (B, V)
        return torch.stack(logits, dim=1)  # (B, T, V)


class _RecurrentStepper:
    """The decoder of a :class:`Seq2Seq` over encoded sources: state ``s``, and ``h~`` for input feeding."""

    def __init__(self, model: Seq2Seq, memory: Tensor, real: Tensor, state: Tensor) -> None:
        self.model = model
        self.memory, self.real, self.state = memory, real, state  # (N, S, H), (N, S), (N, H)
        self.feed = state.new_zeros(state.shape)  # (N, H) h~_{t-1}; zeros before the first step
        self.keys = model.attention.project_keys(memory)  # (N, S, A) W_k h_j, once per source; None: no such part

    def reorder(self, index: Tensor) -> None:
        self.memory, self.real = self.memory[index], self.real[index]
        self.state, self.feed = self.state[index], self.feed[index]
        self.keys = None if self.keys is None else self.keys[index]

    def attend(self, state: Tensor) -> tuple[Tensor, Tensor]:
        """``(context (N, H), weights (N, S))`` of ``state`` over the encoder states."""
        return self.model.attention(state, self.memory, key_padding_mask=self.real, keys_projection=self.keys)

    def step(self, tokens: Tensor, position: int) -> tuple[Tensor, Tensor]:
        m = self.model
        y = m.drop(m.tgt_embed(tokens))  # (N, E)
        if m.config.attention == "bahdanau":
            context, w = self.attend(self.state)  # (N, H), (N, S): the previous state scores the source
            self.state = m.cell(torch.cat([y, context], dim=-1), self.state)  # (N, H)
            vector = torch.tanh(m.combine(torch.cat([self.state, context, y], dim=-1)))  # (N, H)
        else:
            x = torch.cat([y, self.feed], dim=-1) if m.config.input_feeding else y  # (N, E + H) or (N, E)
            self.state = m.cell(x, self.state)  # (N, H)
            context, w = self.attend(self.state)  # (N, H), (N, S): the current state scores the source
            vector = torch.tanh(m.combine(torch.cat([context, self.state], dim=-1)))  # (N, H) h~_t
            self.feed = vector
        return m.out(m.drop(vector)), w  # (N, V), (N, S)


# --- the transformer -------------------------------------------------------------------------------


class TransformerSeq2Seq(_Translator):
    """The transformer encoder-decoder; see the module docstring.

    ``TransformerSeq2Seq(config)``; the config is ``self.config``.  ``capture(model)`` records every encoder
    layer (``self``), every decoder layer's ``causal`` self-attention and its ``cross`` attention; in
    ``generate`` the decoder's calls are decoding steps with a key/value cache.  The alignment ``generate``
    returns is the last decoder layer's cross-attention averaged over its heads.
    """

    def __init__(self, config: TransformerSeq2SeqConfig) -> None:
        super().__init__()
        check.instance("config", config, TransformerSeq2SeqConfig, "a TransformerSeq2SeqConfig",
                       "build one with TransformerSeq2SeqConfig(src_vocab, tgt_vocab, ...)")
        self.config = config
        m = config.d_model
        self.src_embed = nn.Embedding(config.src_vocab, m, padding_idx=config.pad_id)
        self.tgt_embed = nn.Embedding(config.tgt_vocab, m, padding_idx=config.pad_id)
        for table in (self.src_embed, self.tgt_embed):
            nn.init.normal_(table.weight, std=m**-0.5)
            with torch.no_grad():
                table.weight[config.pad_id].zero_()
        self.register_buffer("position", sinusoids(config.max_length, m), persistent=False)  # (L_max, M)
        self.scale = math.sqrt(m)  # embeddings times sqrt(M), as in the paper
        self.drop = nn.Dropout(config.dropout)
        self.encoder = TransformerEncoder(config.encoder_layers(), config.n_encoder_layers)
        self.decoder = TransformerDecoder(config.decoder_layers(), config.n_decoder_layers)
        self.out = nn.Linear(m, config.tgt_vocab)

    def _embed(self, table: nn.Embedding, ids: Tensor, start: int) -> Tensor:
        """``ids (N, L)`` at positions ``start .. start + L - 1`` to ``(N, L, M)``."""
        x = table(ids) * self.scale  # (N, L, M)
        if self.config.positions == "sinusoidal":  # rotary: the self-attention layers rotate by position instead
            pos: Tensor = self.position  # type: ignore[assignment]  # a buffer
            x = x + pos[start : start + ids.shape[1]].to(table.weight.dtype)  # (N, L, M)
        return self.drop(x)

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """``src (B, S)`` to ``(memory (B, S, M), real-token mask (B, S))``."""
        src = self._source(src)
        real = src != self.config.pad_id  # (B, S)
        return self.encoder(self._embed(self.src_embed, src, 0), key_padding_mask=real), real

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher forcing: ``src (B, S)`` and the decoder inputs ``tgt_in (B, T)`` (BOS, y_1, ..., y_{T-1}) to
        logits ``(B, T, V)``.  The decoder's self-attention is causal, so right padding in ``tgt_in`` affects only
        the padded positions (whose loss the caller ignores)."""
        tgt_in = _check_tokens("tgt_in", tgt_in, self.config.tgt_vocab, self.config)
        memory, real = self.encode(src)
        check.same_batch(("src", "tgt_in"), (memory, tgt_in))
        h = self.decoder(self._embed(self.tgt_embed, tgt_in, 0), memory, memory_key_padding_mask=real)  # (B, T, M)
        return self.out(h)  # (B, T, V)

    def _stepper(self, src: Tensor) -> _TransformerStepper:
        return _TransformerStepper(self, *self.encode(src))


@contextmanager
def _weights_of(hook: AttentionHook) -> Iterator[list[Tensor]]:
    """The weights an attention layer hands its hook point while the block runs (the layer computes them:
    ``active`` is raised, as under :func:`attnlab.capture`)."""
    got: list[Tensor] = []

    def keep(module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        got.append(output.weights)  # (N, heads, L, S): the payload the hook returns

    hook.active += 1
    handle = hook.register_forward_hook(keep)
    try:
        yield got
    finally:
        handle.remove()
        hook.active -= 1


class _TransformerStepper:
    """The decoder of a :class:`TransformerSeq2Seq` over encoded sources, with one cache per decoder layer."""

    def __init__(self, model: TransformerSeq2Seq, memory: Tensor, real: Tensor) -> None:
        self.model = model
        self.memory, self.real = memory, real  # (N, S, M), (N, S)
        self.cache: list[DecoderLayerCache] = model.decoder.new_cache()
        last = model.decoder.layers[-1]
        assert isinstance(last, TransformerDecoderLayer)
        self.alignment_hook = last.cross_attn.attn_hook  # the last layer's cross-attention: the alignment

    def reorder(self, index: Tensor) -> None:
        self.memory, self.real = self.memory[index], self.real[index]
        for layer in self.cache:
            for kv in (layer.self_attn, layer.cross_attn):
                if kv.keys is not None and kv.values is not None:
                    kv.keys, kv.values = kv.keys[index], kv.values[index]  # (N', H, S, D)

    def step(self, tokens: Tensor, position: int) -> tuple[Tensor, Tensor]:
        m = self.model
        x = m._embed(m.tgt_embed, tokens[:, None], position)  # (N, 1, M)
        with _weights_of(self.alignment_hook) as got:
            h = m.decoder(x, self.memory, memory_key_padding_mask=self.real, cache=self.cache)  # (N, 1, M)
        w = got[-1].mean(dim=1)[:, 0]  # (N, heads, 1, S) -> (N, S): averaged over the heads
        return m.out(h[:, 0]), w  # (N, V), (N, S)
