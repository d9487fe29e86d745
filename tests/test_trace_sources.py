"""Traces from what a model already returned (AttentionTrace.from_hf_outputs), traces without tokens (tokens is
None and every consumer labels positions itself), and the record's new fields."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import transformers

import attnlab as al
from attnlab.capturing import attach_tokens
from attnlab.errors import InputError, ShapeError
from attnlab.trace import AttentionRecord, AttentionTrace

IDS = torch.tensor([[2, 14, 9, 33, 71, 5]])  # (1, 6)


def _bert() -> transformers.BertModel:
    return transformers.BertModel(transformers.BertConfig(
        vocab_size=99, hidden_size=36, num_attention_heads=3, num_hidden_layers=2, intermediate_size=37)).eval()


def test_from_hf_outputs_equals_capture_for_an_encoder() -> None:
    model = _bert()
    with torch.no_grad(), al.capture(model) as captured:
        out = model(IDS, output_attentions=True)
    tokens = [f"w{i}" for i in range(6)]
    trace = AttentionTrace.from_hf_outputs(out.attentions, tokens=tokens)
    assert [(r.name, r.kind, r.layer) for r in trace] == [("attentions[0]", "self", 0), ("attentions[1]", "self", 1)]
    assert torch.equal(trace.weights, captured.weights) and trace.tokens == tokens
    same = AttentionTrace.from_hf_outputs(out, tokens=tokens)  # the output object itself
    assert torch.equal(same.weights, trace.weights)
    with pytest.raises(ShapeError, match="got 5 query and 5 key tokens"):
        AttentionTrace.from_hf_outputs(out.attentions, tokens=tokens[:5])


def test_from_hf_outputs_of_an_encoder_decoder() -> None:
    cfg = transformers.BartConfig(vocab_size=99, d_model=36, encoder_attention_heads=3, decoder_attention_heads=3,
                                  encoder_layers=2, decoder_layers=2, encoder_ffn_dim=37, decoder_ffn_dim=37,
                                  max_position_embeddings=32)
    model = transformers.BartModel(cfg).eval()
    with torch.no_grad(), al.capture(model) as captured:
        out = model(input_ids=IDS, decoder_input_ids=IDS[:, :4], output_attentions=True)
    source, target = [f"s{i}" for i in range(6)], [f"t{i}" for i in range(4)]
    trace = AttentionTrace.from_hf_outputs(out, tokens=source, target_tokens=target)
    assert [(r.kind, r.layer) for r in trace] == [(r.kind, r.layer) for r in captured]  # the model's call order
    for kind in ("self", "causal", "cross"):
        assert torch.equal(trace.stack(kind), captured.stack(kind))  # type: ignore[arg-type]
    cross = trace.select(kind="cross")[1]
    assert cross.query_tokens == target and cross.key_tokens == source
    explicit = AttentionTrace.from_hf_outputs(out.decoder_attentions, out.cross_attentions,
                                              encoder_attentions=out.encoder_attentions)
    assert [r.kind for r in explicit] == [r.kind for r in trace] and explicit.tokens is None


def test_from_hf_outputs_kind_of_plain_attentions() -> None:
    causal = torch.softmax(torch.randn(1, 2, 4, 4).masked_fill(torch.ones(4, 4).triu(1).bool(), -torch.inf), -1)
    full = torch.softmax(torch.randn(1, 2, 4, 4), -1)
    assert AttentionTrace.from_hf_outputs((causal,)).kinds == ["causal"]
    assert AttentionTrace.from_hf_outputs((full,)).kinds == ["self"]
    assert AttentionTrace.from_hf_outputs((causal,), kind="self").kinds == ["self"]
    with pytest.raises(ShapeError, match=r"attentions\[0\] must be a \(batch, heads, q_len, k_len\) tensor"):
        AttentionTrace.from_hf_outputs((torch.ones(2, 4, 4),))
    with pytest.raises(InputError, match="from_hf_outputs got no attention"):
        AttentionTrace.from_hf_outputs(None)
    with pytest.raises(InputError, match=r"attentions is empty: .* load it with attn_implementation='eager'"):
        AttentionTrace.from_hf_outputs(())


def test_a_trace_without_tokens_says_none_and_every_consumer_labels_positions(tmp_path: Path) -> None:
    from attnlab.viz.html import _payload

    mha = al.MultiHeadAttention(12, 3)
    with torch.no_grad(), al.capture(mha) as trace:
        mha(torch.randn(1, 5, 12))
    assert trace.tokens is None
    assert AttentionTrace().tokens is None
    text = al.viz.summarize(trace)
    assert "tokens: 0 1 2 3 4" in text
    fig = al.viz.heatmap(trace, head="mean")
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["0", "1", "2", "3", "4"]
    al.viz.heads(trace)
    al.viz.model_grid(trace)
    assert _payload(trace, 0)["records"][0]["key_tokens"] == ["0", "1", "2", "3", "4"]
    again = AttentionTrace.load(trace.save(tmp_path / "t.attn"))
    assert again.tokens is None
    named = attach_tokens(trace, list("abcde"))
    assert named.tokens == list("abcde") and trace.tokens is None  # a copy: the original is unchanged


def test_show_draws_a_saved_trace_without_tokens(tmp_path: Path) -> None:
    from attnlab.cli import main

    mha = al.MultiHeadAttention(12, 3)
    with torch.no_grad(), al.capture(mha) as trace:
        mha(torch.randn(1, 5, 12))
    path = trace.save(tmp_path / "t.attn")
    assert main(["show", "--trace", str(path), "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "heatmap.png").is_file()


def test_record_checks_q_and_k_shapes() -> None:
    w = torch.full((1, 2, 3, 4), 0.25)
    AttentionRecord("m", "self", 0, w, q=torch.zeros(1, 2, 3, 5), k=torch.zeros(1, 2, 4, 5))
    with pytest.raises(ShapeError, match=r"k must be \(batch, heads, k_len, d_k\) = \(1, 2, 4, d_k\)"):
        AttentionRecord("m", "self", 0, w, q=torch.zeros(1, 2, 3, 5), k=torch.zeros(1, 2, 3, 5))
