"""lsh_attention (Reformer) against an independent float64 reference: dense attention over exactly the pairs the
kernel's own hashes and sort allow, built here from the plan with plain tensor algebra.  Odd shapes, chunks that do
not divide n, several rounds (duplicates counted or divided out), causal, key padding, fully masked rows, bfloat16,
gradients, the kernel registry and MultiHeadAttention."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from helpers.reference import attention_ref, plain_attention

from attnlab import masks
from attnlab.errors import ConfigError, MaskError, ShapeError
from attnlab.functional import KERNELS, get_kernel, lsh_attention
from attnlab.functional.lsh import lsh_plan, random_rotations
from attnlab.layers import MultiHeadAttention

# (B, H, L, E, Ev, chunk, n_buckets)
SHAPES = [(2, 3, 37, 13, 11, 8, 4), (1, 2, 16, 4, 5, 4, 6), (1, 1, 5, 4, 4, 3, 2), (2, 1, 50, 6, 3, 7, None)]


def make(B, H, L, E, Ev, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed + 31 * L + E)
    q, k = (torch.randn(B, H, L, E, generator=g, dtype=torch.float64).to(dtype) for _ in range(2))
    return q, k, torch.randn(B, H, L, Ev, generator=g, dtype=torch.float64).to(dtype)


def padding(B, L):
    """Key padding (B, 1, 1, L): batch b keeps its first L - 3b keys (at least one)."""
    return torch.arange(L).view(1, 1, 1, L) < torch.tensor([max(1, L - 3 * b) for b in range(B)]).view(B, 1, 1, 1)


def meetings(plan, chunk):
    """count[..., i, j]: in how many rounds key j lies in query i's chunk or the chunk before (dense, (..., L, L))."""
    cq = torch.argsort(plan.q_order, dim=-1) // chunk  # (..., R, L): position -> its chunk (argsort inverts)
    ck = torch.argsort(plan.k_order, dim=-1) // chunk
    diff = ck.unsqueeze(-2) - cq.unsqueeze(-1)  # (..., R, L, L): key chunk - query chunk
    return ((diff == 0) | (diff == -1)).sum(dim=-3)  # (..., L, L)


def reference(q, k, v, plan, chunk, *, shared, dedup, causal, pad):
    """Dense float64 attention with the additive mask log(count) (0 with dedup), -inf outside the allowed pairs;
    with shared query-key the keys are q / |q| and a query sees itself only when nothing else is allowed."""
    q, k, v = q.double(), k.double(), v.double()
    L = q.shape[-2]
    keys = q / q.norm(dim=-1, keepdim=True) if shared else k
    count = meetings(plan, chunk)
    allowed = count > 0
    if pad is not None:
        allowed = allowed & pad
    if causal:
        allowed = allowed & torch.ones(L, L, dtype=torch.bool).tril()
    if shared:
        eye = torch.eye(L, dtype=torch.bool)
        self_ok = eye if pad is None else eye & pad
        alone = ~(allowed & ~eye).any(dim=-1, keepdim=True)  # (..., L, 1): no other key
        allowed = torch.where(alone, self_ok, allowed & ~eye)
    add = torch.zeros(count.shape, dtype=torch.float64) if dedup else count.clamp_min(1).double().log()
    return attention_ref(q, keys, v, mask=add.masked_fill(~allowed, -math.inf))[0]


def test_plan_hashes_by_random_rotations_and_sorts_by_bucket_then_position():
    q, k, _ = make(2, 3, 37, 13, 5)
    plan = lsh_plan(q, k, n_buckets=6, n_hashes=3, chunk=8, seed=7)
    rot = random_rotations(13, 6, 3, 7, dtype=torch.float64)  # (R, E, U/2)
    for x, buckets, order in ((q, plan.q_buckets, plan.q_order), (k, plan.k_buckets, plan.k_order)):
        xr = torch.einsum("bhle,reu->bhrlu", x, rot)
        assert torch.equal(buckets, torch.cat([xr, -xr], dim=-1).argmax(dim=-1))
        assert torch.equal(order.sort(dim=-1).values, torch.arange(37).expand_as(order))  # a permutation
        key = buckets.gather(-1, order) * 37 + order  # (bucket, position) in sorted order
        assert (key.diff(dim=-1) > 0).all()
    again = lsh_plan(q, k, n_buckets=6, n_hashes=3, chunk=8, seed=7)
    other = lsh_plan(q, k, n_buckets=6, n_hashes=3, chunk=8, seed=8)
    assert torch.equal(plan.q_order, again.q_order) and not torch.equal(plan.q_buckets, other.q_buckets)
    assert torch.equal(lsh_plan(q, n_buckets=6, n_hashes=3, seed=7).k_order, plan.q_order)  # shared: one order


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize(("n_hashes", "dedup"), [(1, False), (3, False), (3, True)])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("pad", [False, True])
@pytest.mark.parametrize("shared", [True, False])
def test_matches_dense_attention_over_the_same_buckets(shape, n_hashes, dedup, causal, pad, shared):
    B, H, L, E, Ev, chunk, U = shape
    q, k, v = make(B, H, L, E, Ev)
    mask = padding(B, L) if pad else None
    kw = dict(n_buckets=U, n_hashes=n_hashes, chunk=chunk, seed=3)
    kin = q if shared else k
    for dtype, tol in ((torch.float64, 1e-10), (torch.float32, 1e-5)):
        qd, kd, vd = (t.to(dtype) for t in (q, kin, v))
        out = lsh_attention(qd, kd, vd, **kw, shared_qk=shared, dedup=dedup, mask=mask, causal=causal)
        assert out.dtype == dtype and out.shape == (B, H, L, Ev)
        plan = lsh_plan(qd, None if shared else kd, **kw)  # the float32 hashes may differ from the float64 ones
        ref = reference(qd, kd, vd, plan, chunk, shared=shared, dedup=dedup, causal=causal, pad=mask)
        err = (out.double() - ref).abs().max().item()
        assert err < tol, f"{dtype}: largest difference {err:.3g}"


@pytest.mark.parametrize("n_hashes", [1, 2])
@pytest.mark.parametrize("causal", [False, True])
def test_one_chunk_is_full_attention(n_hashes, causal):
    """chunk >= L: every key is in the query's chunk in every round, so LSH attention is dense attention (without
    the query's own key, with shared query-key; duplicates shift every score by the same log R)."""
    q, k, v = make(2, 2, 23, 7, 5)
    keys = F.normalize(q, dim=-1)
    allowed = ~torch.eye(23, dtype=torch.bool)
    allowed[0, 0] = causal  # causal: position 0 has no other key, so it sees itself
    ref = attention_ref(q, keys, v, mask=allowed, causal=causal)[0]
    for dedup in (False, True):
        out = lsh_attention(q, q, v, n_buckets=4, n_hashes=n_hashes, chunk=32, dedup=dedup, causal=causal)
        assert (out - ref).abs().max().item() < 1e-12
    out = lsh_attention(q, k, v, n_buckets=4, n_hashes=n_hashes, chunk=23, shared_qk=False, causal=causal)
    assert (out - attention_ref(q, k, v, causal=causal)[0]).abs().max().item() < 1e-12


def test_shared_qk_ignores_the_values_of_k():
    q, k, v = make(1, 2, 19, 6, 4)
    assert torch.equal(lsh_attention(q, k, v, chunk=4), lsh_attention(q, q, v, chunk=4))


def test_causal_never_reads_a_future_key():
    """The past does not depend on future values, and no gradient flows from the past to future positions.  (The
    chunk boundaries depend on every position's bucket, so changing a future *query* may regroup the past.)"""
    q, _, v = make(1, 2, 29, 5, 4)
    q.requires_grad_()
    v.requires_grad_()
    out = lsh_attention(q, q, v, n_buckets=4, n_hashes=2, chunk=4, causal=True)
    t = 17
    gq, gv = torch.autograd.grad(out[..., :t, :].sum(), (q, v))
    assert (gq[..., t:, :] == 0).all() and (gv[..., t:, :] == 0).all()
    assert gq[..., :t, :].abs().sum() > 0
    v2 = v.detach().clone()
    v2[..., t:, :] = torch.randn_like(v2[..., t:, :])
    out2 = lsh_attention(q.detach(), q.detach(), v2, n_buckets=4, n_hashes=2, chunk=4, causal=True)
    assert torch.equal(out2[..., :t, :], out.detach()[..., :t, :])


def test_fully_masked_rows_give_zeros_and_finite_gradients():
    q, _, v = make(2, 1, 12, 4, 3)
    mask = torch.zeros(2, 1, 1, 12, dtype=torch.bool)
    mask[0, ..., 0] = True  # batch 0: one real key; batch 1: none
    q.requires_grad_()
    v.requires_grad_()
    out = lsh_attention(q, q, v, n_buckets=2, n_hashes=2, chunk=4, mask=mask)
    assert torch.equal(out[0, :, 0], v[0, :, 0].detach())  # no other key: the token itself
    rows, v0 = out[0, :, 1:].detach(), v[0, :, :1].detach()  # padded queries: key 0 if it is in their chunks, else none
    assert ((rows == v0).all(-1) | (rows == 0).all(-1)).all()
    assert (out[1] == 0).all()  # every key padded: zeros, never NaN
    q64, v64 = q.detach(), v.detach()
    plan = lsh_plan(q64, n_buckets=2, n_hashes=2, chunk=4)
    ref = reference(q64, q64, v64, plan, 4, shared=True, dedup=False, causal=False, pad=mask)
    assert (out.detach() - ref).abs().max().item() < 1e-12
    gq, gv = torch.autograd.grad(out.sum(), (q, v))
    assert torch.isfinite(gq).all() and torch.isfinite(gv).all()


def test_bfloat16_within_twice_the_error_of_plain_bfloat16():
    q, _, v = make(2, 3, 45, 13, 11)
    qb, vb = q.bfloat16(), v.bfloat16()
    kw = dict(n_buckets=4, n_hashes=1, chunk=8)
    out = lsh_attention(qb, qb, vb, **kw, causal=True)
    assert out.dtype == torch.bfloat16
    plan = lsh_plan(qb, **kw)  # the kernel hashes the bfloat16 values in float32
    ref = reference(q, q, v, plan, 8, shared=True, dedup=False, causal=True, pad=None)
    eye = torch.eye(45, dtype=torch.bool)
    keep = (meetings(plan, 8) > 0) & ~eye & torch.ones(45, 45, dtype=torch.bool).tril()
    keep = torch.where(~keep.any(-1, keepdim=True), eye, keep)
    kb = (q / q.norm(dim=-1, keepdim=True)).bfloat16()
    base = (plain_attention(qb, kb, vb, mask=keep).double() - ref).abs().max().item()
    err = (out.double() - ref).abs().max().item()
    assert err <= 2 * base + 1e-6, f"bf16 error {err:.3g} vs plain bf16 {base:.3g}"


@pytest.mark.parametrize(
    ("causal", "shared", "dedup"), [(True, True, False), (False, True, True), (False, False, False)]
)
@pytest.mark.slow
def test_gradcheck(causal, shared, dedup):
    q, k, v = make(1, 2, 9, 4, 3, seed=1)
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    mask = padding(1, 9)

    def f(q, k, v):
        return lsh_attention(q, q if shared else k, v, n_buckets=4, n_hashes=2, chunk=3, seed=5, shared_qk=shared,
                             dedup=dedup, causal=causal, mask=mask)

    assert torch.autograd.gradcheck(f, (q, k, v), eps=1e-7, atol=1e-6)


def test_empty_query_gives_empty_output():
    q = torch.randn(2, 3, 0, 8)
    v = torch.randn(2, 3, 0, 5)
    out = lsh_attention(q, q, v)
    assert out.shape == (2, 3, 0, 5)
    out, w = get_kernel("lsh")(q, q, v)
    assert out.shape == (2, 3, 0, 5) and w is None


def test_registered_kernel_and_its_refusals():
    assert KERNELS["lsh"] is get_kernel("lsh")
    q, k, v = make(2, 2, 20, 8, 6, dtype=torch.float32)
    out, w = get_kernel("lsh")(q, k, v, causal=True, mask=padding(2, 20))
    assert w is None and out.shape == (2, 2, 20, 6) and torch.isfinite(out).all()
    with pytest.raises(ConfigError, match="return_weights"):
        get_kernel("lsh")(q, k, v, return_weights=True)
    with pytest.raises(ConfigError, match="dropout"):
        get_kernel("lsh")(q, k, v, dropout=0.1)
    with pytest.raises(MaskError, match=r"\(\.\.\., 1, S\)"):
        lsh_attention(q, k, v, mask=torch.ones(20, 20, dtype=torch.bool))
    with pytest.raises(MaskError, match="boolean"):
        lsh_attention(q, k, v, mask=torch.zeros(2, 1, 1, 20))
    with pytest.raises(ConfigError, match="predicate"):
        lsh_attention(q, k, v, mask=masks.window(3))
    with pytest.raises(ShapeError, match="q_len must equal k_len"):
        lsh_attention(q, k[..., :7, :], v[..., :7, :])
    with pytest.raises(ConfigError, match="even"):
        lsh_attention(q, k, v, n_buckets=5)
    with pytest.raises(ConfigError, match="chunk"):
        lsh_attention(q, k, v, chunk=0)
    with pytest.raises(ConfigError, match="n_hashes"):
        lsh_attention(q, k, v, n_hashes=0)


def test_multihead_attention_with_lsh_forward_and_backward():
    torch.manual_seed(0)
    layer = MultiHeadAttention(24, 3, kernel="lsh")
    x = torch.randn(2, 37, 24, requires_grad=True)
    kpm = torch.ones(2, 37, dtype=torch.bool)
    kpm[1, 30:] = False
    y, w = layer(x, key_padding_mask=kpm, causal=True)
    assert y.shape == (2, 37, 24) and w is None and torch.isfinite(y).all()
    y.sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()
    assert layer.q_proj.weight.grad is not None and layer.q_proj.weight.grad.abs().sum() > 0
    assert layer.k_proj.weight.grad is None  # shared query-key: the key projection is not used
    with pytest.raises(ConfigError, match="return_weights"):
        layer(x, return_weights=True)
