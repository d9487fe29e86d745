"""Which source tokens and which earlier output tokens each token of a translation used: ALTI-Logit for the
transformer translator, gradient x input for every translator (issue 31, section 6, "the same for the translators'
output tokens").

The translation is replayed with teacher forcing: the decoder reads ``BOS, y_1 .. y_{T-1}`` and row ``t``'s logit of
``y_{t+1}`` is the score attributed (EOS is not attributed).

**ALTI-Logit, transformer** (:class:`~attnlab.models.seq2seq.TransformerSeq2Seq`: pre-norm layers, a final
LayerNorm on the decoder, an output projection with a bias).  With the final LayerNorm's standard deviation
``sigma_t`` fixed at its real value, row ``t``'s logit of ``g`` is ``u_t . h_t + c_t``, ``u_t = (gamma W_g -
mean(gamma W_g)) / sigma_t`` (exact at the real stream), as for the language model
(:mod:`._lm`).  Each decoder layer has two attention sublayers:

- the **cross-attention** adds ``sum_j T_t(m_j) + b_O`` to row ``t`` (``m_j`` the encoder's output at source
  position ``j``), so source position ``j`` moves the logit by ``C_l[t, j] = u_t . T_t(m_j)``;
- the **self-attention** adds ``sum_k T_t(x_k) + b_O`` (``x_k`` the layer's input at decoder position ``k <= t``):
  ``D_l[t, k] = u_t . T_t(x_k)``.

Contributions plus the bias term are exactly each sublayer's logit change (the test checks 1e-10 in float64).  As
ALTI-Logit does (Ferrando et al., 2023), the contributions are carried to input tokens by ALTI's rollout: the
source side through the encoder (``source[t] = sum_l C_l[t] @ R_enc``), the target side through the decoder's
self-attention layers below (``target[t] = D_0[t] + sum_{l>0} D_l[t] @ R_dec[l-1]``).  Two approximations, said:
the decoder's rollout follows its self-attention only (what the cross-attention of a lower layer wrote into a
decoder row is not traced back to the source), and, as in the paper, the embeddings' direct path, the
feed-forward sublayers and the biases are not attributed.

**Gradient x input**, every translator (the recurrent Bahdanau and Luong models too, where the attention feeds a
GRU and no linear decomposition exists): ``sum_d x_d d logit / d x_d`` at the source and target token embeddings
(before the transformer's scaling and positions), one backward pass per output token.

Letters: T attributed output tokens (decoder positions), S source tokens (EOS included), L decoder layers, M width.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor, nn

from ...errors import InputError
from ..rollout import rollout
from ._alti import alti
from ._norm import value_outputs

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["TranslationAttribution", "attribute_translation", "translation_attribution_figure",
           "translation_logit_directions"]


@dataclass(frozen=True)
class TranslationAttribution:
    """Each output token of a translation attributed over the source tokens and the decoder's inputs
    (:func:`attribute_translation`), float64.

    ``grad_source`` ``(T, S)`` and ``grad_target`` ``(T, T)``: gradient x input (row ``t``: output token ``t``;
    target column ``k``: the decoder input at position ``k``, ``BOS`` then the output tokens; NaN after ``t``).
    For the transformer also ``alti_source``/``alti_target`` (same shapes), the per-layer direct contributions
    ``cross`` ``(L, T, S)`` and ``self_`` ``(L, T, T)`` with their bias terms ``cross_bias``/``self_bias``
    ``(L, T)``; None for a recurrent model.  ``logits`` ``(T,)`` the real logit of each output token."""

    grad_source: np.ndarray
    grad_target: np.ndarray
    logits: np.ndarray
    alti_source: np.ndarray | None = None
    alti_target: np.ndarray | None = None
    cross: np.ndarray | None = None
    cross_bias: np.ndarray | None = None
    self_: np.ndarray | None = None
    self_bias: np.ndarray | None = None

    def agreement(self) -> float:
        """The mean over output tokens of the Spearman correlation between ALTI-Logit's and gradient x input's scores
        of the source tokens (NaN for a recurrent model, which has no ALTI-Logit)."""
        from scipy.stats import spearmanr

        if self.alti_source is None or self.grad_source.shape[1] < 2:
            return float("nan")
        rhos = [spearmanr(a, b).statistic for a, b in zip(self.alti_source, self.grad_source, strict=True)]
        kept = [float(r) for r in rhos if np.isfinite(r)]
        return float(np.mean(kept)) if kept else float("nan")


def _translator(model: nn.Module) -> Any:
    from ...models.seq2seq import Seq2Seq, TransformerSeq2Seq

    if not isinstance(model, (Seq2Seq, TransformerSeq2Seq)):
        raise InputError(f"this attribution reads a translator (attnlab train translate, dates-zh, tutorial-en-zh), "
                         f"got {type(model).__name__}; for a language model use attnlab.analysis.attribute_generation")
    return model


def _inputs(model: Any, source_ids: Sequence[int], output_ids: Sequence[int]) -> tuple[Tensor, Tensor, Tensor]:
    """``(src (1, S), tgt_in (1, T), targets (T,))`` of the teacher-forced replay."""
    c = model.config
    if not source_ids:
        raise InputError("the source is empty; give the source ids the translator encoded (EOS included)")
    if not output_ids:
        raise InputError("the translation is empty, so there is nothing to attribute; translate a text that gives "
                         "at least one token")
    for name, ids, vocab in (("source_ids", source_ids, c.src_vocab), ("output_ids", output_ids, c.tgt_vocab)):
        bad = [i for i in ids if not 0 <= int(i) < vocab]
        if bad:
            raise InputError(f"{name} must be ids of the model's vocabulary (0 .. {vocab - 1}), got {bad[:3]}; "
                             f"use the ids of the model's own tokenizer")
    if len(source_ids) > c.max_length or len(output_ids) > c.max_length:
        raise InputError(f"the model reads at most {c.max_length} tokens a side, got {len(source_ids)} source and "
                         f"{len(output_ids)} output tokens")
    targets = torch.tensor([int(i) for i in output_ids])  # (T,)
    tgt_in = torch.tensor([[c.bos_id, *[int(i) for i in output_ids[:-1]]]])  # (1, T)
    return torch.tensor([[int(i) for i in source_ids]]), tgt_in, targets


def translation_logit_directions(model: nn.Module, src: Tensor, tgt_in: Tensor, targets: Tensor
                                 ) -> tuple[Tensor, Tensor, Tensor]:
    """For a transformer translator: ``(u (T, M), h (T, M), c (T,))`` with row ``t``'s logit of ``targets[t]``
    equal to ``u_t . h_t + c_t`` exactly at ``h``, the stream entering the decoder's final LayerNorm (float64)."""
    net = _translator(model)
    norm, out = net.decoder.norm, net.out
    if norm is None:
        raise InputError("ALTI-Logit reads a pre-norm decoder with a final LayerNorm; this decoder has none")
    seen: list[Tensor] = []
    handle = norm.register_forward_pre_hook(lambda _m, args: seen.append(args[0][0].detach()))
    try:
        with torch.no_grad():
            net(src, tgt_in)
    finally:
        handle.remove()
    h = seen[-1].double()  # (T, M)
    w = out.weight.detach().double()[targets]  # (T, M): the output rows of the targets
    gamma, beta = norm.weight.detach().double(), norm.bias.detach().double()  # (M,)
    sigma = (h.var(-1, unbiased=False) + norm.eps).sqrt()  # (T,)
    scaled = gamma * w  # (T, M)
    u = (scaled - scaled.mean(-1, keepdim=True)) / sigma[:, None]  # (T, M)
    bias = out.bias.detach().double()[targets] if out.bias is not None else torch.zeros(len(targets)).double()
    return u, h, w @ beta + bias


def _sublayer_contributions(net: Any, src: Tensor, tgt_in: Tensor, u: Tensor
                            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(cross (L, T, S), cross_bias (L, T), self_ (L, T, T), self_bias (L, T))``: what each decoder layer's
    cross- and self-attention add to each row's logit from each position, and from the output bias."""
    from ...layers import MultiHeadAttention

    seen: list[dict[str, Tensor]] = []
    detach: list[Any] = []
    for layer in net.decoder.layers:
        for name in ("self_attn", "cross_attn"):
            attn = getattr(layer, name)
            assert isinstance(attn, MultiHeadAttention)
            got: dict[str, Tensor] = {}
            seen.append(got)

            def keep_weights(call: Any, got: dict[str, Tensor] = got) -> None:
                got["weights"] = call.weights[0].detach()  # (H, T, n_keys)

            def keep_values(_m: nn.Module, _a: Any, out: Tensor, got: dict[str, Tensor] = got) -> None:
                got["values"] = out[0].detach()  # (n_keys, H * Dv)

            detach.append(attn.attn_hook.attach(keep_weights, weights=True))
            detach.append(attn.v_proj.register_forward_hook(keep_values).remove)
    try:
        with torch.no_grad():
            net(src, tgt_in)
    finally:
        for d in detach:
            d()
    parts: dict[str, list[np.ndarray]] = {"self_attn": [], "cross_attn": [], "self_bias": [], "cross_bias": []}
    for i, got in enumerate(seen):
        layer, name = net.decoder.layers[i // 2], ("self_attn", "cross_attn")[i % 2]
        attn = getattr(layer, name)
        heads = attn.n_heads
        values = got["values"].double()  # (n_keys, H * Dv)
        values = values.reshape(values.shape[0], heads, -1).transpose(0, 1)  # (H, n_keys, Dv)
        f = value_outputs(values, attn.out_proj.weight.detach().double())  # (H, n_keys, M)
        t = torch.einsum("hij,hjm->ijm", got["weights"].double(), f)  # (T, n_keys, M)
        parts[name].append(torch.einsum("ijm,im->ij", t, u).numpy())  # (T, n_keys)
        b = attn.out_proj.bias
        b = torch.zeros(u.shape[1]).double() if b is None else b.detach().double()
        parts[name.replace("_attn", "_bias")].append((u @ b).numpy())  # (T,)
    return (np.stack(parts["cross_attn"]), np.stack(parts["cross_bias"]), np.stack(parts["self_attn"]),
            np.stack(parts["self_bias"]))


def _gradients(net: Any, src: Tensor, tgt_in: Tensor, targets: Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Gradient x input at the source and target token embeddings: ``((T, S), (T, T))``, NaN after each row."""
    n = len(targets)
    out_s, out_t = np.zeros((n, src.shape[1])), np.full((n, n), np.nan)
    for t in range(n):
        kept: dict[str, list[Tensor]] = {"src": [], "tgt": []}

        def keep(side: str, kept: dict[str, list[Tensor]] = kept) -> Any:
            def hook(_m: nn.Module, _a: Any, out: Tensor) -> None:
                out.retain_grad()
                kept[side].append(out)
            return hook

        handles = [net.src_embed.register_forward_hook(keep("src")), net.tgt_embed.register_forward_hook(keep("tgt"))]
        try:
            with torch.enable_grad():
                net(src, tgt_in)[0, t, int(targets[t])].backward()
        finally:
            for h in handles:
                h.remove()
        (x_s,) = kept["src"]  # (1, S, E)
        out_s[t] = (x_s.detach() * x_s.grad).sum(-1)[0].numpy()  # type: ignore[operator]
        # the transformer embeds the decoder inputs at once (1, T, E), the recurrent model one step at a time (1, E)
        def rows(x: Tensor) -> Tensor:  # (1, E) or (1, T_i, E) -> (1, T_i, E)
            return x.reshape(1, -1, x.shape[-1])

        x_t = torch.cat([rows(s.detach()) for s in kept["tgt"]], dim=1)  # (1, T, E)
        g_t = torch.cat([rows(torch.zeros_like(s) if s.grad is None else s.grad) for s in kept["tgt"]], dim=1)
        out_t[t, : t + 1] = (x_t * g_t).sum(-1)[0, : t + 1].numpy()
    return out_s, out_t


def attribute_translation(model: nn.Module, source_ids: Sequence[int], output_ids: Sequence[int]
                          ) -> TranslationAttribution:
    """Attribute every token of ``output_ids`` (a translation of ``source_ids``, EOS left out) over the source and
    the decoder inputs before it, on a float64 copy of ``model`` in eval mode (see the module's docstring)."""
    from ...models.seq2seq import TransformerSeq2Seq

    net = copy.deepcopy(_translator(model)).double().eval()
    src, tgt_in, targets = _inputs(net, source_ids, output_ids)
    with torch.no_grad():
        logits = net(src, tgt_in)[0].gather(1, targets[:, None])[:, 0].numpy()  # (T,)
    grad_source, grad_target = _gradients(net, src, tgt_in, targets)
    if not isinstance(net, TransformerSeq2Seq):
        return TranslationAttribution(grad_source, grad_target, logits)
    u, _, _ = translation_logit_directions(net, src, tgt_in, targets)
    cross, cross_bias, self_, self_bias = _sublayer_contributions(net, src, tgt_in, u)
    r_enc = rollout(alti(net.encoder, lambda b: net.encode(src.repeat(b, 1))[0])[:, None], residual=0.0)[-1]  # (S, S)
    r_dec = rollout(alti(net.decoder, lambda b: net(src.repeat(b, 1), tgt_in.repeat(b, 1)))[:, None],
                    residual=0.0)  # (L, T, T)
    alti_source = cross.sum(0) @ r_enc  # (T, S)
    alti_target = self_[0] + sum((self_[i] @ r_dec[i - 1] for i in range(1, len(self_))), np.zeros_like(self_[0]))
    alti_target = np.where(np.tril(np.ones_like(alti_target, dtype=bool)), alti_target, np.nan)
    return TranslationAttribution(grad_source, grad_target, logits, alti_source, alti_target, cross, cross_bias,
                                  self_, self_bias)


def translation_attribution_figure(attribution: TranslationAttribution, source_tokens: Sequence[str],
                                   output_tokens: Sequence[str], bos: str = "[BOS]", title: str = "") -> Figure:
    """One panel per method (ALTI-Logit when the model has it, gradient x input): output tokens (y) x the source
    tokens then the decoder inputs (x, a line between them), red-blue centred on 0 (red pushed the output token up),
    grey where the decoder had not yet read the token."""
    from matplotlib import colormaps
    from matplotlib.colors import TwoSlopeNorm

    from ...viz.static import families, figure, set_ticks

    t, s = attribution.grad_source.shape
    columns = [*source_tokens, bos, *output_tokens[: t - 1]]
    panels = [("gradient x input", np.hstack([attribution.grad_source, attribution.grad_target]))]
    if attribution.alti_source is not None and attribution.alti_target is not None:
        panels.insert(0, ("ALTI-Logit", np.hstack([attribution.alti_source, attribution.alti_target])))
    cell = min(0.4, max(0.13, 9.0 / max(s + t, t, 1)))
    fig = figure(2.4 + len(panels) * cell * (s + t), 1.8 + cell * t)
    axes = np.atleast_1d(fig.subplots(1, len(panels), sharey=True))
    cmap = colormaps["RdBu_r"].with_extremes(bad=(0.88, 0.88, 0.88, 1.0))
    width, height = fig.get_size_inches()
    for ax, (name, values) in zip(axes, panels, strict=True):
        top = max(float(np.nanmax(np.abs(values))) if np.isfinite(values).any() else 1.0, 1e-9)
        image = ax.imshow(values, cmap=cmap, norm=TwoSlopeNorm(0.0, -top, top), aspect="auto",
                          interpolation="nearest")
        ax.axvline(s - 0.5, color="black", lw=0.8)
        set_ticks(ax, columns, "x", width / len(panels))
        ax.set_xlabel("source token | decoder input")
        ax.set_title(name, fontsize=9)
        fig.colorbar(image, ax=ax, shrink=0.8, label="logit contribution")
    set_ticks(axes[0], list(output_tokens[:t]), "y", height * 0.8)
    axes[0].set_ylabel("output token")
    if title:
        fig.suptitle(title, fontsize=9, fontfamily=families(title))
    return fig
