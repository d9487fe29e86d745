"""``capture_stats()``: per-head streaming statistics of every attention call, without the ``n x n`` weights.

Letters: B batch, H heads, L query length, S key length, E per-head query/key size, K top-k.

``capture()`` records weights ``(B, H, L, S)``: 16k tokens x 8 heads is 8 GiB in float32, and the
efficient kernels (``memory_efficient``, ``local``) never build them.  ``capture_stats()`` leaves the
layers' kernels alone and, for every call of an attnlab :class:`~attnlab.layers.MultiHeadAttention`,
reads the projected queries and keys with forward hooks on ``q_proj`` / ``k_proj`` (or the layer's
cache), rebuilds the mask the kernel used (the call's mask, key padding, causal flag, and for the
``local`` kernel its window, dilation and global tokens) and runs
:func:`attnlab.functional.attention_stats` on them: entropy, mean attention distance and the top-k
keys of every query row, in ``O(L * K)`` memory per head.  The statistics are those of the softmax the
kernel computes (before dropout).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

from torch import Tensor, nn

from .. import masks
from ..errors import CaptureError, InputError
from ..functional import AttentionStats, attention_stats, merge_masks
from ..functional._checks import resolve_mask
from ..functional.local import DEFAULT_WINDOW
from ..layers import MultiHeadAttention
from ..masks import Mask
from ..trace import KINDS, Kind
from ._core import _check_filters
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
    kind_set, name_tuple = _check_filters(kinds, names)
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
    """The hooks on one layer: the call's arguments, its projected queries and keys, then the statistics."""

    def __init__(self, name: str, layer: MultiHeadAttention, top_k: int, kinds: frozenset[Kind] | None,
                 names: tuple[str, ...] | None, record: Any) -> None:
        self.name, self.layer, self.top_k, self.record = name, layer, top_k, record
        self.kinds, self.names = kinds, names
        self.call: dict[str, Any] = {}
        self.q: Tensor | None = None
        self.k: Tensor | None = None

    def install(self, undo: ExitStack) -> None:
        layer = self.layer
        undo.callback(layer.register_forward_pre_hook(self._before, with_kwargs=True).remove)
        undo.callback(layer.q_proj.register_forward_hook(self._keep_q).remove)
        undo.callback(layer.k_proj.register_forward_hook(self._keep_k).remove)
        undo.callback(layer.register_forward_hook(self._after, with_kwargs=True).remove)

    def _before(self, mod: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        query = args[0] if args else kwargs.get("query")
        key = args[1] if len(args) > 1 else kwargs.get("key")
        self.call = {"cross": key is not None and key is not query, **kwargs}
        self.q = self.k = None

    def _keep_q(self, mod: nn.Module, args: tuple[Any, ...], out: Tensor) -> None:
        self.q = out

    def _keep_k(self, mod: nn.Module, args: tuple[Any, ...], out: Tensor) -> None:
        self.k = out

    def _after(self, mod: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> None:
        call, layer = self.call, self.layer
        causal = bool(call.get("causal", False))
        kind: Kind = "cross" if call["cross"] else "causal" if causal else "self"
        wanted_kind = self.kinds is None or kind in self.kinds
        if not wanted_kind or (self.names is not None and not any(s in self.name for s in self.names)):
            return
        if layer.kernel not in STATS_KERNELS:
            raise CaptureError(
                f"{self.name} runs the kernel {layer.kernel!r}, whose attention is not softmax(q k^T): capture_stats() "
                f"supports {STATS_KERNELS}; use one of those, or attnlab.capture() with kernel='dense'"
            )
        cfg = layer.config
        assert self.q is not None
        q = layer._split(self.q.detach(), cfg.head_k)  # (B, H, L, E)
        cache = call.get("cache")
        if cache is not None and cache.keys is not None:
            k = cache.keys.detach()  # (B, H, S, E): the past keys and this call's
        else:
            assert self.k is not None
            k = layer._split(self.k.detach(), cfg.head_k)  # (B, H, S, E)
        mask = self._mask(q, k, call.get("mask"), call.get("key_padding_mask"), causal)
        self.record(self.name, kind, attention_stats(q, k, mask=mask, causal=causal, top_k=self.top_k))
        self.q = self.k = None

    def _mask(self, q: Tensor, k: Tensor, mask: Tensor | Mask | None, kpm: Tensor | None, causal: bool
              ) -> Tensor | Mask | None:
        """The mask the layer's kernel applied, as a tensor of size O(n) or a predicate (never n x n)."""
        if self.layer.kernel != "local":
            if isinstance(mask, Mask):
                return mask if kpm is None else mask & masks.key_padding(kpm)
            m = resolve_mask(mask, q, k)
            return m if kpm is None else merge_masks(m, kpm[:, None, None, :].bool())  # (B, 1, 1, S)
        if mask is not None:
            raise CaptureError(
                f"{self.name} runs the local kernel with an extra mask; capture_stats() rebuilds the local pattern "
                f"with key padding only: pass key_padding_mask= instead of mask="
            )
        options = self.layer.config.kernel_options
        before, after = _window(options.get("window", DEFAULT_WINDOW))
        pattern = masks.window(before, 0 if causal else after, dilation=int(options.get("dilation", 1)))
        g = options.get("global_tokens")
        if g is not None and len(g):
            pattern = pattern | masks.global_tokens(g)
        return pattern if kpm is None else pattern & masks.key_padding(kpm)


def _window(window: int | tuple[int, int]) -> tuple[int, int]:
    return (window, window) if isinstance(window, int) else (int(window[0]), int(window[1]))
