"""Attention during generation: each module's decoding steps carry ``step`` and the module's ``layer``, and
the trace assembles them into one matrix per layer that equals one full forward over the generated
sequence (GPT-2-like, BART-like and attnlab's own decoder with a KVCache); tokens attach from the final
sequence; figures, summary and viewer draw such traces."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import torch
import transformers

import attnlab as al
from attnlab.capturing import attach_tokens
from attnlab.errors import InputError, ShapeError
from attnlab.layers import TransformerConfig, TransformerDecoder
from attnlab.trace import AttentionRecord, AttentionTrace

PROMPT = torch.tensor([[5, 17, 42, 8, 3], [9, 60, 21, 33, 70]])  # (2, 5)
SOURCE = torch.tensor([[0, 14, 9, 33, 71, 5, 2], [0, 40, 17, 8, 25, 66, 2]])  # (2, 7)
NEW = 6
TOL = 1e-5


def _gpt2() -> Any:
    cfg = transformers.GPT2Config(vocab_size=99, n_embd=36, n_head=3, n_layer=2, n_positions=32,
                                  bos_token_id=1, eos_token_id=1, pad_token_id=0)
    return transformers.GPT2LMHeadModel(cfg).eval()


def _bart() -> Any:
    cfg = transformers.BartConfig(vocab_size=99, d_model=36, encoder_attention_heads=3, decoder_attention_heads=3,
                                  encoder_layers=2, decoder_layers=2, encoder_ffn_dim=37, decoder_ffn_dim=37,
                                  max_position_embeddings=32)
    return transformers.BartForConditionalGeneration(cfg).eval()


def _eager(model: Any) -> Any:
    ref = copy.deepcopy(model)
    ref.set_attn_implementation("eager")
    return ref


def _generate(model: Any, ids: torch.Tensor, **kwargs: Any) -> tuple[AttentionTrace, torch.Tensor]:
    with torch.no_grad(), al.capture(model) as trace:
        out = model.generate(ids, max_new_tokens=NEW, min_new_tokens=NEW, do_sample=False, num_beams=1, **kwargs)
    return trace, out


def _worst(trace: AttentionTrace, kind: str, reference: tuple[torch.Tensor, ...]) -> float:
    """Largest difference between the assembled (layers, batch...) matrices and one full forward's."""
    assembled = trace.select(kind=kind)  # type: ignore[arg-type]
    assert len(assembled) == len(reference)
    assert all(r.weights.shape == w.shape for r, w in zip(assembled, reference, strict=True))
    return max((r.weights - w).abs().max().item() for r, w in zip(assembled, reference, strict=True))


def test_gpt2_generate_assembles_to_one_full_forward() -> None:
    model = _gpt2()
    trace, out = _generate(model, PROMPT)
    assert out.shape == (2, 5 + NEW)
    # the raw calls: a prefill and NEW - 1 steps per layer, each on its module's true layer
    assert [(r.layer, r.step) for r in trace.records] == [(li, s) for s in range(NEW) for li in range(2)]
    assert [tuple(r.weights.shape[2:]) for r in trace.records[:4]] == [(5, 5), (5, 5), (1, 6), (1, 6)]
    assert trace.is_generation and trace.n_layers == 2
    with torch.no_grad():
        ref = _eager(model)(out[:, :-1], output_attentions=True)  # the last token generated is never read
    worst = _worst(trace, "causal", ref.attentions)
    print(f"gpt2 generate: assembled vs one full forward {worst:.2e}")
    assert worst <= TOL
    full = trace.stack("causal", batch=1)  # (layers, heads, T, T)
    assert full.shape == (2, 3, 5 + NEW - 1, 5 + NEW - 1)
    assert torch.equal(full, full.tril())  # causal, bottom-right: no weight on the future
    torch.testing.assert_close(full.sum(-1), torch.ones(full.shape[:-1]))


def test_bart_generate_assembles_decoder_and_cross_attention() -> None:
    model = _bart()
    trace, out = _generate(model, SOURCE)
    kinds = [(r.kind, r.layer, r.step) for r in trace.records]
    assert kinds[:2] == [("self", 0, None), ("self", 1, None)]  # the encoder runs once
    assert kinds[2:6] == [("causal", 0, 0), ("cross", 0, 0), ("causal", 1, 0), ("cross", 1, 0)]
    assert kinds[6:8] == [("causal", 0, 1), ("cross", 0, 1)]
    with torch.no_grad():
        ref = _eager(model)(input_ids=SOURCE, decoder_input_ids=out[:, :-1], output_attentions=True)
    worst = {kind: _worst(trace, kind, attn) for kind, attn in (
        ("self", ref.encoder_attentions), ("causal", ref.decoder_attentions), ("cross", ref.cross_attentions))}
    print("bart generate: assembled vs one full forward " + ", ".join(f"{k} {v:.2e}" for k, v in worst.items()))
    assert max(worst.values()) <= TOL
    t = out.shape[1] - 1
    assert trace.stack("causal").shape == (2, 3, t, t) and trace.stack("cross").shape == (2, 3, t, 7)


def _own_decode(dec: TransformerDecoder, x: torch.Tensor, mem: torch.Tensor, prefill: int) -> AttentionTrace:
    cache = dec.new_cache()
    with torch.no_grad(), al.capture(dec, qk=True) as trace:
        dec(x[:, :prefill], mem, cache=cache)
        for t in range(prefill, x.shape[1]):
            dec(x[:, t:t + 1], mem, cache=cache)
    return trace


@pytest.mark.parametrize("prefill", [1, 3])
def test_own_decoder_with_kv_cache_assembles_to_one_full_forward(prefill: int) -> None:
    dec = TransformerDecoder(TransformerConfig(12, 3, 29), 2).eval()
    x, mem = torch.randn(2, 7, 12), torch.randn(2, 5, 12)
    trace = _own_decode(dec, x, mem, prefill)
    steps = 7 - prefill
    assert [r.step for r in trace.records] == [s for s in range(steps + 1) for _ in range(4)]
    assert [r.layer for r in trace.records[:4]] == [0, 0, 1, 1]
    with torch.no_grad(), al.capture(dec, qk=True) as full:
        dec(x, mem)
    worst = {kind: max((a.weights - b.weights).abs().max().item()
                       for a, b in zip(trace.select(kind=kind), full.select(kind=kind), strict=True))
             for kind in ("causal", "cross")}
    print(f"attnlab decoder + KVCache (prefill {prefill}): " + ", ".join(f"{k} {v:.2e}" for k, v in worst.items()))
    assert max(worst.values()) <= TOL
    for a, b in zip(trace.select(), full.select(), strict=True):  # queries joined, keys the last step's
        assert a.q is not None and b.q is not None and a.k is not None and b.k is not None
        torch.testing.assert_close(a.q, b.q, atol=TOL, rtol=0)
        torch.testing.assert_close(a.k, b.k, atol=TOL, rtol=0)


def test_tokens_attach_from_the_final_sequence() -> None:
    trace, out = _generate(_bart(), SOURCE[:1])
    source = [f"s{i}" for i in range(7)]
    target = [f"t{i}" for i in range(out.shape[1])]
    with_tokens = attach_tokens(trace, source, target)
    assert trace.tokens is None  # attach_tokens returns a copy
    causal, cross = with_tokens.select(kind="causal")[0], with_tokens.select(kind="cross")[0]
    assert causal.query_tokens == causal.key_tokens == target[:-1]
    assert cross.query_tokens == target[:-1] and cross.key_tokens == source
    step2 = [r for r in with_tokens.records if r.kind == "cross" and r.layer == 0][2]
    assert step2.query_tokens == [target[2]] and step2.key_tokens == source
    assert with_tokens.tokens == source
    with pytest.raises(ShapeError, match="final generated sequence"):
        attach_tokens(trace, source, target[:3])
    gpt, ids = _generate(_gpt2(), PROMPT[:1])
    toks = [str(i) for i in ids[0].tolist()]
    assert attach_tokens(gpt, toks).tokens == toks[:-1]
    step = next(r for r in attach_tokens(gpt, toks).records if r.step == 3)
    assert step.query_tokens == [toks[5 + 2]] and step.key_tokens == toks[:5 + 3]


def test_figures_summary_and_viewer_draw_a_generation(tmp_path: Path) -> None:
    from attnlab.viz.html import _payload

    trace, out = _generate(_gpt2(), PROMPT[:1])
    trace = attach_tokens(trace, [f"w{i}" for i in out[0].tolist()])
    text = al.viz.summarize(trace)
    assert "2 layers x 3 heads, 10 tokens" in text
    lines = text.splitlines()
    assert [line.split()[0] for line in lines[4:]] == ["0", "1"]
    fig = al.viz.model_grid(trace)  # one mosaic image: a row per layer, a column per head
    (image,) = fig.axes[0].get_images()
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()], [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert ticks == (["layer 0", "layer 1"], ["head 0", "head 1", "head 2"]) and image.get_array().shape[0] >= 2 * 10
    al.viz.heatmap(trace, layer=1, head="mean")
    payload = _payload(trace, 0)
    assert [(r["layer"], r["q"], r["k"]) for r in payload["records"]] == [(0, 10, 10), (1, 10, 10)]
    path = trace.save(tmp_path / "gen.attn")
    again = AttentionTrace.load(path)
    assert [r.step for r in again.records] == [r.step for r in trace.records]
    assert torch.equal(again.stack("causal"), trace.stack("causal")) and again.tokens == trace.tokens


def test_hf_generate_outputs_give_the_same_trace() -> None:
    model = _gpt2()
    trace, _ = _generate(model, PROMPT)
    with torch.no_grad():
        gen = _eager(model).generate(PROMPT, max_new_tokens=NEW, min_new_tokens=NEW, do_sample=False,
                                     output_attentions=True, return_dict_in_generate=True)
    built = AttentionTrace.from_hf_outputs(gen.attentions)
    assert [(r.kind, r.layer, r.step) for r in built.records] == [(r.kind, r.layer, r.step) for r in trace.records]
    torch.testing.assert_close(built.stack("causal"), trace.stack("causal"), atol=TOL, rtol=0)
    with torch.no_grad():  # without a cache every step recomputes the whole sequence: only its new rows are kept
        nocache = _eager(model).generate(PROMPT, max_new_tokens=NEW, min_new_tokens=NEW, do_sample=False,
                                         use_cache=False, output_attentions=True, return_dict_in_generate=True)
    torch.testing.assert_close(AttentionTrace.from_hf_outputs(nocache.attentions).stack("causal"),
                               trace.stack("causal"), atol=TOL, rtol=0)


def test_hf_encoder_decoder_generate_outputs_give_the_same_trace() -> None:
    model = _bart()
    trace, _ = _generate(model, SOURCE)
    with torch.no_grad():
        gen = _eager(model).generate(SOURCE, max_new_tokens=NEW, min_new_tokens=NEW, do_sample=False, num_beams=1,
                                     output_attentions=True, return_dict_in_generate=True)
    built = AttentionTrace.from_hf_outputs(gen)  # encoder, decoder (per step) and cross (per step) attentions
    assert [(r.kind, r.layer, r.step) for r in built.records] == [(r.kind, r.layer, r.step) for r in trace.records]
    for kind in ("self", "causal", "cross"):
        torch.testing.assert_close(built.stack(kind), trace.stack(kind), atol=TOL, rtol=0)  # type: ignore[arg-type]


def test_steps_out_of_order_are_refused() -> None:
    w = torch.full((1, 1, 1, 2), 0.5)
    records = [AttentionRecord("m", "causal", 0, torch.ones(1, 1, 1, 1), step=0),
               AttentionRecord("m", "causal", 0, torch.full((1, 1, 1, 3), 1 / 3), step=2)]
    with pytest.raises(InputError, match="decoding step 2, but the step before it in the trace is 0"):
        AttentionTrace(records).assembled  # noqa: B018
    ok = AttentionTrace([records[0], AttentionRecord("m", "causal", 0, w, step=1)])
    assert torch.equal(ok.stack("causal")[0, 0], torch.tensor([[1.0, 0.0], [0.5, 0.5]]))
    with pytest.raises(InputError, match="step must be None or an integer >= 0"):
        AttentionRecord("m", "causal", 0, w, step=-1)


def test_two_ordinary_forwards_are_not_steps() -> None:
    """Only a call whose keys grew by exactly its queries continues the module's previous call."""
    dec = TransformerDecoder(TransformerConfig(12, 3, 29), 1).eval()
    x, mem = torch.randn(1, 6, 12), torch.randn(1, 4, 12)
    with torch.no_grad(), al.capture(dec) as trace:
        dec(x[:, :4], mem)
        dec(x, mem)
    assert [(r.kind, r.layer, r.step) for r in trace.records] == [
        ("causal", 0, None), ("cross", 0, None), ("causal", 1, None), ("cross", 1, None)]
