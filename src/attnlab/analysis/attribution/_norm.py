"""Norm-based attention (Kobayashi et al. 2020): what each head carries from each token, ``||alpha f(x)||``.

Letters: L layers, H heads, n tokens, M d_model, Dv per-head value size, B batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn

from ._layers import Forward, LayerRun, layer_parts, run_layers

__all__ = ["NormAttention", "attention_vectors", "norm_attention", "norm_contributions", "value_outputs"]


def value_outputs(values: Tensor, w_out: Tensor) -> Tensor:
    """``values`` ``(H, n, Dv)``, ``w_out`` the output projection's weight ``(M, H * Dv)`` -> ``(H, n, M)``:
    ``f^h(x_j) = v^h_j W_O^h``, each head's value through its own columns of ``W_O``."""
    h, _, dv = values.shape
    w_o = w_out.reshape(w_out.shape[0], h, dv)  # (M, H, Dv): head h's columns of W_O
    return torch.einsum("hjd,mhd->hjm", values, w_o)  # (H, n, M)


def norm_contributions(weights: Tensor, values: Tensor, w_out: Tensor) -> tuple[Tensor, Tensor]:
    """One layer's norms: ``weights`` ``(H, n, n)``, ``values`` ``(H, n, Dv)`` (bias included), ``w_out``
    the output projection's weight ``(M, H * Dv)`` -> ``(per_head (H, n, n), per_layer (n, n))``."""
    f = value_outputs(values, w_out)  # (H, n, M): f^h(x_j)
    per_head = weights * f.norm(dim=-1)[:, None, :]  # (H, n, n): ||alpha^h_ij f^h(x_j)|| = alpha^h_ij ||f^h(x_j)||
    per_layer = torch.einsum("hij,hjm->ijm", weights, f).norm(dim=-1)  # (n, n): ||sum_h alpha^h_ij f^h(x_j)||
    return per_head, per_layer


@dataclass(frozen=True)
class NormAttention:
    """Kobayashi et al.'s norms of one input: ``per_head`` ``(L, H, n, n)`` and ``per_layer`` ``(L, n, n)``,
    float64, and the attention weights they weigh, ``weights`` ``(L, H, n, n)``."""

    per_head: np.ndarray
    per_layer: np.ndarray
    weights: np.ndarray


def norm_attention(model: nn.Module, forward: Forward) -> NormAttention:
    """The norm-based attention of every layer on the input ``forward(1)`` runs (one input, batch of one)."""
    parts = layer_parts(model)
    per_head, per_layer = [], []
    runs = run_layers(model, forward)
    for p, run in zip(parts, runs, strict=True):
        ph, pl = norm_contributions(run.weights, run.values, p.output.weight.detach().double())
        per_head.append(ph.numpy())
        per_layer.append(pl.numpy())
    return NormAttention(np.stack(per_head), np.stack(per_layer), np.stack([r.weights.numpy() for r in runs]))


def attention_vectors(run: LayerRun, w_out: Tensor) -> Tensor:
    """``(n_i, n_j, M)``: what the attention (no residual, no output bias) carries from input ``j`` to output ``i``,
    ``sum_h alpha^h_ij f^h(x_j)`` (``f`` as :func:`value_outputs`, value bias inside); ``w_out`` ``(M, H * Dv)``."""
    return torch.einsum("hij,hjm->ijm", run.weights, value_outputs(run.values, w_out))
