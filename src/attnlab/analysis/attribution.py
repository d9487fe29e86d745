"""Attribution beyond attention weights: what each input token contributes, measured three more ways.

* **Norm-based attention** (Kobayashi et al. 2020, "Attention is not only a weight"): a layer's output at token
  ``i`` is ``sum_h sum_j alpha^h_ij f^h(x_j)`` with ``f^h(x_j) = v^h_j W_O^h`` (the value of token ``j`` in head
  ``h``, bias included, through that head's slice of the output projection).  Per head ``||alpha^h_ij f^h(x_j)||``,
  per layer ``||sum_h alpha^h_ij f^h(x_j)||`` (:func:`norm_contributions`, :func:`norm_attention`).
* **Value zeroing** (Mohebbi et al. 2023): token ``j``'s value vector is set to zero in every head of one layer
  (its input kept), and ``C_l[i, j]`` is the cosine distance between the layer's output at ``i`` with and
  without it; rows renormalised to sum to one (:func:`value_zeroing_scores`, :func:`value_zeroing`).  The
  layer's residual and feed-forward are inside the measurement, so the layers chain without an added identity:
  ``rollout(C, residual=0)``.
* **Gradient x input** (the non-attention baseline): ``sum_d x_jd * d score / d x_jd`` at the first layer's
  input ``x`` (the embeddings), for a scalar ``score`` such as the predicted class's probability
  (:func:`gradient_x_input`); signed, a first-order estimate of what blanking the token changes.

The model is any one whose attention layers :func:`layer_parts` finds: attnlab's transformer blocks and the
BERT family of Hugging Face encoders (``encoder.layer[i].attention.self.value`` / ``.output.dense``, as the
bundled MiniLM).  Attention weights come from :func:`attnlab.capture`; values and layer outputs from forward
hooks, removed when the function returns.

Letters: L layers, H heads, n tokens, M d_model, Dv per-head value size, B batch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ..errors import InputError

__all__ = [
    "LayerParts",
    "NormAttention",
    "TextAttribution",
    "attribute_text",
    "gradient_x_input",
    "layer_parts",
    "norm_attention",
    "norm_contributions",
    "value_zeroing",
    "value_zeroing_scores",
]

# forward(k): run the model on k copies of the one input (a batch of k); its output is not read
Forward = Callable[[int], Any]


@dataclass(frozen=True)
class LayerParts:
    """The pieces of one self-attention layer that attribution reads (module references, not copies)."""

    block: nn.Module  # the whole layer: its output (the first item of a tuple) is the residual stream after it
    value: nn.Linear  # the value projection: (B, n, M) -> (B, n, H * Dv), heads side by side
    output: nn.Linear  # the output projection W_O: (B, n, H * Dv) -> (B, n, M)
    n_heads: int


def layer_parts(model: nn.Module) -> list[LayerParts]:
    """The self-attention layers of ``model`` in order: attnlab transformer blocks (their ``self_attn``) or
    Hugging Face BERT-family layers (``attention.self.value``, ``attention.output.dense``)."""
    from ..layers import MultiHeadAttention

    parts = []
    for module in model.modules():
        attn = getattr(module, "self_attn", None)
        if isinstance(attn, MultiHeadAttention):  # an attnlab encoder or decoder layer
            parts.append(LayerParts(module, attn.v_proj, attn.out_proj, attn.n_heads))
        elif _is_bert_layer(module):
            attention: Any = module.attention  # BertAttention: .self (BertSelfAttention) and .output (dense)
            heads = int(getattr(attention.self, "num_attention_heads", 0) or attention.self.config.num_attention_heads)
            parts.append(LayerParts(module, attention.self.value, attention.output.dense, heads))
    if not parts:
        raise InputError(f"found no attention layer to attribute through in {type(model).__name__}; attribution "
                         f"reads attnlab transformer blocks or BERT-family Hugging Face layers "
                         f"(attention.self.value, attention.output.dense)")
    return parts


def _is_bert_layer(module: nn.Module) -> bool:
    attention = getattr(module, "attention", None)
    return (isinstance(getattr(getattr(attention, "self", None), "value", None), nn.Linear)
            and isinstance(getattr(getattr(attention, "output", None), "dense", None), nn.Linear))


def norm_contributions(weights: Tensor, values: Tensor, w_out: Tensor) -> tuple[Tensor, Tensor]:
    """One layer's norms: ``weights`` ``(H, n, n)``, ``values`` ``(H, n, Dv)`` (bias included), ``w_out``
    the output projection's weight ``(M, H * Dv)`` -> ``(per_head (H, n, n), per_layer (n, n))``."""
    h, n, dv = values.shape
    w_o = w_out.reshape(w_out.shape[0], h, dv)  # (M, H, Dv): head h's columns of W_O
    f = torch.einsum("hjd,mhd->hjm", values, w_o)  # (H, n, M): f^h(x_j)
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
    from ..capturing import capture

    _check_eval(model)
    parts = layer_parts(model)
    values: list[Tensor] = []
    with torch.no_grad(), _hooks([(p.value, lambda _m, _i, out: values.append(out.detach())) for p in parts]), \
            capture(model) as trace:
        forward(1)
    weights = [r.weights for r in trace.records if r.kind != "cross"]
    if len(weights) != len(parts) or len(values) != len(parts):
        raise InputError(f"the model ran {len(values)} value projections and recorded {len(weights)} self-attention "
                         f"weights for {len(parts)} layers; attribution needs one attention call per layer")
    per_head, per_layer = [], []
    for p, w, v in zip(parts, weights, values, strict=True):
        w64 = w[0].double()  # (H, n, n)
        n = w64.shape[-1]
        v64 = v[0].double().reshape(n, p.n_heads, -1).transpose(0, 1)  # (H, n, Dv)
        ph, pl = norm_contributions(w64, v64, p.output.weight.detach().double())
        per_head.append(ph.numpy())
        per_layer.append(pl.numpy())
    return NormAttention(np.stack(per_head), np.stack(per_layer), np.stack([w[0].double().numpy() for w in weights]))


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
    _check_eval(model)
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


def gradient_x_input(model: nn.Module, score: Callable[[], Tensor]) -> np.ndarray:
    """``(n,)``: ``sum_d x_jd * d score / d x_jd`` with ``x`` the first attention layer's input (one input,
    batch of one) and ``score()`` a scalar computed by running the model (e.g. the predicted class's probability)."""
    _check_eval(model)
    first = layer_parts(model)[0].block
    seen: list[Tensor] = []

    def keep_input(_m: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        x = args[0] if args else kwargs["hidden_states"]
        x.retain_grad()
        seen.append(x)

    handle = first.register_forward_pre_hook(keep_input, with_kwargs=True)
    try:
        with torch.enable_grad():
            value = score()
            if value.numel() != 1:
                raise InputError(f"score() must return one number (a scalar tensor), got shape {tuple(value.shape)}")
            value.backward()
    finally:
        handle.remove()
    if not seen or seen[0].grad is None:
        raise InputError("score() must run the model and depend on its input (e.g. the predicted class's "
                         "probability), but the first attention layer's input got no gradient from it")
    x = seen[0]
    assert x.grad is not None
    return (x.detach().double() * x.grad.double()).sum(-1)[0].numpy()  # (n,)


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


def _check_eval(model: nn.Module) -> None:
    if model.training:
        raise InputError("the model is in training mode (dropout on): attribution compares exact forward passes; "
                         "call model.eval() first")


@dataclass(frozen=True)
class TextAttribution:
    """The attributions of one text: ``norm`` ``(L, n, n)`` (Kobayashi's per-layer norms, rows renormalised to sum
    to one), ``value_zeroing`` ``(L, n, n)``, and for a classifier ``grad_x_input`` ``(n,)`` of the predicted
    class's probability (None for an encoder without a head)."""

    norm: np.ndarray
    value_zeroing: np.ndarray
    grad_x_input: np.ndarray | None
    label: str | None


def attribute_text(text: str, model: str = "minilm") -> TextAttribution:
    """Norm-based attention, value zeroing and (for a classifier) gradient x input of ``text`` on a bundled model,
    a local Hugging Face folder or an ``attnlab train classify`` folder, tokenised as :func:`attnlab.trace_text`
    does (the tokens of its trace line up with these matrices)."""
    from .._bundled import locate

    found = locate(model, "huggingface", "classifier")
    score: Callable[[], Tensor] | None = None
    label = None
    if found.kind == "classifier":
        from ..training import load_trained

        clf = load_trained(found.path)
        net = clf.model.eval()
        x = torch.tensor([clf.encode([text])[0][0]])  # (1, n)

        def forward(k: int) -> Any:
            return net(x.repeat(k, 1))

        with torch.no_grad():
            k = int(net(x).argmax(-1))
        label = str(clf.labels[k])

        def score() -> Tensor:
            return torch.softmax(net(x).double(), -1)[0, k]
    else:
        from ..capturing import load_model

        net, tokenizer, _ = load_model(model)
        inputs = tokenizer(text, return_tensors="pt", truncation=False)

        def forward(k: int) -> Any:
            return net(**{key: v.repeat(k, 1) for key, v in inputs.items()})
    norms = norm_attention(net, forward).per_layer
    total = norms.sum(-1, keepdims=True)
    return TextAttribution(np.divide(norms, total, out=np.zeros_like(norms), where=total > 0),
                           value_zeroing(net, forward), None if score is None else gradient_x_input(net, score), label)
