"""capture() on Hugging Face transformers models of the three families, loaded with the default SDPA
attention: the weights equal the eager model's ``output_attentions=True`` (and ``cross_attentions``),
the outputs do not change, and the model's attention implementation comes back."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import torch
import transformers
from torch import nn

import attnlab as al

IDS = torch.tensor([[2, 14, 9, 33, 71, 5, 60], [2, 40, 17, 8, 25, 0, 0]])  # (2, 7), second input padded
MASK = (IDS != 0).long()
DEC = torch.tensor([[1, 44, 12, 3, 81, 7], [1, 19, 52, 6, 0, 0]])  # (2, 6)
DEC_MASK = (DEC != 0).long()

SEQ2SEQ = {"encoder_attention_heads": 3, "decoder_attention_heads": 3, "encoder_layers": 2, "decoder_layers": 2,
           "encoder_ffn_dim": 37, "decoder_ffn_dim": 37, "max_position_embeddings": 32, "d_model": 36}

FAMILIES: dict[str, Callable[[], Any]] = {
    "bert": lambda: transformers.BertModel(transformers.BertConfig(
        vocab_size=99, hidden_size=36, num_attention_heads=3, num_hidden_layers=2, intermediate_size=37)),
    "gpt2": lambda: transformers.GPT2Model(transformers.GPT2Config(
        vocab_size=99, n_embd=36, n_head=3, n_layer=2, n_positions=32, bos_token_id=1, eos_token_id=1)),
    "bart": lambda: transformers.BartModel(transformers.BartConfig(vocab_size=99, **SEQ2SEQ)),
    "t5": lambda: transformers.T5Model(transformers.T5Config(
        vocab_size=99, d_model=36, d_kv=12, d_ff=37, num_heads=3, num_layers=2, num_decoder_layers=2,
        relative_attention_num_buckets=8)),
    "marian": lambda: transformers.MarianModel(transformers.MarianConfig(
        vocab_size=99, pad_token_id=0, decoder_start_token_id=0, **SEQ2SEQ)),
}
ENC_DEC = ("bart", "t5", "marian")


def _inputs(family: str) -> dict[str, torch.Tensor]:
    inputs = {"input_ids": IDS, "attention_mask": MASK}
    if family in ENC_DEC:
        inputs.update(decoder_input_ids=DEC, decoder_attention_mask=DEC_MASK)
    return inputs


def _expected(family: str, ref: Any) -> list[tuple[str, torch.Tensor]]:
    """(kind, weights) in call order from the eager model's own output_attentions."""
    if family == "bert":
        return [("self", a) for a in ref.attentions]
    if family == "gpt2":
        return [("causal", a) for a in ref.attentions]
    dec = [x for pair in zip(ref.decoder_attentions, ref.cross_attentions, strict=True) for x in
           (("causal", pair[0]), ("cross", pair[1]))]
    return [("self", a) for a in ref.encoder_attentions] + dec


@pytest.mark.parametrize("family", list(FAMILIES))
def test_family_parity_with_output_attentions(family: str) -> None:
    torch.manual_seed(0)
    model = FAMILIES[family]().eval()
    assert model.config._attn_implementation == "sdpa"
    eager = copy.deepcopy(model)
    # every sub-model too: before transformers 5.20, T5Model.set_attn_implementation did not reach its stacks
    for sub in eager.modules():
        if isinstance(sub, transformers.PreTrainedModel):
            sub.set_attn_implementation("eager")
    inputs = _inputs(family)
    with torch.no_grad():
        ref = eager(**inputs, output_attentions=True)
        sdpa_out = model(**inputs).last_hidden_state
        with al.capture(model) as trace:
            out = model(**inputs).last_hidden_state
        after = model(**inputs).last_hidden_state

    expected = _expected(family, ref)
    assert [r.kind for r in trace] == [k for k, _ in expected]
    worst = max((r.weights - w).abs().max().item() for r, (_, w) in zip(trace, expected, strict=True))
    out_vs_eager = (out - ref.last_hidden_state).abs().max().item()
    out_vs_sdpa = (out - sdpa_out).abs().max().item()
    print(f"{family}: weights vs output_attentions {worst:.2e}; output vs eager {out_vs_eager:.2e}, "
          f"vs sdpa {out_vs_sdpa:.2e}")
    assert worst <= 1e-5, f"{family}: captured weights differ from output_attentions by {worst:.2e}"
    assert out_vs_eager == 0.0  # captured = the model's eager computation
    assert out_vs_sdpa <= 1e-5  # and SDPA's to rounding
    assert torch.equal(after, sdpa_out)
    assert all(c._attn_implementation == "sdpa" for c in _all_configs(model))
    assert all(r.weights.shape[:2] == (2, 3) for r in trace)
    layers = {k: [r.layer for r in trace if r.kind == k] for k in trace.kinds}
    assert all(v == list(range(len(v))) for v in layers.values())


def _all_configs(model: nn.Module) -> list[Any]:
    return [m.config for m in model.modules() if hasattr(m, "config")]


def test_names_are_module_paths_and_padding_gets_no_weight() -> None:
    torch.manual_seed(0)
    model = FAMILIES["t5"]().eval()
    with torch.no_grad(), al.capture(model) as trace:
        model(**_inputs("t5"))
    assert trace[0].name == "encoder.block.0.layer.0.SelfAttention"
    assert trace.select(kind="cross")[0].name == "decoder.block.0.layer.1.EncDecAttention"
    for r in trace.select(kind="self") + trace.select(kind="cross"):
        assert (r.weights[1, :, :, 5:] == 0).all()  # the second input's padded source tokens


def test_bert_as_decoder_with_cross_attention_kinds() -> None:
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=99, hidden_size=36, num_attention_heads=3, num_hidden_layers=2,
                                  intermediate_size=37, is_decoder=True, add_cross_attention=True)
    model = transformers.BertModel(cfg).eval()
    memory = torch.randn(2, 4, 36)
    with torch.no_grad(), al.capture(model) as trace:
        model(input_ids=IDS, encoder_hidden_states=memory)
    assert [r.kind for r in trace] == ["causal", "cross", "causal", "cross"]
    assert trace[1].weights.shape == (2, 3, 7, 4)
    assert (trace[0].weights[0, 0].triu(1) == 0).all()


def test_restored_after_an_exception_and_kind_filter() -> None:
    model = FAMILIES["bart"]().eval()
    with pytest.raises(ValueError), al.capture(model):
        model(input_ids=IDS, decoder_input_ids=torch.zeros(2, 3, 3, dtype=torch.long))  # bad shape
    assert all(c._attn_implementation == "sdpa" for c in _all_configs(model))
    from attnlab.capturing._hf import _SESSIONS

    assert not _SESSIONS
    with torch.no_grad(), al.capture(model, kinds="cross") as trace:
        model(**_inputs("bart"))
    assert [(r.kind, r.layer) for r in trace] == [("cross", 0), ("cross", 1)]


def test_generation_with_cache_records_each_step() -> None:
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=99, n_embd=36, n_head=3, n_layer=2, n_positions=32, bos_token_id=1, eos_token_id=1,
        pad_token_id=0)).eval()
    with torch.no_grad(), al.capture(model) as trace:
        model.generate(IDS[:1, :5], max_new_tokens=3, do_sample=False)
    shapes = [tuple(r.weights.shape[2:]) for r in trace]
    assert shapes == [(5, 5), (5, 5), (1, 6), (1, 6), (1, 7), (1, 7)]
    assert [(r.layer, r.step) for r in trace] == [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]
    assert [tuple(r.weights.shape[2:]) for r in trace.assembled] == [(7, 7), (7, 7)]


def test_generic_eager_fallback_matches_plain_softmax_attention() -> None:
    """The eager path used for a modeling file without its own eager_attention_forward: grouped-query
    heads repeated, the additive mask applied, transformers' (B, L, H, D) layout returned."""
    from attnlab.capturing._hf import _generic_eager

    g = torch.Generator().manual_seed(3)
    q = torch.randn(2, 4, 5, 6, generator=g)  # (B, H, L, D)
    k, v = torch.randn(2, 2, 7, 6, generator=g), torch.randn(2, 2, 7, 6, generator=g)  # 2 key/value heads
    mask = torch.zeros(2, 1, 5, 9)  # longer than the keys: the model's mask may cover a cache
    mask[1, ..., 4:] = torch.finfo(torch.float32).min
    module = nn.Module()
    module.num_key_value_groups = 2
    module.eval()
    out, w = _generic_eager(module, q, k, v, mask, scaling=0.3)
    kk, vv = k.repeat_interleave(2, dim=1), v.repeat_interleave(2, dim=1)
    ref_w = torch.softmax(q @ kk.transpose(-2, -1) * 0.3 + mask[..., :7], dim=-1)
    assert out.shape == (2, 5, 4, 6) and w.shape == (2, 4, 5, 7)
    assert torch.allclose(w, ref_w, atol=1e-6), (w - ref_w).abs().max()
    assert torch.allclose(out, (ref_w @ vv).transpose(1, 2), atol=1e-6)
