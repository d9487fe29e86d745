"""Gradient x input, the non-attention baseline: ``sum_d x_jd * d score / d x_jd`` at the first layer's input.

Letters: L layers, H heads, n tokens, M d_model, Dv per-head value size, B batch.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor, nn

from ...errors import InputError
from ._layers import check_eval, layer_parts, pre_hook

__all__ = ["gradient_x_input"]


def gradient_x_input(model: nn.Module, score: Callable[[], Tensor]) -> np.ndarray:
    """``(n,)``: ``sum_d x_jd * d score / d x_jd`` with ``x`` the first attention layer's input (one input,
    batch of one) and ``score()`` a scalar computed by running the model (e.g. the predicted class's probability)."""
    check_eval(model)
    first = layer_parts(model)[0].block
    seen: list[Tensor] = []

    def keep_input(x: Tensor) -> None:
        x.retain_grad()
        seen.append(x)

    with pre_hook(first, keep_input), torch.enable_grad():
        value = score()
        if value.numel() != 1:
            raise InputError(f"score() must return one number (a scalar tensor), got shape {tuple(value.shape)}")
        value.backward()
    if not seen or seen[0].grad is None:
        raise InputError("score() must run the model and depend on its input (e.g. the predicted class's "
                         "probability), but the first attention layer's input got no gradient from it")
    x = seen[0]
    assert x.grad is not None
    return (x.detach().double() * x.grad.double()).sum(-1)[0].numpy()  # (n,)
