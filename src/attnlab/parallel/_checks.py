"""Input checks that give every rank the same answer before any key or value moves.

Each rank checks its own inputs (an error or none), then one all-gather shares a row of small integers per rank
(the error's class and message as UTF-8 bytes, or the shapes, dtypes, devices and options it was called with);
:func:`agree` reads those rows, the same on every rank, and raises the same error everywhere, or nothing.  So a bad
input on one rank can never leave the others waiting in a collective: nobody communicates keys until all agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from .. import _validate as check
from ..errors import AttnLabError, ConfigError, DeviceError, DTypeError, MaskError, ShapeError
from .layout import LAYOUTS, Layout, check_layout, chunks_per_rank, padded_length

SCHEDULES = ("ring", "allgather")
DTYPES = (torch.float64, torch.float32, torch.bfloat16, torch.float16)
ERRORS: tuple[type[AttnLabError], ...] = (AttnLabError, ShapeError, MaskError, DTypeError, DeviceError, ConfigError)
DIMS = 8  # q, k, v of up to 8 dims
MESSAGE = 2048  # bytes of an error message shared


@dataclass(frozen=True)
class Options:
    """What every rank must be called with alike."""

    layout: Layout
    schedule: str
    causal: bool
    length: int | None  # the full unpadded length; None = world x shard length


def check_options(layout: object, schedule: object, causal: object, length: object) -> Options:
    lay = check_layout(layout)
    sch = check.one_of("schedule", schedule, SCHEDULES, "ring: keys pass point to point; allgather: gathered once")
    check.boolean("causal", causal, "True = each query sees the keys at or before its position")
    n = check.non_negative_int("length", length, optional=True,
                               fix="the full sequence's length before padding (None = no padding)")
    return Options(lay, sch, bool(causal), None if n is None else int(n))


def local_problem(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, scale: float | None,
                  options: tuple[object, object, object, object]) -> tuple[AttnLabError | None, Options | None]:
    """This rank's own problem with its inputs (or None), and its checked options."""
    try:
        checked = check_options(*options)
        check.qkv(q, k, v)
        check.kernel_options(scale, 1.0, 0.0)
        if q.dtype not in DTYPES:
            raise DTypeError(f"ring attention takes float64, float32, bfloat16 or float16, got {q.dtype}; cast "
                             f"q, k, v with .to(torch.float32)")
        if q.ndim < 3:
            raise ShapeError(f"ring attention needs (batch, ..., seq, dim) inputs, got q of shape {tuple(q.shape)}; "
                             f"add a batch dim with q[None]")
        if mask is not None:
            check.instance("mask", mask, Tensor, "a bool tensor (batch, shard_len), True = real key",
                           "shard the full (batch, length) padding mask with attnlab.parallel.shard(mask, world, "
                           "rank, layout=..., dim=1)", MaskError)
            want = (q.shape[0], k.shape[-2])
            if mask.dtype != torch.bool or tuple(mask.shape) != want:
                raise MaskError(f"mask must be a bool key-padding mask of this rank's keys, (batch, shard_len) = "
                                f"{want}, True = real key; got {mask.dtype} of shape {tuple(mask.shape)}; shard the "
                                f"full (batch, length) mask with attnlab.parallel.shard(mask, world, rank, "
                                f"layout=..., dim=1)")
            check.agree(("mask", "k"), [mask.device, k.device], "device", "move it with mask.to(k.device)",
                        DeviceError)
    except AttnLabError as e:
        return e, None
    return None, checked


def _device_code(t: Tensor) -> int:
    return -1 if t.device.type == "cpu" else (t.device.index or 0) if t.device.type == "cuda" else -2


def row(problem: AttnLabError | None, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None,
        options: Options | None) -> Tensor:
    """This rank's row (int64): ``[error class + 1 or 0, message bytes..., shapes..., dtype, device, options]``."""
    head = torch.zeros(1 + MESSAGE, dtype=torch.int64)
    if problem is not None or options is None:
        text = str(problem).encode()[:MESSAGE]
        head[0] = next(i for i, cls in reversed(list(enumerate(ERRORS))) if isinstance(problem, cls)) + 1
        head[1:1 + len(text)] = torch.tensor(list(text), dtype=torch.int64)
        return torch.cat([head, torch.zeros(3 * DIMS + 8, dtype=torch.int64)])
    shapes = torch.full((3, DIMS), -1, dtype=torch.int64)
    for i, t in enumerate((q, k, v)):
        shapes[i, : t.ndim] = torch.tensor(t.shape, dtype=torch.int64)
    rest = [DTYPES.index(q.dtype), _device_code(q), -1 if mask is None else 1, LAYOUTS.index(options.layout),
            SCHEDULES.index(options.schedule), int(options.causal), -1 if options.length is None else options.length,
            q.ndim]
    return torch.cat([head, shapes.flatten(), torch.tensor(rest, dtype=torch.int64)])


def _shape(r: Tensor, i: int) -> tuple[int, ...]:
    s = r[1 + MESSAGE + i * DIMS: 1 + MESSAGE + (i + 1) * DIMS]
    return tuple(int(x) for x in s if x >= 0)


def agree(rows: Sequence[Tensor]) -> tuple[Options, int]:
    """Every rank's rows to ``(options, length)``, or the one error every rank raises."""
    world = len(rows)
    for rank, r in enumerate(rows):
        if int(r[0]):
            text = bytes(int(x) for x in r[1:1 + MESSAGE] if x).decode(errors="replace")
            raise ERRORS[int(r[0]) - 1](f"ring attention on rank {rank} of {world}: {text}")
    info = [[int(x) for x in r[1 + MESSAGE + 3 * DIMS:]] for r in rows]
    shapes = [(_shape(r, 0), _shape(r, 1), _shape(r, 2)) for r in rows]
    if len({s for s in shapes}) > 1:
        listed = "; ".join(f"rank {i}: q {s[0]}, k {s[1]}, v {s[2]}" for i, s in enumerate(shapes))
        raise ShapeError(f"ring attention needs shards of one shape on every rank (every layout cuts the sequence "
                         f"into equal shards), got {listed}; shard the full tensors with attnlab.parallel.shard(x, "
                         f"world, rank, layout=...), which pads the last shard")
    for what, col, error, fix in (("dtype", 0, DTypeError, "cast every rank's q, k, v to one dtype"),
                                  ("device type", 1, DeviceError, "put every rank's tensors on its own GPU or all "
                                                                  "on the CPU"),
                                  ("mask (given or not)", 2, MaskError, "pass a key-padding mask on every rank or "
                                                                        "on none"),
                                  ("layout", 3, ConfigError, "pass one layout= on every rank"),
                                  ("schedule", 4, ConfigError, "pass one schedule= on every rank"),
                                  ("causal", 5, ConfigError, "pass one causal= on every rank"),
                                  ("length", 6, ConfigError, "pass one length= on every rank")):
        values = [i[col] if col != 1 else min(i[col], 0) for i in info]
        if len(set(values)) > 1:
            raise error(f"ring attention needs one {what} on every rank, got {values} on ranks 0 .. {world - 1}; "
                        f"{fix}")
    q_shape = shapes[0][0]
    n = q_shape[-2]
    if shapes[0][1][-2] != n:
        raise ShapeError(f"ring attention is self-attention over one sharded sequence: q holds {n} positions but k "
                         f"holds {shapes[0][1][-2]}; shard q, k and v of the same sequence alike")
    i0 = info[0]
    layout, length = LAYOUTS[i0[3]], (None if i0[6] < 0 else i0[6])
    per = chunks_per_rank(layout)
    full = length if length is not None else world * n
    if n % per or padded_length(full, world, layout) != world * n or full > world * n:
        want = padded_length(full, world, layout) // world
        raise ConfigError(f"a group of {world} ranks with the {layout} layout cuts the sequence into "
                          f"{world * per} equal chunks, so each rank's shard of a {full}-long sequence holds {want} "
                          f"positions, but the shards hold {n}; shard with attnlab.parallel.shard(x, {world}, rank, "
                          f"layout={layout!r}) for this group's size (and pass length= the unpadded length)")
    return Options(layout, SCHEDULES[i0[4]], bool(i0[5]), length), full
