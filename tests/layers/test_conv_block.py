"""The convolution-augmented attention block against an independent reference."""

from __future__ import annotations

import pytest
import torch
from layers_reference import conv_block_ref, randomize

from attnlab.layers import ConvAttentionBlock

B, L, M, H = 2, 7, 39, 3
KPM = torch.tensor([[True] * 7, [True] * 4 + [False] * 3])


def maxdiff(a, b):
    return (a.double() - b.double()).abs().max().item()


@pytest.mark.parametrize("kernel_size", [1, 3, 5])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("padded", [False, True])
def test_matches_reference(kernel_size, dtype, padded):
    block = randomize(ConvAttentionBlock(M, H, kernel_size=kernel_size)).to(dtype).eval()
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


def test_gradcheck():
    block = randomize(ConvAttentionBlock(9, 3, kernel_size=3)).double()
    x = torch.randn(2, 5, 9, dtype=torch.float64, requires_grad=True)
    kpm = torch.tensor([[True] * 5, [True, True, True, False, False]])
    names = [n for n, _ in block.named_parameters()]
    params = tuple(p.detach().clone().requires_grad_() for p in block.parameters())

    def f(x, *ps):
        return torch.func.functional_call(block, dict(zip(names, ps, strict=True)), (x,), dict(key_padding_mask=kpm))

    assert torch.autograd.gradcheck(f, (x, *params), eps=1e-6, atol=1e-7)
