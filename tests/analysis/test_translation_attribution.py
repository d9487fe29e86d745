"""Attribution of a translation's output tokens (issue 31, section 6, "the same for the translators' output tokens"):
on a tiny float64 transformer translator, each decoder sublayer's per-position contributions plus its bias term are
that row's real logit change across the sublayer (1e-10, as the language model's and the classifier's tests), the
linear read of the logit is exact, nothing flows from later output tokens, and a prefix of the translation gets the
rows of the whole; gradient x input is the first-order change on the recurrent translator; and
`attnlab translate --attribute` writes the figure and its numbers (a bundled recurrent model, a saved transformer)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from helpers.cli import one_error_line
from torch import Tensor, nn

from attnlab.analysis import attribute_translation, translation_logit_directions
from attnlab.analysis.attribution._translation import _inputs
from attnlab.cli import main
from attnlab.errors import InputError
from attnlab.models import save_seq2seq
from attnlab.models.seq2seq import Seq2Seq, Seq2SeqConfig, TransformerSeq2Seq, TransformerSeq2SeqConfig

SOURCE = [5, 6, 7, 8, 12, 3]  # EOS (3) last, as the pair tokenizer encodes
OUTPUT = [4, 9, 5, 6, 10]


def transformer(seed: int = 0) -> TransformerSeq2Seq:
    torch.manual_seed(seed)
    model = TransformerSeq2Seq(TransformerSeq2SeqConfig(src_vocab=13, tgt_vocab=11, d_model=12, n_heads=3,
                                                        n_encoder_layers=2, n_decoder_layers=2, d_ff=10, dropout=0.0,
                                                        max_length=16))
    model = model.double().eval()
    with torch.no_grad():  # LayerNorm and bias parameters away from their 1 / 0 start, so that each one matters
        for module in model.modules():
            if isinstance(module, nn.LayerNorm):
                module.weight.normal_(1.0, 0.3)
                module.bias.normal_(0.0, 0.3)
        for layer in model.decoder.layers:
            for attn in (layer.self_attn, layer.cross_attn):
                attn.out_proj.bias.normal_(0.0, 0.3)
    return model


def recurrent(attention: str = "bahdanau") -> Seq2Seq:
    torch.manual_seed(1)
    return Seq2Seq(Seq2SeqConfig(src_vocab=13, tgt_vocab=11, d_embed=8, d_hidden=10, max_length=16,
                                 attention=attention, dropout=0.0)).double().eval()


def streams(model: TransformerSeq2Seq, src: Tensor, tgt_in: Tensor) -> list[tuple[Tensor, Tensor, Tensor]]:
    """Per decoder layer the stream ``(before, after self-attention, after cross-attention)``, each ``(T, M)``."""
    seen: dict[str, list[Tensor]] = {"before": [], "self": [], "cross": []}
    handles = []
    for layer in model.decoder.layers:
        b: Any = layer
        handles.append(b.register_forward_pre_hook(lambda _m, a: seen["before"].append(a[0][0])))
        handles.append(b.norm2.register_forward_pre_hook(lambda _m, a: seen["self"].append(a[0][0])))
        handles.append(b.norm3.register_forward_pre_hook(lambda _m, a: seen["cross"].append(a[0][0])))
    with torch.no_grad():
        model(src, tgt_in)
    for h in handles:
        h.remove()
    return list(zip(seen["before"], seen["self"], seen["cross"], strict=True))


def test_contributions_and_bias_add_up_to_each_sublayers_logit_change() -> None:
    model = transformer()
    got = attribute_translation(model, SOURCE, OUTPUT)
    src, tgt_in, targets = _inputs(model, SOURCE, OUTPUT)
    u, h, c = translation_logit_directions(model, src, tgt_in, targets)
    with torch.no_grad():
        real = model(src, tgt_in)[0].gather(1, targets[:, None])[:, 0]  # (T,)
    np.testing.assert_allclose(got.logits, real.numpy(), rtol=0, atol=1e-12)
    assert float(((u * h).sum(-1) + c - real).abs().max()) < 1e-10  # the linear read is exact at the real stream
    assert got.cross is not None and got.self_ is not None and got.cross_bias is not None
    assert got.self_bias is not None
    for layer, (before, after_self, after_cross) in enumerate(streams(model, src, tgt_in)):
        change_self = (u * (after_self - before)).sum(-1).numpy()  # (T,)
        change_cross = (u * (after_cross - after_self)).sum(-1).numpy()
        assert np.abs(got.self_[layer].sum(-1) + got.self_bias[layer] - change_self).max() < 1e-10, layer
        assert np.abs(got.cross[layer].sum(-1) + got.cross_bias[layer] - change_cross).max() < 1e-10, layer
        assert np.abs(got.cross_bias[layer]).min() > 1e-4  # the bias term is not zero by accident
    assert got.alti_source is not None and got.alti_source.shape == (len(OUTPUT), len(SOURCE))
    assert np.any(got.alti_source > 0) and np.any(got.alti_source < 0)  # signed


def test_nothing_comes_from_later_output_tokens_and_a_prefix_gets_the_same_rows() -> None:
    model = transformer()
    got = attribute_translation(model, SOURCE, OUTPUT)
    n = len(OUTPUT)
    later = np.triu(np.ones((n, n), dtype=bool), 1)
    assert got.alti_target is not None and got.self_ is not None
    assert np.all(np.isnan(got.alti_target[later])) and np.all(np.isnan(got.grad_target[later]))
    assert np.all(got.self_[:, later] == 0)  # causal: the decoder's self-attention never reads ahead
    assert np.all(np.isfinite(got.alti_target[~later])) and np.all(np.isfinite(got.grad_target[~later]))
    prefix = attribute_translation(model, SOURCE, OUTPUT[:3])
    assert prefix.alti_source is not None and prefix.alti_target is not None
    np.testing.assert_allclose(prefix.alti_source, got.alti_source[:3], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(prefix.grad_source, got.grad_source[:3], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(prefix.alti_target, got.alti_target[:3, :3], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("attention", ["bahdanau", "luong"])
def test_gradient_x_input_is_the_first_order_change_on_a_recurrent_translator(attention: str) -> None:
    """Scaling source token j's embedding by (1 + eps) moves output token t's logit by eps * grad_source[t, j]; no
    ALTI-Logit is claimed for a model whose attention feeds a GRU and a tanh."""
    model = recurrent(attention)
    got = attribute_translation(model, SOURCE, OUTPUT)
    assert got.alti_source is None and np.isnan(got.agreement())
    src, tgt_in, targets = _inputs(model, SOURCE, OUTPUT)
    t, eps = 3, 1e-6
    with torch.no_grad():
        base = float(model(src, tgt_in)[0, t, targets[t]])
    for j in range(len(SOURCE)):
        def scale(_m: nn.Module, _a: Any, out: Tensor, j: int = j) -> Tensor:
            out = out.clone()
            out[:, j] *= 1 + eps
            return out

        handle = model.src_embed.register_forward_hook(scale)
        with torch.no_grad():
            moved = float(model(src, tgt_in)[0, t, targets[t]])
        handle.remove()
        assert abs((moved - base) / eps - got.grad_source[t, j]) < 1e-4 * max(1.0, abs(got.grad_source[t, j])), j
    assert np.abs(got.grad_source).max() > 1e-6
    for k in range(t + 1):  # and decoder input k (the recurrent decoder embeds one step at a time)
        calls = iter(range(len(OUTPUT)))

        def scale_step(_m: nn.Module, _a: Any, out: Tensor, k: int = k, calls: Any = calls) -> Tensor:
            return out * (1 + eps) if next(calls) == k else out

        handle = model.tgt_embed.register_forward_hook(scale_step)
        with torch.no_grad():
            moved = float(model(src, tgt_in)[0, t, targets[t]])
        handle.remove()
        assert abs((moved - base) / eps - got.grad_target[t, k]) < 1e-4 * max(1.0, abs(got.grad_target[t, k])), k
    assert np.abs(got.grad_target[t, : t + 1]).max() > 1e-6


def test_refusals() -> None:
    model = transformer()
    with pytest.raises(InputError, match="nothing to attribute"):
        attribute_translation(model, SOURCE, [])
    with pytest.raises(InputError, match="source is empty"):
        attribute_translation(model, [], OUTPUT)
    with pytest.raises(InputError, match=r"output_ids must be ids .*\(0 \.\. 10\), got \[11\]"):
        attribute_translation(model, SOURCE, [4, 11])
    with pytest.raises(InputError, match="reads a translator"):
        attribute_translation(nn.Linear(2, 2), SOURCE, OUTPUT)


def test_translate_attribute_on_the_bundled_recurrent_translator(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cat"
    assert main(["translate", "The cat sat on the mat.", "--model", "tutorial-en-zh", "--attribute", "--no-viewer",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "attribution: each output token over the source" in printed and "Spearman" not in printed
    assert sorted(p.name for p in out.iterdir()) == ["alignment.png", "attribution.json", "attribution.png"]
    record = json.loads((out / "attribution.json").read_text(encoding="utf-8"))
    grads = np.array(record["grad_x_input"]["source"])  # (T, S)
    assert grads.shape == (len(record["output_tokens"]), len(record["source_tokens"]))
    assert record["alti_logit"]["source"] is None and record["spearman_agreement"] is None
    # what the figure shows: 猫 (cat) is pushed up most by "cat", 坐 (sat) by "sat"
    tokens = record["source_tokens"]
    for char, word in (("猫", "cat"), ("坐", "sat")):
        row = grads[record["output_tokens"].index(char)]
        assert tokens[int(np.argmax(row))] == word, (char, row)
    assert main(["translate", "a", "b", "--model", "tutorial-en-zh", "--attribute"]) == 2
    assert "--attribute" in one_error_line(capsys, "translate")


def test_translate_attribute_on_a_saved_transformer_translator(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A transformer translator (untrained: its output is noise) saved with the bundled dates-zh's tokenizer:
    the figure gets both panels and the command says how far the two methods agree."""
    from attnlab.trained import load_translator

    dates = load_translator("dates-zh")
    tok = dates.tokenizer
    torch.manual_seed(0)
    config = TransformerSeq2SeqConfig(src_vocab=tok.source_vocab_size, tgt_vocab=tok.target_vocab_size, d_model=16,
                                      n_heads=2, n_encoder_layers=1, n_decoder_layers=2, dropout=0.0, max_length=40)
    folder = save_seq2seq(tmp_path / "model", TransformerSeq2Seq(config).eval(), {**dates.meta})
    out = tmp_path / "att"
    assert main(["translate", "5 March 2021", "--model", str(folder), "--attribute", "--no-viewer",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "mean Spearman correlation of" in printed
    record = json.loads((out / "attribution.json").read_text(encoding="utf-8"))
    alti = np.array(record["alti_logit"]["source"], dtype=float)
    assert alti.shape == (len(record["output_tokens"]), len(record["source_tokens"])) and np.isfinite(alti).all()
    assert -1 <= record["spearman_agreement"] <= 1
