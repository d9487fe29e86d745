"""Which earlier characters each generated character used: ALTI-Logit for the causal language model, with gradient x
input as the cross-check (issue 31, section 6; what inseq users come for).

For a :class:`~attnlab.models.lm.CausalLM` (pre-norm blocks, a final LayerNorm, the output tied to the embeddings)
row ``t`` of the residual stream predicts the character after position ``t``; the logit of character ``g`` there is
``E_g . LN(h_t)``.  With the final LayerNorm's standard deviation ``sigma_t`` fixed at its real value, that is
``u_t . h_t + E_g . beta`` with ``u_t = (gamma E_g - mean(gamma E_g)) / sigma_t`` (:func:`lm_logit_directions`;
exact at the real stream; a model without LayerNorm, such as the attention-only ``induction-2l``, reads
``u_t = E_g`` directly).  Each block's attention sublayer adds ``sum_j T_t(x_j) + b_O`` to row ``t``
(``T_t(x_j) = sum_h alpha^h_tj f^h(x_j)``, :func:`~attnlab.analysis.attention_vectors`; rotary positions only
rotate queries and keys, so the values split as in any layer), so position ``j`` of the block's input moves the
logit by ``D_l[t, j] = u_t . T_t(x_j)`` and the output projection's bias by ``u_t . b_O``: together exactly the
logit change across the sublayer.  As in Ferrando et al. (2023) and :func:`~attnlab.analysis.alti_logit` for the
classifier, ``D_l`` is carried to the input characters by ALTI's rollout of the blocks below:
``tokens[t] = sum_l D_l[t] @ R_{l-1}`` (:func:`lm_alti_logit`).  Not attributed, as in the paper: the embedding's
direct path, the feed-forward sublayers and the biases.  A positive score pushed the generated character up.

Gradient x input (:func:`lm_gradient_x_input`): ``sum_d x_jd d logit_t / d x_jd`` at the first block's input (the
embeddings), one backward pass per row; a first-order estimate of what removing the character would change.

A generation slides its window past the model's context (``LanguageModel.generate``: the cache is rebuilt from the
last ``context // 2`` characters), so each generated character is attributed over exactly the characters the model
read when it chose it (:func:`generation_windows`); the rest of its row is NaN (:func:`attribute_generation`).

Letters: L blocks, n window length, M d_model, G generated characters, S source characters (prompt + generated).
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor, nn

from ...errors import InputError
from ..rollout import rollout
from ._alti import alti
from ._gradient import gradient_x_input
from ._layers import layer_parts, run_layers
from ._norm import attention_vectors

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["GenerationAttribution", "LMLogitAttribution", "attribute_generation", "attribution_figure",
           "generation_windows", "lm_alti_logit", "lm_gradient_x_input", "lm_logit_directions"]


def _causal_lm(model: nn.Module) -> Any:
    from ...models.lm import CausalLM

    if not isinstance(model, CausalLM):
        raise InputError(f"this attribution reads a CausalLM (attnlab train lm, zh-lm), got {type(model).__name__}; "
                         f"for a classifier use attnlab.analysis.alti_logit")
    if model.training:
        raise InputError("the model is in training mode (dropout on): attribution compares exact forward passes; "
                         "call model.eval() first")
    return model


def _check_window(model: Any, ids: Tensor, targets: Tensor) -> tuple[int, int]:
    if ids.dim() != 2 or ids.shape[0] != 1 or ids.shape[1] < 1:
        raise InputError(f"ids must be one window (1, n) of token ids, got shape {tuple(ids.shape)}; pass ids[None]")
    n, v = ids.shape[1], model.config.vocab_size
    if tuple(targets.shape) != (n,):
        raise InputError(f"targets must hold the character after each of the {n} positions, shape ({n},), got "
                         f"{tuple(targets.shape)}")
    if bool(((targets < 0) | (targets >= v)).any()):
        raise InputError(f"targets must be ids of the model's vocabulary (0 .. {v - 1}), got "
                         f"{targets.min().item()} .. {targets.max().item()}")
    return n, v


def lm_logit_directions(model: nn.Module, ids: Tensor, targets: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """How row ``t``'s logit of ``targets[t]`` reads the residual stream entering the final LayerNorm, for one
    window ``ids`` ``(1, n)``: ``(u (n, M), h (n, M), c (n,))`` with ``logit_t = u_t . h_t + c_t`` exactly at ``h``,
    the real stream (float64)."""
    lm = _causal_lm(model)
    _check_window(lm, ids, targets)
    seen: list[Tensor] = []
    handle = lm.norm.register_forward_pre_hook(lambda _m, args: seen.append(args[0][0].detach()))
    try:
        with torch.no_grad():
            lm(ids)
    finally:
        handle.remove()
    h = seen[0].double()  # (n, M)
    e = lm.embed.weight.detach().double()[targets]  # (n, M): the tied output rows of the targets
    if not isinstance(lm.norm, nn.LayerNorm):  # no final LayerNorm (LMConfig(norm=False)): the logit is E_g . h_t
        return e, h, torch.zeros(len(targets), dtype=h.dtype)
    gamma, beta = lm.norm.weight.detach().double(), lm.norm.bias.detach().double()  # (M,)
    sigma = (h.var(-1, unbiased=False) + lm.norm.eps).sqrt()  # (n,)
    scaled = gamma * e  # (n, M)
    u = (scaled - scaled.mean(-1, keepdim=True)) / sigma[:, None]  # (n, M): LayerNorm removes h_t's mean
    return u, h, e @ beta


@dataclass(frozen=True)
class LMLogitAttribution:
    """ALTI-Logit of one window (:func:`lm_alti_logit`), float64: ``tokens`` ``(n, n)`` row ``t`` the signed
    attribution of the logit of the character after ``t`` to positions ``0 .. t`` (zeros after ``t``);
    ``per_layer`` ``(L, n, n)`` what block ``l``'s attention adds to row ``t``'s logit from position ``j`` of its
    input; ``bias`` ``(L, n)`` what its output projection's bias adds, so that ``per_layer[l, t].sum() +
    bias[l, t]`` is the logit change across block ``l``'s attention sublayer; ``rollout`` ``(L, n, n)`` ALTI
    rolled out after each block; ``logits`` ``(n,)`` the real logits of the targets."""

    tokens: np.ndarray
    per_layer: np.ndarray
    bias: np.ndarray
    rollout: np.ndarray
    logits: np.ndarray


def lm_alti_logit(model: nn.Module, ids: Tensor, targets: Tensor) -> LMLogitAttribution:
    """ALTI-Logit of every row of one window ``ids`` ``(1, n)``: the logit of ``targets[t]`` (the character that
    followed position ``t``) attributed to positions ``0 .. t`` (see the module's docstring).  Exact in the model's
    dtype: give a float64 copy for the 1e-10 identities."""
    lm = _causal_lm(model)
    _check_window(lm, ids, targets)
    with torch.no_grad():
        logits = lm(ids)[0].double().gather(1, targets[:, None].long())[:, 0]  # (n,)
    u, _, _ = lm_logit_directions(lm, ids, targets)  # (n, M)

    def forward(b: int) -> Any:
        return lm(ids.repeat(b, 1))

    per_layer, bias = [], []
    for p, run in zip(layer_parts(lm), run_layers(lm, forward), strict=True):
        t = attention_vectors(run, p.output.weight.detach().double())  # (n_i, n_j, M)
        per_layer.append(torch.einsum("ijm,im->ij", t, u))  # (n_i, n_j)
        b = torch.zeros(u.shape[1], dtype=u.dtype) if p.output.bias is None else p.output.bias.detach().double()
        bias.append(u @ b)  # (n_i,)
    d = torch.stack(per_layer).numpy()  # (L, n, n)
    r = rollout(alti(lm, forward)[:, None], residual=0.0)  # (L, n, n)
    tokens = d[0] + sum((d[layer] @ r[layer - 1] for layer in range(1, len(d))), np.zeros_like(d[0]))
    return LMLogitAttribution(tokens, d, torch.stack(bias).numpy(), r, logits.numpy())


def lm_gradient_x_input(model: nn.Module, ids: Tensor, targets: Tensor, rows: Sequence[int] | None = None
                        ) -> np.ndarray:
    """``(len(rows), n)``: gradient x input of row ``t``'s logit of ``targets[t]`` at the embeddings (the first
    block's input), for each ``t`` of ``rows`` (default every row), one window ``ids`` ``(1, n)``."""
    lm = _causal_lm(model)
    n, _ = _check_window(lm, ids, targets)
    out = []
    for t in (range(n) if rows is None else rows):
        def score(t: int = t) -> Tensor:
            return lm(ids)[0, t, int(targets[t])]

        out.append(gradient_x_input(lm, score))
    return np.stack(out) if out else np.zeros((0, n))


def generation_windows(n_prompt: int, n_generated: int, context: int) -> list[tuple[int, int]]:
    """``[(start, stop)]`` for each generated character: the model read positions ``start .. stop - 1`` of the
    prompt followed by the generation when it chose the character at position ``stop`` (``LanguageModel.generate``:
    the last ``context`` characters of the prompt, then the window slides to the last ``context // 2`` characters
    whenever it would grow past ``context``)."""
    start, out = max(0, n_prompt - context), []
    for s in range(n_generated):
        stop = n_prompt + s
        out.append((start, stop))
        if stop + 1 - start > context:
            start = stop + 1 - context // 2
    return out


@dataclass(frozen=True)
class GenerationAttribution:
    """Each generated character attributed over the characters before it (:func:`attribute_generation`):
    ``alti_logit`` and ``grad_x_input`` ``(G, S)`` (row ``g`` the ``g``-th generated character, column ``s`` the
    ``s``-th character of prompt + generation; NaN where the model did not read that character when it chose this
    one: later ones, and earlier ones its window had slid past); ``logits`` ``(G,)`` the model's logit of each
    generated character, ``ids`` the prompt's ids then the generated ones, ``n_prompt`` how many are the prompt."""

    alti_logit: np.ndarray
    grad_x_input: np.ndarray
    logits: np.ndarray
    ids: list[int]
    n_prompt: int

    @property
    def sources(self) -> list[int]:
        """The ``S`` ids of the columns: every character but the last generated one (which no one read)."""
        return self.ids[:-1]

    @property
    def generated(self) -> list[int]:
        """The ``G`` ids of the rows."""
        return self.ids[self.n_prompt:]

    def agreement(self) -> float:
        """The mean over generated characters (with two or more sources) of the Spearman correlation between the
        two methods' scores of the same row: how far gradient x input confirms ALTI-Logit's ranking."""
        from scipy.stats import spearmanr

        rhos = []
        for a, b in zip(self.alti_logit, self.grad_x_input, strict=True):
            keep = ~np.isnan(a)
            if keep.sum() >= 2:
                rho = spearmanr(a[keep], b[keep]).statistic
                if np.isfinite(rho):
                    rhos.append(float(rho))
        return float(np.mean(rhos)) if rhos else float("nan")


def attribute_generation(model: nn.Module, prompt_ids: Sequence[int], generated_ids: Sequence[int]
                         ) -> GenerationAttribution:
    """ALTI-Logit and gradient x input of every generated character over the characters the model read when it
    chose it (its window, :func:`generation_windows`), on a float64 copy of ``model`` (so the decomposition is
    exact to 1e-10).  One forward pass per window position the generation slid to, one backward per character.

    A Hugging Face causal language model (GPT-2, the Llama family) gets gradient x input alone, at its token
    embeddings (``inputs_embeds``), in float64, over the whole prompt and generation (its generation does not slide);
    its ``alti_logit`` is NaN throughout: ALTI-Logit's decomposition is exact only through attnlab's own blocks."""
    if _is_hf_causal(model):
        return _hf_generation(model, prompt_ids, generated_ids)
    lm = _causal_lm(model)
    if not generated_ids:
        raise InputError("nothing was generated, so there is nothing to attribute; generate at least 1 character")
    net = copy.deepcopy(lm).double().eval()
    sources = [*prompt_ids, *generated_ids]
    n_p, n_g, n_s = len(prompt_ids), len(generated_ids), len(sources) - 1  # the last character is read by none
    a_out = np.full((n_g, n_s), np.nan)
    g_out = np.full((n_g, n_s), np.nan)
    logits = np.zeros(n_g)
    windows = generation_windows(n_p, n_g, lm.config.context)
    for start in sorted({s for s, _ in windows}):
        members = [g for g, (s, _) in enumerate(windows) if s == start]
        stop = windows[members[-1]][1]  # the longest window from this start serves every member (causal)
        ids = torch.tensor([sources[start:stop]])  # (1, n)
        targets = torch.tensor(sources[start + 1: stop + 1])  # (n,): the character after each position
        rows = [windows[g][1] - 1 - start for g in members]  # the row that predicts each member
        got = lm_alti_logit(net, ids, targets)
        grads = lm_gradient_x_input(net, ids, targets, rows)
        for g, row, grad in zip(members, rows, grads, strict=True):
            a_out[g, start: start + row + 1] = got.tokens[row, : row + 1]
            g_out[g, start: start + row + 1] = grad[: row + 1]
            logits[g] = got.logits[row]
    return GenerationAttribution(a_out, g_out, logits, sources, n_p)


def _is_hf_causal(model: nn.Module) -> bool:
    if "transformers" not in sys.modules:
        return False
    from transformers import PreTrainedModel

    return isinstance(model, PreTrainedModel) and model.get_output_embeddings() is not None


def _hf_generation(model: Any, prompt_ids: Sequence[int], generated_ids: Sequence[int]) -> GenerationAttribution:
    """Gradient x input of each generated token's logit at the token embeddings of everything before it."""
    if not generated_ids:
        raise InputError("nothing was generated, so there is nothing to attribute; generate at least 1 token")
    if model.training:
        raise InputError("the model is in training mode (dropout on): call model.eval() first")
    net = copy.deepcopy(model).double().eval()
    sources = [*prompt_ids, *generated_ids]
    n_p, n_g, n_s = len(prompt_ids), len(generated_ids), len(sources) - 1
    emb = net.get_input_embeddings()(torch.tensor([sources[:-1]])).detach().requires_grad_(True)  # (1, S, M)
    logits = net(inputs_embeds=emb, use_cache=False).logits[0]  # (S, V)
    g_out = np.full((n_g, n_s), np.nan)
    chosen = np.zeros(n_g)
    for g in range(n_g):
        row = n_p - 1 + g  # the position whose logits chose generated token g
        score = logits[row, sources[n_p + g]]
        (grad,) = torch.autograd.grad(score, emb, retain_graph=g < n_g - 1)
        g_out[g, : row + 1] = (grad[0, : row + 1] * emb[0, : row + 1]).sum(-1).detach().numpy()
        chosen[g] = float(score.detach())
    return GenerationAttribution(np.full_like(g_out, np.nan), g_out, chosen, sources, n_p)


def attribution_figure(attribution: GenerationAttribution, characters: Sequence[str], title: str = "", *,
                       unit: str = "character") -> Figure:
    """Two panels, generated characters (y) x source characters (x): ALTI-Logit and gradient x input, each on a
    red-blue scale centred on 0 (red pushed the generated character up); grey where the model did not read the
    source character; a line after the prompt.  One panel where ALTI-Logit was not computed (a Hugging Face
    language model); ``unit`` names the axes' tokens ("character", "token")."""
    from matplotlib import colormaps
    from matplotlib.colors import TwoSlopeNorm

    from ...viz.static import families, figure, set_ticks

    g, s = attribution.alti_logit.shape
    sources = [characters[i] for i in attribution.sources]
    generated = [characters[i] for i in attribution.generated]
    panels = [(name, values) for name, values in (("ALTI-Logit", attribution.alti_logit),
                                                  ("gradient x input", attribution.grad_x_input))
              if not np.isnan(values).all() or g == 0]  # (a Hugging Face LM's has no ALTI-Logit: one panel)
    cell = min(0.4, max(0.13, 9.0 / max(s, g, 1)))
    fig = figure(2.4 + len(panels) * cell * s, 1.6 + cell * g)
    axes = np.atleast_1d(fig.subplots(1, len(panels), sharey=True))
    cmap = colormaps["RdBu_r"].with_extremes(bad=(0.88, 0.88, 0.88, 1.0))
    for ax, (name, values) in zip(axes, panels, strict=True):
        top = float(np.nanmax(np.abs(values))) if np.isfinite(values).any() else 1.0
        image = ax.imshow(values, cmap=cmap, norm=TwoSlopeNorm(0.0, -max(top, 1e-9), max(top, 1e-9)), aspect="auto",
                          interpolation="nearest")
        ax.axvline(attribution.n_prompt - 0.5, color="black", lw=0.8)
        width, height = fig.get_size_inches()
        set_ticks(ax, sources, "x", width * 0.4)
        ax.set_xlabel(f"source {unit} (prompt | generated)")
        ax.set_title(name, fontsize=9)
        fig.colorbar(image, ax=ax, shrink=0.8, label="logit contribution")
    set_ticks(axes[0], generated, "y", height * 0.8)
    axes[0].set_ylabel(f"generated {unit}")
    if title:
        fig.suptitle(title, fontsize=9, fontfamily=families(title))
    return fig
