"""capture(model, qk=True): each record also carries the per-head queries and keys and the score scale, and
the weights equal softmax(q k^T * scale + mask) computed from them in float64, for every adapter
(attnlab's layers, torch.nn.MultiheadAttention, Hugging Face models); q and k survive save/load."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import torch
import transformers
from torch import Tensor

import attnlab as al
from attnlab.errors import ConfigError
from attnlab.trace import AttentionRecord, AttentionTrace

TOL = 1e-6


def _softmax_ref(r: AttentionRecord, allowed: Tensor | None = None) -> Tensor:
    """float64 softmax(q k^T * scale) with the disallowed keys at -inf (rows with no key: zeros)."""
    assert r.q is not None and r.k is not None and r.scale is not None
    scores = torch.matmul(r.q.double(), r.k.double().transpose(-2, -1)) * r.scale  # (B, H, L, S)
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    w = torch.softmax(scores, dim=-1)
    return torch.nan_to_num(w, nan=0.0)


def _check(r: AttentionRecord, allowed: Tensor | None = None) -> float:
    assert r.q is not None and r.k is not None
    assert r.q.dtype == r.k.dtype == torch.float32 and r.q.device.type == r.k.device.type == "cpu"
    b, h, lq, lk = r.weights.shape
    assert r.q.shape[:3] == (b, h, lq) and r.k.shape[:3] == (b, h, lk)
    diff = (r.weights.double() - _softmax_ref(r, allowed)).abs().max().item()
    assert diff < TOL, f"{r.name} ({r.kind}): weights vs softmax(q k^T * scale + mask) {diff:.2e}"
    return diff


def _causal(lq: int, lk: int) -> Tensor:
    return torch.ones(lq, lk, dtype=torch.bool).tril(lk - lq)  # bottom-right aligned


def test_own_multihead_attention_self_causal_cross_and_padding() -> None:
    mha = al.MultiHeadAttention(12, 3, d_k=5)
    x, mem = torch.randn(2, 7, 12), torch.randn(2, 4, 12)
    pad = torch.tensor([[True, True, True, False], [True, True, True, True]])  # (B, S): True = real
    with torch.no_grad(), al.capture(mha, qk=True) as trace:
        mha(x)
        mha(x, causal=True)
        mha(x, mem, key_padding_mask=pad)
    assert [r.scale for r in trace] == [5**-0.5] * 3
    diffs = [_check(trace[0]), _check(trace[1], _causal(7, 7)), _check(trace[2], pad[:, None, None, :])]
    print("attnlab MultiHeadAttention, weights vs softmax(q k^T s + mask): " + ", ".join(f"{d:.1e}" for d in diffs))


def test_own_layer_scale_follows_its_kernel_options() -> None:
    mha = al.MultiHeadAttention(12, 3, kernel_options={"temperature": 2.0})
    with torch.no_grad(), al.capture(mha, qk=True) as trace:
        mha(torch.randn(1, 5, 12))
    assert trace[0].scale == pytest.approx(4**-0.5 / 2.0)
    _check(trace[0])


def test_without_qk_nothing_extra_is_kept() -> None:
    mha = al.MultiHeadAttention(12, 3)
    with al.capture(mha) as trace:
        mha(torch.randn(1, 5, 12))
    assert trace[0].q is None and trace[0].k is None and trace[0].scale is None
    with pytest.raises(ConfigError, match="qk must be True or False"), al.capture(mha, qk=1):  # type: ignore[arg-type]
        pass


@pytest.mark.parametrize("batch_first", [True, False])
def test_torch_multihead_attention(batch_first: bool) -> None:
    mha = torch.nn.MultiheadAttention(12, 3, batch_first=batch_first, add_bias_kv=True).eval()
    x = torch.randn(2, 6, 12) if batch_first else torch.randn(6, 2, 12)
    blocked = torch.ones(6, 6, dtype=torch.bool).triu(1)  # torch: True = blocked
    with torch.no_grad(), al.capture(mha, qk=True) as trace:
        mha(x, x, x, attn_mask=blocked)
    r = trace[0]
    assert r.scale == 4**-0.5 and r.k is not None and r.k.shape[2] == 7  # the bias key appended
    allowed = torch.nn.functional.pad(~blocked, (0, 1), value=True)  # (L, S + 1): the bias key is never masked
    print(f"torch MultiheadAttention: weights vs softmax(q k^T s + mask) {_check(r, allowed):.1e}")


def _hf_model(family: str) -> Any:
    seq2seq = {"encoder_attention_heads": 3, "decoder_attention_heads": 3, "encoder_layers": 2, "decoder_layers": 2,
               "encoder_ffn_dim": 37, "decoder_ffn_dim": 37, "max_position_embeddings": 32, "d_model": 36}
    build = {
        "bert": lambda: transformers.BertModel(transformers.BertConfig(
            vocab_size=99, hidden_size=36, num_attention_heads=3, num_hidden_layers=2, intermediate_size=37)),
        "gpt2": lambda: transformers.GPT2Model(transformers.GPT2Config(
            vocab_size=99, n_embd=36, n_head=3, n_layer=2, n_positions=32, bos_token_id=1, eos_token_id=1,
            scale_attn_by_inverse_layer_idx=True)),
        "bart": lambda: transformers.BartModel(transformers.BartConfig(vocab_size=99, **seq2seq)),
        "t5": lambda: transformers.T5Model(transformers.T5Config(
            vocab_size=99, d_model=36, d_kv=12, d_ff=37, num_heads=3, num_layers=2, num_decoder_layers=2,
            relative_attention_num_buckets=8)),
    }
    return build[family]().eval()


@pytest.mark.parametrize("family", ["bert", "gpt2", "bart"])
def test_hugging_face_models(family: str) -> None:
    model = _hf_model(family)
    ids = torch.tensor([[2, 14, 9, 33, 71, 5, 60]])
    inputs: dict[str, Tensor] = {"input_ids": ids}
    if family == "bart":
        inputs["decoder_input_ids"] = ids[:, :5]
    with torch.no_grad(), al.capture(model, qk=True) as trace:
        model(**inputs)
    diffs = []
    for r in trace:
        lq, lk = r.weights.shape[-2:]
        diffs.append(_check(r, _causal(lq, lk) if r.kind == "causal" else None))
    if family == "gpt2":  # scale_attn_by_inverse_layer_idx: layer i divides by i + 1 more
        assert [r.scale for r in trace] == pytest.approx([12**-0.5, 12**-0.5 / 2])
    else:
        assert all(r.scale == pytest.approx(12**-0.5) for r in trace)
    print(f"{family}: weights vs softmax(q k^T s + mask) {max(diffs):.1e} over {len(diffs)} records")


def test_t5_records_its_unit_scale() -> None:
    """T5 scales by 1 and adds a relative position bias: the recorded scale says 1, and the weights are
    softmax(q k^T + bias), so q k^T alone does not give them."""
    model = _hf_model("t5")
    ids = torch.tensor([[2, 14, 9, 33]])
    with torch.no_grad(), al.capture(model, qk=True) as trace:
        model(input_ids=ids, decoder_input_ids=ids[:, :2])
    assert all(r.scale == 1.0 and r.q is not None for r in trace)


def test_q_and_k_survive_save_and_load(tmp_path: Path) -> None:
    mha = al.MultiHeadAttention(12, 3)
    with torch.no_grad(), al.capture(mha, qk=True) as trace:
        mha(torch.randn(2, 5, 12), causal=True)
        mha(torch.randn(2, 5, 12))
    trace.records[1].q = trace.records[1].k = None  # a record without them stays without them
    again = AttentionTrace.load(trace.save(tmp_path / "qk.attn"))
    first = again[0]
    assert first.q is not None and first.k is not None and trace[0].q is not None and trace[0].k is not None
    assert torch.equal(first.q, trace[0].q) and torch.equal(first.k, trace[0].k)
    assert first.scale == trace[0].scale == 1 / math.sqrt(4)
    assert again[1].q is None and again[1].k is None
    _check(first, _causal(5, 5))
