"""TransformerSeq2Seq with positions="rotary": no position table added, RoPE in every self-attention (encoder and
decoder), none in the cross-attention; the key/value-cache steps still equal the teacher-forced decoder (float64),
and the option is checked, saved and loaded."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from helpers.seq2seq import SRC_VOCAB, TGT_VOCAB, sources, targets, transformer

from attnlab.errors import ConfigError
from attnlab.models import TransformerSeq2SeqConfig, load_seq2seq, save_seq2seq


def rotary_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return transformer(positions="rotary").double().eval()


def test_rotary_is_in_every_self_attention_and_no_cross_attention() -> None:
    model = rotary_model()
    for layer in model.encoder.layers:
        assert layer.self_attn.config.rotary
    for layer in model.decoder.layers:
        assert layer.self_attn.config.rotary
        assert not layer.cross_attn.config.rotary
    assert not any(layer.self_attn.config.rotary for layer in transformer().encoder.layers)  # the default


@pytest.mark.parametrize("positions", ["sinusoidal", "rotary"])
def test_only_the_sinusoidal_model_reads_the_position_table(positions: str) -> None:
    """Changing the table changes the sinusoidal model's logits and leaves the rotary one's exactly as they were."""
    torch.manual_seed(0)
    model = transformer(positions=positions).double().eval()
    src, tgt_in = sources([5, 3, 6], seed=2), targets([4, 6, 2], seed=3)
    with torch.no_grad():
        before = model(src, tgt_in)
        model.position.mul_(-1.0)  # type: ignore[operator]  # a buffer
        after = model(src, tgt_in)
    changed = bool((before - after).abs().max() > 1e-6)
    assert changed == (positions == "sinusoidal")


def test_rotary_positions_are_relative_in_the_decoder() -> None:
    """With rotary positions and no table, a decoder self-attention score depends on the offset of two tokens,
    not their places: the rotary model is not blind to order (swapping two target tokens changes the logits
    after them), yet it adds nothing to the embeddings."""
    model = rotary_model()
    src = sources([5], seed=4)
    tgt_in = torch.tensor([[2, 5, 6, 7]])
    swapped = torch.tensor([[2, 6, 5, 7]])
    with torch.no_grad():
        a, b = model(src, tgt_in), model(src, swapped)
    assert (a[0, 3] - b[0, 3]).abs().max() > 1e-6  # order matters
    x = model._embed(model.tgt_embed, tgt_in, 3)
    assert torch.equal(x, model.tgt_embed(tgt_in) * model.scale)  # no table at any start


def test_rotary_key_value_cache_steps_equal_the_full_decoder() -> None:
    """Each step rotates the new token's query and key by its own position (after the cached ones): the logits
    equal the teacher-forced decoder over the whole prefix, for rows of different lengths."""
    model = rotary_model()
    src, tgt_in = sources([5, 3, 6], seed=6), targets([6, 4, 6], seed=7)
    with torch.no_grad():
        full = model(src, tgt_in)  # (B, T, V)
        stepper = model._stepper(src)
        for t in range(tgt_in.shape[1]):
            logits, _ = stepper.step(tgt_in[:, t], t)
            assert (logits - full[:, t]).abs().max() < 1e-10


def test_rotary_greedy_equals_the_argmax_of_teacher_forcing() -> None:
    model = rotary_model()
    src = sources([6, 4], seed=8)
    gen = model.generate(src, max_length=5)
    for i, tokens in enumerate(gen.tokens):
        tgt_in = torch.tensor([[2, *tokens]])
        with torch.no_grad():
            logits = model(src[i : i + 1, : int((src[i] != 0).sum())], tgt_in)[0]  # (T, V)
        logits[:, [0, 2]] = -torch.inf  # PAD and BOS are never generated
        assert logits[: len(tokens)].argmax(-1).tolist() == tokens


@pytest.mark.parametrize(("options", "words"), [
    ({"positions": "learned"}, "positions must be one of ('sinusoidal', 'rotary'), got 'learned'"),
    ({"positions": "rotary", "d_model": 12, "n_heads": 4}, "d_k"),  # 3 features per head: no pairs to rotate
])
def test_bad_positions(options: dict[str, object], words: str) -> None:
    with pytest.raises(ConfigError, match=words.replace("(", r"\(").replace(")", r"\)")):
        TransformerSeq2SeqConfig(SRC_VOCAB, TGT_VOCAB, **options)  # type: ignore[arg-type]


def test_a_rotary_model_saves_and_loads(tmp_path: Path) -> None:
    model = rotary_model().float()
    save_seq2seq(tmp_path, model, {"task": "test"})
    loaded, _ = load_seq2seq(tmp_path)
    assert loaded.config.positions == "rotary"
    src, tgt_in = sources([5, 3], seed=9), targets([4, 3], seed=10)
    with torch.no_grad():
        assert torch.equal(model(src, tgt_in), loaded.eval()(src, tgt_in))


def test_the_dates_transformer_config_file_builds() -> None:
    """configs/dates-zh-transformer.json (the benchmark's transformer) is a valid model and training config."""
    import json

    from attnlab.training import TranslateTrainConfig

    spec = json.loads((Path(__file__).resolve().parents[2] / "configs" / "dates-zh-transformer.json").read_text())
    assert spec["arch"] == "transformer"
    TranslateTrainConfig(**spec["train"])
    config = TransformerSeq2SeqConfig(SRC_VOCAB, TGT_VOCAB, max_length=spec["max_length"], **spec["model"])
    assert config.positions == "rotary"
