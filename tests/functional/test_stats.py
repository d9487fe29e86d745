"""attention_stats equals the statistics of the dense weights (float64 reference), with masks, causal,
fully masked rows, top-k larger than the row, tiles that do not divide n, and bfloat16 inputs."""

from __future__ import annotations

import pytest
import torch
from helpers.reference import attention_ref

from attnlab import masks
from attnlab.errors import ConfigError
from attnlab.functional import attention_stats


def dense_stats(q, k, mask, causal, top_k):
    _, w = attention_ref(q, k, k, mask=mask, causal=causal)
    L, S = w.shape[-2:]
    logw = torch.log(torch.where(w > 0, w, torch.ones_like(w)))
    ent = -(w * logw).sum(-1)
    pos = torch.arange(L).view(-1, 1) + S - L
    dist = (w * (pos - torch.arange(S)).abs()).sum(-1)
    tw, _ = w.topk(min(top_k, S), dim=-1)
    return w, ent, dist, tw


@pytest.mark.parametrize(("L", "S"), [(37, 29), (29, 37), (1, 1)])
@pytest.mark.parametrize("kind", [None, "bool", "predicate"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("blocks", [(6, 7), (512, 1024)], ids=str)
def test_stats_equal_those_of_the_dense_weights(L, S, kind, causal, blocks):
    g = torch.Generator().manual_seed(L + S)
    q, k = (torch.randn(2, 3, n, 13, generator=g, dtype=torch.float64) * 2 for n in (L, S))
    mask = None
    if kind == "bool":
        mask = torch.rand(2, 1, L, S, generator=g) > 0.3
        mask[..., L // 2, :] = False
    elif kind == "predicate":
        mask = masks.window(4, 4) | masks.global_tokens([0])
    dmask = mask.materialize(L, S) if isinstance(mask, masks.Mask) else mask
    top_k = 5
    st = attention_stats(q, k, mask=mask, causal=causal, top_k=top_k, block_q=blocks[0], block_k=blocks[1])
    w, ent, dist, tw = dense_stats(q, k, dmask, causal, top_k)
    assert (st.entropy - ent).abs().max().item() < 1e-10
    assert (st.distance - dist).abs().max().item() < 1e-9
    n = tw.shape[-1]
    assert (st.top_weight[..., :n] - tw).abs().max().item() < 1e-12
    got = w.gather(-1, st.top_index.clamp_min(0)) * (st.top_index >= 0)
    assert (got - st.top_weight).abs().max().item() < 1e-12  # the indices point at those weights
    empty = w.sum(-1) == 0
    assert (st.entropy[empty] == 0).all() and (st.top_index[empty] == -1).all() and torch.isneginf(st.lse[empty]).all()
    assert (st.top_index[..., S:] == -1).all() and (st.top_weight[..., S:] == 0).all()


def test_stats_float32_and_bfloat16_inputs():
    g = torch.Generator().manual_seed(0)
    q, k = (torch.randn(1, 2, 50, 8, generator=g, dtype=torch.float64) for _ in range(2))
    _, ent, dist, _ = dense_stats(q, k, None, True, 3)
    for dtype, tol in ((torch.float32, 1e-4), (torch.bfloat16, 0.1)):
        st = attention_stats(q.to(dtype), k.to(dtype), causal=True, top_k=3, block_q=7, block_k=9)
        assert st.entropy.dtype == torch.float32
        assert (st.entropy.double() - ent).abs().max().item() < tol
        assert (st.distance.double() - dist).abs().max().item() < tol * 50


def test_stats_bad_input():
    q = torch.randn(1, 1, 4, 3)
    with pytest.raises(ConfigError, match="top_k"):
        attention_stats(q, q, top_k=0)
    with pytest.raises(ConfigError, match="block_k"):
        attention_stats(q, q, block_k=-1)
