"""Every kernel on empty inputs: no query gives an empty output, no key gives zeros; finite, with gradients."""

from __future__ import annotations

import pytest
import torch

import attnlab as al
from attnlab.errors import ConfigError, ShapeError
from attnlab.functional import (
    KERNELS,
    attention_stats,
    bigbird_attention,
    efficient_attention,
    linear_attention,
    local_attention,
    memory_efficient_attention,
    performer_attention,
)

B, H, E, EV = 2, 3, 8, 5

# name -> (q, k, v, causal) -> (output, weights or None)
FUNCTIONS = {
    "attention": lambda q, k, v, c: al.attention(q, k, v, causal=c),
    "attention_fused": lambda q, k, v, c: al.attention(q, k, v, causal=c, return_weights=False),
    "attention_fused_masked": lambda q, k, v, c: al.attention(
        q, k, v, mask=torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool), causal=c, return_weights=False
    ),
    "memory_efficient": lambda q, k, v, c: (memory_efficient_attention(q, k, v, causal=c)[0], None),
    "local": lambda q, k, v, c: (local_attention(q, k, v, window=2, causal=c)[0], None),
    "local_global": lambda q, k, v, c: (local_attention(q, k, v, window=1, global_tokens=[0], causal=c)[0], None),
    "bigbird": lambda q, k, v, c: (bigbird_attention(q, k, v, block=2, causal=c)[0], None),
    "linear_elu": lambda q, k, v, c: (linear_attention(q, k, v, causal=c, chunk=3), None),
    "linear_relu": lambda q, k, v, c: (linear_attention(q, k, v, feature_map="relu", causal=c, chunk=3), None),
    "performer": lambda q, k, v, c: (performer_attention(q, k, v, features=16, causal=c, chunk=3), None),
    "efficient": lambda q, k, v, c: (efficient_attention(q, k, v), None),
}


def _registered(kernel):
    return lambda q, k, v, c: kernel(q, k, v, causal=c)


FUNCTIONS.update({f"kernel_{name}": _registered(kernel) for name, kernel in KERNELS.items()})
# efficient_attention has no causal form (its registered kernel refuses causal=True: checked below)
CASES = [(n, c) for n in sorted(FUNCTIONS) for c in (False, True) if not (c and n == "efficient")]


def inputs(L, S):
    g = torch.Generator().manual_seed(L * 10 + S)
    shapes = ((L, E), (S, E), (S, EV))
    return [torch.randn(B, H, n, d, generator=g, dtype=torch.float64).requires_grad_() for n, d in shapes]


@pytest.mark.parametrize(("L", "S"), [(0, 5), (4, 0), (0, 0)], ids=["no_query", "no_key", "neither"])
@pytest.mark.parametrize(("name", "causal"), CASES, ids=[f"{n}-{'causal' if c else 'full'}" for n, c in CASES])
def test_empty_inputs(name, causal, L, S):
    q, k, v = inputs(L, S)
    if causal and name == "kernel_efficient":  # non-causal by construction, empty or not
        with pytest.raises(ConfigError, match="causal"):
            FUNCTIONS[name](q, k, v, causal)
        return
    if name == "kernel_lsh" and L != S:  # LSH sorts the queries and keys of one sequence together
        with pytest.raises(ShapeError, match="q_len must equal k_len"):
            FUNCTIONS[name](q, k, v, causal)
        return
    out, w = FUNCTIONS[name](q, k, v, causal)
    assert out.shape == (B, H, L, EV) and out.dtype == q.dtype
    assert torch.isfinite(out).all() and (out == 0).all() if S == 0 else torch.isfinite(out).all()
    if w is not None:
        assert w.shape == (B, H, L, S) and torch.isfinite(w).all()
    assert out.requires_grad, "the output must stay differentiable, even when empty"
    loss = out.sum() + (0 if w is None else w.sum())
    grads = torch.autograd.grad(loss, (q, k, v), allow_unused=True)
    for t, g in zip((q, k, v), grads, strict=True):
        g = torch.zeros_like(t) if g is None else g
        assert g.shape == t.shape and (g == 0).all()


@pytest.mark.parametrize(("L", "S"), [(0, 5), (4, 0), (0, 0)], ids=["no_query", "no_key", "neither"])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_stats_empty(causal, L, S):
    q, k, _ = inputs(L, S)
    st = attention_stats(q, k, causal=causal, top_k=3)
    assert st.entropy.shape == st.distance.shape == st.lse.shape == (B, H, L)
    assert st.top_index.shape == st.top_weight.shape == (B, H, L, 3)
    assert (st.entropy == 0).all() and (st.distance == 0).all() and (st.top_weight == 0).all()
    assert (st.top_index == -1).all() and (st.lse == float("-inf")).all()
