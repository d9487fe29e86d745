"""Norm-based attention, value zeroing and gradient x input against independent float64 references written with
explicit loops (queries, keys and values recomputed from each layer's input and its weights; one forward pass per
zeroed token; central finite differences), on a tiny attnlab classifier and a tiny Hugging Face BERT."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch
from torch import Tensor, nn

from attnlab.analysis import (
    alti,
    alti_contributions,
    alti_vectors,
    embedding_contributions,
    embedding_vectors,
    gradient_x_input,
    layer_parts,
    norm_attention,
    pooling_reader,
    rollout,
    run_layers,
    value_outputs,
    value_zeroing,
)
from attnlab.errors import InputError
from attnlab.models import AttentionClassifier, ClassifierConfig

N = 7  # tokens: odd, so that no square hides a transposition


def tiny_attnlab(norm_first: bool = False, seed: int = 0) -> tuple[nn.Module, Any]:
    """A float64 attnlab classifier of two layers, post-norm (x + SA(x), then LN) unless ``norm_first``."""
    torch.manual_seed(seed)
    cfg = ClassifierConfig(vocab_size=11, d_model=12, n_heads=3, n_layers=2, d_ff=10, max_length=9, pooling="mean",
                           norm_first=norm_first, dropout=0.0, positional="learned")
    model = AttentionClassifier(cfg).double().eval()
    ids = torch.tensor([[1, 4, 2, 9, 3, 7, 5]])
    return model, lambda k: model(ids.repeat(k, 1))


def tiny_bert() -> tuple[nn.Module, Any]:
    from transformers import BertConfig, BertModel

    torch.manual_seed(1)
    cfg = BertConfig(vocab_size=13, hidden_size=12, num_attention_heads=3, num_hidden_layers=2, intermediate_size=10,
                     max_position_embeddings=16, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = BertModel(cfg).double().eval()
    ids = torch.tensor([[2, 5, 7, 1, 11, 4, 3]])
    return model, lambda k: model(input_ids=ids.repeat(k, 1), attention_mask=torch.ones(k, N, dtype=torch.long))


def tiny_own_bert() -> tuple[nn.Module, Any]:
    """attnlab's own BERT encoder (models.bert), as analyze runs the bundled MiniLM."""
    from attnlab.models.bert import BertConfig, BertEncoder

    torch.manual_seed(2)
    cfg = BertConfig(vocab_size=13, hidden_size=12, num_hidden_layers=2, num_attention_heads=3, intermediate_size=10,
                     max_position_embeddings=16, type_vocab_size=2, layer_norm_eps=1e-12)
    model = BertEncoder(cfg).double().eval()
    ids = torch.tensor([[2, 5, 7, 1, 11, 4, 3]])
    return model, lambda k: model(input_ids=ids.repeat(k, 1), attention_mask=torch.ones(k, N, dtype=torch.long))


MODELS = {"attnlab": tiny_attnlab, "bert": tiny_bert, "own-bert": tiny_own_bert}


def block_inputs(model: nn.Module, forward: Any) -> list[Tensor]:
    """Each attention layer's input ``(n, M)`` (the residual stream entering the block: post-norm models attend
    to it directly)."""
    seen: list[Tensor] = []

    def keep(_m: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        seen.append((args[0] if args else kwargs["hidden_states"])[0].detach())

    handles = [p.block.register_forward_pre_hook(keep, with_kwargs=True) for p in layer_parts(model)]
    with torch.no_grad():
        forward(1)
    for h in handles:
        h.remove()
    return seen


def linear(x: np.ndarray, lin: nn.Linear) -> np.ndarray:
    w, b = lin.weight.detach().numpy(), lin.bias.detach().numpy()
    out = np.zeros((x.shape[0], w.shape[0]))
    for t in range(x.shape[0]):
        for o in range(w.shape[0]):
            out[t, o] = b[o] + sum(x[t, i] * w[o, i] for i in range(w.shape[1]))
    return out


def query_key(model: nn.Module, layer: int) -> tuple[nn.Linear, nn.Linear]:
    block = layer_parts(model)[layer].block
    if hasattr(block, "self_attn"):
        return block.self_attn.q_proj, block.self_attn.k_proj
    if hasattr(block.attention.self, "q_proj"):  # attnlab's own BERT: MultiHeadAttention at attention.self
        return block.attention.self.q_proj, block.attention.self.k_proj
    return block.attention.self.query, block.attention.self.key


@pytest.mark.parametrize("family", MODELS)
def test_norm_attention_matches_loops(family: str) -> None:
    model, forward = MODELS[family]()
    got = norm_attention(model, forward)
    for layer, (parts, x) in enumerate(zip(layer_parts(model), block_inputs(model, forward), strict=True)):
        x = x.numpy()
        q_lin, k_lin = query_key(model, layer)
        q, k, v = linear(x, q_lin), linear(x, k_lin), linear(x, parts.value)
        h_n, d = parts.n_heads, q.shape[1] // parts.n_heads
        w_o = parts.output.weight.detach().numpy()  # (M, H * D)
        m = w_o.shape[0]
        for h in range(h_n):
            cols = range(h * d, (h + 1) * d)
            for i in range(N):
                scores = [sum(q[i, c] * k[j, c] for c in cols) / math.sqrt(d) for j in range(N)]
                top = max(scores)
                alpha = [math.exp(s - top) for s in scores]
                alpha = [a / sum(alpha) for a in alpha]
                for j in range(N):
                    f = [sum(v[j, c] * w_o[o, c] for c in cols) for o in range(m)]
                    want = alpha[j] * math.sqrt(sum(e * e for e in f))
                    # capture stores the weights in float32 (attnlab's traces are float32): 1e-6 relative
                    assert got.per_head[layer, h, i, j] == pytest.approx(want, rel=1e-6, abs=1e-9)
                    assert got.weights[layer, h, i, j] == pytest.approx(alpha[j], rel=1e-6, abs=1e-9)
        # per layer: the norm of the sum over heads of alpha f, from the per-head vectors
        for i in range(N):
            for j in range(N):
                vec = [0.0] * m
                for h in range(h_n):
                    cols = range(h * d, (h + 1) * d)
                    for o in range(m):
                        vec[o] += got.weights[layer, h, i, j] * sum(v[j, c] * w_o[o, c] for c in cols)
                want = math.sqrt(sum(e * e for e in vec))
                assert got.per_layer[layer, i, j] == pytest.approx(want, rel=1e-9, abs=1e-12)  # same weights


@pytest.mark.parametrize("family", MODELS)
def test_value_zeroing_matches_one_pass_per_token(family: str) -> None:
    model, forward = MODELS[family]()
    got = value_zeroing(model, forward)
    assert got.shape == (2, N, N)
    for layer, parts in enumerate(layer_parts(model)):
        outs: list[Tensor] = []

        def keep(_m: nn.Module, _i: Any, o: Any, outs: list[Tensor] = outs) -> None:
            outs.append((o[0] if isinstance(o, tuple) else o)[0])

        hook = parts.block.register_forward_hook(keep)
        with torch.no_grad():
            forward(1)
            clean = outs.pop().numpy()
            distance = np.zeros((N, N))  # (i, j): 1 - cos, one forward pass per zeroed token j
            for j in range(N):
                def zero(_m: nn.Module, _i: Any, v: Tensor, j: int = j) -> Tensor:
                    v = v.clone()
                    v[0, j] = 0.0
                    return v

                handle = parts.value.register_forward_hook(zero)
                forward(1)
                handle.remove()
                zeroed = outs.pop().numpy()
                for i in range(N):
                    dot = sum(a * b for a, b in zip(zeroed[i], clean[i], strict=True))
                    cos = dot / math.sqrt(sum(a * a for a in zeroed[i]) * sum(b * b for b in clean[i]))
                    distance[i, j] = max(0.0, 1.0 - cos)
        hook.remove()
        for i in range(N):
            total = sum(distance[i])
            for j in range(N):
                assert got[layer, i, j] == pytest.approx(distance[i, j] / total, rel=1e-7, abs=1e-12)
    np.testing.assert_allclose(got.sum(-1), 1.0)


@pytest.mark.parametrize("family", MODELS)
def test_gradient_x_input_matches_finite_differences(family: str) -> None:
    model, forward = MODELS[family]()

    def score() -> Tensor:
        out = forward(1)
        return (out.last_hidden_state if hasattr(out, "last_hidden_state") else out)[0].sum() ** 2 / 10

    got = gradient_x_input(model, score)
    x = block_inputs(model, forward)[0]  # (n, M)
    first = layer_parts(model)[0].block
    eps = 1e-6
    for j in range(N):
        total = 0.0
        for d in range(x.shape[1]):
            values = []
            for sign in (1.0, -1.0):
                def shift(_m: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], s: float = sign,
                          d: int = d, j: int = j) -> Any:
                    if args:
                        h = args[0].clone()
                        h[0, j, d] += s * eps
                        return (h, *args[1:]), kwargs
                    h = kwargs["hidden_states"].clone()
                    h[0, j, d] += s * eps
                    return args, {**kwargs, "hidden_states": h}

                handle = first.register_forward_pre_hook(shift, with_kwargs=True)
                with torch.no_grad():
                    values.append(float(score()))
                handle.remove()
            total += float(x[j, d]) * (values[0] - values[1]) / (2 * eps)
        assert got[j] == pytest.approx(total, rel=1e-5, abs=1e-8)


def test_attribution_refuses_training_mode_and_models_without_layers() -> None:
    model, forward = tiny_attnlab()
    model.train()
    with pytest.raises(InputError, match=r"model\.eval"):
        value_zeroing(model, forward)
    with pytest.raises(InputError, match="no attention layer"):
        layer_parts(nn.Linear(3, 3))
    model.eval()
    with pytest.raises(InputError, match="got no gradient"):
        gradient_x_input(model, lambda: torch.ones((), requires_grad=True) * 2)


def tiny_prenorm() -> tuple[nn.Module, Any]:
    """The pre-norm attnlab layer (x + SA(LN(x))), as zh-sentiment's: ALTI reads the sum before norm2."""
    return tiny_attnlab(norm_first=True, seed=2)


ALTI_MODELS = {**MODELS, "attnlab-prenorm": tiny_prenorm}


def rest_of_block(block: nn.Module, y: Tensor) -> Tensor:
    """What a layer does after its attention sublayer, applied to ``y`` ``(n, M)``: the feed-forward sublayer (and
    BERT's output LayerNorm)."""
    if hasattr(block, "ff"):
        if block.config.norm_first:
            return y + block.ff(block.norm2(y))
        return block.norm2(y + block.ff(y))
    if isinstance(block.output, nn.Linear):  # attnlab's own BERT layer: LN(h + W2 gelu(W1 h))
        return block.LayerNorm(y + block.output(nn.functional.gelu(block.intermediate(y))))
    return block.output(block.intermediate(y[None]), y[None])[0]  # BertOutput: LN(dense(act(dense(y))) + y)


@pytest.mark.parametrize("family", ALTI_MODELS)
def test_alti_vectors_sum_to_the_real_layer_output(family: str) -> None:
    """sum_j T_i(x_j) + bias_i is the attention sublayer's real output to 1e-10 in float64, and the rest of the
    layer applied to that sum gives the layer's real output (so the recorded output is the right tensor)."""
    model, forward = ALTI_MODELS[family]()
    parts = layer_parts(model)
    outs: list[Tensor] = []
    handles = [p.block.register_forward_hook(lambda _m, _i, o: outs.append((o[0] if isinstance(o, tuple) else o)[0]))
               for p in parts]
    with torch.no_grad():
        forward(1)
    for h in handles:
        h.remove()
    runs = run_layers(model, forward)
    assert len(runs) == len(outs) == 2
    for p, run, block_out in zip(parts, runs, outs, strict=True):
        bias = None if p.output.bias is None else p.output.bias.detach()
        vectors, b = alti_vectors(run, p.output.weight.detach().double(), bias, p.post_norm)
        assert vectors.shape == (N, N, run.residual.shape[1]) and vectors.dtype == torch.float64
        total = vectors.sum(1) + b  # (n, M)
        err = float((total - run.output).abs().max())
        assert err < 1e-10, f"largest difference {err}"
        with torch.no_grad():
            err = float((rest_of_block(p.block, total) - block_out).abs().max())
        assert err < 1e-10, f"largest difference after the rest of the layer {err}"
        assert (p.post_norm is None) == (family == "attnlab-prenorm")


def test_alti_off_diagonal_vectors_are_the_attention_terms() -> None:
    """Pre-norm (no LayerNorm to linearise): T_i(x_j) for j != i is sum_h alpha^h_ij f^h(x_j), whose norm is
    Kobayashi's per-layer norm (checked against loops above); on the diagonal the residual x_i is added."""
    model, forward = tiny_prenorm()
    norms = norm_attention(model, forward).per_layer
    for layer, (p, run) in enumerate(zip(layer_parts(model), run_layers(model, forward), strict=True)):
        vectors, _ = alti_vectors(run, p.output.weight.detach().double(), p.output.bias.detach(), None)
        off = ~np.eye(N, dtype=bool)
        np.testing.assert_allclose(vectors.norm(dim=-1).numpy()[off], norms[layer][off], rtol=1e-12)
        attention_only = torch.einsum("hij,hjm->ijm", run.weights,
                                      value_outputs(run.values, p.output.weight.detach().double()))
        np.testing.assert_allclose((vectors - attention_only)[torch.arange(N), torch.arange(N)].numpy(),
                                   run.residual.numpy(), rtol=0, atol=1e-12)


def test_alti_contributions_match_the_definition() -> None:
    """c_ij = max(0, ||y_i||_1 - ||y_i - T_i(x_j)||_1) / row sum, written with loops; a row with no positive
    contribution stays zeros."""
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(3, 3, 5))
    output = vectors.sum(1) + rng.normal(size=(3, 5)) * 0.1
    output[2] = 0.0  # ||y||_1 = 0: every c is max(0, -distance) = 0
    got = alti_contributions(torch.from_numpy(vectors), torch.from_numpy(output))
    for i in range(3):
        raw = [max(0.0, sum(abs(e) for e in output[i]) - sum(abs(a - b) for a, b in zip(output[i], vectors[i, j],
                                                                                         strict=True)))
               for j in range(3)]
        for j in range(3):
            assert got[i, j] == pytest.approx(raw[j] / sum(raw) if sum(raw) else 0.0, rel=1e-12, abs=1e-15)
    assert np.all(got[2] == 0.0)


@pytest.mark.parametrize("family", ALTI_MODELS)
def test_alti_rows_are_distributions(family: str) -> None:
    model, forward = ALTI_MODELS[family]()
    c = alti(model, forward)
    assert c.shape == (2, N, N) and np.all(c >= 0)
    np.testing.assert_allclose(c.sum(-1), 1.0, rtol=1e-12)
    r = rollout(c[:, None], residual=0.0)[-1]  # chained without an added identity: the residual is inside
    np.testing.assert_allclose(r, c[1] @ c[0], rtol=1e-12)
    np.testing.assert_allclose(r.sum(-1), 1.0, rtol=1e-12)


@pytest.mark.parametrize("pooling", ["cls", "mean", "meanmax", "attention"])
def test_pooling_reader_follows_what_the_head_reads(pooling: str) -> None:
    """The reader is the pooling's own mixing of the last layer's rows: for mean and [CLS] exactly, for attention
    pooling the pooling's weights (their mix of the rows is the pooled vector), for mean+max the share of the head's
    2M inputs each row supplies."""
    torch.manual_seed(3)
    cfg = ClassifierConfig(vocab_size=11, d_model=12, n_heads=3, n_layers=2, d_ff=10, max_length=9, pooling=pooling,
                           norm_first=True, dropout=0.0, positional="learned")
    model = AttentionClassifier(cfg).double().eval()
    ids = torch.tensor([[1, 4, 2, 9, 3, 7, 5]])
    reader = pooling_reader(model, ids)
    assert reader.shape == (N,) and np.all(reader >= 0) and reader.sum() == pytest.approx(1.0, rel=1e-12)
    with torch.no_grad():
        x = model.encode(ids)[0][0]  # (n, M)
        pooled = model._pool(x[None], torch.ones(1, N, dtype=torch.bool))[0]  # (M,) or (2M,)
    if pooling == "cls":
        np.testing.assert_array_equal(reader, np.eye(N)[0])
    elif pooling == "mean":
        np.testing.assert_allclose(reader, np.full(N, 1 / N), rtol=1e-12)
    elif pooling == "attention":
        np.testing.assert_allclose(pooled.numpy(), reader @ x.numpy(), rtol=1e-12)
    else:
        m = x.shape[1]
        wins = [int(np.argmax(x[:, d].numpy())) for d in range(m)]
        for i in range(N):
            assert reader[i] == pytest.approx((m / N + wins.count(i)) / (2 * m), rel=1e-12)
        np.testing.assert_allclose(pooled[m:].numpy(), [x[wins[d], d].item() for d in range(m)])
    with pytest.raises(InputError, match="AttentionClassifier"):
        pooling_reader(nn.Linear(2, 2), ids)
    with pytest.raises(InputError, match="AttentionClassifier"):
        embedding_vectors(nn.Linear(2, 2), ids)
    np.testing.assert_array_equal(embedding_contributions(model, ids), np.eye(N))  # no n-grams: no mixing


@pytest.mark.parametrize("embed_norm", [True, False])
def test_embedding_vectors_sum_to_what_the_first_layer_reads(embed_norm: bool) -> None:
    """The n-gram embeddings (zh-sentiment has a bigram table) mix neighbouring tokens before any attention: their
    split into per-token vectors sums to the first layer's real input (float64, 1e-10); each bigram is shared
    equally by its two tokens, so changing a token moves exactly the rows of the positions that read it."""
    from attnlab.models import count_bigrams, count_trigrams

    torch.manual_seed(4)
    cfg = ClassifierConfig(vocab_size=11, d_model=12, n_heads=3, n_layers=2, d_ff=10, max_length=9, pooling="meanmax",
                           norm_first=True, dropout=0.0, positional="learned", bigrams=6, trigrams=4,
                           embed_norm=embed_norm)
    model = AttentionClassifier(cfg).double().eval()
    ids = torch.tensor([[1, 4, 2, 9, 3, 7, 5]])
    model.set_bigrams(count_bigrams(ids.tolist(), 6, 11))
    model.set_trigrams(count_trigrams(ids.tolist(), 4, 11))
    assert int((model.bigram_ids(ids) > 1).sum()) == 6  # every kept pair is found (rows 0/1: none, unknown)
    vectors, bias, output = embedding_vectors(model, ids)
    first_input = block_inputs(model, lambda k: model(ids.repeat(k, 1)))[0]  # (n, M)
    err = float((vectors.sum(1) + bias - first_input).abs().max())
    assert err < 1e-10 and float((output - first_input).abs().max()) < 1e-10, f"largest difference {err}"
    present = vectors.abs().sum(-1) > 0  # (p, j): position p carries a vector of token j
    want = np.zeros((N, N), dtype=bool)
    for p in range(N):
        want[p, p: min(p + 3, N)] = True  # its token, the bigram's second and the trigram's third
    np.testing.assert_array_equal(present.numpy(), want)
    c = embedding_contributions(model, ids)
    assert np.all(c >= 0) and np.all(c[~want] == 0)
    rows = c.sum(-1)  # one, or zero where no token's vector brings the row closer than nothing (ALTI's clamp)
    assert np.all(np.isclose(rows, 1.0, rtol=1e-12) | (rows == 0.0)) and rows.sum() >= N - 2
