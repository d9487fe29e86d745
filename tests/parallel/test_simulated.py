"""Ring attention over simulated ranks (1-8) against float64 dense attention: outputs, log-sum-exp and the gradients
of q, k, v, causal and not, both layouts and schedules, odd lengths (a padded last shard), a padding mask across
shards, fully masked rows; the layout helpers and the load balance computed from the schedule."""

from __future__ import annotations

import pytest
import torch
from helpers.ring import dense

from attnlab.errors import AttnLabError, ConfigError, DeviceError, DTypeError, MaskError, ShapeError
from attnlab.functional import attention
from attnlab.parallel import (
    load_balance,
    padded_length,
    schedule,
    shard,
    shard_positions,
    simulate_ring_attention,
    unshard,
)


def _inputs(n: int, dtype: torch.dtype, seed: int = 0, dv: int = 6) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(2, 3, n, 5, generator=g, dtype=torch.float64) for _ in range(2))  # (B, H, N, E)
    v = torch.randn(2, 3, n, dv, generator=g, dtype=torch.float64)  # (B, H, N, Ev)
    return tuple(t.to(dtype).requires_grad_() for t in (q, k, v))


def _errors(q, k, v, world, *, causal, layout, schedule_, mask=None):  # type: ignore[no-untyped-def]
    """Max abs errors of (output, lse, dq, dk, dv) of the simulated ring against the float64 reference."""
    out, lse = simulate_ring_attention(q, k, v, world, causal=causal, layout=layout, schedule=schedule_, mask=mask,
                                       return_lse=True)
    ref, ref_lse = dense(q, k, v, causal=causal, mask=mask)
    g = torch.randn(ref.shape, generator=torch.Generator().manual_seed(9), dtype=torch.float64)
    grads = torch.autograd.grad((out.double() * g).sum(), (q, k, v))
    qd, kd, vd = (t.detach().double().requires_grad_() for t in (q, k, v))
    want = torch.autograd.grad((dense(qd, kd, vd, causal=causal, mask=mask)[0] * g).sum(), (qd, kd, vd))
    assert torch.equal(torch.isinf(lse), torch.isinf(ref_lse))  # exactly the empty rows are -inf
    finite = torch.isfinite(ref_lse)
    return [(out.double() - ref).abs().max().item(), (lse.double()[finite] - ref_lse[finite]).abs().max().item(),
            *[(a.double() - b).abs().max().item() for a, b in zip(grads, want, strict=True)]]


@pytest.mark.parametrize("world", [1, 2, 3, 4, 5, 8])
@pytest.mark.parametrize("layout", ["contiguous", "zigzag"])
@pytest.mark.parametrize("causal", [False, True])
def test_float64_equals_dense_to_1e_12_with_odd_lengths(world: int, layout: str, causal: bool) -> None:
    n = 4 * world * (2 if layout == "zigzag" else 1) + 3  # never a multiple of the chunk count: the last is padded
    errs = _errors(*_inputs(n, torch.float64), world, causal=causal, layout=layout, schedule_="ring")
    assert max(errs) <= 1e-12, errs


@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("layout", ["contiguous", "zigzag"])
def test_allgather_schedule_equals_dense(world: int, layout: str) -> None:
    errs = _errors(*_inputs(19, torch.float64), world, causal=True, layout=layout, schedule_="allgather")
    assert max(errs) <= 1e-12, errs


@pytest.mark.parametrize("world", [2, 3, 8])
@pytest.mark.parametrize("causal", [False, True])
def test_float32_equals_dense_to_1e_5(world: int, causal: bool) -> None:
    errs = _errors(*_inputs(29, torch.float32), world, causal=causal, layout="zigzag", schedule_="ring")
    assert max(errs) <= 1e-5, errs


@pytest.mark.parametrize("causal", [False, True])
def test_bfloat16_within_twice_plain_bfloat16_attention(causal: bool) -> None:
    q, k, v = _inputs(64, torch.bfloat16, seed=3)
    ref, _ = dense(q, k, v, causal=causal)
    plain = (attention(q, k, v, causal=causal, return_weights=False)[0].double() - ref).abs().max().item()
    ring = simulate_ring_attention(q, k, v, 4, causal=causal, layout="zigzag")
    assert ring.dtype == torch.bfloat16
    assert (ring.double() - ref).abs().max().item() <= 2 * plain, plain


@pytest.mark.parametrize("layout", ["contiguous", "zigzag"])
@pytest.mark.parametrize("causal", [False, True])
def test_a_padding_mask_across_shards_and_fully_masked_rows_give_zeros(layout: str, causal: bool) -> None:
    n = 23
    mask = torch.rand(2, n, generator=torch.Generator().manual_seed(1)) > 0.4  # (B, N) True = real key
    mask[0, :] = False  # every query of sequence 0 sees nothing
    mask[1, 0] = False  # under causal, query 0 of sequence 1 sees nothing
    q, k, v = _inputs(n, torch.float64)
    errs = _errors(q, k, v, 4, causal=causal, layout=layout, schedule_="ring", mask=mask)
    assert max(errs) <= 1e-12, errs
    out = simulate_ring_attention(q, k, v, 4, causal=causal, layout=layout, mask=mask)
    assert torch.equal(out[0], torch.zeros_like(out[0]))
    grads = torch.autograd.grad(out.sum(), (q, k, v))
    assert all(torch.isfinite(g).all() for g in grads)
    assert torch.equal(grads[0][0], torch.zeros_like(grads[0][0]))  # no key seen: no gradient either


@pytest.mark.parametrize("world", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("layout", ["contiguous", "zigzag"])
def test_shard_and_unshard_are_inverse_and_positions_say_where_rows_are(world: int, layout: str) -> None:
    x = torch.arange(2 * 21).view(2, 21).float()  # (B, N)
    shards = [shard(x, world, r, layout=layout, dim=1) for r in range(world)]
    assert len({s.shape[1] for s in shards}) == 1
    assert shards[0].shape[1] * world == padded_length(21, world, layout)
    assert torch.equal(unshard(shards, 21, layout=layout, dim=1), x)
    for r, s in enumerate(shards):
        pos = shard_positions(21, world, r, layout=layout)
        real = pos < 21
        assert torch.equal(s[0][real], x[0][pos[real]])
        assert torch.equal(s[:, ~real], torch.zeros_like(s[:, ~real]))
    if layout == "zigzag":
        c = padded_length(21, world, layout) // (2 * world)
        assert shard_positions(21, world, 0, layout=layout).tolist() == [*range(c), *range((2 * world - 1) * c,
                                                                                             2 * world * c)]


@pytest.mark.parametrize("world", [2, 3, 4, 8, 16])
def test_load_balance_contiguous_causal_is_2p_over_p_plus_1_and_zigzag_is_exactly_1(world: int) -> None:
    assert load_balance(world, layout="contiguous", causal=True) == pytest.approx(2 * world / (world + 1), abs=1e-12)
    assert load_balance(world, layout="contiguous", causal=True, unit="pair") == pytest.approx(
        (2 * world - 1) / world, abs=1e-12)
    for unit in ("block", "pair"):
        assert load_balance(world, layout="zigzag", causal=True, unit=unit) == 1.0
        assert load_balance(world, layout="contiguous", causal=False, unit=unit) == 1.0


def test_the_schedule_computes_every_allowed_block_exactly_once() -> None:
    for layout, chunks in (("contiguous", 4), ("zigzag", 8)):
        for causal in (False, True):
            pairs = [(b.q_chunk, b.k_chunk) for b in schedule(4, layout=layout, causal=causal)]
            want = [(i, j) for i in range(chunks) for j in range(chunks) if not causal or j <= i]
            assert sorted(pairs) == want


def test_bad_input_is_one_clear_error() -> None:
    q, k, v = _inputs(8, torch.float64)
    with pytest.raises(DTypeError, match="dtype"):
        simulate_ring_attention(q, k.float(), v, 2)
    with pytest.raises(ConfigError, match="layout"):
        simulate_ring_attention(q, k, v, 2, layout="spiral")  # type: ignore[arg-type]
    with pytest.raises(MaskError, match=r"\(batch, shard_len\)"):
        simulate_ring_attention(q, k, v, 2, mask=torch.ones(2, 9, dtype=torch.bool))
    with pytest.raises(MaskError, match="bool"):
        simulate_ring_attention(q, k, v, 2, mask=torch.ones(2, 8))
    with pytest.raises(ShapeError):
        shard(q, 2, 0, dim=7)
    with pytest.raises(ShapeError, match="shards of 4"):
        unshard([q[..., :3, :], q[..., :3, :]], 8)
    with pytest.raises(AttnLabError, match="world"):
        simulate_ring_attention(q, k, v, 0)


def _agree(shards: list[tuple[torch.Tensor, ...]], masks: list[torch.Tensor | None] | None = None,
           options: tuple[object, ...] = ("contiguous", "ring", False, None)) -> None:
    """What every rank runs before any key moves: its own checks, one row each, then the shared verdict."""
    from attnlab.parallel._checks import agree, local_problem, row

    masks = masks or [None] * len(shards)
    rows = []
    for (q, k, v), m in zip(shards, masks, strict=True):
        problem, checked = local_problem(q, k, v, m, None, options)  # type: ignore[arg-type]
        rows.append(row(problem, q, k, v, m, checked))
    agree(rows)


def test_a_problem_on_one_rank_is_the_same_error_on_every_rank_before_any_key_moves() -> None:
    q, k, v = (t.detach() for t in _inputs(8, torch.float64))
    good = (q[..., :4, :], k[..., :4, :], v[..., :4, :])
    _agree([good, good])
    with pytest.raises(DTypeError, match=r"on rank 1 of 2: .*same dtype"):
        _agree([good, (good[0], good[1].float(), good[2])])  # k in another dtype on rank 1 only
    with pytest.raises(DTypeError, match=r"one dtype on every rank, got \[1, 0\]"):
        _agree([tuple(t.float() for t in good), good])  # each rank consistent, the ranks not
    with pytest.raises(DeviceError, match=r"on rank 1 of 2: .*same device"):
        _agree([good, (good[0], good[1].to("meta"), good[2])])  # k on another device on rank 1 only
    with pytest.raises(ShapeError, match=r"rank 0: q .*rank 1: q"):
        _agree([good, (q[..., :3, :], k[..., :3, :], v[..., :3, :])])  # shards of different lengths
    with pytest.raises(ConfigError, match="group of 2 ranks with the zigzag layout cuts the sequence into 4"):
        _agree([(q[..., :3, :], k[..., :3, :], v[..., :3, :])] * 2, options=("zigzag", "ring", False, None))
    with pytest.raises(ConfigError, match="shard of a 20-long sequence holds 10"):
        _agree([good, good], options=("contiguous", "ring", True, 20))  # sharded for another group size
    with pytest.raises(MaskError, match="on rank 0 of 2: mask must be"):
        _agree([good, good], masks=[torch.ones(2, 8, dtype=torch.bool), torch.ones(2, 4, dtype=torch.bool)])
    with pytest.raises(MaskError, match="on every rank or on none"):
        _agree([good, good], masks=[torch.ones(2, 4, dtype=torch.bool), None])
    with pytest.raises(ConfigError, match="one causal= on every rank"):
        from attnlab.parallel._checks import agree, local_problem, row

        rows = []
        for causal in (False, True):
            problem, checked = local_problem(*good, None, None, ("contiguous", "ring", causal, None))
            rows.append(row(problem, *good, None, checked))
        agree(rows)
