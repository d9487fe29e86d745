"""Mask predicates against explicit loops over (query, key) pairs."""

from __future__ import annotations

import pytest
import torch

from attnlab import masks
from attnlab.errors import ConfigError, MaskError


def loop_mask(L, S, keep):
    return torch.tensor([[keep(i + S - L, j) for j in range(S)] for i in range(L)])


@pytest.mark.parametrize("L,S", [(7, 7), (3, 8), (8, 3), (1, 5)])
def test_causal_bottom_right(L, S):
    assert torch.equal(masks.causal().materialize(L, S)[0, 0], loop_mask(L, S, lambda a, j: j <= a))


@pytest.mark.parametrize("before,after,dilation", [(2, 2, 1), (3, 0, 1), (0, 1, 1), (2, 1, 2), (1, 1, 3)])
@pytest.mark.parametrize("L,S", [(9, 9), (4, 9)])
def test_window(before, after, dilation, L, S):
    got = masks.window(before, after, dilation=dilation).materialize(L, S)[0, 0]

    def keep(a, j):
        d = a - j
        return -after * dilation <= d <= before * dilation and d % dilation == 0

    assert torch.equal(got, loop_mask(L, S, keep))


def test_window_default_is_two_sided():
    assert torch.equal(masks.window(2).materialize(6, 6), masks.window(2, 2).materialize(6, 6))


@pytest.mark.parametrize("stride", [1, 3, 4])
def test_strided(stride):
    got = masks.strided(stride).materialize(10, 10)[0, 0]
    assert torch.equal(got, loop_mask(10, 10, lambda a, j: (a - j) % stride == 0))


def test_sparse_transformer_factorised_pattern():
    m = masks.causal() & (masks.window(2, 0) | masks.strided(3))
    got = m.materialize(9, 9)[0, 0]
    assert torch.equal(got, loop_mask(9, 9, lambda a, j: j <= a and (a - j <= 2 or (a - j) % 3 == 0)))


def test_global_tokens():
    got = masks.global_tokens([0, 4]).materialize(7, 7)[0, 0]
    assert torch.equal(got, loop_mask(7, 7, lambda a, j: a in (0, 4) or j in (0, 4)))
    both = (masks.window(1) | masks.global_tokens([0])).materialize(6, 6)[0, 0]
    assert both[5, 0] and both[0, 5] and not both[5, 2] and both[5, 4]


def test_padding_from_lengths_and_key_mask():
    m = masks.padding([3, 1, 4]).materialize(2, 4)
    assert m.shape == (3, 1, 2, 4)
    assert torch.equal(m[:, 0, 0], torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 1, 1]], dtype=torch.bool))
    km = torch.tensor([[1, 1, 0], [1, 0, 0]])
    m2 = masks.key_padding(km).materialize(5, 3)
    assert m2.shape == (2, 1, 5, 3) and torch.equal(m2[:, 0, 4], km.bool())


def test_combine_and_or_not():
    a, b = masks.causal(), masks.window(1)
    A, B = a.materialize(6, 6), b.materialize(6, 6)
    assert torch.equal(masks.combine(a, b).materialize(6, 6), A & B)
    assert torch.equal(masks.combine(a, b, op="or").materialize(6, 6), A | B)
    assert torch.equal((a & b).materialize(6, 6), A & B)
    assert torch.equal((a | b).materialize(6, 6), A | B)
    assert torch.equal((~a).materialize(6, 6), ~A)
    assert "causal" in repr(a & b)
    padded = (masks.padding([2, 6]) & a).materialize(6, 6)
    assert padded.shape == (2, 1, 6, 6) and not padded[0, 0, 5, 3] and padded[1, 0, 5, 3]


def test_block_equals_slice_of_full_mask():
    m = masks.causal() & masks.window(3, 1) | masks.global_tokens([2])
    full = m.materialize(11, 13)
    assert torch.equal(m.block(11, 13, 3, 8, 4, 13), full[..., 3:8, 4:13])


@pytest.mark.parametrize(
    "make,arg",
    [
        (lambda: masks.window(-1), "before"),
        (lambda: masks.window(2, -3), "after"),
        (lambda: masks.window(2, dilation=0), "dilation"),
        (lambda: masks.strided(0), "stride"),
        (lambda: masks.padding([]), "lengths"),
        (lambda: masks.global_tokens([-1]), "indices"),
        (lambda: masks.combine(), "at least one"),
        (lambda: masks.combine(masks.causal(), op="xor"), "op"),
    ],
)
def test_bad_mask_arguments(make, arg):
    with pytest.raises(ConfigError, match=arg):
        make()


def test_bad_key_mask():
    with pytest.raises(MaskError, match="key_mask"):
        masks.key_padding(torch.ones(3, dtype=torch.bool))
    with pytest.raises(MaskError, match="key_mask"):
        masks.key_padding(torch.ones(2, 3))
    with pytest.raises(MaskError, match="batch size"):
        masks.padding([1, 2]) & masks.padding([1, 2, 3])
