"""Bad input to the layers raises an attnlab error whose message names the argument."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from attnlab.errors import AttnLabError, ConfigError, DTypeError, MaskError, ShapeError
from attnlab.layers import (
    BahdanauAttention,
    ConvAttentionBlock,
    KVCache,
    LuongAttention,
    MultiHeadAttention,
    TransformerConfig,
    TransformerDecoder,
    TransformerEncoder,
)

x = torch.randn(2, 7, 39)
mem = torch.randn(2, 5, 39)
mha = MultiHeadAttention(39, 3)


def cached_cross_with_new_memory():
    cache = KVCache()
    mha(x, mem, cache=cache)
    mha(x, torch.randn(2, 6, 39), cache=cache)


def decoder_with_short_cache():
    dec = TransformerDecoder(TransformerConfig(39, 3, 11), 2)
    dec(x, mem, cache=dec.new_cache()[:1])


CASES = [
    # (call, error type, words the message must contain)
    (lambda: MultiHeadAttention(39, 4), ConfigError, ["d_model=39", "n_heads=4", "d_k"]),
    (lambda: MultiHeadAttention(0, 3), ConfigError, ["d_model", "0"]),
    (lambda: MultiHeadAttention(39, 3, d_k=-2), ConfigError, ["d_k", "-2"]),
    (lambda: MultiHeadAttention(39, 3, dropout=1.0), ConfigError, ["dropout", "[0, 1)"]),
    (lambda: MultiHeadAttention(39, 3, kernel="flash9"), ConfigError, ["kernel", "flash9", "dense"]),
    (lambda: mha(x[0]), ShapeError, ["query", "(7, 39)", "query[None]"]),
    (lambda: mha(x, torch.randn(2, 5, 38)), ShapeError, ["key", "38", "39"]),
    (lambda: mha(x, mem, torch.randn(2, 6, 39)), ShapeError, ["key", "value", "5", "6"]),
    (lambda: mha(x, torch.randn(3, 5, 39)), ShapeError, ["batch", "query 2", "key 3"]),
    (lambda: mha(x.double()), DTypeError, ["query", "float64", "float32"]),
    (lambda: mha(x, key_padding_mask=torch.ones(2, 5, dtype=torch.bool)), MaskError, ["key_padding_mask", "(2, 7)"]),
    (lambda: mha(x, key_padding_mask=torch.zeros(2, 7)), MaskError, ["key_padding_mask", "float32", "mask="]),
    (lambda: mha(x, mask=torch.ones(7, 4, dtype=torch.bool)), MaskError, ["mask", "(7, 4)", "key_padding_mask="]),
    (cached_cross_with_new_memory, ShapeError, ["cache", "key", "KVCache()"]),
    (decoder_with_short_cache, ConfigError, ["cache", "new_cache()"]),
    (lambda: MultiHeadAttention.from_torch(nn.Linear(3, 3)), ConfigError, ["module", "MultiheadAttention", "Linear"]),
    (lambda: MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2, add_bias_kv=True)), ConfigError,
     ["add_bias_kv"]),
    (lambda: MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2, add_zero_attn=True)), ConfigError,
     ["add_zero_attn"]),
    (lambda: LuongAttention(8, 6, "dot"), ConfigError, ["d_query", "d_key", "general"]),
    (lambda: LuongAttention(8, 8, "cosine"), ConfigError, ["score", "cosine"]),
    (lambda: LuongAttention(8, 8, "dot", d_attn=4), ConfigError, ["d_attn", "concat"]),
    (lambda: BahdanauAttention(8, 8, 0), ConfigError, ["d_attn", "0"]),
    (lambda: BahdanauAttention(8, 6, 4)(torch.randn(2, 8), torch.randn(2, 5, 7)), ShapeError, ["keys", "6"]),
    (lambda: LuongAttention(8, 8)(torch.randn(2, 8), torch.randn(2, 5, 8), key_padding_mask=torch.ones(2, 4)),
     MaskError, ["key_padding_mask"]),
    (lambda: TransformerConfig(39, 3, 11, activation="swish"), ConfigError, ["activation", "swish", "gelu"]),
    (lambda: TransformerConfig(39, 3, 0), ConfigError, ["d_ff"]),
    (lambda: TransformerConfig(39, 3, 11, norm_first="yes"), ConfigError, ["norm_first", "pre-norm"]),
    (lambda: TransformerEncoder(TransformerConfig(39, 3, 11), 0), ConfigError, ["n_layers"]),
    (lambda: ConvAttentionBlock(39, 3, kernel_size=4), ConfigError, ["kernel_size", "odd", "4"]),
]


@pytest.mark.parametrize("call,exc,words", CASES, ids=[f"{i}-{c[1].__name__}" for i, c in enumerate(CASES)])
def test_bad_input(call, exc, words):
    with pytest.raises(exc) as info:
        call()
    assert isinstance(info.value, AttnLabError)
    msg = str(info.value)
    for w in words:
        assert w in msg, f"{w!r} missing from: {msg}"
