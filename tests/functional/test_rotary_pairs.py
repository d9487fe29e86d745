"""apply_rotary (written as x * [cos, cos] + swapped(x) * [-sin, sin], without strided slices) gives the same bits as
rotating the even and odd features apart, ``(a cos - b sin, a sin + b cos)``, in the forward and in the backward."""

from __future__ import annotations

import pytest
import torch

from attnlab.functional.rotary import apply_rotary, rotary_angles


def pairwise(x: torch.Tensor, offset: int) -> torch.Tensor:
    """The rotation as the paper writes it, pair by pair, in the same working dtype."""
    work = torch.promote_types(x.dtype, torch.float32)
    angles = rotary_angles(x.shape[-2], x.shape[-1], offset=offset, device=x.device)  # (L, D/2)
    cos, sin = angles.cos().to(work), angles.sin().to(work)
    xw = x.to(work)
    even, odd = xw[..., 0::2], xw[..., 1::2]  # (..., L, D/2) each
    return torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2).to(x.dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize(("shape", "offset"), [((3, 2, 7, 6), 5), ((1, 1, 1, 2), 0), ((2, 5, 10), 3),
                                               ((4, 3, 9, 8), 0)])
def test_same_bits_as_the_pairwise_rotation(dtype: torch.dtype, shape: tuple[int, ...], offset: int) -> None:
    g = torch.Generator().manual_seed(len(shape) + offset)
    x = (torch.randn(*shape, generator=g) * 3).to(dtype).requires_grad_()
    grad = torch.randn(*shape, generator=g).to(dtype)
    got = apply_rotary(x, offset=offset)
    want = pairwise(x, offset)
    (got_grad,) = torch.autograd.grad(got, x, grad)
    (want_grad,) = torch.autograd.grad(want, x, grad)
    assert torch.equal(got, want), f"largest difference {(got - want).abs().max()}"
    assert torch.equal(got_grad, want_grad), f"largest gradient difference {(got_grad - want_grad).abs().max()}"
