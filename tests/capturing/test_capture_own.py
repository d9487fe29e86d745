"""capture() on attnlab's own layers: records, names, kinds, filters, and cleanup on every exit."""

from __future__ import annotations

import pytest
import torch
from helpers.reference import attention_ref
from torch import Tensor, nn

import attnlab as al
from attnlab.errors import CaptureError, InputError
from attnlab.layers import AttentionCall, AttentionHook, TransformerConfig, TransformerDecoder, TransformerEncoder


class TinyAttention(nn.Module):
    """A module that hands attnlab.functional.attention's weights to an AttentionHook, as layers do."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(13, 3 * 13)
        self.hook = AttentionHook()

    def forward(self, x: Tensor, fail: bool = False) -> Tensor:
        q, k, v = self.proj(x).view(*x.shape[:2], 3, 1, 13).unbind(2)  # (B, L, 1, E) each
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # (B, 1, L, E)
        out, w = al.attention(q, k, v, causal=True, return_weights=bool(self.hook.active))
        if w is not None:
            self.hook(AttentionCall("causal", w))
        if fail:
            raise RuntimeError("boom")
        return out


def _hook_counts(model: nn.Module) -> list[int]:
    return [len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules()]


def test_tiny_module_records_the_kernel_weights() -> None:
    m = TinyAttention()
    x = torch.randn(2, 7, 13)
    with al.capture(m) as trace:
        m(x)
    assert len(trace) == 1
    r = trace[0]
    assert (r.name, r.kind, r.layer) == ("TinyAttention", "causal", 0)
    q, k, v = (t.transpose(1, 2) for t in m.proj(x).view(2, 7, 3, 1, 13).unbind(2))
    _, ref = attention_ref(q, k, v, causal=True)
    diff = (r.weights.double() - ref).abs().max().item()
    print(f"tiny module vs float64 reference: {diff:.2e}")
    assert diff < 1e-6
    assert r.weights.dtype == torch.float32 and not r.weights.requires_grad


def test_multihead_attention_weights_equal_what_it_returns() -> None:
    mha = al.MultiHeadAttention(12, 3)
    x, mem = torch.randn(2, 7, 12), torch.randn(2, 5, 12)
    with al.capture(mha) as trace:
        _, w_self = mha(x, return_weights=True)
        _, w_causal = mha(x, causal=True, return_weights=True)
        _, w_cross = mha(x, mem, return_weights=True)
    assert [(r.kind, r.layer) for r in trace] == [("self", 0), ("causal", 0), ("cross", 0)]
    for r, w in zip(trace, (w_self, w_causal, w_cross), strict=True):
        assert torch.equal(r.weights, w.detach())
        assert r.name == "MultiHeadAttention"


def test_outputs_unchanged_and_hook_point_reset() -> None:
    mha = al.MultiHeadAttention(12, 3)
    x = torch.randn(2, 7, 12)
    fused, _ = mha(x, causal=True)  # no weights wanted: the fused SDPA path
    readable, _ = mha(x, causal=True, return_weights=True)  # the path that computes weights
    with al.capture(mha):
        during, _ = mha(x, causal=True)
    # Capturing makes the layer take its weights path: the same output as asking for weights,
    # and the fused path's to rounding.
    assert torch.equal(readable, during)
    torch.testing.assert_close(during, fused, rtol=0, atol=1e-6)
    assert mha.attn_hook.active == 0 and not mha.attn_hook._forward_hooks


def test_encoder_decoder_stack_names_kinds_layers() -> None:
    cfg = TransformerConfig(12, 3, 17)
    enc, dec = TransformerEncoder(cfg, 2), TransformerDecoder(cfg, 2)
    model = nn.ModuleDict({"enc": enc, "dec": dec})
    src, tgt = torch.randn(1, 7, 12), torch.randn(1, 5, 12)
    with al.capture(model) as trace:
        dec(tgt, enc(src))
    got = [(r.kind, r.layer, tuple(r.weights.shape)) for r in trace]
    assert got[:2] == [("self", 0, (1, 3, 7, 7)), ("self", 1, (1, 3, 7, 7))]
    assert sorted(got[2:]) == [("causal", 0, (1, 3, 5, 5)), ("causal", 1, (1, 3, 5, 5)),
                               ("cross", 0, (1, 3, 5, 7)), ("cross", 1, (1, 3, 5, 7))]
    assert all(r.name.startswith(("enc.", "dec.")) and not r.name.endswith("attn_hook") for r in trace)
    assert trace.weights.shape == (2, 3, 7, 7)


def test_hooks_removed_after_an_exception() -> None:
    m = TinyAttention()
    counts = _hook_counts(m)
    with pytest.raises(RuntimeError, match="boom"), al.capture(m) as trace:
        m(torch.randn(1, 7, 13), fail=True)
    assert len(trace) == 1  # what was recorded before the error stays
    assert _hook_counts(m) == counts and m.hook.active == 0


def test_filters_on_kind_and_name() -> None:
    enc = TransformerEncoder(TransformerConfig(12, 3, 17), 3)
    with al.capture(enc, names="layers.1") as trace:
        enc(torch.randn(1, 7, 12))
    assert [r.name for r in trace] == ["layers.1.self_attn"] and trace[0].layer == 0
    with al.capture(enc, kinds=["cross"]) as trace:
        enc(torch.randn(1, 7, 12))
    assert len(trace) == 0


def test_nested_captures_both_record() -> None:
    mha = al.MultiHeadAttention(12, 3)
    with al.capture(mha) as outer:
        with al.capture(mha) as inner:
            mha(torch.randn(1, 7, 12))
        mha(torch.randn(1, 7, 12))
    assert (len(outer), len(inner)) == (2, 1)
    assert mha.attn_hook.active == 0


@pytest.mark.parametrize(
    ("model", "kwargs", "error"),
    [
        (nn.Linear(3, 3), {}, CaptureError),
        ("not a module", {}, InputError),
        (TinyAttention(), {"kinds": ["sideways"]}, InputError),
        (TinyAttention(), {"names": []}, InputError),
    ],
)
def test_bad_input(model: object, kwargs: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error), al.capture(model, **kwargs):  # type: ignore[arg-type]
        pass
