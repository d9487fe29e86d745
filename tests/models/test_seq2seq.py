"""Seq2Seq and TransformerSeq2Seq: shapes, source masking, bad configs and inputs, save/load, capture."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from helpers.seq2seq import EOS, FACTORIES, PAD, SRC_VOCAB, TGT_VOCAB, make, sources, targets

import attnlab
from attnlab.errors import ConfigError, InputError, ModelLoadError, ShapeError, TooLongError
from attnlab.functional import KERNELS
from attnlab.models import (
    Generation,
    Seq2Seq,
    Seq2SeqConfig,
    TransformerSeq2Seq,
    TransformerSeq2SeqConfig,
    load_seq2seq,
    save_seq2seq,
)

NAMES = list(FACTORIES)


@pytest.mark.parametrize("name", NAMES)
def test_shapes_of_forward_and_generate(name: str) -> None:
    model = make(name, eos_bias=1.0)
    src = sources([5, 3, 7])
    logits = model(src, targets([4, 2, 6]))
    assert logits.shape == (3, 6, TGT_VOCAB)
    for beam in (1, 4):
        gen = model.generate(src, beam=beam, max_length=6)
        assert isinstance(gen, Generation) and len(gen) == 3
        for i, n in enumerate([5, 3, 7]):
            assert all(4 <= t < TGT_VOCAB or t == 1 for t in gen.tokens[i])  # never PAD, BOS or EOS
            assert gen.alignment[i].shape == (len(gen.tokens[i]), n)
            torch.testing.assert_close(gen.alignment[i].sum(-1), torch.ones(len(gen.tokens[i])))
            assert gen.scores[i] < 0


@pytest.mark.parametrize("name", NAMES)
def test_padding_of_the_source_changes_nothing(name: str) -> None:
    """A padded batch gives each source the logits and generations it gets alone, however wide the padding."""
    model = make(name, eos_bias=1.0)
    lengths = [4, 7, 2]
    tgt_in = targets([5, 5, 5])
    wide = model(sources(lengths, width=10), tgt_in)
    tight = model(sources(lengths), tgt_in)
    gen = model.generate(sources(lengths, width=10), beam=3, max_length=5)
    for i, n in enumerate(lengths):
        alone_src = sources(lengths)[i : i + 1, :n]
        alone = model(alone_src, tgt_in[i : i + 1])
        assert (wide[i] - alone[0]).abs().max() < 1e-10
        assert (tight[i] - alone[0]).abs().max() < 1e-10
        one = model.generate(alone_src, beam=3, max_length=5)
        assert one.tokens[0] == gen.tokens[i]
        assert abs(one.scores[0] - gen.scores[i]) < 1e-9
        torch.testing.assert_close(one.alignment[0], gen.alignment[i], atol=1e-6, rtol=0)


@pytest.mark.parametrize("name", ["bahdanau", "luong-general", "transformer"])
def test_padded_source_positions_get_no_attention(name: str) -> None:
    model = make(name, eos_bias=1.0)
    with attnlab.capture(model, kinds="cross") as trace:
        model(sources([3, 6], width=8), targets([4, 4]))
    for record in trace.assembled:
        assert record.weights[0, :, :, 3:].abs().max() == 0
        assert record.weights[1, :, :, 6:].abs().max() == 0


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_transformer_builds_and_decodes_with_every_kernel(kernel: str) -> None:
    model = TransformerSeq2Seq(TransformerSeq2SeqConfig(SRC_VOCAB, TGT_VOCAB, d_model=12, n_heads=3, d_ff=16,
                                                        dropout=0.0, max_length=12, kernel=kernel))
    src = sources([4, 4])  # lsh needs no padding inside a chunk: equal lengths
    assert model(src, targets([3, 3])).shape == (2, 3, TGT_VOCAB)
    gen = model.generate(src, beam=2, max_length=4)
    assert all(a.shape[1] == 4 for a in gen.alignment)


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"d_hidden": 31}, "even"),
        ({"attention": "bahdanau", "score": "dot"}, "additive"),
        ({"attention": "luong", "score": "cosine"}, "score"),
        ({"pad_id": 2}, "three different"),
        ({"eos_id": 9}, "tgt_vocab=9"),
        ({"dropout": 1.5}, "dropout"),
        ({"max_length": 0}, "max_length"),
        ({"input_feeding": "yes"}, "input_feeding"),
    ],
)
def test_bad_seq2seq_config(options: dict[str, object], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        Seq2SeqConfig(SRC_VOCAB, TGT_VOCAB, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "words"),
    [({"d_model": 10, "n_heads": 4}, "divisible"), ({"kernel": "nope"}, "nope"), ({"n_decoder_layers": 0}, "n_decoder"),
     ({"kernel": "linear"}, "dropout=0.0")],
)
def test_bad_transformer_config(options: dict[str, object], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        TransformerSeq2SeqConfig(SRC_VOCAB, TGT_VOCAB, **options)  # type: ignore[arg-type]


def test_a_model_takes_only_its_own_config() -> None:
    with pytest.raises(ConfigError, match="Seq2SeqConfig"):
        Seq2Seq(TransformerSeq2SeqConfig(SRC_VOCAB, TGT_VOCAB))  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["bahdanau", "transformer"])
def test_bad_input(name: str) -> None:
    model = make(name)
    src = sources([3, 3])
    with pytest.raises(TooLongError, match=r"13 tokens.*at most 12") as info:
        model.generate(torch.full((1, 13), 5))
    assert (info.value.n_tokens, info.value.limit) == (13, 12)
    with pytest.raises(InputError, match="right"):
        model.generate(torch.tensor([[PAD, 5, EOS]]))
    with pytest.raises(InputError, match=r"\[0, 11\)"):
        model.generate(torch.tensor([[5, SRC_VOCAB, EOS]]))
    with pytest.raises(InputError, match="float"):
        model.generate(src.double())
    with pytest.raises(InputError, match="at least one"):
        model.generate(src[:, :0])
    with pytest.raises(ShapeError, match="batch"):
        model(src, targets([2, 2, 2]))
    for bad, words in [({"beam": 0}, "beam"), ({"max_length": 13}, "model's max_length=12"),
                       ({"length_penalty": -1.0}, "length_penalty")]:
        with pytest.raises(ConfigError, match=words):
            model.generate(src, **bad)  # type: ignore[arg-type]


def test_generate_restores_the_training_mode() -> None:
    model = make("bahdanau").train()
    model.generate(sources([3]), max_length=3)
    assert model.training


@pytest.mark.parametrize("name", ["luong-location", "transformer"])
def test_save_and_load(tmp_path: Path, name: str) -> None:
    model = make(name, eos_bias=1.0).float()
    folder = save_seq2seq(tmp_path / "m", model, {"tokenizer": "{}", "task": "dates"})
    loaded, meta = load_seq2seq(folder)
    assert meta == {"tokenizer": "{}", "task": "dates"}
    assert type(loaded) is type(model) and loaded.config == model.config and not loaded.training
    src, tgt_in = sources([4, 2]), targets([3, 3])
    assert torch.equal(loaded(src, tgt_in), model(src, tgt_in))
    header = json.loads((folder / "config.json").read_text())
    assert header["architecture"] == ("transformer_seq2seq" if name == "transformer" else "seq2seq")


def test_load_refuses_broken_folders(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match=r"config\.json is missing"):
        load_seq2seq(tmp_path)
    good = save_seq2seq(tmp_path / "good", make("bahdanau").float(), {})
    config = (good / "config.json").read_text()

    (good / "config.json").write_text("{not json")
    with pytest.raises(ModelLoadError, match="not readable JSON"):
        load_seq2seq(good)
    (good / "config.json").write_text(json.dumps({"format": "attnlab.classifier/1"}))
    with pytest.raises(ModelLoadError, match="not an attnlab translation model"):
        load_seq2seq(good)
    header = json.loads(config)
    (good / "config.json").write_text(json.dumps({**header, "architecture": "lstm"}))
    with pytest.raises(ModelLoadError, match="unknown architecture 'lstm'"):
        load_seq2seq(good)
    (good / "config.json").write_text(json.dumps({**header, "config": {**header["config"], "d_hidden": 31}}))
    with pytest.raises(ModelLoadError, match=r"unusable seq2seq config.*even"):
        load_seq2seq(good)
    (good / "config.json").write_text(json.dumps({**header, "config": {**header["config"], "d_hidden": 12}}))
    with pytest.raises(ModelLoadError, match="do not fit"):  # the weights are of a d_hidden=10 model
        load_seq2seq(good)
    (good / "config.json").write_text(config)

    weights = good / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(ModelLoadError, match="corrupt or truncated"):
        load_seq2seq(good)
    weights.unlink()
    with pytest.raises(ModelLoadError, match="no weights"):
        load_seq2seq(good)
    with pytest.raises(ConfigError, match="dict of strings"):
        save_seq2seq(tmp_path / "x", make("bahdanau"), {"n": 3})  # type: ignore[dict-item]


@pytest.mark.parametrize(("name", "beam"), [("bahdanau", 1), ("luong-dot", 4), ("transformer", 1), ("transformer", 4)])
def test_capturing_generate_gives_decoding_steps(name: str, beam: int) -> None:
    """The decoder's attention comes as steps 0, 1, 2, ... that the trace assembles into one matrix per module;
    for greedy search its rows are the returned alignment (the transformer's: last layer, mean over heads)."""
    model = make(name, eos_bias=-1.0)  # hypotheses long enough to have steps
    lengths = [5, 3]
    with attnlab.capture(model) as trace:
        gen = model.generate(sources(lengths), beam=beam, max_length=6)
    cross = [r for r in trace.records if r.kind == "cross"]
    modules = {r.name for r in cross}
    n_steps = len(cross) // len(modules)
    assert n_steps >= 2
    for module in modules:
        assert [r.step for r in cross if r.name == module] == list(range(n_steps))
    assembled = [r for r in trace.assembled if r.kind == "cross"]
    assert len(assembled) == len(modules)
    last = max(assembled, key=lambda r: r.name)  # decoder.layers.1 after decoder.layers.0; "attention" alone
    assert last.weights.shape == (len(lengths) * beam, last.n_heads, n_steps, 5)
    if name == "transformer":
        causal = [r for r in trace.assembled if r.kind == "causal"]
        assert len(causal) == 2 and causal[0].weights.shape[-2:] == (n_steps, n_steps)
        assert causal[0].weights.triu(1).abs().max() == 0  # a step sees only the tokens before it
    if beam == 1:
        for i, n in enumerate(lengths):
            rows = len(gen.tokens[i])
            torch.testing.assert_close(last.weights[i].mean(0)[:rows, :n], gen.alignment[i], atol=1e-6, rtol=0)


def test_capturing_a_teacher_forced_recurrent_decoder_gives_its_alignment() -> None:
    """The recurrent decoder attends once per target position and nothing else: its calls are steps, and the
    assembled record is the (target, source) alignment of the whole batch."""
    model = make("luong-concat")
    src, tgt_in = sources([4, 6]), targets([5, 3])
    with attnlab.capture(model) as trace:
        model(src, tgt_in)
    assert [r.step for r in trace.records] == list(range(5))
    (alignment,) = trace.assembled
    assert alignment.kind == "cross" and alignment.weights.shape == (2, 1, 5, 6)
    torch.testing.assert_close(alignment.weights[0, 0, :, :4].sum(-1), torch.ones(5))
