"""``capture_stats()``: per-head streaming statistics of every attention call, without the ``n x n`` weights.

Letters: B batch, H heads, L query length, S key length, E per-head query/key size, K top-k.

``capture()`` records weights ``(B, H, L, S)``: 16k tokens x 8 heads is 8 GiB in float32, and the
efficient kernels (``memory_efficient``, ``local``) never build them.  ``capture_stats()`` leaves the
layers' kernels alone: it listens at the hook point of every attnlab
:class:`~attnlab.layers.MultiHeadAttention` without asking for weights, and from each call's payload
(:class:`~attnlab.layers.AttentionCall`: the queries and keys per head, the score scale, the merged mask
and the causal flag the kernel received; for the ``local`` kernel also its window, dilation and global
tokens from the payload's kernel options) runs :func:`attnlab.functional.attention_stats`: entropy, mean
attention distance and the top-k keys of every query row, in ``O(L * K)`` memory per head.  The
statistics are those of the softmax the kernel computes (before dropout).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn

from .. import masks
from ..errors import CaptureError, InputError
from ..functional import AttentionStats, attention_stats
from ..functional.local import DEFAULT_WINDOW
from ..layers import AttentionCall, MultiHeadAttention
from ..masks import Mask
from ..trace import KINDS, Kind
from ._core import check_filters
from ._recorder import module_label

__all__ = ["STATS_KERNELS", "StatsRecord", "StatsTrace", "capture_stats"]

# Kernels whose attention is softmax(q k^T / sqrt(E) + mask): their statistics can be computed exactly.
STATS_KERNELS = ("dense", "memory_efficient", "local")


@dataclass(frozen=True)
class StatsRecord:
    """The statistics of one attention call (see :class:`attnlab.functional.AttentionStats`)."""

    name: str  # module path of the attention layer
    kind: Kind  # "self", "causal" or "cross"
    layer: int  # index among the calls of this kind, in call order
    stats: AttentionStats  # entropy / distance (B, H, L), top_index / top_weight (B, H, L, K), lse (B, H, L)


@dataclass
class StatsTrace:
    """What :func:`capture_stats` recorded, in call order."""

    records: list[StatsRecord] = field(default_factory=list)
    top_k: int = 8


@contextmanager
def capture_stats(
    model: nn.Module,
    *,
    top_k: int = 8,
    kinds: Iterable[str] | str | None = None,
    names: Iterable[str] | str | None = None,
) -> Iterator[StatsTrace]:
    """Record per-head streaming statistics of every attnlab attention layer in ``model`` while the block runs.

    >>> with capture_stats(model, top_k=4) as stats:
    ...     model(x)                                   # any kernel in STATS_KERNELS, any length
    >>> stats.records[0].stats.entropy.shape           # (batch, heads, q_len)

    Unlike :func:`attnlab.capture`, no weights are computed or kept, so a 16k-token input of a model
    with the ``memory_efficient`` or ``local`` kernel is analysed in memory linear in its length.
    ``kinds`` and ``names`` filter as in ``capture``.  Raises :class:`~attnlab.errors.CaptureError`
    when the model has no attnlab ``MultiHeadAttention`` (Hugging Face and ``torch.nn`` attention are
    recorded by ``capture`` only) or a layer's kernel is not one of :data:`STATS_KERNELS`.
    """
    if not isinstance(model, nn.Module):
        raise InputError(f"capture_stats() takes a torch.nn.Module, got {type(model).__name__}")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise InputError(f"top_k must be a positive integer, got {top_k!r}; e.g. top_k=8")
    kind_set, name_tuple = check_filters(kinds, names)
    trace = StatsTrace(top_k=top_k)
    count = dict.fromkeys(KINDS, 0)

    def record(name: str, kind: Kind, stats: AttentionStats) -> None:
        trace.records.append(StatsRecord(name, kind, count[kind], stats))
        count[kind] += 1

    with ExitStack() as undo:
        layers = [(module_label(p, model), m) for p, m in model.named_modules() if isinstance(m, MultiHeadAttention)]
        if not layers:
            raise CaptureError(
                f"{type(model).__name__} holds no attnlab MultiHeadAttention: capture_stats() reads attnlab layers "
                f"only; use attnlab.capture() for Hugging Face and torch.nn attention"
            )
        for name, layer in layers:
            _Watch(name, layer, top_k, kind_set, name_tuple, record).install(undo)
        yield trace


class _Watch:
    """The listener at one layer's hook point: the statistics of each call it is given."""

    def __init__(self, name: str, layer: MultiHeadAttention, top_k: int, kinds: frozenset[Kind] | None,
                 names: tuple[str, ...] | None, record: Any) -> None:
        self.name, self.layer, self.top_k, self.record = name, layer, top_k, record
        self.kinds, self.names = kinds, names

    def install(self, undo: ExitStack) -> None:
        undo.callback(self.layer.attn_hook.attach(self._on_call, weights=False))

    def _on_call(self, call: AttentionCall) -> None:
        wanted_kind = self.kinds is None or call.kind in self.kinds
        if not wanted_kind or (self.names is not None and not any(s in self.name for s in self.names)):
            return
        if call.kernel not in STATS_KERNELS:
            raise CaptureError(
                f"{self.name} runs the kernel {call.kernel!r}, whose attention is not softmax(q k^T): capture_stats() "
                f"supports {STATS_KERNELS}; use one of those, or attnlab.capture() with kernel='dense'"
            )
        assert call.q is not None and call.k is not None  # a MultiHeadAttention always hands them
        q, k = call.q.detach(), call.k.detach()  # (B, H, L, E), (B, H, S, E)
        stats = attention_stats(q, k, mask=self._mask(call, q, k), causal=call.causal, scale=call.scale,
                                top_k=self.top_k)
        self.record(self.name, call.kind, stats)

    def _mask(self, call: AttentionCall, q: Tensor, k: Tensor) -> Tensor | Mask | None:
        """The mask the kernel applied: the payload's merged mask, and for the ``local`` kernel its pattern as a
        predicate (never n x n) with the key padding the merged mask holds."""
        if call.kernel != "local":
            return call.mask
        options = call.kernel_options
        before, after = _window(options.get("window", DEFAULT_WINDOW))
        pattern = masks.window(before, 0 if call.causal else after, dilation=int(options.get("dilation", 1)))
        g = options.get("global_tokens")
        if g is not None and len(g):
            pattern = pattern | masks.global_tokens(g)
        if call.mask is None:
            return pattern
        return pattern & masks.key_padding(self._key_padding(call.mask, q.shape[0], k.shape[-2]))

    def _key_padding(self, mask: Tensor, batch: int, keys: int) -> Tensor:
        """``(B, S)`` from a merged mask that is key padding only (bool, one row per example)."""
        try:
            if mask.dtype != torch.bool:
                raise RuntimeError("not a bool mask")
            return torch.broadcast_to(mask, (batch, 1, 1, keys))[:, 0, 0, :]  # (B, S)
        except RuntimeError:
            raise CaptureError(
                f"{self.name} runs the local kernel with an extra mask of shape {tuple(mask.shape)} "
                f"({mask.dtype}); capture_stats() rebuilds the local pattern with key padding only: pass "
                f"key_padding_mask= instead of mask="
            ) from None


def _window(window: int | tuple[int, int]) -> tuple[int, int]:
    return (window, window) if isinstance(window, int) else (int(window[0]), int(window[1]))
