"""Layers are built from their frozen config through one path, and carry per-instance kernel options."""

from __future__ import annotations

import copy
import dataclasses

import pytest
import torch
from helpers.layers_reference import randomize

from attnlab import functional, masks
from attnlab.errors import ConfigError
from attnlab.layers import (
    AttentionConfig,
    BahdanauAttention,
    ConvAttentionBlock,
    ConvAttentionConfig,
    FeedForward,
    FeedForwardConfig,
    LuongAttention,
    MultiHeadAttention,
    RecurrentAttentionConfig,
    TransformerConfig,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from attnlab.layers.linformer import LinformerConfig, LinformerSelfAttention

B, L, M, H = 2, 11, 15, 3


def x(seed=0, length=L):
    return torch.randn(B, length, M, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def twin(layer, **options):
    """A layer of the same config with ``options`` changed and the same weights."""
    other = type(layer).from_config(dataclasses.replace(layer.config, **options)).double().eval()
    other.load_state_dict(layer.state_dict())
    return other


# --- one constructor path ----------------------------------------------------------------------------


@pytest.mark.parametrize("layer_type,config_type,args", [
    (MultiHeadAttention, AttentionConfig, (M, H)),
    (TransformerEncoderLayer, TransformerConfig, (M, H, 17)),
    (TransformerDecoderLayer, TransformerConfig, (M, H, 17)),
    (FeedForward, FeedForwardConfig, (M, 17)),
    (LuongAttention, RecurrentAttentionConfig, (M, M)),
    (ConvAttentionBlock, ConvAttentionConfig, (M, H)),
    (LinformerSelfAttention, LinformerConfig, (M, H, 16)),
])
def test_config_round_trip_and_unknown_options(layer_type, config_type, args):
    layer = layer_type(*args)
    assert type(layer.config) is config_type and layer.config == config_type(*args)
    assert layer_type.from_config(layer.config).config == layer.config
    with pytest.raises(ConfigError) as info:
        layer_type(*args, dropuot=0.1)
    msg = str(info.value)
    assert "'dropuot'" in msg and layer_type.__name__ in msg
    for f in dataclasses.fields(config_type):  # names every option it accepts
        assert f.name in msg
    with pytest.raises(ConfigError, match=f"config must be a {config_type.__name__}"):
        layer_type.from_config(dict(zip(("d_model", "n_heads"), args, strict=False)))


def test_positional_calls_keep_working():
    m = MultiHeadAttention(M, H, 4, 6, 0.1, False, "dense")
    assert (m.config.d_k, m.config.d_v, m.config.dropout, m.config.bias) == (4, 6, 0.1, False)
    assert TransformerEncoderLayer(M, H, 17, 0.0, True, "relu").config.norm_first is True
    assert LuongAttention(8, 6, "general").config.score == "general"
    assert BahdanauAttention(8, 6, 9).config == RecurrentAttentionConfig(8, 6, "additive", 9)
    assert LuongAttention(8, 6, "concat").config.d_attn == 8  # default hidden size: d_query


def test_too_many_or_missing_arguments_are_config_errors():
    with pytest.raises(ConfigError, match="MultiHeadAttention: too many positional arguments"):
        MultiHeadAttention(M, H, None, None, 0.0, True, "dense", None, None, {}, "extra")
    with pytest.raises(ConfigError, match="BahdanauAttention's score is always 'additive'"):
        BahdanauAttention(8, 8, 4, score="dot")


# --- kernel options ----------------------------------------------------------------------------------


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("window", [3, (2, 1)])
def test_local_kernel_options_equal_dense_with_the_window_mask(window, causal):
    local = randomize(MultiHeadAttention(M, H, kernel="local", kernel_options={"window": window})).double().eval()
    dense = twin(local, kernel="dense", kernel_options={})
    before, after = (window, window) if isinstance(window, int) else window
    got = local(x(), causal=causal)[0]
    want = dense(x(), mask=masks.window(before, after), causal=causal)[0]
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-10)
    wide = dense(x(), causal=causal)[0]  # the window binds: without it the result differs
    assert (got - wide).abs().max() > 1e-3


def test_linear_feature_map_option_equals_linear_relu():
    relu = randomize(MultiHeadAttention(M, H, kernel="linear_relu")).double().eval()
    opt = twin(relu, kernel="linear", kernel_options={"feature_map": "relu"})
    elu = twin(relu, kernel="linear", kernel_options={})
    torch.testing.assert_close(opt(x())[0], relu(x())[0], rtol=1e-12, atol=1e-12)
    assert (elu(x())[0] - relu(x())[0]).abs().max() > 1e-6


def test_dense_temperature_option():
    hot = randomize(MultiHeadAttention(M, H, kernel_options={"temperature": 0.5})).double().eval()
    plain = twin(hot, kernel_options={})
    _, w_hot = hot(x(), return_weights=True)
    _, w = plain(x(), return_weights=True)
    sharpened = torch.softmax(torch.log(w) * 2.0, dim=-1)  # tau = 0.5 doubles the scores
    torch.testing.assert_close(w_hot, sharpened, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kernel,options,words", [
    ("local", {"windw": 3}, ["'local'", "'windw'", "it takes window"]),
    ("linear", {"feature": "relu"}, ["'feature'", "feature_map"]),
    ("efficient", {"window": 3}, ["'window'", "it takes none"]),
    ("dense", {"mask": None}, ["may not set 'mask'", "forward()"]),
    ("dense", {"dropout": 0.1}, ["may not set 'dropout'", "on the layer"]),
    ("local", {"window": -1}, ["refuses", "window must be an int w >= 0", "-1"]),
    ("local", {"window": True}, ["refuses", "a bool"]),
    ("linear", {"feature_map": "tanh"}, ["refuses", "feature_map must be one of", "'tanh'"]),
    ("performer", {"features": 0}, ["refuses", "num_features", "0"]),
    ("dense", {"temperature": 0.0}, ["refuses", "temperature"]),
    ("dense", [("temperature", 1.0)], ["kernel_options must be a mapping", "list"]),
    ("dense", {1: 2}, ["kernel_options key must be a str"]),
])
def test_bad_kernel_options_fail_at_construction(kernel, options, words):
    with pytest.raises(ConfigError) as info:
        MultiHeadAttention(M, H, kernel=kernel, kernel_options=options)
    for w in words:
        assert w in str(info.value), f"{w!r} missing from: {info.value}"


def test_kernel_options_are_stored_read_only():
    given = {"window": 2}
    cfg = AttentionConfig(M, H, kernel="local", kernel_options=given)
    given["window"] = 5  # the caller's dict is copied
    assert cfg.kernel_options == {"window": 2}
    with pytest.raises(TypeError):
        cfg.kernel_options["window"] = 4  # type: ignore[index]
    assert hash(cfg) == hash(AttentionConfig(M, H, kernel="local", kernel_options={"window": 2}))
    layer = MultiHeadAttention.from_config(cfg)
    clone = copy.deepcopy(layer)  # cloning a layer (torch does it to repeat layers) keeps the options
    assert clone.config == cfg and clone.config.kernel_options is not cfg.kernel_options


def test_a_kernel_taking_any_keyword_accepts_any_option(monkeypatch):
    seen = []

    def spy(q, k, v, **kw):
        seen.append(kw)
        return functional.attention(q, k, v, **{n: a for n, a in kw.items() if n != "tag"})

    # a kernel that declares options=None takes any keyword: the layer passes them all and the kernel checks them
    monkeypatch.setitem(functional.KERNELS, "spy", functional.KernelSpec(spy, weights=True, dropout=True, options=None))
    m = MultiHeadAttention(M, H, kernel="spy", kernel_options={"tag": 7}).double().eval()
    m(x())
    assert seen[-1]["tag"] == 7


def test_switching_the_kernel_checks_the_options_against_the_new_one():
    m = MultiHeadAttention(M, H, kernel="local", kernel_options={"window": 2}).double().eval()
    m.kernel = "dense"
    with pytest.raises(ConfigError, match="kernel 'dense' has no option 'window'"):
        m(x())


def test_kernel_options_survive_from_config_and_the_stacks():
    cfg = TransformerConfig(M, H, 17, kernel="local", kernel_options={"window": 2})
    enc = randomize(TransformerEncoder(cfg, 2)).double().eval()
    for layer in enc.layers:
        assert layer.config == cfg and layer.self_attn.config.kernel_options == {"window": 2}
        assert MultiHeadAttention.from_config(layer.self_attn.config).config.kernel_options == {"window": 2}
    dense = TransformerEncoder(dataclasses.replace(cfg, kernel="dense", kernel_options={}), 2).double().eval()
    dense.load_state_dict(enc.state_dict())
    torch.testing.assert_close(enc(x()), dense(x(), mask=masks.window(2)), rtol=1e-10, atol=1e-10)
    assert TransformerEncoderLayer.from_config(cfg).self_attn.config.kernel_options == {"window": 2}
    block = ConvAttentionBlock(M, H, kernel="local", kernel_options={"window": 1})
    assert ConvAttentionBlock.from_config(block.config).attn.config.kernel_options == {"window": 1}
    with pytest.raises(ConfigError, match="'windw'"):
        TransformerConfig(M, H, 17, kernel="local", kernel_options={"windw": 2})
