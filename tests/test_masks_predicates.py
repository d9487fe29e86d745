"""Masks whose predicate depends on the batch and head indices: materialize and block against a plain loop."""

from __future__ import annotations

import itertools

import pytest
import torch

from attnlab import masks
from attnlab.masks import Mask


def _loop(fn, batch: int, heads: int, q_len: int, k_len: int) -> torch.Tensor:
    """The mask built one (b, h, i, j) at a time with python ints turned into 0-d tensors."""
    out = torch.zeros(batch, heads, q_len, k_len, dtype=torch.bool)
    for b, h, i, j in itertools.product(range(batch), range(heads), range(q_len), range(k_len)):
        t = [torch.tensor(x) for x in (b, h, i, j)]
        out[b, h, i, j] = bool(fn(*t, q_len, k_len))
    return out


def _striped(b, h, q, k, ql, kl):  # depends on every index, so no dimension may be broadcast away
    return (k + 2 * b + 3 * h + q) % 4 != 0


@pytest.mark.parametrize(("batch", "heads", "q_len", "k_len"), [(2, 3, 4, 5), (3, 1, 1, 7), (1, 2, 5, 3)])
def test_materialize_follows_batch_and_head(batch, heads, q_len, k_len):
    m = Mask(_striped, "striped")
    got = m.materialize(q_len, k_len, batch=batch, heads=heads)
    assert got.shape == (batch, heads, q_len, k_len)
    assert torch.equal(got, _loop(_striped, batch, heads, q_len, k_len))


def test_block_is_the_slice_of_the_whole():
    m = Mask(_striped, "striped")
    whole = m.materialize(6, 7, batch=2, heads=3)
    for q0, q1, k0, k1 in [(0, 6, 0, 7), (1, 4, 2, 7), (5, 6, 0, 1), (2, 2, 3, 5)]:
        part = m.block(6, 7, q0, q1, k0, k1, batch=2, heads=3)
        assert torch.equal(part, whole[:, :, q0:q1, k0:k1]), (q0, q1, k0, k1)


def test_batch_size_of_the_mask_is_used_when_batch_is_not_given():
    m = Mask(_striped, "striped", batch_size=3)
    assert torch.equal(m.materialize(2, 4, heads=2), _loop(_striped, 3, 2, 2, 4))
    assert m.materialize(2, 4, batch=1, heads=2).shape == (1, 2, 2, 4)  # an explicit batch wins


def test_invert_keeps_the_batch_size_and_negates_every_entry():
    pad = masks.padding([2, 4, 1])
    inv = ~pad
    assert inv.batch_size == 3
    assert torch.equal(inv.materialize(2, 4), ~pad.materialize(2, 4))
    assert inv.materialize(2, 4).shape == (3, 1, 2, 4)


def test_combined_with_padding_follows_each_row():
    m = masks.padding([3, 1]) & Mask(lambda b, h, q, k, ql, kl: (h + k) % 2 == 0, "even")
    got = m.materialize(2, 4, heads=2)
    lengths = [3, 1]
    want = torch.tensor([[[[j < lengths[b] and (h + j) % 2 == 0 for j in range(4)] for _ in range(2)]
                          for h in range(2)] for b in range(2)])
    assert torch.equal(got, want)


def test_broadcast_dimensions_stay_one():
    assert masks.causal().materialize(3, 3, batch=4, heads=5).shape == (1, 1, 3, 3)
    assert masks.padding([1, 2]).materialize(3, 3, heads=5).shape == (2, 1, 3, 3)
