"""ALTI-Logit and gradient x input for the causal language model, on a tiny float64 CausalLM with rotary positions:
the logit read linearly from the residual stream is the real logit of each row, each attention sublayer's
per-position contributions plus its bias term are that row's logit change across the sublayer (1e-10, as the
classifier's test), nothing flows from the future, a window's prefix gets the rows of the whole window, and the
windows a generation is attributed over are the ones the model read (its log-probabilities recomputed)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from torch import Tensor, nn

from attnlab.analysis import layer_parts
from attnlab.analysis.attribution._lm import (
    attribute_generation,
    attribution_figure,
    generation_windows,
    lm_alti_logit,
    lm_gradient_x_input,
    lm_logit_directions,
)
from attnlab.data import CharTokenizer
from attnlab.errors import InputError
from attnlab.models.lm import CausalLM, LMConfig

IDS = torch.tensor([[1, 4, 2, 9, 3, 7, 5]])  # seven positions: odd, and not the context
TARGETS = torch.tensor([4, 2, 9, 3, 7, 5, 8])


def tiny(seed: int = 3, context: int = 9) -> CausalLM:
    torch.manual_seed(seed)
    model = CausalLM(LMConfig(vocab_size=11, context=context, d_model=12, n_heads=3, n_layers=2, d_ff=10))
    model = model.double().eval()
    with torch.no_grad():  # LayerNorm and bias parameters away from their 1 / 0 start, so that each one matters
        for module in model.modules():
            if isinstance(module, nn.LayerNorm):
                module.weight.normal_(1.0, 0.3)
                module.bias.normal_(0.0, 0.3)
        for p in layer_parts(model):
            p.output.bias.normal_(0.0, 0.3)
        model.embed.weight.normal_(0.0, 0.5)
    return model


def streams(model: CausalLM, ids: Tensor) -> list[tuple[Tensor, Tensor, Tensor]]:
    """Per block ``(before, after attention, after the block)``, each ``(n, M)``."""
    seen: dict[str, list[Tensor]] = {"before": [], "mid": [], "after": []}
    handles = []
    for block in model.blocks:
        b: Any = block
        handles.append(b.register_forward_pre_hook(lambda _m, a: seen["before"].append(a[0][0])))
        handles.append(b.norm2.register_forward_pre_hook(lambda _m, a: seen["mid"].append(a[0][0])))
        handles.append(b.register_forward_hook(lambda _m, _a, o: seen["after"].append(o[0])))
    with torch.no_grad():
        model(ids)
    for h in handles:
        h.remove()
    return list(zip(seen["before"], seen["mid"], seen["after"], strict=True))


def test_contributions_and_bias_add_up_to_each_sublayers_logit_change() -> None:
    model = tiny()
    got = lm_alti_logit(model, IDS, TARGETS)
    u, h, c = lm_logit_directions(model, IDS, TARGETS)
    with torch.no_grad():
        real = model(IDS)[0].gather(1, TARGETS[:, None])[:, 0]  # (n,)
    np.testing.assert_array_equal(got.logits, real.numpy())
    assert float(((u * h).sum(-1) + c - real).abs().max()) < 1e-10  # the linear read is exact at the real stream
    total = (u * streams(model, IDS)[0][0]).sum(-1) + c  # the embeddings, read directly
    for layer, (before, mid, after) in enumerate(streams(model, IDS)):
        change = (u * (mid - before)).sum(-1)  # (n,): each row's logit change across the attention sublayer
        err = np.abs(got.per_layer[layer].sum(-1) + got.bias[layer] - change.numpy()).max()
        assert err < 1e-10, f"layer {layer}: largest difference {err}"
        assert np.abs(got.bias[layer]).min() > 1e-4  # the bias term is not zero by accident
        total = total + change + (u * (after - mid)).sum(-1)
    assert float((total - real).abs().max()) < 1e-10
    assert np.any(got.tokens > 0) and np.any(got.tokens < 0)  # signed


def test_nothing_comes_from_the_future_and_a_prefix_gets_the_same_rows() -> None:
    model = tiny()
    n = IDS.shape[1]
    got = lm_alti_logit(model, IDS, TARGETS)
    grads = lm_gradient_x_input(model, IDS, TARGETS)
    future = np.triu(np.ones((n, n), dtype=bool), 1)
    assert np.all(got.tokens[future] == 0) and np.all(got.per_layer[:, future] == 0)
    assert np.all(grads[future] == 0)
    assert np.all(np.abs(np.diag(got.tokens)) > 0)  # each row reads its own position
    prefix = lm_alti_logit(model, IDS[:, :4], TARGETS[:4])
    np.testing.assert_allclose(prefix.tokens, got.tokens[:4, :4], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(lm_gradient_x_input(model, IDS[:, :4], TARGETS[:4], [3]), grads[3:4, :4],
                               rtol=1e-9, atol=1e-12)


def test_gradient_x_input_is_the_first_order_change() -> None:
    """Scaling the first block's input at position j by (1 + eps) changes the logit by eps * grad_x_input[t, j] (to
    first order; the tied output embedding is left alone)."""
    model = tiny()
    t, eps = 5, 1e-6
    grads = lm_gradient_x_input(model, IDS, TARGETS, [t])[0]
    with torch.no_grad():
        base = float(model(IDS)[0, t, TARGETS[t]])
    for j in range(IDS.shape[1]):
        def scale(_m: nn.Module, args: tuple[Tensor, ...], j: int = j) -> tuple[Tensor, ...]:
            x = args[0].clone()
            x[:, j] *= 1 + eps
            return (x, *args[1:])

        handle = model.blocks[0].register_forward_pre_hook(scale)
        with torch.no_grad():
            moved = float(model(IDS)[0, t, TARGETS[t]])
        handle.remove()
        assert abs((moved - base) / eps - grads[j]) < 1e-4 * max(1.0, abs(grads[j])), j


@pytest.mark.parametrize("prompt,generated,context", [(3, 20, 8), (12, 5, 8), (1, 1, 4), (8, 9, 8)])
def test_generation_windows_are_the_ones_the_model_read(prompt: int, generated: int, context: int) -> None:
    """Each generated character's log-probability under the model, recomputed from its window alone, equals the
    one the generation recorded (float32 there): a window one character off gives another number."""
    from attnlab.training import LanguageModel

    model = tiny(seed=4, context=context)
    vocab = CharTokenizer(("[UNK]", *"abcdefghij"))
    lm = LanguageModel(model, vocab, {}, "tiny")
    text = "abcdefghijabcdefghij"[:prompt]
    out = lm.generate(text, max_tokens=generated, seed=1)
    ids = [*out.prompt_ids, *out.ids]
    windows = generation_windows(prompt, generated, context)
    for g, (start, stop) in enumerate(windows):
        assert stop == prompt + g and stop - start <= context
        with torch.no_grad():
            log_p = torch.log_softmax(model(torch.tensor([ids[start:stop]]))[0, -1], -1)[ids[stop]]
        assert abs(float(log_p) - out.model_log_probs[g]) < 1e-6, (g, start, stop)  # generate reads float32


def test_attribute_generation_fills_each_row_over_its_window(tmp_path: Any) -> None:
    model = tiny(seed=4, context=6).float()
    prompt, generated = [1, 2, 3, 4], [5, 6, 7, 8, 9, 10, 1, 2]
    got = attribute_generation(model, prompt, generated)
    assert got.alti_logit.shape == got.grad_x_input.shape == (8, 11)
    assert got.sources == [*prompt, *generated][:-1] and got.generated == generated
    for g, (start, stop) in enumerate(generation_windows(4, 8, 6)):
        row = got.alti_logit[g]
        assert np.all(np.isnan(row[:start])) and np.all(np.isnan(row[stop:]))
        assert np.all(np.isfinite(row[start:stop])) and np.all(np.isfinite(got.grad_x_input[g, start:stop]))
        direct = lm_alti_logit(model.double(), torch.tensor([[*prompt, *generated][start:stop]]),
                               torch.tensor([*prompt, *generated][start + 1: stop + 1]))
        np.testing.assert_allclose(row[start:stop], direct.tokens[-1], rtol=1e-9, atol=1e-12)
        model.float()
    assert -1.0 <= got.agreement() <= 1.0
    from attnlab.viz import save

    chars = ["?", *"abcdefghij"]
    fig = attribution_figure(got, chars, "tiny")
    assert len([ax for ax in fig.axes if ax.images]) == 2
    assert save(fig, tmp_path / "attr.png").stat().st_size > 1000


def test_refusals() -> None:
    model = tiny()
    with pytest.raises(InputError, match="CausalLM"):
        lm_alti_logit(nn.Linear(2, 2), IDS, TARGETS)
    with pytest.raises(InputError, match="targets"):
        lm_alti_logit(model, IDS, TARGETS[:3])
    with pytest.raises(InputError, match="vocabulary"):
        lm_alti_logit(model, IDS, TARGETS + 20)
    with pytest.raises(InputError, match="nothing was generated"):
        attribute_generation(model, [1, 2], [])
    with pytest.raises(InputError, match="training mode"):
        lm_alti_logit(model.train(), IDS, TARGETS)


def test_an_attention_only_model_without_layernorm_is_attributed_exactly() -> None:
    """The circuits toy's shape (``induction-2l``: no feed-forward sublayer, no LayerNorm): the logit is read as
    ``E_g . h_t`` and each block's contributions plus its bias are its logit change (1e-10)."""
    torch.manual_seed(5)
    model = CausalLM(LMConfig(vocab_size=11, context=9, d_model=12, n_heads=3, n_layers=2, mlp=False, norm=False))
    model = model.double().eval()
    got = lm_alti_logit(model, IDS, TARGETS)
    u, h, c = lm_logit_directions(model, IDS, TARGETS)
    with torch.no_grad():
        real = model(IDS)[0].gather(1, TARGETS[:, None])[:, 0]
    assert float(((u * h).sum(-1) + c - real).abs().max()) < 1e-10 and float(c.abs().max()) == 0
    seen: list[Tensor] = []
    handles = [b.register_forward_pre_hook(lambda _m, a: seen.append(a[0][0])) for b in model.blocks]
    handles.append(model.norm.register_forward_pre_hook(lambda _m, a: seen.append(a[0][0])))
    with torch.no_grad():
        model(IDS)
    for handle in handles:
        handle.remove()
    for layer in range(2):
        change = (u * (seen[layer + 1] - seen[layer])).sum(-1).numpy()  # the block is its attention sublayer
        assert np.abs(got.per_layer[layer].sum(-1) + got.bias[layer] - change).max() < 1e-10, layer
