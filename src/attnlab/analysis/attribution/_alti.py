"""ALTI (Ferrando, Gallego & Costa-jussa 2022): each layer's output split exactly into one vector per input token.

Letters: L layers, H heads, n tokens, M d_model, Dv per-head value size, B batch.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor, nn

from ._layers import Forward, LayerParts, LayerRun, layer_parts, linear_norm, run_layers
from ._norm import attention_vectors

__all__ = ["alti", "alti_contributions", "alti_layer", "alti_vectors"]


def alti_vectors(run: LayerRun, w_out: Tensor, b_out: Tensor | None, norm: nn.LayerNorm | None = None
                 ) -> tuple[Tensor, Tensor]:
    """One layer's split of its attention sublayer output into one vector per input token (Ferrando et al.):
    ``(vectors (n_i, n_j, M), bias (n_i, M))`` with ``vectors.sum(1) + bias == run.output``.

    ``T_i(x_j) = sum_h alpha^h_ij f^h(x_j) + [i = j] x_i`` (``f`` as :func:`value_outputs`, value bias inside, so
    it moves with the weights); the bias is ``W_O``'s.  A post-norm layer (``norm`` the LayerNorm over
    ``x + attention``) is linear once each row's standard deviation ``sigma_i`` is fixed at its real value:
    ``LN(z) = gamma (z - mean z) / sigma + beta`` maps each vector by ``gamma (T - mean T) / sigma_i`` and the bias
    by the same plus ``beta``."""
    n, m = run.residual.shape
    t = attention_vectors(run, w_out)  # (n_i, n_j, M)
    t[torch.arange(n), torch.arange(n)] += run.residual  # the residual belongs to the token itself
    bias = (torch.zeros(m, dtype=t.dtype) if b_out is None else b_out.double()).expand(n, m)  # (n, M)
    if norm is None:
        return t, bias
    assert run.sigma is not None, "a post-norm layer's run records its sigma"
    return linear_norm(t, run.sigma, norm), linear_norm(bias, run.sigma, norm, beta=True)

def alti_contributions(vectors: Tensor, output: Tensor) -> np.ndarray:
    """``vectors`` ``(n_i, n_j, M)`` (``T_i(x_j)``), ``output`` ``(n_i, M)`` (``y_i``) -> ``(n, n)``:
    ``c_ij = max(0, ||y_i||_1 - ||y_i - T_i(x_j)||_1)``, each row renormalised to sum to one (a row of zeros
    stays zeros)."""
    distance = (output[:, None, :] - vectors).abs().sum(-1)  # (n_i, n_j): ||y_i - T_i(x_j)||_1
    c = (output.abs().sum(-1, keepdim=True) - distance).clamp_min(0.0)  # (n_i, n_j)
    total = c.sum(-1, keepdim=True)
    return torch.where(total > 0, c / total.clamp_min(1e-300), torch.zeros_like(c)).numpy()


def alti(model: nn.Module, forward: Forward) -> np.ndarray:
    """``(L, n, n)``: ALTI's token-to-token contributions of every layer on the input ``forward(1)`` runs;
    ``rollout(alti(...)[:, None], residual=0)[-1]`` is the whole model's."""
    return np.stack([alti_layer(p, run) for p, run in zip(layer_parts(model), run_layers(model, forward),
                                                             strict=True)])


def alti_layer(p: LayerParts, run: LayerRun) -> np.ndarray:
    """``(n, n)``: ALTI's contributions of one recorded layer."""
    vectors, _ = alti_vectors(run, p.output.weight.detach().double(),
                              None if p.output.bias is None else p.output.bias.detach(), p.post_norm)
    return alti_contributions(vectors, run.output)
