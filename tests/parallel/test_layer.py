"""``MultiHeadAttention(kernel="ring")``: alone it is exact attention (so one model runs in one process and
sharded); it takes key-padding masks and refuses weights, dropout, options and other masks clearly."""

from __future__ import annotations

import pytest
import torch

import attnlab as al
from attnlab.errors import ConfigError, MaskError
from attnlab.parallel import sequence_parallel


@pytest.mark.parametrize("rotary", [False, True])
def test_ring_layer_alone_equals_dense(rotary: bool) -> None:
    torch.manual_seed(0)
    layer = al.MultiHeadAttention(12, 3, kernel="ring", rotary=rotary).double()
    x = torch.randn(2, 7, 12, dtype=torch.float64)
    pad = torch.tensor([[True] * 7, [True] * 4 + [False] * 3])
    ring, _ = layer(x, causal=True, key_padding_mask=pad)
    with sequence_parallel(7, layout="zigzag") as sp:  # one process: a world of one, padded to 2 chunks of 4
        inside, _ = layer(sp.shard(x), causal=True, key_padding_mask=sp.shard(pad))
    assert inside.shape[1] == 8
    layer.kernel = "dense"
    dense, _ = layer(x, causal=True, key_padding_mask=pad)
    assert (ring - dense).abs().max().item() <= 1e-12
    assert (inside[:, :7] - dense).abs().max().item() <= 1e-12


def test_ring_layer_refuses_what_it_cannot_do() -> None:
    layer = al.MultiHeadAttention(8, 2, kernel="ring")
    x = torch.randn(1, 5, 8)
    with pytest.raises(ConfigError, match="never builds"):
        layer(x, return_weights=True)
    with pytest.raises(MaskError, match="key-padding mask only"):
        layer(x, mask=al.masks.window(2))
    with pytest.raises(ConfigError, match="has no option 'layout'; it takes none"):  # its registration declares none
        al.MultiHeadAttention(8, 2, kernel="ring", kernel_options={"layout": "zigzag"})
    with pytest.raises(ConfigError, match=r"unknown attention kernel 'rinng'; choose one of .*'ring'"):
        al.MultiHeadAttention(8, 2, kernel="rinng")


def test_rotary_takes_the_rows_positions_of_a_shard() -> None:
    from attnlab.errors import ShapeError
    from attnlab.functional.rotary import apply_rotary
    from attnlab.parallel import shard, shard_positions

    x = torch.randn(2, 3, 13, 8, dtype=torch.float64)  # (B, H, N, D)
    full = apply_rotary(x)
    for rank in range(3):  # each zigzag shard rotated by its own positions is the shard of the rotated whole
        mine = apply_rotary(shard(x, 3, rank, layout="zigzag"), positions=shard_positions(13, 3, rank, layout="zigzag"))
        real = shard_positions(13, 3, rank, layout="zigzag") < 13
        assert torch.allclose(mine[..., real, :], shard(full, 3, rank, layout="zigzag")[..., real, :], atol=1e-12)
    with pytest.raises(ShapeError, match="one position per row"):
        apply_rotary(x, positions=torch.arange(12))
