"""Rotary positions (RoPE): the rotation against explicit 2x2 blocks in float64, the relative-position
property, and the ``rotary`` option of MultiHeadAttention with every kernel, caches and the decoder."""

from __future__ import annotations

import math

import pytest
import torch
from helpers.layers_reference import lin, randomize
from helpers.reference import attention_ref
from torch import Tensor

from attnlab.errors import ConfigError, ShapeError
from attnlab.functional import KERNELS
from attnlab.functional.rotary import apply_rotary
from attnlab.layers import KVCache, MultiHeadAttention, TransformerConfig, TransformerDecoder, TransformerEncoder


def rotation_matrix(p: int, dim: int, base: float = 10000.0) -> Tensor:
    """The block-diagonal ``(dim, dim)`` rotation of position ``p``: one 2x2 block per feature pair, float64."""
    r = torch.zeros(dim, dim, dtype=torch.float64)
    for i in range(dim // 2):
        a = p * base ** (-2 * i / dim)
        r[2 * i: 2 * i + 2, 2 * i: 2 * i + 2] = torch.tensor([[math.cos(a), -math.sin(a)],
                                                               [math.sin(a), math.cos(a)]], dtype=torch.float64)
    return r


def rotate_ref(x: Tensor, offset: int = 0) -> Tensor:
    """``x (..., L, D)`` with row ``p`` multiplied by ``rotation_matrix(offset + p)``: float64."""
    x = x.double()
    rows = [x[..., p, :] @ rotation_matrix(offset + p, x.shape[-1]).T for p in range(x.shape[-2])]
    return torch.stack(rows, dim=-2)


@pytest.mark.parametrize(("shape", "offset"), [((7, 6), 0), ((2, 3, 5, 8), 3), ((1, 1, 1, 2), 1000)])
def test_rotation_matches_explicit_blocks(shape: tuple[int, ...], offset: int) -> None:
    x = torch.randn(shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    got = apply_rotary(x, offset=offset)
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, rotate_ref(x, offset), atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(got.norm(dim=-1), x.norm(dim=-1))  # a rotation keeps lengths
    got32 = apply_rotary(x.float(), offset=offset)  # float32 within float32 rounding
    assert got32.dtype == torch.float32
    torch.testing.assert_close(got32.double(), rotate_ref(x, offset), atol=1e-5, rtol=1e-5)


def test_scores_depend_only_on_the_distance() -> None:
    """``(R_i q) . (R_j k)`` is unchanged when both positions move by the same shift."""
    g = torch.Generator().manual_seed(2)
    q, k = torch.randn(2, 16, dtype=torch.float64, generator=g)

    def score(i: int, j: int) -> float:
        qi = apply_rotary(q[None], offset=i)[0]
        kj = apply_rotary(k[None], offset=j)[0]
        return float(qi @ kj)

    for i, j in [(0, 0), (3, 1), (2, 9)]:
        for shift in (1, 17, 500):
            assert math.isclose(score(i, j), score(i + shift, j + shift), rel_tol=1e-9, abs_tol=1e-12)
    assert not math.isclose(score(3, 1), score(1, 3), abs_tol=1e-6)  # direction matters: it is not |i - j|
    assert not math.isclose(score(0, 0), score(0, 5), abs_tol=1e-6)  # distance matters


def test_bad_input() -> None:
    with pytest.raises(ShapeError, match="even"):
        apply_rotary(torch.zeros(3, 5))
    with pytest.raises(ConfigError, match="d_k is 5"):
        MultiHeadAttention(10, 2, rotary=True)
    with pytest.raises(ConfigError, match="rotary"):
        MultiHeadAttention(8, 2, rotary="yes")
    layer = MultiHeadAttention(8, 2, rotary=True)
    x, memory = torch.randn(1, 3, 8), torch.randn(1, 4, 8)
    with pytest.raises(ConfigError, match="cross-attention"):
        layer(x, memory)


def test_layer_matches_float64_reference() -> None:
    """MultiHeadAttention(rotary=True): project, rotate q and k per head by their positions, dense attention."""
    torch.manual_seed(0)
    m = randomize(MultiHeadAttention(12, 2, rotary=True).double())
    x = torch.randn(2, 5, 12, dtype=torch.float64)
    kpm = torch.tensor([[True] * 5, [True, True, True, False, False]])
    out, w = m(x, key_padding_mask=kpm, return_weights=True)
    q = lin(x, m.q_proj).reshape(2, 5, 2, 6).transpose(1, 2)  # (B, H, L, Dk)
    k = lin(x, m.k_proj).reshape(2, 5, 2, 6).transpose(1, 2)
    v = lin(x, m.v_proj).reshape(2, 5, 2, 6).transpose(1, 2)
    o_ref, w_ref = attention_ref(rotate_ref(q), rotate_ref(k), v, mask=kpm[:, None, None, :])
    torch.testing.assert_close(w, w_ref)
    torch.testing.assert_close(out, lin(o_ref.transpose(1, 2).reshape(2, 5, 12), m.out_proj))


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_every_kernel_takes_rotary_positions(kernel: str) -> None:
    """Rotation happens before the kernel: each kernel gives what it gives on the rotated q and k, and the
    positions change the output (a permuted sequence is no longer a permuted output)."""
    torch.manual_seed(0)
    plain = MultiHeadAttention(8, 2, kernel=kernel)
    rotary = MultiHeadAttention(8, 2, kernel=kernel, rotary=True)
    rotary.load_state_dict(plain.state_dict())
    x = torch.randn(1, 6, 8)
    perm = torch.tensor([3, 0, 5, 1, 4, 2])
    with torch.no_grad():
        p_out, r_out = plain(x)[0], rotary(x)[0]
        p_perm, r_perm = plain(x[:, perm])[0], rotary(x[:, perm])[0]
    assert torch.isfinite(r_out).all()
    if kernel != "lsh":  # lsh's buckets depend on the order; the others are permutation-equivariant without positions
        torch.testing.assert_close(p_perm, p_out[:, perm], atol=1e-5, rtol=1e-5)
    assert (r_perm - r_out[:, perm]).abs().max() > 1e-3


@pytest.mark.parametrize("kernel", ["dense", "memory_efficient", "local"])
def test_cached_decoding_equals_the_full_causal_pass(kernel: str) -> None:
    """With a KVCache each new token's position continues after the cached ones."""
    torch.manual_seed(0)
    m = MultiHeadAttention(8, 2, kernel=kernel, rotary=True).eval()
    x = torch.randn(2, 6, 8)
    with torch.no_grad():
        full = m(x, causal=True)[0]
        cache = KVCache()
        steps = [m(x[:, :2], causal=True, cache=cache)[0]]  # a prompt of two tokens, then one at a time
        steps += [m(x[:, t: t + 1], causal=True, cache=cache)[0] for t in range(2, 6)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)


def test_stacks_rotate_self_attention_only() -> None:
    cfg = TransformerConfig(8, 2, 16, rotary=True)
    encoder, decoder = TransformerEncoder(cfg, 2), TransformerDecoder(cfg, 1)
    assert all(layer.self_attn.config.rotary for layer in encoder.layers)
    assert decoder.layers[0].self_attn.config.rotary and not decoder.layers[0].cross_attn.config.rotary
    memory = encoder(torch.randn(1, 5, 8))
    assert decoder(torch.randn(1, 3, 8), memory).shape == (1, 3, 8)


def test_capture_records_the_rotated_queries_and_keys() -> None:
    """``capture(qk=True)`` stores the q and k the kernel used: softmax(q k^T * scale) gives the recorded weights."""
    from attnlab import capture

    torch.manual_seed(0)
    m = MultiHeadAttention(8, 2, rotary=True).eval()
    with torch.no_grad(), capture(m, qk=True) as trace:
        m(torch.randn(1, 5, 8))
    r = trace.records[0]
    assert r.q is not None and r.k is not None and r.scale is not None
    weights = torch.softmax(r.q @ r.k.transpose(-1, -2) * r.scale, dim=-1)
    torch.testing.assert_close(weights, r.weights, atol=1e-6, rtol=1e-5)
