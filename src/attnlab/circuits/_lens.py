"""Reading the residual stream and the weights: direct logit attribution, the logit lens, composition scores.

* **Direct logit attribution** (Elhage et al. 2021; TransformerLens's ``logit_attrs``): the final residual stream
  at one position is the sum of the embedding, every head's output through its slice of ``W_O``, each layer's
  ``W_O`` bias and each feed-forward output.  The final LayerNorm, linear once its row's standard deviation ``s``
  is fixed at the run's own, gives each part ``((c - mean c) / s) * gamma . u`` with
  ``u = W_U[target] - W_U[distractor]``; its ``beta . u`` is one more term.  The terms sum to the logit difference.
* **The logit lens** (nostalgebraist 2020): the residual stream after each layer through the final LayerNorm (with
  that layer's own statistics: the LayerNorm is simply applied to it) and the unembedding; after the last layer it
  is the model's logits.
* **Composition scores** (Elhage et al. 2021): for a head ``a`` in an earlier layer and ``b`` in a later one,
  ``||W_OV^a M^b||_F / (||W_OV^a||_F ||M^b||_F)`` with ``M^b = W_Q^b W_K^b^T`` (Q-composition), its transpose
  (K-composition) or ``W_OV^b`` (V-composition), in the row-vector convention ``x @ W`` (as TransformerLens's
  ``all_composition_scores``); rotary positions and LayerNorms are left out, as there.

Letters: N layers, H heads, D per-head size, M d_model, V vocabulary, B batch, T positions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn

from ..errors import InputError
from ._model import Anatomy, anatomy, head_results, run_with_cache

__all__ = ["Composition", "DirectLogitAttribution", "LogitLens", "composition_scores", "direct_logit_attribution",
           "head_weights", "logit_lens"]


def _needs_unembed(a: Anatomy, what: str) -> Tensor:
    if a.unembed is None:
        raise InputError(f"{what} reads the residual stream through the model's unembedding, which a {a.kind} "
                         f"model has not; use it on a CausalLM (kind lm), and patching with a metric on the "
                         f"{a.kind}'s output")
    return a.unembed


def _token(model_vocab: int, token: int, what: str) -> int:
    if not 0 <= int(token) < model_vocab:
        raise InputError(f"{what} id {token} is not in the model's vocabulary [0, {model_vocab}); encode it with "
                         f"the model's tokenizer")
    return int(token)


@dataclass(frozen=True)
class DirectLogitAttribution:
    """What each part of the final residual stream adds to ``logit[target] - logit[distractor]`` at one position
    of one input: ``heads`` ``(N, H)``, ``attn_bias`` ``(N,)`` (each layer's ``W_O`` bias), ``mlp`` ``(N,)``
    (zeros without feed-forward sublayers), ``embed`` and ``norm_bias`` (the final LayerNorm's beta; 0 without
    norms).  ``logit_diff`` is the model's own; the parts sum to it."""

    heads: np.ndarray
    attn_bias: np.ndarray
    mlp: np.ndarray
    embed: float
    norm_bias: float
    logit_diff: float

    @property
    def layers(self) -> np.ndarray:
        """``(N,)`` each layer's total: its heads, its attention bias and its feed-forward output."""
        return np.asarray(self.heads.sum(1) + self.attn_bias + self.mlp)

    @property
    def total(self) -> float:
        """The sum of every part (equal to ``logit_diff`` up to rounding)."""
        return float(self.layers.sum() + self.embed + self.norm_bias)


@torch.no_grad()
def direct_logit_attribution(model: nn.Module, ids: Tensor, target: int, distractor: int, *, position: int = -1,
                             row: int = 0) -> DirectLogitAttribution:
    """Direct logit attribution on ``ids`` ``(B, T)`` of a :class:`attnlab.models.CausalLM` at ``position`` of
    input ``row``, computed in float64 from one cached run."""
    a = anatomy(model)
    w_u = _needs_unembed(a, "direct logit attribution")
    target, distractor = _token(w_u.shape[0], target, "target"), _token(w_u.shape[0], distractor, "distractor")
    names = ["blocks.0.hook_resid_pre"] + [f"blocks.{i}.attn.hook_z" for i in range(a.n_layers)]
    names += [f"blocks.{i}.hook_mlp_out" for i, layer in enumerate(a.layers) if layer.mlp is not None]
    names += ["ln_final.hook_scale"] if a.final_norm is not None else []
    logits, cache = run_with_cache(model, ids, names)
    u = (w_u[target] - w_u[distractor]).double()  # (M,)

    def read(c: Tensor) -> Tensor:  # (..., M) one part of the stream -> (...) its share of the logit difference
        c = c.double()
        if a.final_norm is None:
            return c @ u
        s = cache["ln_final.hook_scale"][row, position].double()  # (1,)
        centred = c if a.rms else c - c.mean(-1, keepdim=True)  # an RMSNorm does not centre
        gamma: Tensor = a.final_norm.weight  # type: ignore[assignment]
        return (centred / s * gamma.double()) @ u

    heads = np.stack([read(head_results(a, i, cache[f"blocks.{i}.attn.hook_z"].double())[row, position]).numpy()
                      for i in range(a.n_layers)])  # (N, H)
    bias = np.array([float(read(layer.attn.out_proj.bias)) if layer.attn.out_proj.bias is not None else 0.0
                     for layer in a.layers])
    mlp = np.array([float(read(cache[f"blocks.{i}.hook_mlp_out"][row, position])) if layer.mlp is not None else 0.0
                    for i, layer in enumerate(a.layers)])
    embed = float(read(cache["blocks.0.hook_resid_pre"][row, position]))
    norm_bias = getattr(a.final_norm, "bias", None)  # an RMSNorm has none
    beta = float(norm_bias.double() @ u) if norm_bias is not None else 0.0
    diff = float(logits[row, position, target] - logits[row, position, distractor])
    return DirectLogitAttribution(heads, bias, mlp, embed, beta, diff)


@dataclass(frozen=True)
class LogitLens:
    """``logits`` ``(N + 1, B, T, V)``: row 0 from the embeddings, row ``i + 1`` from the stream after layer ``i``
    (the last equals the model's logits)."""

    logits: Tensor

    def logit_diff(self, target: int, distractor: int, position: int = -1, row: int = 0) -> np.ndarray:
        """``(N + 1,)`` the logit difference read after each layer."""
        return (self.logits[:, row, position, target] - self.logits[:, row, position, distractor]).double().numpy()

    def prob(self, target: int, position: int = -1, row: int = 0) -> np.ndarray:
        """``(N + 1,)`` the probability of ``target`` read after each layer."""
        return self.logits[:, row, position].double().softmax(-1)[:, target].numpy()


def logit_lens(model: nn.Module, ids: Tensor) -> LogitLens:
    """The logit lens of a :class:`attnlab.models.CausalLM` on ``ids`` ``(B, T)``."""
    a = anatomy(model)
    w_u = _needs_unembed(a, "the logit lens")
    names = ["blocks.0.hook_resid_pre"] + [f"blocks.{i}.hook_resid_post" for i in range(a.n_layers)]
    _, cache = run_with_cache(model, ids, names)
    with torch.no_grad():
        stream = torch.stack([cache[n] for n in names])  # (N + 1, B, T, M)
        normed = a.final_norm(stream) if a.final_norm is not None else stream
        return LogitLens(normed @ w_u.T)  # (N + 1, B, T, V)


def head_weights(model: nn.Module | Anatomy) -> dict[str, Tensor]:
    """Every head's weights in float64, row-vector convention, stacked over layers: ``W_Q``, ``W_K``, ``W_V``
    ``(N, H, M, D)`` and ``W_O`` ``(N, H, D, M)``.  Under grouped-query attention each query head is given the key
    and value weights of the key/value head it reads (heads of one group share them: ``W_K[:, h]`` is
    ``k_proj``'s head ``h // (H // H_kv)``)."""
    a = model if isinstance(model, Anatomy) else anatomy(model)

    def split(w: Tensor, h: int, groups: int = 1) -> Tensor:  # (h * D, M) -> (h * groups, M, D)
        heads = w.detach().double().reshape(h, -1, w.shape[1]).transpose(1, 2)
        return heads.repeat_interleave(groups, dim=0) if groups > 1 else heads

    out: dict[str, list[Tensor]] = {"W_Q": [], "W_K": [], "W_V": [], "W_O": []}
    for layer in a.layers:
        at, h = layer.attn, layer.attn.n_heads
        kv = int(getattr(at, "n_kv_heads", h))
        out["W_Q"].append(split(at.q_proj.weight, h))
        out["W_K"].append(split(at.k_proj.weight, kv, h // kv))
        out["W_V"].append(split(at.v_proj.weight, kv, h // kv))
        w_o = at.out_proj.weight.detach().double()  # (M, H * D)
        out["W_O"].append(w_o.reshape(w_o.shape[0], h, -1).permute(1, 2, 0))  # (H, D, M)
    return {k: torch.stack(v) for k, v in out.items()}


@dataclass(frozen=True)
class Composition:
    """Q-, K- and V-composition scores ``(N, H, N, H)``: ``k[l1, h1, l2, h2]`` how much head ``l2.h2``'s keys read
    what head ``l1.h1`` writes; 0 unless ``l1 < l2``."""

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray

    def of(self, mode: str) -> np.ndarray:
        if mode not in ("q", "k", "v"):
            raise InputError(f"mode must be 'q', 'k' or 'v', got {mode!r}")
        return np.asarray(getattr(self, mode))

    def strongest(self, n: int = 10) -> list[tuple[str, tuple[int, int], tuple[int, int], float]]:
        """The ``n`` largest scores of the three kinds: ``(mode, sender (layer, head), receiver, score)``."""
        edges: list[tuple[str, tuple[int, int], tuple[int, int], float]] = []
        for mode in ("q", "k", "v"):
            s = self.of(mode)
            for idx in zip(*np.nonzero(s), strict=True):
                l1, h1, l2, h2 = (int(i) for i in idx)
                edges.append((mode, (l1, h1), (l2, h2), float(s[l1, h1, l2, h2])))
        return sorted(edges, key=lambda e: -e[3])[:n]


def composition_scores(model: nn.Module) -> Composition:
    """Q-, K- and V-composition scores for every pair of heads, float64 from the weights."""
    w = head_weights(model)
    ov = w["W_V"] @ w["W_O"]  # (N, H, M, M)
    qk = w["W_Q"] @ w["W_K"].transpose(-1, -2)  # (N, H, M, M)

    def scores(right: Tensor) -> np.ndarray:
        left = ov[:, :, None, None]  # (N, H, 1, 1, M, M)
        num = torch.linalg.matrix_norm(left @ right[None, None])  # (N, H, N, H)
        den = torch.linalg.matrix_norm(ov)[:, :, None, None] * torch.linalg.matrix_norm(right)[None, None]
        n = ov.shape[0]
        later = torch.arange(n)[:, None, None, None] < torch.arange(n)[None, None, :, None]  # l1 < l2
        return torch.where(later, num / den, torch.zeros_like(num)).numpy()

    return Composition(scores(qk), scores(qk.transpose(-1, -2)), scores(ov))
