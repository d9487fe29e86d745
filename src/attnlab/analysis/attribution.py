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
* **ALTI** (Ferrando, Gallego & Costa-jussa 2022, "Measuring the Mixing of Contextual Information in the
  Transformer"): a layer's attention sublayer output at token ``i`` (with its residual, and through the
  LayerNorm after it in a post-norm model, linearised at the row's real standard deviation) is split exactly into
  one vector per input token, ``y_i = sum_j T_i(x_j) + b_i`` with ``T_i(x_j) = sum_h alpha^h_ij f^h(x_j)
  (+ x_i when j = i)`` and ``b_i`` what no token carries (the output projection's bias, the LayerNorm's beta);
  ``c_ij = max(0, ||y_i||_1 - ||y_i - T_i(x_j)||_1)``, rows renormalised (:func:`alti_vectors`,
  :func:`alti_contributions`, :func:`alti`).  The residual is inside, so the layers chain as value zeroing's:
  ``rollout(C, residual=0)``.
* **ALTI-Logit** (Ferrando, Gallego, Tsiamas & Costa-jussa 2023, "Explaining How Transformers Use Context to
  Build Predictions"), for pre-norm attnlab classifiers: signed.  What layer ``l``'s attention adds to the
  predicted class's logit from each position ``j`` of its input, ``D_l[j] = sum_i u_i . sum_h alpha^h_ij
  f^h(x_j)``, with ``u_i`` the direction the logit reads row ``i`` of the residual stream (the final LayerNorm
  linearised at each row's real standard deviation, the pooling at its real max rows or weights, the head's row
  of the class: :func:`logit_directions`), carried to the input by ALTI's rollout of the layers below:
  ``sum_l D_l @ R_{l-1}`` (:func:`alti_logit`).
* **Gradient x input** (the non-attention baseline): ``sum_d x_jd * d score / d x_jd`` at the first layer's
  input ``x`` (the embeddings), for a scalar ``score`` such as the predicted class's probability
  (:func:`gradient_x_input`); signed, a first-order estimate of what blanking the token changes.

The model is any one whose attention layers :func:`layer_parts` finds: attnlab's transformer blocks and the
BERT family of Hugging Face encoders (``encoder.layer[i].attention.self.value`` / ``.output.dense``, as the
bundled MiniLM).  Attention weights come from each layer's own call, in the model's dtype (attnlab's hook payload,
BERT's eager self-attention output, switched on by :func:`attnlab.capture`), so a float64 model is exact in float64;
values and layer outputs from forward hooks, removed when the function returns.  What a classifier's prediction
reads of the last layer's rows is :func:`pooling_reader`.

Letters: L layers, H heads, n tokens, M d_model, Dv per-head value size, B batch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ..errors import InputError

__all__ = [
    "LayerParts",
    "LayerRun",
    "LogitAttribution",
    "NormAttention",
    "TextAttribution",
    "alti",
    "alti_contributions",
    "alti_logit",
    "alti_vectors",
    "attention_vectors",
    "attribute_text",
    "embedding_contributions",
    "embedding_vectors",
    "gradient_x_input",
    "layer_parts",
    "logit_directions",
    "norm_attention",
    "norm_contributions",
    "pooling_reader",
    "run_layers",
    "value_outputs",
    "value_zeroing",
    "value_zeroing_scores",
]

# forward(k): run the model on k copies of the one input (a batch of k); its output is not read
Forward = Callable[[int], Any]


@dataclass(frozen=True)
class LayerParts:
    """The pieces of one self-attention layer that attribution reads (module references, not copies)."""

    block: nn.Module  # the whole layer: its output (the first item of a tuple) is the residual stream after it
    attention: nn.Module  # the module whose call computes the weights (attnlab MultiHeadAttention, BertSelfAttention)
    value: nn.Linear  # the value projection: (B, n, M) -> (B, n, H * Dv), heads side by side
    output: nn.Linear  # the output projection W_O: (B, n, H * Dv) -> (B, n, M)
    n_heads: int
    # where the attention sublayer's result (residual included) is read: the input of this module when
    # ``post_norm`` is None (pre-norm: the next sublayer's LayerNorm), else its output (post-norm: the LayerNorm
    # over x + attention, which ALTI linearises; it is this module)
    mixed: nn.Module
    post_norm: nn.LayerNorm | None


def layer_parts(model: nn.Module) -> list[LayerParts]:
    """The self-attention layers of ``model`` in order: attnlab transformer blocks (their ``self_attn``) or
    Hugging Face BERT-family layers (``attention.self.value``, ``attention.output.dense``)."""
    from ..layers import MultiHeadAttention

    parts = []
    for module in model.modules():
        attn = getattr(module, "self_attn", None)
        if isinstance(attn, MultiHeadAttention):  # an attnlab encoder or decoder layer
            block: Any = module
            post = None if block.config.norm_first else block.norm1  # pre-norm: x + SA(LN(x)) enters norm2
            parts.append(LayerParts(module, attn, attn.v_proj, attn.out_proj, attn.n_heads,
                                    block.norm2 if post is None else post, post))
        elif _is_bert_layer(module):
            attention: Any = module.attention  # BertAttention: .self (BertSelfAttention) and .output (dense)
            heads = int(getattr(attention.self, "num_attention_heads", 0) or attention.self.config.num_attention_heads)
            norm = attention.output.LayerNorm  # BERT is post-norm: LN(x + dense(attention))
            parts.append(LayerParts(module, attention.self, attention.self.value, attention.output.dense, heads,
                                    norm, norm))
    if not parts:
        raise InputError(f"found no attention layer to attribute through in {type(model).__name__}; attribution "
                         f"reads attnlab transformer blocks or BERT-family Hugging Face layers "
                         f"(attention.self.value, attention.output.dense)")
    return parts


def _is_bert_layer(module: nn.Module) -> bool:
    attention = getattr(module, "attention", None)
    return (isinstance(getattr(getattr(attention, "self", None), "value", None), nn.Linear)
            and isinstance(getattr(getattr(attention, "output", None), "dense", None), nn.Linear)
            and isinstance(getattr(getattr(attention, "output", None), "LayerNorm", None), nn.LayerNorm))


@dataclass(frozen=True)
class LayerRun:
    """What one attention layer computed on one input (float64, batch item 0): ``weights`` ``(H, n, n)``,
    ``values`` ``(H, n, Dv)`` (value bias included), ``residual`` ``(n, M)`` the block's input, ``output``
    ``(n, M)`` the attention sublayer's result with its residual (after the LayerNorm in a post-norm layer) and,
    post-norm, ``sigma`` ``(n,)`` the standard deviation that LayerNorm divided each row by."""

    weights: Tensor
    values: Tensor
    residual: Tensor
    output: Tensor
    sigma: Tensor | None


def run_layers(model: nn.Module, forward: Forward) -> list[LayerRun]:
    """One forward pass ``forward(1)`` (a batch of one) with every attention layer's weights, values, input and
    sublayer output recorded, in the model's own dtype, then made float64."""
    from ..capturing import capture
    from ..layers import MultiHeadAttention

    _check_eval(model)
    parts = layer_parts(model)
    seen: list[dict[str, Tensor]] = [{} for _ in parts]
    with ExitStack() as stack:
        stack.enter_context(torch.no_grad())
        stack.enter_context(capture(model))  # switches Hugging Face models to eager attention (weights returned)
        for p, got in zip(parts, seen, strict=True):
            if isinstance(p.attention, MultiHeadAttention):
                def keep_weights(call: Any, got: dict[str, Tensor] = got) -> None:
                    if call.weights is not None:  # a kernel without weights leaves them out: refused below
                        got["weights"] = call.weights[0].detach()

                stack.callback(p.attention.attn_hook.attach(keep_weights, weights=True))
            else:
                _on(stack, p.attention, _store(got, "weights", lambda out: out[1]))  # (attn_output, attn_weights)
            _on(stack, p.value, _store(got, "values", lambda out: out))
            stack.enter_context(_pre_hook(p.block, _store(got, "residual", lambda x: x)))
            if p.post_norm is None:
                stack.enter_context(_pre_hook(p.mixed, _store(got, "output", lambda x: x)))
            else:
                def keep_norm(m: Any, args: tuple[Any, ...], out: Tensor, got: dict[str, Tensor] = got) -> None:
                    z = args[0][0].detach()  # (n, M): x + attention, before the LayerNorm
                    got.update(output=out[0].detach(), sigma=_row_sigma(z, m))

                _on(stack, p.mixed, keep_norm)
        forward(1)
    runs = []
    for p, got in zip(parts, seen, strict=True):
        if not {"weights", "values", "residual", "output"} <= set(got):
            raise InputError(f"layer {type(p.block).__name__} recorded only {sorted(got)} in one forward pass; "
                             f"attribution needs each attention layer called once with its weights")
        n = got["values"].shape[0]
        runs.append(LayerRun(got["weights"].double(), got["values"].double().reshape(n, p.n_heads, -1).transpose(0, 1),
                             got["residual"].double(), got["output"].double(), got.get("sigma")))
    return runs


def _store(got: dict[str, Tensor], key: str, pick: Callable[[Any], Tensor]) -> Callable[..., None]:
    """A hook that keeps ``pick(last argument)[0]`` (batch item 0, detached) as ``got[key]``: the output of a
    forward hook, the input of :func:`_pre_hook`."""

    def hook(*args: Any) -> None:
        got[key] = pick(args[-1])[0].detach()

    return hook


def _on(stack: ExitStack, module: nn.Module, fn: Callable[..., Any]) -> None:
    """A forward hook on ``module`` until ``stack`` closes."""
    stack.callback(module.register_forward_hook(fn).remove)


@contextmanager
def _pre_hook(module: nn.Module, keep: Callable[[Tensor], Any]) -> Iterator[None]:
    """``keep(x)`` with ``module``'s first input (positional or ``hidden_states=``) at every call."""

    def hook(_m: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        keep(args[0] if args else kwargs["hidden_states"])

    handle = module.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        yield
    finally:
        handle.remove()


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
    return _linear_norm(t, run.sigma, norm), _linear_norm(bias, run.sigma, norm, beta=True)


def _row_sigma(z: Tensor, norm: nn.LayerNorm) -> Tensor:
    """``(n,)``: the standard deviation ``norm`` divides each row of ``z`` ``(n, M)`` by (float64)."""
    return (z.double().var(-1, unbiased=False) + norm.eps).sqrt()


def _linear_norm(x: Tensor, sigma: Tensor, norm: nn.LayerNorm, *, beta: bool = False) -> Tensor:
    """``norm`` with each row's standard deviation fixed at ``sigma`` ``(n,)``, a linear map: ``gamma (x - mean x) /
    sigma_i`` on ``x`` ``(n, ..., M)`` (every vector of row ``i``), plus ``beta`` when ``beta`` (the part that no
    token carries)."""
    m = x.shape[-1]
    gamma = torch.ones(m, dtype=x.dtype) if norm.weight is None else norm.weight.detach().double()  # (M,)
    out = gamma * (x - x.mean(-1, keepdim=True)) / sigma.reshape(-1, *[1] * (x.ndim - 1))
    return out + norm.bias.detach().double() if beta and norm.bias is not None else out


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
    return np.stack([_alti_layer(p, run) for p, run in zip(layer_parts(model), run_layers(model, forward),
                                                             strict=True)])


def _alti_layer(p: LayerParts, run: LayerRun) -> np.ndarray:
    """``(n, n)``: ALTI's contributions of one recorded layer."""
    vectors, _ = alti_vectors(run, p.output.weight.detach().double(),
                              None if p.output.bias is None else p.output.bias.detach(), p.post_norm)
    return alti_contributions(vectors, run.output)


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

    def keep_input(x: Tensor) -> None:
        x.retain_grad()
        seen.append(x)

    with _pre_hook(first, keep_input), torch.enable_grad():
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


def embedding_vectors(model: nn.Module, ids: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """An attnlab classifier's embedding layer split into one vector per input token, as ALTI splits a layer
    (float64, one text ``ids`` ``(1, n)``): ``(vectors (n_p, n_j, M), bias (n_p, M), output (n_p, M))`` with
    ``vectors.sum(1) + bias == output``, the embeddings the first layer reads.

    Position ``p`` sums the token's embedding (times the model's scale), the n-gram embeddings that start at ``p``
    (a bigram is the pair ``(p, p+1)``, a trigram the triple) and the position's own; blanking any token of an
    n-gram changes the whole n-gram vector, so it is shared equally among its tokens (their Shapley values; an
    n-gram cut short by the end of the text stays with ``p``).  The position vector is the bias.  With
    ``embed_norm`` the LayerNorm is linearised at each row's real standard deviation, as ALTI does."""
    clf = _classifier(model, "embedding_vectors reads its embeddings",
                      "a model whose embeddings are one token each needs no such step")
    n = ids.shape[1]
    with torch.no_grad():
        token = clf.embed(ids)[0].double() * clf.scale  # (n, M)
        m = token.shape[1]
        vectors = torch.zeros(n, n, m, dtype=torch.float64)
        vectors[torch.arange(n), torch.arange(n)] = token
        for order, table, rows in ((2, clf.bigram, clf.bigram_ids), (3, clf.trigram, clf.trigram_ids)):
            if table is None:
                continue
            gram = table(rows(ids))[0].double() * clf.scale  # (n, M): the n-gram starting at each position
            for p in range(n):
                owners = list(range(p, min(p + order, n)))
                for j in owners:
                    vectors[p, j] += gram[p] / len(owners)
        bias = clf.position(torch.zeros(1, n, m, dtype=torch.float64))[0]  # (n, M): the position vectors
        z = vectors.sum(1) + bias  # (n, M): what the embedding LayerNorm (if any) receives
        norm = clf.embed_norm
        if norm is None:
            return vectors, bias, z
        sigma = _row_sigma(z, norm)  # (n,)
        return (_linear_norm(vectors, sigma, norm), _linear_norm(bias, sigma, norm, beta=True),
                _linear_norm(z, sigma, norm, beta=True))


def embedding_contributions(model: nn.Module, ids: Tensor) -> np.ndarray:
    """``(n_p, n_j)``: ALTI's contributions of each input token to each embedding position
    (:func:`embedding_vectors`, :func:`alti_contributions`); exactly the identity for a model without n-gram
    embeddings (each position carries its own token only: nothing to measure).  A token-level attribution is
    ``row @ rollout(...)[-1] @ embedding_contributions(model, ids)``.  A row where no token's vector comes closer
    to the embedding than nothing (the position vector outweighing them) stays zeros, as in ALTI; none of
    zh-sentiment's 7,952 test positions of the benchmark does."""
    clf = _classifier(model, "embedding_contributions reads its embeddings",
                      "a model whose embeddings are one token each needs no such step")
    if clf.bigram is None and clf.trigram is None:
        return np.eye(ids.shape[1])
    vectors, _, output = embedding_vectors(model, ids)
    return alti_contributions(vectors, output)


def pooling_reader(model: nn.Module, ids: Tensor) -> np.ndarray:
    """``(n,)``: how much of what an attnlab classifier's head reads comes from each row (output position) of
    its encoder's last layer, for one text ``ids`` ``(1, n)``; non-negative, sums to one.  The attribution of the
    *prediction* is this row vector times a token-to-token matrix (``reader @ rollout(...)[-1]``).

    * ``cls``: position 0 only;
    * ``mean``: ``1 / n`` each (real tokens);
    * ``attention``: the pooling query's attention weights over the rows;
    * ``meanmax``: the head reads ``2M`` numbers, ``M`` means (each ``1 / n`` of every row) and ``M`` maxima (each
      one row's): row ``i`` supplies ``(M / n + wins_i) / 2M``, ``wins_i`` the dimensions where it is the max."""
    clf = _classifier(model, "pooling_reader reads its pooling",
                      "for another model give the reader yourself (e.g. a uniform row for mean pooling)")
    with torch.no_grad():
        states, real = clf.encode(ids)  # (1, n, M), (1, n)
        x, real = states[0].double(), real[0]  # (n, M), (n,)
        n, m = x.shape
        mean = real.double() / real.sum().clamp_min(1)  # (n,)
        pooling = clf.config.pooling
        if pooling == "cls":
            reader = torch.zeros(n, dtype=torch.float64)
            reader[0] = 1.0
        elif pooling == "mean":
            reader = mean
        elif pooling == "meanmax":
            wins = _max_rows(x, real)  # (M,)
            reader = (m * mean + torch.bincount(wins, minlength=n).double()) / (2 * m)
        else:  # attention
            query = clf.pool_query.to(states.dtype)[None]  # (1, M)
            reader = clf.pool(query, states, key_padding_mask=real[None])[1][0].double()  # (n,)
    return reader.numpy()


def _classifier(model: nn.Module, what: str, fix: str) -> Any:
    """``model`` when it is an attnlab :class:`~attnlab.models.AttentionClassifier`; else an InputError saying
    ``what`` the caller reads of one and the ``fix``."""
    from ..models import AttentionClassifier

    if not isinstance(model, AttentionClassifier):
        raise InputError(f"{what}: it needs an attnlab AttentionClassifier, got {type(model).__name__}; {fix}")
    return model


def _max_rows(x: Tensor, real: Tensor) -> Tensor:
    """``(M,)``: the row of ``x`` ``(n, M)`` each dimension's maximum over the real rows (``real`` ``(n,)``) comes
    from, as max pooling reads it."""
    return x.masked_fill(~real[:, None], float("-inf")).argmax(0)


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
    with torch.no_grad(), _pre_hook(norm, seen.append):
        states, real = clf.encode(ids)  # (1, n, M) after the final LayerNorm, (1, n)
    h, real = seen[0][0].double(), real[0]  # (n, M) before it, (n,)
    n, m = h.shape
    w = clf.head.weight.detach().double()[k]  # (M,) or (2M,)
    mean = real.double() / real.sum().clamp_min(1)  # (n,)
    pooling = clf.config.pooling
    if pooling == "meanmax":
        wins = _max_rows(states[0], real)  # (M,)
        g = mean[:, None] * w[:m] + torch.nn.functional.one_hot(wins, n).T.double() * w[m:]  # (n, M)
    else:
        g = torch.from_numpy(pooling_reader(model, ids))[:, None] * w  # (n, M): cls, mean, attention
    gamma, beta = norm.weight.detach().double(), norm.bias.detach().double()  # (M,)
    sigma = _row_sigma(h, norm)  # (n,)
    scaled = gamma * g  # (n, M)
    u = (scaled - scaled.mean(-1, keepdim=True)) / sigma[:, None]  # (n, M)
    c = float(clf.head.bias.detach().double()[k]) + float((g * beta).sum())
    return u, h, c


def _pre_norm(clf: Any) -> nn.LayerNorm | None:
    """The final LayerNorm of an attnlab classifier's encoder when it is pre-norm (what ALTI-Logit reads), else
    None."""
    norm = None if clf.encoder is None else clf.encoder.norm
    return norm if isinstance(norm, nn.LayerNorm) else None


def _final_norm(model: nn.Module) -> nn.LayerNorm:
    """The final LayerNorm of a pre-norm attnlab classifier's encoder; anything else is refused."""
    clf = _classifier(model, "ALTI-Logit reads its head",
                      "train one with `attnlab train classify` or load zh-sentiment")
    norm = _pre_norm(clf)
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
    from .rollout import rollout

    _final_norm(model)
    _check_eval(model)
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
        mixing.append(_alti_layer(p, run))
    d = torch.stack(per_layer).numpy()  # (L, n)
    r = rollout(np.stack(mixing)[:, None], residual=0.0)  # (L, n, n)
    tokens = d[0] + sum((d[layer] @ r[layer - 1] for layer in range(1, len(d))), np.zeros_like(d[0]))
    return LogitAttribution(tokens, d, np.array(bias), r, float(logits[k]), k)


@dataclass(frozen=True)
class TextAttribution:
    """The attributions of one text: ``norm`` ``(L, n, n)`` (Kobayashi's per-layer norms, rows renormalised to sum
    to one), ``value_zeroing`` ``(L, n, n)``, ``alti`` ``(L, n, n)``, and for a classifier ``grad_x_input`` ``(n,)``
    of the predicted class's probability, ``reader`` ``(n,)`` what its pooling reads of the last layer's rows
    (:func:`pooling_reader`) and ``embedding`` ``(n, n)`` its embedding layer's token mixing
    (:func:`embedding_contributions`; the identity without n-gram embeddings) (those three None for an encoder
    without a head), and for a pre-norm classifier ``alti_logit`` ``(n,)``, each input position's signed share
    of the predicted class's logit (:func:`alti_logit`'s ``tokens``; None otherwise)."""

    norm: np.ndarray
    value_zeroing: np.ndarray
    alti: np.ndarray
    grad_x_input: np.ndarray | None
    label: str | None
    reader: np.ndarray | None = None
    embedding: np.ndarray | None = None
    alti_logit: np.ndarray | None = None


def attribute_text(text: str, model: str = "minilm") -> TextAttribution:
    """Norm-based attention, value zeroing, ALTI and (for a classifier) gradient x input and ALTI-Logit of ``text``
    on a bundled model, a local Hugging Face folder or an ``attnlab train classify`` folder, tokenised as
    :func:`attnlab.trace_text` does (the tokens of its trace line up with these matrices)."""
    from .._bundled import locate

    found = locate(model, "huggingface", "classifier")
    score: Callable[[], Tensor] | None = None
    label = reader = embedding = logit = None
    if found.kind == "classifier":
        from ..trained import load_trained

        clf = load_trained(found.path)
        net = clf.model.eval()
        x = torch.tensor([clf.encode([text])[0][0]])  # (1, n)

        def forward(k: int) -> Any:
            return net(x.repeat(k, 1))

        with torch.no_grad():
            k = int(net(x).argmax(-1))
        label = str(clf.labels[k])
        reader = pooling_reader(net, x)
        embedding = embedding_contributions(net, x)
        if _pre_norm(net) is not None:  # ALTI-Logit reads a pre-norm residual stream
            logit = alti_logit(net, x, k).tokens

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
                           value_zeroing(net, forward), alti(net, forward),
                           None if score is None else gradient_x_input(net, score), label, reader, embedding,
                           logit)
