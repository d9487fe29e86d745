"""Attention masks as small predicates that combine.

A mask answers one question: *may query ``q`` attend to key ``k``?*  It is a function of index
tensors ``(b, h, q, k)`` that returns a boolean tensor, **True = may attend** (the convention of
``torch.nn.functional.scaled_dot_product_attention`` and FlexAttention, *not* the one of
``torch.nn.MultiheadAttention``).  Masks combine with ``&``, ``|`` and ``~`` (or :func:`combine`)
and are turned into a dense boolean tensor only when a kernel asks (:meth:`Mask.materialize`).

Positional masks (causal, window, strided) compare a key index with the query's **aligned
position** ``q + (k_len - q_len)``: with a key/value cache longer than the queries, the last query
lines up with the last key (bottom-right alignment, as in FlashAttention).  When ``q_len == k_len``
the aligned position is just ``q``.

    >>> import attnlab as al
    >>> m = al.masks.causal() & al.masks.window(2)
    >>> m.materialize(4, 4).int().squeeze()
    tensor([[1, 0, 0, 0],
            [1, 1, 0, 0],
            [1, 1, 1, 0],
            [0, 1, 1, 1]], dtype=torch.int32)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from . import _validate as check
from .errors import ConfigError, MaskError

__all__ = [
    "Mask",
    "bigbird",
    "bigbird_random_blocks",
    "causal",
    "combine",
    "full",
    "global_tokens",
    "key_padding",
    "padding",
    "strided",
    "window",
]

# (b, h, q, k, q_len, k_len) -> bool tensor broadcast over the index tensors
Predicate = Callable[[Tensor, Tensor, Tensor, Tensor, int, int], Tensor]


@dataclass(frozen=True)
class Mask:
    """A boolean attention mask given as a predicate over ``(batch, head, query, key)`` indices.

    ``fn(b, h, q, k, q_len, k_len)`` receives broadcastable ``int64`` index tensors and returns a
    boolean tensor, True where the query may attend to the key.  ``batch_size`` is set by masks that
    depend on the batch (padding), so that materialising knows how many rows to make.
    """

    fn: Predicate
    name: str
    batch_size: int | None = None

    def __call__(self, b: Tensor, h: Tensor, q: Tensor, k: Tensor, q_len: int, k_len: int) -> Tensor:
        return self.fn(b, h, q, k, q_len, k_len)

    def __and__(self, other: Mask) -> Mask:
        return combine(self, other, op="and")

    def __or__(self, other: Mask) -> Mask:
        return combine(self, other, op="or")

    def __invert__(self) -> Mask:
        fn = self.fn
        return Mask(lambda b, h, q, k, ql, kl: ~fn(b, h, q, k, ql, kl), f"~{self.name}", self.batch_size)

    def __repr__(self) -> str:
        return f"Mask({self.name})"

    def materialize(
        self,
        q_len: int,
        k_len: int,
        *,
        batch: int | None = None,
        heads: int = 1,
        device: torch.device | str | None = None,
    ) -> Tensor:
        """The dense boolean mask, shape ``(batch, heads, q_len, k_len)``; batch and heads are 1
        (and broadcast) when the predicate does not depend on them."""
        return self.block(q_len, k_len, 0, q_len, 0, k_len, batch=batch, heads=heads, device=device)

    def block(
        self,
        q_len: int,
        k_len: int,
        q0: int,
        q1: int,
        k0: int,
        k1: int,
        *,
        batch: int | None = None,
        heads: int = 1,
        device: torch.device | str | None = None,
    ) -> Tensor:
        """The mask of the block ``[q0, q1) x [k0, k1)`` of a ``q_len x k_len`` problem,
        shape ``(batch, heads, q1 - q0, k1 - k0)``.  Blockwise kernels call this per tile."""
        check.non_negative_int("q_len", q_len)
        check.non_negative_int("k_len", k_len)
        nb = batch if batch is not None else (self.batch_size or 1)
        b = torch.arange(nb, device=device).view(-1, 1, 1, 1)  # (B, 1, 1, 1)
        h = torch.arange(heads, device=device).view(1, -1, 1, 1)  # (1, H, 1, 1)
        q = torch.arange(q0, q1, device=device).view(1, 1, -1, 1)  # (1, 1, Q, 1)
        k = torch.arange(k0, k1, device=device).view(1, 1, 1, -1)  # (1, 1, 1, K)
        out = self.fn(b, h, q, k, q_len, k_len)
        shape = (nb if out.shape[0] != 1 else 1, heads if out.shape[1] != 1 else 1, q1 - q0, k1 - k0)
        return torch.broadcast_to(out, shape)


def _aligned(q: Tensor, q_len: int, k_len: int) -> Tensor:
    """The query's position in key coordinates (bottom-right alignment)."""
    return q + (k_len - q_len)


def full() -> Mask:
    """Every query may attend to every key."""
    return Mask(lambda b, h, q, k, ql, kl: torch.ones_like(q + k, dtype=torch.bool), "full")


def causal() -> Mask:
    """Query ``i`` may attend to keys ``j <= i + k_len - q_len`` (bottom-right aligned)."""
    return Mask(lambda b, h, q, k, ql, kl: k <= _aligned(q, ql, kl), "causal")


def window(before: int, after: int | None = None, *, dilation: int = 1) -> Mask:
    """Local (sliding-window) attention: query ``i`` sees keys ``j`` with
    ``-after <= i - j <= before`` in aligned positions.

    ``window(w)`` is two-sided (``w`` keys on each side, ``2w + 1`` in all); ``window(w, 0)`` is the
    one-sided window of a causal local model.  With ``dilation=d`` only every ``d``-th key of a window
    ``d`` times wider is kept (``i - j`` divisible by ``d``), as in dilated sliding windows (Longformer).
    """
    check.non_negative_int("window before", before, fix="pass e.g. window(2) for two keys on each side")
    after = before if after is None else check.non_negative_int("window after", after, fix="e.g. window(2, 0)")
    check.positive_int("window dilation", dilation, fix="use dilation=1 for none")

    def fn(b: Tensor, h: Tensor, q: Tensor, k: Tensor, ql: int, kl: int) -> Tensor:
        d = _aligned(q, ql, kl) - k
        ok = (d <= before * dilation) & (d >= -after * dilation)
        return ok & (d % dilation == 0) if dilation > 1 else ok

    name = f"window({before}, {after}" + (f", dilation={dilation})" if dilation > 1 else ")")
    return Mask(fn, name)


def strided(stride: int) -> Mask:
    """The strided pattern of the Sparse Transformer: query ``i`` sees key ``j`` when ``i - j`` is a
    multiple of ``stride`` (aligned positions).  Combine with :func:`window` and :func:`causal` for
    the full factorised pattern: ``causal() & (window(stride - 1, 0) | strided(stride))``."""
    check.positive_int("stride", stride, fix="e.g. strided(4) for every 4th key")
    return Mask(lambda b, h, q, k, ql, kl: (_aligned(q, ql, kl) - k) % stride == 0, f"strided({stride})")


def global_tokens(indices: Sequence[int] | Tensor) -> Mask:
    """Global tokens (Longformer, BigBird): the listed positions attend to every key and every query
    attends to them.  Indices are positions in the sequence (same for queries and keys)."""
    idx = check.indices("global token indices", indices)

    def fn(b: Tensor, h: Tensor, q: Tensor, k: Tensor, ql: int, kl: int) -> Tensor:
        g = idx.to(q.device)
        return torch.isin(q, g) | torch.isin(k, g)

    return Mask(fn, f"global_tokens({idx.tolist()})")


def bigbird_random_blocks(n_query_blocks: int, n_key_blocks: int, random_blocks: int, seed: int) -> Tensor:
    """The random key blocks of BigBird, ``(n_query_blocks, min(random_blocks, n_key_blocks))`` int64:
    row ``i`` lists distinct key blocks drawn for query block ``i`` from a generator seeded with ``seed``.
    :func:`bigbird` and :func:`attnlab.functional.bigbird_attention` share this table."""
    g = torch.Generator().manual_seed(seed)
    r = min(random_blocks, n_key_blocks)
    rows = [torch.randperm(n_key_blocks, generator=g)[:r] for _ in range(n_query_blocks)]
    return torch.stack(rows) if rows else torch.zeros(0, r, dtype=torch.long)


def bigbird(block: int, window: int = 1, global_blocks: int = 1, random_blocks: int = 1, seed: int = 0) -> Mask:
    """BigBird's block-sparse pattern (Zaheer et al. 2020) on blocks of ``block`` positions: query block
    ``I`` sees key block ``J`` when ``|I - J| <= window`` (sliding blocks), when ``I`` or ``J`` is one of the
    first ``global_blocks`` blocks (global), or when ``J`` is one of the ``random_blocks`` blocks drawn for
    ``I`` (:func:`bigbird_random_blocks`, seeded, so the pattern is reproducible)."""
    check.positive_int("bigbird block", block, fix="e.g. bigbird(block=64)")
    for name, value in (("window", window), ("global_blocks", global_blocks), ("random_blocks", random_blocks)):
        check.non_negative_int(f"bigbird {name}", value, fix=f"e.g. bigbird(block=64, {name}=1)")
    check.integer("bigbird seed", seed, low=-(2**63), fix="e.g. bigbird(block=64, seed=0)")

    def fn(b: Tensor, h: Tensor, q: Tensor, k: Tensor, ql: int, kl: int) -> Tensor:
        qb, kb = q // block, k // block
        ok = ((qb - kb).abs() <= window) | (qb < global_blocks) | (kb < global_blocks)
        if random_blocks:
            table = bigbird_random_blocks(-(-ql // block), -(-kl // block), random_blocks, seed).to(q.device)
            hits = torch.zeros(table.shape[0], -(-kl // block), dtype=torch.bool, device=q.device)
            hits.scatter_(1, table, True)  # (query blocks, key blocks)
            ok = ok | hits[qb, kb]
        return ok

    return Mask(fn, f"bigbird(block={block}, window={window}, global={global_blocks}, random={random_blocks}, "
                    f"seed={seed})")


def padding(lengths: Sequence[int] | Tensor) -> Mask:
    """Key padding from the true lengths of a batch: in row ``b`` keys ``j < lengths[b]`` are real."""
    lens = check.indices("padding lengths", lengths, nonempty=True)

    def fn(b: Tensor, h: Tensor, q: Tensor, k: Tensor, ql: int, kl: int) -> Tensor:
        return k < lens.to(k.device)[b]

    return Mask(fn, f"padding({lens.tolist()})", batch_size=lens.numel())


def key_padding(key_mask: Tensor) -> Mask:
    """Key padding from a boolean ``(batch, k_len)`` tensor, True = real token (as Hugging Face's
    ``attention_mask``).  A ``0/1`` integer tensor is accepted too."""
    check.ndim("key_mask", check.tensor("key_mask", key_mask, "(batch, k_len)"), 2, "(batch, k_len)", error=MaskError)
    km = check.boolean_tensor("key_mask", key_mask, "True = real token",
                              "a float mask is additive, pass it to attention(mask=...) directly")

    def fn(b: Tensor, h: Tensor, q: Tensor, k: Tensor, ql: int, kl: int) -> Tensor:
        if kl != km.shape[1]:
            raise MaskError(f"key_mask covers {km.shape[1]} keys but the attention has k_len={kl}")
        return km.to(k.device)[b, k]

    return Mask(fn, f"key_padding{tuple(km.shape)}", batch_size=km.shape[0])


def combine(*masks: Mask, op: str = "and") -> Mask:
    """Combine masks: ``op="and"`` keeps a pair only if every mask keeps it, ``"or"`` if any does."""
    if not masks:
        raise ConfigError("combine() needs at least one mask, got none; pass e.g. combine(causal(), window(2))")
    check.one_of("combine op", op, ("and", "or"))
    for m in masks:
        check.instance("combine() argument", m, Mask, "an attnlab.masks.Mask",
                       "build one with attnlab.masks (causal(), window(...), ...)", MaskError)
    sizes = {m.batch_size for m in masks if m.batch_size is not None}
    if len(sizes) > 1:
        raise MaskError(f"masks disagree on the batch size: {sorted(sizes)}")
    fns = [m.fn for m in masks]

    def fn(b: Tensor, h: Tensor, q: Tensor, k: Tensor, ql: int, kl: int) -> Tensor:
        out = fns[0](b, h, q, k, ql, kl)
        for f in fns[1:]:
            out = (out & f(b, h, q, k, ql, kl)) if op == "and" else (out | f(b, h, q, k, ql, kl))
        return out

    sym = " & " if op == "and" else " | "
    return Mask(fn, "(" + sym.join(m.name for m in masks) + ")", next(iter(sizes), None))
