"""ALTI-Logit (Ferrando, Gallego, Tsiamas & Costa-jussa 2023): a pre-norm classifier's logit split signed over its
input positions.

Letters: L layers, H heads, n tokens, M d_model, Dv per-head value size, B batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ...errors import InputError
from ._alti import alti_layer
from ._classifier import as_classifier, max_rows, pooling_reader
from ._layers import check_eval, layer_parts, pre_hook, row_sigma, run_layers
from ._norm import attention_vectors

__all__ = ["LogitAttribution", "alti_logit", "logit_directions", "pre_norm"]


def logit_directions(model: nn.Module, ids: Tensor, k: int) -> tuple[Tensor, Tensor, float]:
    """How a pre-norm attnlab classifier's logit of class ``k`` reads the residual stream entering its encoder's
    final LayerNorm, for one text ``ids`` ``(1, n)``: ``(u (n, M), h (n, M), c)`` with
    ``logit_k = sum_i u_i . h_i + c`` exactly at ``h``, the real stream (float64).

    Linearised, each at its real value on this text (so the identity is exact there, and a change of ``h`` is
    read as a first-order one): the final LayerNorm's per-row standard deviation ``sigma_i``; for ``meanmax`` the
    row each maximum comes from; for ``attention`` pooling the pooling's weights.  The row ``i`` of the pooled
    rows is read by ``g_i`` ``(M,)``: ``W_k`` (the head's row of class ``k``) on row 0 for ``cls``, ``W_k / n``
    on every real row for ``mean``, ``a_i W_k`` for attention pooling (``a`` :func:`pooling_reader`'s weights),
    ``W_k[:M] / n`` plus ``W_k[M + d]`` on dimension ``d`` of the row that wins it for ``meanmax``.  Then
    ``g_i . LN(h_i) = u_i . h_i + g_i . beta`` with ``u_i = (gamma g_i - mean(gamma g_i)) / sigma_i`` (the mean
    removed because LayerNorm removes ``h_i``'s), and ``c`` is the head's bias plus ``sum_i g_i . beta``."""
    norm = _final_norm(model)
    clf: Any = model  # an AttentionClassifier (checked)
    classes = clf.config.n_classes
    if not 0 <= k < classes:
        raise InputError(f"class k={k} is not one of the model's {classes} classes; pass 0 to {classes - 1}")
    seen: list[Tensor] = []
    with torch.no_grad(), pre_hook(norm, seen.append):
        states, real = clf.encode(ids)  # (1, n, M) after the final LayerNorm, (1, n)
    h, real = seen[0][0].double(), real[0]  # (n, M) before it, (n,)
    n, m = h.shape
    w = clf.head.weight.detach().double()[k]  # (M,) or (2M,)
    mean = real.double() / real.sum().clamp_min(1)  # (n,)
    pooling = clf.config.pooling
    if pooling == "meanmax":
        wins = max_rows(states[0], real)  # (M,)
        g = mean[:, None] * w[:m] + torch.nn.functional.one_hot(wins, n).T.double() * w[m:]  # (n, M)
    else:
        g = torch.from_numpy(pooling_reader(model, ids))[:, None] * w  # (n, M): cls, mean, attention
    gamma, beta = norm.weight.detach().double(), norm.bias.detach().double()  # (M,)
    sigma = row_sigma(h, norm)  # (n,)
    scaled = gamma * g  # (n, M)
    u = (scaled - scaled.mean(-1, keepdim=True)) / sigma[:, None]  # (n, M)
    c = float(clf.head.bias.detach().double()[k]) + float((g * beta).sum())
    return u, h, c


def pre_norm(clf: Any) -> nn.LayerNorm | None:
    """The final LayerNorm of an attnlab classifier's encoder when it is pre-norm (what ALTI-Logit reads), else
    None."""
    norm = None if clf.encoder is None else clf.encoder.norm
    return norm if isinstance(norm, nn.LayerNorm) else None


def _final_norm(model: nn.Module) -> nn.LayerNorm:
    """The final LayerNorm of a pre-norm attnlab classifier's encoder; anything else is refused."""
    clf = as_classifier(model, "ALTI-Logit reads its head",
                      "train one with `attnlab train classify` or load zh-sentiment")
    norm = pre_norm(clf)
    if norm is None:
        raise InputError("ALTI-Logit needs a pre-norm classifier (norm_first=True, n_layers >= 1), whose residual "
                         "stream adds up to what the head reads; got "
                         f"norm_first={clf.config.norm_first}, n_layers={clf.config.n_layers}; use ALTI instead")
    return norm


@dataclass(frozen=True)
class LogitAttribution:
    """ALTI-Logit of one text (:func:`alti_logit`), float64: ``tokens`` ``(n,)`` the signed attribution of the
    class's logit to each input position; ``per_layer`` ``(L, n)`` what layer ``l``'s attention adds to the logit
    from each position ``j`` of its input, ``sum_i u_i . sum_h alpha^h_ij f^h(x_j)``; ``bias`` ``(L,)`` what its
    output projection's bias adds (``sum_i u_i . b_O``), so that ``per_layer[l].sum() + bias[l]`` is the logit
    change across layer ``l``'s attention sublayer; ``rollout`` ``(L, n, n)`` ALTI rolled out (after each layer);
    ``logit`` the real logit and ``k`` the class."""

    tokens: np.ndarray
    per_layer: np.ndarray
    bias: np.ndarray
    rollout: np.ndarray
    logit: float
    k: int


def alti_logit(model: nn.Module, ids: Tensor, k: int | None = None) -> LogitAttribution:
    """ALTI-Logit (Ferrando, Gallego, Tsiamas & Costa-jussa 2023, "Explaining How Transformers Use Context to
    Build Predictions"): a signed attribution of a pre-norm attnlab classifier's logit of class ``k`` (default:
    the predicted one) to its input positions, for one text ``ids`` ``(1, n)``.

    The residual stream of a pre-norm model is a sum (embeddings, then each attention and feed-forward sublayer
    adds its output), and the logit reads it linearly once the final LayerNorm's row statistics (and the max
    pooling's argmax, or the attention pooling's weights) are fixed at their real values: ``logit = sum_i u_i .
    h_i + c`` (:func:`logit_directions`; exact at the real stream, first-order for a change of it).  Layer ``l``'s
    attention adds ``sum_j T_i(x_j) + b_O`` to row ``i`` (``T_i(x_j) = sum_h alpha^h_ij f^h(x_j)``,
    :func:`attention_vectors`), so position ``j`` of its input moves the logit by
    ``D_l[j] = sum_i u_i . T_i(x_j)``.  As the paper does, ``D_l`` is carried to the input tokens by ALTI's rollout
    of the layers below (``R_0 = I``, ``R_l`` ALTI's contributions rolled out through layer ``l``):
    ``tokens = sum_l D_l @ R_{l-1}``.  Not attributed, as in the paper: the embeddings' own direct path to the
    head, the feed-forward sublayers and the biases.  A positive score pushes the class's logit up."""
    from ..rollout import rollout

    _final_norm(model)
    check_eval(model)
    with torch.no_grad():
        logits = model(ids)[0].double()  # (C,)
    k = int(logits.argmax()) if k is None else k
    u, _, _ = logit_directions(model, ids, k)  # (n, M)
    parts = layer_parts(model)
    runs = run_layers(model, lambda b: model(ids.repeat(b, 1)))
    per_layer, bias, mixing = [], [], []
    for p, run in zip(parts, runs, strict=True):
        t = attention_vectors(run, p.output.weight.detach().double())  # (n_i, n_j, M)
        per_layer.append(torch.einsum("ijm,im->j", t, u))  # (n_j,)
        b = torch.zeros(u.shape[1], dtype=u.dtype) if p.output.bias is None else p.output.bias.detach().double()
        bias.append(float((u @ b).sum()))
        mixing.append(alti_layer(p, run))
    d = torch.stack(per_layer).numpy()  # (L, n)
    r = rollout(np.stack(mixing)[:, None], residual=0.0)  # (L, n, n)
    tokens = d[0] + sum((d[layer] @ r[layer - 1] for layer in range(1, len(d))), np.zeros_like(d[0]))
    return LogitAttribution(tokens, d, np.array(bias), r, float(logits[k]), k)
