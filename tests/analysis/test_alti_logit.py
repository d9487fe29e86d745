"""ALTI-Logit (Ferrando et al. 2023) on tiny float64 pre-norm attnlab classifiers: the logit read linearly from the
residual stream is the real logit, each attention sublayer's per-position logit contributions plus its bias term
are the logit change across that sublayer (1e-10), signs follow the head's row, and an independent loop
(LayerNorms, queries, keys, values, softmax, ALTI recomputed from each layer's input) gives the same scores."""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np
import pytest
import torch
from torch import Tensor, nn

from attnlab.analysis import alti_logit, layer_parts, logit_directions
from attnlab.errors import InputError
from attnlab.models import AttentionClassifier, ClassifierConfig

IDS = torch.tensor([[1, 4, 2, 9, 3, 7, 5]])


def tiny(pooling: str, d_model: int = 12, heads: int = 3, seed: int = 5) -> AttentionClassifier:
    torch.manual_seed(seed)
    cfg = ClassifierConfig(vocab_size=11, d_model=d_model, n_heads=heads, n_layers=2, d_ff=10, max_length=9,
                           pooling=pooling, norm_first=True, dropout=0.0, positional="learned", n_classes=3)
    model = AttentionClassifier(cfg).double().eval()
    with torch.no_grad():  # LayerNorm and bias parameters away from their 1 / 0 start, so that each one matters
        for module in model.modules():
            if isinstance(module, nn.LayerNorm):
                module.weight.normal_(1.0, 0.3)
                module.bias.normal_(0.0, 0.3)
        for p in layer_parts(model):
            p.output.bias.normal_(0.0, 0.3)
    return model


def streams(model: AttentionClassifier, ids: Tensor) -> list[tuple[Tensor, Tensor, Tensor]]:
    """Per layer ``(before, after attention, after the block)``, each ``(n, M)``: the residual stream entering the
    block, entering its second LayerNorm (``x + SA(LN(x))``) and leaving it."""
    seen: dict[str, list[Tensor]] = {"before": [], "mid": [], "after": []}
    handles = []
    for p in layer_parts(model):
        block: Any = p.block
        handles.append(block.register_forward_pre_hook(lambda _m, a: seen["before"].append(a[0][0])))
        handles.append(block.norm2.register_forward_pre_hook(lambda _m, a: seen["mid"].append(a[0][0])))
        handles.append(block.register_forward_hook(lambda _m, _a, o: seen["after"].append(o[0])))
    with torch.no_grad():
        model(ids)
    for h in handles:
        h.remove()
    return list(zip(seen["before"], seen["mid"], seen["after"], strict=True))


@pytest.mark.parametrize("pooling", ["mean", "cls", "meanmax", "attention"])
def test_layer_contributions_add_up_to_the_logit_change(pooling: str) -> None:
    """``u . h + c`` is the real logit; across each attention sublayer the logit (read by ``u``) changes by
    ``per_layer[l].sum() + bias[l]``; embeddings, attention and feed-forward changes add up to the real logit."""
    model = tiny(pooling)
    k = 1
    got = alti_logit(model, IDS, k)
    u, h, c = logit_directions(model, IDS, k)
    with torch.no_grad():
        logit = float(model(IDS)[0, k])
    assert got.logit == logit and got.k == k
    assert abs(float((u * h).sum()) + c - logit) < 1e-10
    layers = streams(model, IDS)
    total = float((u * layers[0][0]).sum()) + c  # the embeddings, read directly
    for layer, (before, mid, after) in enumerate(layers):
        change = float((u * (mid - before)).sum())
        assert abs(got.per_layer[layer].sum() + got.bias[layer] - change) < 1e-10
        assert abs(got.bias[layer]) > 1e-3  # the bias term is not zero by accident
        total += change + float((u * (after - mid)).sum())
    assert abs(total - logit) < 1e-10
    assert got.tokens.shape == (IDS.shape[1],) and got.per_layer.shape == (2, IDS.shape[1])
    assert np.any(got.tokens > 0) and np.any(got.tokens < 0)  # signed


def test_signs_follow_the_head_row() -> None:
    """Negating the head's row of class k negates every contribution; ALTI's rollout does not read the head."""
    model = tiny("mean")
    flipped = copy.deepcopy(model)
    with torch.no_grad():
        flipped.head.weight[2].neg_()
        flipped.head.bias[2].neg_()
    a, b = alti_logit(model, IDS, 2), alti_logit(flipped, IDS, 2)
    np.testing.assert_allclose(b.tokens, -a.tokens, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(b.per_layer, -a.per_layer, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(b.bias, -a.bias, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(b.rollout, a.rollout)
    assert b.logit == pytest.approx(-a.logit, rel=1e-12)
    with torch.no_grad():
        predicted = int(model(IDS).argmax(-1))
    assert alti_logit(model, IDS).k == predicted  # default: the predicted class


def layer_norm(x: list[float], ln: nn.LayerNorm) -> list[float]:
    mu = sum(x) / len(x)
    sd = math.sqrt(sum((e - mu) ** 2 for e in x) / len(x) + ln.eps)
    gamma, beta = ln.weight.detach(), ln.bias.detach()
    return [float(gamma[d]) * (x[d] - mu) / sd + float(beta[d]) for d in range(len(x))]


def affine(x: list[float], lin: nn.Linear) -> list[float]:
    w, b = lin.weight.detach(), lin.bias.detach()
    return [float(b[o]) + sum(float(w[o, i]) * x[i] for i in range(len(x))) for o in range(w.shape[0])]


def test_matches_an_independent_loop() -> None:
    """Mean pooling, 5 tokens, 2 heads of 3: every quantity recomputed with loops from each block's input."""
    model = tiny("mean", d_model=6, heads=2, seed=6)
    ids = IDS[:, :5]
    n, m, heads, k = 5, 6, 2, 0
    dh = m // heads
    layers = streams(model, ids)
    final = [float(e) for e in layers[-1][2].flatten()]
    norm: Any = model.encoder.norm  # type: ignore[union-attr]
    u = []  # u_i = (gamma g - mean(gamma g)) / sigma_i, g = W_k / n
    for i in range(n):
        row = final[i * m:(i + 1) * m]
        mu = sum(row) / m
        sigma = math.sqrt(sum((e - mu) ** 2 for e in row) / m + norm.eps)
        scaled = [float(norm.weight.detach()[d]) * float(model.head.weight.detach()[k, d]) / n for d in range(m)]
        u.append([(e - sum(scaled) / m) / sigma for e in scaled])
    d_layers, mixing = [], []
    for (before, _mid, _after), p in zip(layers, layer_parts(model), strict=True):
        block: Any = p.block
        x = [[float(e) for e in row] for row in before]
        normed = [layer_norm(row, block.norm1) for row in x]
        attn = block.self_attn
        q = [affine(r, attn.q_proj) for r in normed]
        kk = [affine(r, attn.k_proj) for r in normed]
        v = [affine(r, attn.v_proj) for r in normed]
        w_o, b_o = attn.out_proj.weight.detach(), attn.out_proj.bias.detach()
        t = [[[0.0] * m for _ in range(n)] for _ in range(n)]  # T_i(x_j), attention only
        for hd in range(heads):
            cols = range(hd * dh, (hd + 1) * dh)
            for i in range(n):
                scores = [sum(q[i][c] * kk[j][c] for c in cols) / math.sqrt(dh) for j in range(n)]
                e = [math.exp(s - max(scores)) for s in scores]
                for j in range(n):
                    alpha = e[j] / sum(e)
                    for o in range(m):
                        t[i][j][o] += alpha * sum(v[j][c] * float(w_o[o, c]) for c in cols)
        d_layers.append([sum(u[i][o] * t[i][j][o] for i in range(n) for o in range(m)) for j in range(n)])
        c = np.zeros((n, n))  # ALTI: residual on the diagonal, y_i = x_i + sum_j T_i(x_j) + b_O
        for i in range(n):
            vec = [[t[i][j][o] + (x[i][o] if i == j else 0.0) for o in range(m)] for j in range(n)]
            y = [sum(vec[j][o] for j in range(n)) + float(b_o[o]) for o in range(m)]
            for j in range(n):
                c[i, j] = max(0.0, sum(abs(e) for e in y) - sum(abs(y[o] - vec[j][o]) for o in range(m)))
            c[i] /= c[i].sum()
        mixing.append(c)
    want = np.array(d_layers[0]) + np.array(d_layers[1]) @ mixing[0]
    got = alti_logit(model, ids, k)
    np.testing.assert_allclose(got.per_layer, np.array(d_layers), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got.rollout[0], mixing[0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got.tokens, want, rtol=1e-9, atol=1e-12)


def test_refuses_what_it_cannot_read() -> None:
    with pytest.raises(InputError, match="AttentionClassifier"):
        alti_logit(nn.Linear(2, 2), IDS)
    post = AttentionClassifier(ClassifierConfig(vocab_size=11, d_model=12, n_heads=3, n_layers=2, max_length=9,
                                                norm_first=False, dropout=0.0)).eval()
    with pytest.raises(InputError, match="pre-norm"):
        alti_logit(post, IDS)
    # attribute_text asks the same question before drawing ALTI-Logit: refused exactly where it is not asked
    from attnlab.analysis.attribution._logit import pre_norm as _pre_norm

    assert _pre_norm(post) is None and _pre_norm(tiny("mean")) is not None
    with pytest.raises(InputError, match="k=3"):
        alti_logit(tiny("mean"), IDS, 3)
    model = tiny("mean").train()
    with pytest.raises(InputError, match=r"model\.eval"):
        alti_logit(model, IDS)
