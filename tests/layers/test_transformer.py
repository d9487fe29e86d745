"""Transformer encoder/decoder layers and stacks against an independent reference composition."""

from __future__ import annotations

import pytest
import torch
from helpers.layers_reference import decoder_layer_ref, encoder_layer_ref, layer_norm_ref, randomize

from attnlab.layers import (
    DecoderLayerCache,
    TransformerConfig,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

B, L, S, M, H, F = 2, 7, 5, 39, 3, 17
KPM_T = torch.tensor([[True] * 7, [True] * 5 + [False] * 2])
KPM_S = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])


def data(dtype=torch.float64, d=M):
    g = torch.Generator().manual_seed(11)
    x = torch.randn(B, L, d, generator=g, dtype=torch.float64).to(dtype)
    mem = torch.randn(B, S, d, generator=g, dtype=torch.float64).to(dtype)
    return x, mem


def maxdiff(a, b):
    return (a.double() - b.double()).abs().max().item()


FLAGS = [(False, "gelu"), (True, "relu"), (True, "gelu"), (False, "relu")]


@pytest.mark.parametrize("norm_first,activation", FLAGS)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_encoder_layer_matches_reference(norm_first, activation, dtype):
    layer = randomize(TransformerEncoderLayer(M, H, F, norm_first=norm_first, activation=activation, d_k=4, d_v=6))
    layer = layer.to(dtype).eval()
    x, _ = data(dtype)
    for kw in (dict(), dict(key_padding_mask=KPM_T), dict(causal=True)):
        out = layer(x, **kw)
        ref = encoder_layer_ref(layer, x.double(), kpm=kw.get("key_padding_mask"), causal=kw.get("causal", False))
        tol = 1e-12 if dtype == torch.float64 else 2e-5
        assert out.shape == (B, L, M) and maxdiff(out, ref) < tol, f"{kw}: largest difference {maxdiff(out, ref):.3g}"


@pytest.mark.parametrize("norm_first,activation", FLAGS)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_decoder_layer_matches_reference(norm_first, activation, dtype):
    layer = randomize(TransformerDecoderLayer(M, H, F, norm_first=norm_first, activation=activation)).to(dtype).eval()
    x, mem = data(dtype)
    out = layer(x, mem, key_padding_mask=KPM_T, memory_key_padding_mask=KPM_S)
    ref = decoder_layer_ref(layer, x.double(), mem.double(), kpm=KPM_T, memory_kpm=KPM_S)
    tol = 1e-12 if dtype == torch.float64 else 2e-5
    assert maxdiff(out, ref) < tol, f"largest difference {maxdiff(out, ref):.3g}"


@pytest.mark.parametrize("norm_first", [False, True])
def test_stacks_match_reference_composition(norm_first):
    cfg = TransformerConfig(M, H, F, norm_first=norm_first)
    enc = randomize(TransformerEncoder(cfg, 2)).double().eval()
    dec = randomize(TransformerDecoder(cfg, 2), seed=1).double().eval()
    assert (enc.norm is not None) == norm_first and (dec.norm is not None) == norm_first
    x, src = data()
    h = src
    for lyr in enc.layers:
        h = encoder_layer_ref(lyr, h, kpm=KPM_S)
    h = layer_norm_ref(h, enc.norm) if norm_first else h
    memory = enc(src, key_padding_mask=KPM_S)
    assert maxdiff(memory, h) < 1e-12
    y = x
    for lyr in dec.layers:
        y = decoder_layer_ref(lyr, y, memory, memory_kpm=KPM_S)
    y = layer_norm_ref(y, dec.norm) if norm_first else y
    assert maxdiff(dec(x, memory, memory_key_padding_mask=KPM_S), y) < 1e-12


def test_post_norm_and_pre_norm_differ():
    post = randomize(TransformerEncoderLayer(M, H, F)).double()
    pre = TransformerEncoderLayer(M, H, F, norm_first=True).double()
    pre.load_state_dict(post.state_dict())  # the same weights
    x, _ = data()
    a, b = post(x), pre(x)
    assert maxdiff(a, b) > 1e-2
    # post-norm output is normalised (before the gain/bias); pre-norm keeps the residual stream's scale
    z = (a - post.norm2.bias) / post.norm2.weight
    assert torch.allclose(z.mean(-1), torch.zeros(B, L, dtype=torch.float64), atol=1e-10)


@pytest.mark.parametrize("norm_first", [False, True])
def test_incremental_decoding_with_cache_equals_full_decoding(norm_first):
    dec = randomize(TransformerDecoder(TransformerConfig(M, H, F, norm_first=norm_first, d_k=4, d_v=6), 3))
    dec = dec.double().eval()
    x, mem = data()
    full = dec(x, mem, memory_key_padding_mask=KPM_S)
    cache = dec.new_cache()
    steps = [dec(x[:, :3], mem, memory_key_padding_mask=KPM_S, cache=cache)]  # a prompt of 3, then one by one
    steps += [dec(x[:, t : t + 1], mem, memory_key_padding_mask=KPM_S, cache=cache) for t in range(3, L)]
    err = maxdiff(torch.cat(steps, dim=1), full)
    assert err < 1e-12, f"cached decoding differs by {err:.3g}"
    assert all(len(c.self_attn) == L and len(c.cross_attn) == S for c in cache)


def test_decoder_layer_cache_single_layer():
    layer = randomize(TransformerDecoderLayer(M, H, F)).double().eval()
    x, mem = data()
    cache = DecoderLayerCache()
    steps = [layer(x[:, t : t + 1], mem, cache=cache) for t in range(L)]
    assert maxdiff(torch.cat(steps, dim=1), layer(x, mem)) < 1e-12


def test_causal_encoder_ignores_the_future():
    layer = randomize(TransformerEncoderLayer(M, H, F)).double()
    x, _ = data()
    y = x.clone()
    y[:, 4:] = torch.randn_like(y[:, 4:])
    assert maxdiff(layer(x, causal=True)[:, :4], layer(y, causal=True)[:, :4]) < 1e-12


@pytest.mark.parametrize("which", ["encoder", "decoder"])
@pytest.mark.slow
def test_gradcheck_inputs_and_parameters(which):
    small = dict(d_model=9, n_heads=3, d_ff=5, d_k=2, d_v=4)
    g = torch.Generator().manual_seed(2)
    x = torch.randn(2, 4, 9, generator=g, dtype=torch.float64, requires_grad=True)
    mem = torch.randn(2, 3, 9, generator=g, dtype=torch.float64, requires_grad=True)
    if which == "encoder":
        layer = randomize(TransformerEncoderLayer(**small, norm_first=True)).double()
        args, kw = (x,), dict(key_padding_mask=torch.tensor([[True] * 4, [True, True, False, False]]))
    else:
        layer = randomize(TransformerDecoderLayer(**small)).double()
        args, kw = (x, mem), dict(memory_key_padding_mask=torch.tensor([[True] * 3, [False] * 3]))  # no memory
    names = [n for n, _ in layer.named_parameters()]
    params = tuple(p.detach().clone().requires_grad_() for p in layer.parameters())
    n = len(args)

    def f(*flat):
        ps = dict(zip(names, flat[n:], strict=True))
        return torch.func.functional_call(layer, ps, tuple(flat[:n]), kw)

    assert torch.autograd.gradcheck(f, (*args, *params), eps=1e-6, atol=1e-7)


@pytest.mark.slow
def test_gradcheck_full_size_inputs():
    layer = randomize(TransformerDecoderLayer(M, H, F, norm_first=True)).double()
    x, mem = (t.requires_grad_() for t in data())
    assert torch.autograd.gradcheck(
        lambda a, b: layer(a, b, key_padding_mask=KPM_T, memory_key_padding_mask=KPM_S), (x, mem), eps=1e-6, atol=1e-7
    )


def test_hooks_see_causal_and_cross():
    dec = TransformerDecoder(TransformerConfig(M, H, F), 2)
    kinds = []
    for mod in dec.modules():
        if mod.__class__.__name__ == "AttentionHook":
            mod.active = 1
            mod.register_forward_hook(lambda m, a, o: kinds.append(a[0].kind))
    x, mem = data(torch.float32)
    dec(x, mem)
    assert kinds == ["causal", "cross", "causal", "cross"]
