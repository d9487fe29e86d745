"""Head gates and head importance (Michel et al. 2019).

The gate mechanics are checked against independent references: masking head ``h`` equals zeroing the
columns of the output projection that read head ``h``, and ``dL/dg_h`` equals a float64 central
difference of the loss when those columns are scaled by ``1 +- eps``.  Importance and the pruning curve
are checked on a tiny classifier the test trains, on a task only some heads can solve.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
import torch
import transformers
from torch import Tensor, nn
from torch.nn import functional as F

import attnlab as al
from attnlab.analysis import head_gates, head_importance, pruning_curve, pruning_figure
from attnlab.layers import TransformerConfig, TransformerEncoder

Batch = tuple[Tensor, Tensor]


class Classifier(nn.Module):
    """Token + position embeddings, an attnlab encoder, a linear head on position 0."""

    def __init__(self, vocab: int = 10, length: int = 7, d: int = 16, heads: int = 4, layers: int = 1) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(length, d) * 0.5)
        self.encoder = TransformerEncoder(TransformerConfig(d, heads, 2 * d), layers)
        self.head = nn.Linear(d, 2)

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.encoder(self.tok(x) + self.pos)[:, 0])  # (B, 2)


def _task(n: int, seed: int, noise: float = 0.0) -> Batch:
    """Position 0 holds a fixed [CLS] token (0); the label is the parity of the sum of the tokens at
    positions 3 and 5, flipped for a share ``noise`` of the examples (so the training loss, and with it
    the gradients importance is made of, does not vanish)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(1, 10, (n, 7), generator=g)
    x[:, 0] = 0
    y = (x[:, 3] + x[:, 5]) % 2
    flip = torch.rand(n, generator=g) < noise
    return x, torch.where(flip, 1 - y, y)


def _loss(model: nn.Module, batch: Batch) -> Tensor:
    return F.cross_entropy(model(batch[0]), batch[1], reduction="none")


def _correct(model: nn.Module, batch: Batch) -> Tensor:
    return model(batch[0]).argmax(-1) == batch[1]


@pytest.fixture(scope="module")
def trained() -> Classifier:
    torch.manual_seed(1)
    model = Classifier()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for step in range(400):
        x, y = _task(64, step, noise=0.1)
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    return model.eval()


def _scale_head_columns(linear: nn.Linear, head: int, n_heads: int, factor: float) -> None:
    """Multiply the columns of ``linear`` that read head ``head`` (the reference for a gate)."""
    d = linear.in_features // n_heads
    with torch.no_grad():
        linear.weight[:, head * d : (head + 1) * d] *= factor


# --- attnlab layers ---------------------------------------------------------------------------------------


def test_gates_at_one_change_nothing_and_masking_equals_zeroed_columns() -> None:
    model = Classifier(layers=2, heads=4).double().eval()
    x, _ = _task(5, 0)
    plain = model(x)
    with head_gates(model) as gates:
        same = model(x)
    assert gates.names == ["encoder.layers.0.self_attn", "encoder.layers.1.self_attn"]
    assert gates.heads == {"encoder.layers.0.self_attn": 4, "encoder.layers.1.self_attn": 4}
    torch.testing.assert_close(same, plain, rtol=0, atol=0)
    with head_gates(model, masked={"encoder.layers.1.self_attn": [2], "encoder.layers.0.self_attn": [0, 3]}):
        gated = model(x)
    ref = copy.deepcopy(model)
    for layer, heads in ((0, [0, 3]), (1, [2])):
        for h in heads:
            _scale_head_columns(ref.encoder.layers[layer].self_attn.out_proj, h, 4, 0.0)
    torch.testing.assert_close(gated, ref(x), rtol=1e-12, atol=1e-12)
    assert (gated - plain).abs().max() > 1e-3  # masking did something
    torch.testing.assert_close(model(x), plain, rtol=0, atol=0)  # hooks are off


def _central_difference(model: nn.Module, batch: Batch, find: Callable[[nn.Module], nn.Linear], head: int,
                        n_heads: int, loss: Callable[[nn.Module, Batch], Tensor] = _loss, eps: float = 1e-6) -> Tensor:
    """Per-example dL/dg_h, the gate emulated by scaling the output projection's columns of head h."""
    diffs = []
    for sign in (1.0, -1.0):
        m = copy.deepcopy(model)
        _scale_head_columns(find(m), head, n_heads, 1.0 + sign * eps)
        with torch.no_grad():
            diffs.append(loss(m, batch))
    return (diffs[0] - diffs[1]) / (2 * eps)  # (B,)


def test_importance_equals_per_example_finite_differences() -> None:
    model = Classifier(layers=2, heads=3, d=15).double().eval()
    b1, b2 = _task(3, 5), _task(2, 6)
    imp = head_importance(model, [b1, b2], _loss)
    assert imp.names == ("encoder.layers.0.self_attn", "encoder.layers.1.self_attn")
    assert imp.scores.shape == (2, 3) and imp.examples == 5
    expected = torch.zeros(2, 3, dtype=torch.float64)
    for layer in range(2):
        for h in range(3):
            for batch in (b1, b2):
                fd = _central_difference(model, batch, lambda m, i=layer: m.encoder.layers[i].self_attn.out_proj, h, 3)
                expected[layer, h] += fd.abs().sum()
    expected /= 5
    torch.testing.assert_close(imp.scores, expected, rtol=1e-5, atol=1e-8)
    assert all(p.grad is None for p in model.parameters())  # only the gates were differentiated


@pytest.mark.slow
def test_importance_and_pruning_curve_on_a_trained_classifier(trained: Classifier, tmp_path) -> None:
    test = [_task(200, 10_000)]
    full = float(_correct(trained, test[0]).float().mean())
    assert full > 0.95, f"the classifier did not learn its task (accuracy {full})"
    imp = head_importance(trained, [_task(100, 20_000, noise=0.1), _task(100, 20_001, noise=0.1)], _loss)
    order = imp.order()
    assert len(order) == 4 and {h for _, h in order} == {0, 1, 2, 3}
    name = order[0][0]
    heads = [h for _, h in order]  # least important first

    def accuracy(masked: list[int]) -> float:
        with torch.no_grad(), head_gates(trained, masked={name: masked}):
            return float(_correct(trained, test[0]).float().mean())

    # the least important head can go; the two most important matter more than the two least important
    assert accuracy(heads[:1]) >= full - 0.03, (imp.scores, accuracy(heads[:1]))
    assert accuracy(heads[2:]) < accuracy(heads[:2]) - 0.1, (imp.scores, accuracy(heads[2:]), accuracy(heads[:2]))
    curve = pruning_curve(trained, test, _correct, imp, shares=(0.0, 0.25, 0.5, 0.75, 1.0), random_orders=4)
    assert curve.masked == (0, 1, 2, 3, 4) and curve.heads == 4
    assert curve.by_importance[0] == pytest.approx(full) and all(row[0] == pytest.approx(full) for row in curve.random)
    assert curve.by_importance[-1] == pytest.approx(curve.random_mean()[-1])  # everything masked either way
    assert curve.by_importance[2] >= curve.random_mean()[2]
    fig = pruning_figure(curve)
    out = al.viz.save(fig, tmp_path / "pruning.png")
    assert out.stat().st_size > 1000


# --- Hugging Face BERT ------------------------------------------------------------------------------------


def _bert() -> transformers.BertForSequenceClassification:
    cfg = transformers.BertConfig(vocab_size=50, hidden_size=36, num_attention_heads=3, num_hidden_layers=2,
                                  intermediate_size=37, num_labels=2, hidden_dropout_prob=0.0,
                                  attention_probs_dropout_prob=0.0)
    return transformers.BertForSequenceClassification(cfg).double().eval()


def _bert_batch() -> Batch:
    ids = torch.tensor([[2, 14, 9, 33, 41, 5, 30], [2, 40, 17, 8, 25, 0, 0]])
    return ids, torch.tensor([1, 0])


def _bert_loss(model: nn.Module, batch: Batch) -> Tensor:
    ids, y = batch
    logits = model(input_ids=ids, attention_mask=(ids != 0).long()).logits
    return F.cross_entropy(logits, y, reduction="none")


def _bert_dense(model: nn.Module, layer: int) -> nn.Linear:
    return model.bert.encoder.layer[layer].attention.output.dense


def test_bert_gates_mask_and_differentiate_like_the_output_columns() -> None:
    model = _bert()
    assert model.config._attn_implementation == "sdpa"
    ids, _ = _bert_batch()
    mask = (ids != 0).long()
    plain = model(input_ids=ids, attention_mask=mask).logits
    name = "bert.encoder.layer.1.attention.self"
    with head_gates(model, masked={name: [1]}) as gates:
        gated = model(input_ids=ids, attention_mask=mask).logits
    assert gates.names == ["bert.encoder.layer.0.attention.self", name]
    assert model.config._attn_implementation == "sdpa"  # switched back
    ref = copy.deepcopy(model)
    _scale_head_columns(_bert_dense(ref, 1), 1, 3, 0.0)
    torch.testing.assert_close(gated, ref(input_ids=ids, attention_mask=mask).logits, rtol=1e-10, atol=1e-10)
    assert (gated - plain).abs().max() > 1e-6  # far above float64 rounding: masking did something

    imp = head_importance(model, [_bert_batch()], _bert_loss)
    for layer in range(2):
        for h in range(3):
            fd = _central_difference(model, _bert_batch(), lambda m, i=layer: _bert_dense(m, i), h, 3, _bert_loss)
            torch.testing.assert_close(imp.scores[layer, h], fd.abs().mean(), rtol=1e-5, atol=1e-9)


# --- bad input --------------------------------------------------------------------------------------------


def test_bad_input_is_refused_with_clear_errors() -> None:
    model = Classifier().eval()
    x, y = _task(3, 0)
    with pytest.raises(al.errors.InputError, match="per-example losses"):
        head_importance(model, [(x, y)], lambda m, b: F.cross_entropy(m(b[0]), b[1]))
    with pytest.raises(al.errors.InputError, match="no batches"):
        head_importance(model, [], _loss)
    with pytest.raises(al.errors.InputError, match="has 4 heads"), head_gates(
        model, masked={"encoder.layers.0.self_attn": [4]}
    ):
        model(x)
    with pytest.raises(al.errors.InputError, match="matched no gated module"), head_gates(
        model, masked={"encoder.layers.7.self_attn": [0]}
    ):
        model(x)
    with pytest.raises(al.errors.CaptureError, match="no attention heads"), head_gates(nn.Linear(3, 3)):
        pass
    with pytest.raises(al.errors.InputError, match="not an iterator"):
        imp = head_importance(model, [(x, y)], _loss)
        pruning_curve(model, iter([(x, y)]), _correct, imp)
