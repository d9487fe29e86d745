"""Value zeroing (Mohebbi et al. 2023): a token's value set to zero in one layer, the change of its output measured.

Letters: L layers, H heads, n tokens, M d_model, Dv per-head value size, B batch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ._layers import Forward, LayerParts, check_eval, layer_parts

__all__ = ["value_zeroing", "value_zeroing_scores"]


def value_zeroing_scores(clean: Tensor, zeroed: Tensor) -> np.ndarray:
    """``clean`` ``(n, M)`` a layer's output, ``zeroed`` ``(n_j, n, M)`` the same with token ``j``'s value set
    to zero -> ``(n, n)``: ``C[i, j] = 1 - cos(zeroed[j, i], clean[i])``, each row renormalised to sum to one
    (a row with no change at all stays zeros)."""
    cos = torch.nn.functional.cosine_similarity(zeroed.double(), clean.double()[None], dim=-1)  # (n_j, n)
    c = (1.0 - cos).clamp_min(0.0).T  # (n, n_j): row i, column j
    total = c.sum(-1, keepdim=True)
    return torch.where(total > 0, c / total.clamp_min(1e-300), torch.zeros_like(c)).numpy()


def value_zeroing(model: nn.Module, forward: Forward) -> np.ndarray:
    """``(L, n, n)``: value zeroing of every layer on the input of ``forward``.  Layer ``l`` runs once on a
    batch of ``n`` copies of the input, copy ``j`` with token ``j``'s value zeroed in layer ``l`` only
    (the layers before it see the same input as the clean run)."""
    check_eval(model)
    parts = layer_parts(model)
    with torch.no_grad():
        clean = _block_outputs(parts, forward, 1)  # L x (1, n, M)
        n = clean[0].shape[1]
        out = []
        for layer, p in enumerate(parts):

            def zero_own_token(_m: nn.Module, _i: Any, v: Tensor) -> Tensor:
                v = v.clone()
                v[torch.arange(n), torch.arange(n)] = 0.0  # copy j: token j's value, every head
                return v

            with _hooks([(p.value, zero_own_token)]):
                zeroed = _block_outputs([p], forward, n)[0]  # (n_j, n, M)
            out.append(value_zeroing_scores(clean[layer][0], zeroed))
    return np.stack(out)

def _block_outputs(parts: list[LayerParts], forward: Forward, k: int) -> list[Tensor]:
    """Each part's block output ``(k, n, M)`` when ``forward(k)`` runs."""
    outs: list[Tensor] = []

    def keep(_m: nn.Module, _i: Any, out: Any) -> None:
        outs.append((out[0] if isinstance(out, tuple) else out).detach())

    with _hooks([(p.block, keep) for p in parts]):
        forward(k)
    return outs


@contextmanager
def _hooks(pairs: list[tuple[nn.Module, Callable[..., Any]]]) -> Iterator[None]:
    """Forward hooks on modules for the length of a ``with``; always removed."""
    handles = [module.register_forward_hook(fn) for module, fn in pairs]
    try:
        yield
    finally:
        for h in handles:
            h.remove()
