"""The registry: every entry is a Kernel, options go by keyword per call, unknown options are refused, and
everything after q, k, v is keyword-only."""

from __future__ import annotations

import pytest
import torch

import attnlab as al
from attnlab.errors import ConfigError
from attnlab.functional import (
    KERNELS,
    attention_stats,
    bigbird_attention,
    efficient_attention,
    get_kernel,
    linear_attention,
    local_attention,
    memory_efficient_attention,
    orthogonal_random_features,
    performer_attention,
)


def make(L=9, S=9, E=8, Ev=5):
    g = torch.Generator().manual_seed(L * 10 + S)
    return [torch.randn(2, 3, n, d, generator=g, dtype=torch.float64) for n, d in ((L, E), (S, E), (S, Ev))]


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_unknown_option_is_refused_with_the_kernels_options(name):
    q, k, v = make()
    with pytest.raises(ConfigError, match=f"kernel '{name}'.*windw"):
        get_kernel(name)(q, k, v, windw=3)


def test_options_reach_the_function_they_configure():
    q, k, v = make(L=17, S=17)
    out, _ = get_kernel("local")(q, k, v, causal=True, window=(3, 0), dilation=2)
    ref, _ = local_attention(q, k, v, window=(3, 0), dilation=2, causal=True)
    assert torch.equal(out, ref) and not torch.allclose(out, get_kernel("local")(q, k, v, causal=True)[0])
    out, _ = get_kernel("linear")(q, k, v, feature_map="relu", chunk=4, causal=True)
    assert torch.allclose(out, linear_attention(q, k, v, feature_map="relu", causal=True), atol=1e-12)
    assert torch.equal(get_kernel("linear_relu")(q, k, v)[0], linear_attention(q, k, v, feature_map="relu"))
    proj = orthogonal_random_features(32, 8, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    out, _ = get_kernel("performer")(q, k, v, features=32, seed=5)
    assert torch.allclose(out, performer_attention(q, k, v, features=proj), atol=1e-12)
    assert not torch.allclose(out, get_kernel("performer")(q, k, v, features=32, seed=6)[0])
    out, _ = get_kernel("memory_efficient")(q, k, v, block_q=4, block_k=3, causal=True)
    assert torch.allclose(out, al.attention(q, k, v, causal=True)[0], atol=1e-12)
    out, w = get_kernel("dense")(q, k, v, temperature=0.5)
    assert torch.allclose(w, al.attention(q, k, v, scale=2 / 8**0.5)[1], atol=1e-12)


@pytest.mark.parametrize(
    "call",
    [
        lambda q, k, v: al.attention(q, k, v, None),
        lambda q, k, v: memory_efficient_attention(q, k, v, None),
        lambda q, k, v: local_attention(q, k, v, 2),
        lambda q, k, v: bigbird_attention(q, k, v, 4),
        lambda q, k, v: linear_attention(q, k, v, "elu"),
        lambda q, k, v: performer_attention(q, k, v, 16),
        lambda q, k, v: efficient_attention(q, k, v, None),
        lambda q, k, v: attention_stats(q, k, None),
        lambda q, k, v: get_kernel("local")(q, k, v, None),
        lambda q, k, v: get_kernel("performer")(q, k, v, None),
    ],
    ids=["attention", "memory_efficient", "local", "bigbird", "linear", "performer", "efficient", "stats",
         "local_kernel", "performer_kernel"],
)
def test_everything_after_q_k_v_is_keyword_only(call):
    with pytest.raises(TypeError, match="positional"):
        call(*make())
