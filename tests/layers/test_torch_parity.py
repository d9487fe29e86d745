"""MultiHeadAttention.from_torch gives the outputs of torch.nn.MultiheadAttention, per head."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from attnlab.layers import MultiHeadAttention, from_torch_masks

B, L, S, E, H = 2, 7, 5, 39, 3

# name -> (kdim, vdim, bias, attn_mask kind, key_padding_mask kind)
CASES = {
    "self": (None, None, True, None, None),
    "kdim-vdim-bool-masks": (11, 13, True, "bool2d", "bool"),
    "float3d-mask-float-padding": (None, None, True, "float3d", "float"),
    "no-bias-bool3d-bool-padding": (None, None, False, "bool3d", "bool"),
}


def torch_masks(attn_kind, kpm_kind, g):
    """torch's conventions: bool True = blocked, float added; no row fully blocked (torch gives NaN there)."""
    attn = None
    if attn_kind == "bool2d":
        attn = torch.rand(L, S, generator=g) > 0.6
    elif attn_kind == "bool3d":
        attn = torch.rand(B * H, L, S, generator=g) > 0.6
    elif attn_kind == "float3d":
        attn = torch.randn(B * H, L, S, generator=g, dtype=torch.float64)
    if attn is not None:
        attn[..., 0] = False if attn.dtype == torch.bool else attn[..., 0]
    kpm = None
    if kpm_kind is not None:
        kpm = torch.zeros(B, S, dtype=torch.bool)
        kpm[1, 3:] = True  # two padded keys in the second sequence
        if kpm_kind == "float":
            kpm = torch.zeros(B, S, dtype=torch.float64).masked_fill(kpm, float("-inf"))
    return attn, kpm


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_matches_torch_multihead_attention(name, batch_first, dtype):
    kdim, vdim, bias, attn_kind, kpm_kind = CASES[name]
    torch.manual_seed(3)
    ref = nn.MultiheadAttention(E, H, bias=bias, kdim=kdim, vdim=vdim, batch_first=batch_first).to(dtype).eval()
    with torch.no_grad():
        for p in ref.parameters():
            p.add_(0.1 * torch.randn_like(p))  # non-zero biases
    ours = MultiHeadAttention.from_torch(ref)
    g = torch.Generator().manual_seed(5)
    x = torch.randn(B, L, E, generator=g, dtype=torch.float64).to(dtype)
    k = torch.randn(B, S, kdim or E, generator=g, dtype=torch.float64).to(dtype)
    v = torch.randn(B, S, vdim or E, generator=g, dtype=torch.float64).to(dtype)
    if name == "self":
        k = v = x
    attn, kpm = torch_masks(attn_kind, kpm_kind, g)
    attn = attn.to(dtype) if attn is not None and attn.is_floating_point() else attn
    kpm = kpm.to(dtype) if kpm is not None and kpm.is_floating_point() else kpm

    def seq_first(t):
        return t if batch_first else t.transpose(0, 1)

    ref_out, ref_w = ref(seq_first(x), seq_first(k), seq_first(v), key_padding_mask=kpm, attn_mask=attn,
                         need_weights=True, average_attn_weights=False)
    ref_out = seq_first(ref_out)
    mask = from_torch_masks(attn, kpm, n_heads=H)
    out, w = ours(x, k, v, mask=mask, return_weights=True)
    assert w.shape == ref_w.shape == (B, H, L, k.shape[1])
    eo = (out - ref_out).abs().max().item()
    ew = (w - ref_w).abs().max().item()
    print(f"parity {name} batch_first={batch_first} {dtype}: output {eo:.3g}, weights {ew:.3g}")
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    assert eo < tol and ew < tol, f"largest difference vs torch: output {eo:.3g}, weights {ew:.3g}"


def test_import_copies_and_keeps_mode():
    ref = nn.MultiheadAttention(E, H, dropout=0.25)
    ours = MultiHeadAttention.from_torch(ref)
    assert ours.config.dropout == 0.25 and ours.training
    with torch.no_grad():
        ref.in_proj_weight.zero_()
    assert ours.q_proj.weight.abs().sum() > 0  # a copy, not a view


@pytest.mark.parametrize("flag", ["add_bias_kv", "add_zero_attn"])
def test_unsupported_features_are_refused(flag):
    from attnlab.errors import ConfigError

    with pytest.raises(ConfigError, match=flag):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(E, H, **{flag: True}))


def test_mask_conversion():
    attn = torch.tensor([[False, True], [False, False]])
    kpm = torch.tensor([[False, True]])
    m = from_torch_masks(attn, kpm, n_heads=1)
    assert m.dtype == torch.bool and m.shape == (1, 1, 2, 2)
    assert m.tolist() == [[[[True, False], [True, False]]]]
    f = from_torch_masks(torch.full((2, 2), 0.5), kpm, n_heads=1)
    assert f.tolist() == [[[[0.5, float("-inf")], [0.5, float("-inf")]]]]
    assert from_torch_masks(n_heads=4) is None
