"""The convolution-augmented attention block against an independent reference."""

from __future__ import annotations

import pytest
import torch
from helpers.layers_reference import conv_block_ref, grouped_conv_ref, randomize

from attnlab.errors import ConfigError
from attnlab.layers import ConvAttentionBlock, ConvAttentionConfig

B, L, M, H = 2, 7, 39, 3
KPM = torch.tensor([[True] * 7, [True] * 4 + [False] * 3])


def maxdiff(a, b):
    return (a.double() - b.double()).abs().max().item()


@pytest.mark.parametrize("groups", [None, 1, 3])
@pytest.mark.parametrize("kernel_size", [1, 3, 5])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("padded", [False, True])
def test_matches_reference(kernel_size, dtype, padded, groups):
    block = randomize(ConvAttentionBlock(M, H, kernel_size=kernel_size, groups=groups)).to(dtype).eval()
    x = torch.randn(B, L, M, dtype=torch.float64).to(dtype)
    kpm = KPM if padded else None
    out = block(x, key_padding_mask=kpm)
    ref = conv_block_ref(block, x.double(), kpm)
    tol = 1e-12 if dtype == torch.float64 else 2e-5
    assert out.shape == (B, L, M) and maxdiff(out, ref) < tol, f"largest difference {maxdiff(out, ref):.3g}"


def test_padded_positions_do_not_reach_real_ones():
    block = randomize(ConvAttentionBlock(M, H, kernel_size=5)).double()
    x = torch.randn(B, L, M, dtype=torch.float64)
    y = x.clone()
    y[1, 4:] = 100 * torch.randn(3, M, dtype=torch.float64)  # change only the padding
    a, b = block(x, key_padding_mask=KPM), block(y, key_padding_mask=KPM)
    assert maxdiff(a[:, :4], b[:, :4]) < 1e-12 and maxdiff(a[0], b[0]) < 1e-12
    # without the mask the change does leak through attention and the convolution
    assert maxdiff(block(x)[1, :4], block(y)[1, :4]) > 1e-3


def test_convolution_is_depthwise_and_local():
    block = ConvAttentionBlock(M, H, kernel_size=3)
    assert block.conv.groups == M and block.conv.weight.shape == (M, 1, 3)


@pytest.mark.parametrize(("groups", "per_group"), [(None, 1), (1, M), (3, M // 3), (13, 3)])
@pytest.mark.parametrize("kernel_size", [1, 5])
def test_convolution_equals_torch_conv1d_in_float64(groups, per_group, kernel_size):
    """The block's convolution branch is torch's Conv1d with the same weights (float64, odd sizes), and the
    independent loop reference agrees with both; groups=1 is the full convolution over the channels."""
    block = randomize(ConvAttentionBlock(M, H, kernel_size=kernel_size, groups=groups)).double()
    assert block.conv.weight.shape == (M, per_group, kernel_size)
    torch_conv = torch.nn.Conv1d(M, M, kernel_size, padding=kernel_size // 2, groups=M // per_group).double()
    torch_conv.load_state_dict(block.conv.state_dict())
    x = torch.randn(B, L, M, dtype=torch.float64)
    got = block.conv(x.transpose(1, 2)).transpose(1, 2)  # (B, L, M)
    want = torch_conv(x.transpose(1, 2)).transpose(1, 2)
    loops = grouped_conv_ref(x, block.conv.weight, block.conv.bias)
    assert maxdiff(got, want) < 1e-12, f"largest difference {maxdiff(got, want):.3g}"
    assert maxdiff(loops, want) < 1e-12, f"largest difference {maxdiff(loops, want):.3g}"


def test_full_convolution_mixes_channels_and_depthwise_does_not():
    x = torch.zeros(1, L, M, dtype=torch.float64)
    x[0, 3, 0] = 1.0  # one channel at one position
    for groups, reached in ((1, M), (None, 1)):
        block = randomize(ConvAttentionBlock(M, H, kernel_size=3, groups=groups)).double()
        torch.nn.init.zeros_(block.conv.bias)
        c = block.conv(x.transpose(1, 2)).transpose(1, 2)  # (1, L, M)
        assert int((c[0, 3].abs() > 0).sum()) == reached  # channels the impulse reaches at its position
        assert (c[0, [0, 1, 5, 6]] == 0).all()  # and nothing beyond kernel_size // 2 positions


@pytest.mark.parametrize("groups", [0, -3, 2, 1.5, True, "1"])
def test_bad_groups_are_refused_with_the_fix(groups):
    with pytest.raises(ConfigError, match="groups") as err:
        ConvAttentionBlock(M, H, groups=groups)
    if groups == 2:
        assert "does not divide d_model=39" in str(err.value) and "groups=1" in str(err.value)


def test_groups_round_trip_through_the_config():
    block = ConvAttentionBlock(M, H, groups=1)
    assert block.config == ConvAttentionConfig(M, H, groups=1)
    assert ConvAttentionBlock.from_config(block.config).conv.groups == 1


@pytest.mark.slow
def test_gradcheck():
    block = randomize(ConvAttentionBlock(9, 3, kernel_size=3)).double()
    x = torch.randn(2, 5, 9, dtype=torch.float64, requires_grad=True)
    kpm = torch.tensor([[True] * 5, [True, True, True, False, False]])
    names = [n for n, _ in block.named_parameters()]
    params = tuple(p.detach().clone().requires_grad_() for p in block.parameters())

    def f(x, *ps):
        return torch.func.functional_call(block, dict(zip(names, ps, strict=True)), (x,), dict(key_padding_mask=kpm))

    assert torch.autograd.gradcheck(f, (x, *params), eps=1e-6, atol=1e-7)
