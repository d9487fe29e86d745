"""Local and block-sparse attention in ``O(n w)``: sliding windows, dilation, global tokens, BigBird.

Letters: B batch, H heads (any leading dims ``...``), L query length, S key length, E query/key
features, Ev value features, W keys in a query block's band, G global tokens, Bq query block.

Each query block gathers only the keys it may see (a contiguous band of the key sequence for
sliding windows; a list of key blocks for BigBird), so the work and the memory are ``O(L * w)``
for a window of ``w`` keys, never ``O(L * S)``.  Results are exactly those of dense attention with
the equivalent mask (:func:`attnlab.masks.window`, :func:`attnlab.masks.global_tokens`,
:func:`attnlab.masks.bigbird`), which the tests check.

Global tokens are handled by splitting the keys into two disjoint sets, the window (without the
global keys) and the global keys, and merging the two partial softmaxes with their log-sum-exp; the
rows of the global queries are then computed densely (``O(G * S)``).  Dilation ``d`` splits the
sequence into ``d`` interleaved sub-sequences (positions equal mod ``d``), in each of which the
dilated window is a plain window.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from .. import _validate as check
from ..errors import ConfigError
from ..masks import Mask, bigbird_random_blocks
from ._checks import check_options, check_qkv, resolve_mask
from ._kernel import refuse, reject_options
from ._tiles import check_block
from .dense import attention, finite_or_zero, keyless_output, log_normaliser, merge_masks, work_dtype

__all__ = ["bigbird_attention", "local_attention", "local_kernel"]

DEFAULT_WINDOW = 128  # keys on each side for the registered kernel "local"

Span = slice | Tensor  # rows or columns of a mask: a (strided) slice or an index tensor


def _sub(mask: Tensor | None, rows: Span, cols: Span) -> Tensor | None:
    """``mask[..., rows, cols]``, leaving broadcast (size-1) dims alone."""
    if mask is None:
        return None
    m = mask
    if m.shape[-2] != 1:
        m = m[..., rows, :] if isinstance(rows, slice) else m.index_select(-2, rows)
    if m.shape[-1] == 1:
        return m
    return m[..., cols] if isinstance(cols, slice) else m.index_select(-1, cols)


def _softmax_part(s: Tensor, keep: Tensor | None, mask: Tensor | None, v: Tensor) -> tuple[Tensor, Tensor]:
    """Softmax of the scores ``s`` (..., Q, K) over one key set, applied to ``v`` (..., K, Ev).
    Returns the output (..., Q, Ev) and the row log-sum-exp (..., Q, 1); ``-inf`` and zeros for
    rows with no allowed key."""
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask.to(s.dtype)
    if keep is not None:
        s = s.masked_fill(~keep, float("-inf"))
    if s.shape[-1] == 0:  # no key at all
        return s.new_zeros(*s.shape[:-1], v.shape[-1]), s.new_full((*s.shape[:-1], 1), float("-inf"))
    m = finite_or_zero(s.amax(dim=-1, keepdim=True).detach())  # (..., Q, 1)
    p = torch.exp(s - m)  # (..., Q, K)
    lse, divisor = log_normaliser(m, p.sum(dim=-1, keepdim=True))  # (..., Q, 1) each
    return torch.matmul(p, v) / divisor, lse  # (..., Q, Ev)


def _merge(a: tuple[Tensor, Tensor], b: tuple[Tensor, Tensor]) -> tuple[Tensor, Tensor]:
    """Combine the softmax over two disjoint key sets from their outputs and log-sum-exps."""
    (oa, la), (ob, lb) = a, b
    m = finite_or_zero(torch.maximum(la, lb))
    wa, wb = torch.exp(la - m), torch.exp(lb - m)  # (..., Q, 1)
    lse, divisor = log_normaliser(m, wa + wb)
    return (wa * oa + wb * ob) / divisor, lse


def _band(
    q: Tensor, k: Tensor, v: Tensor, offset: int, before: int, after: int,
    key_ok: Tensor | None, mask: Tensor | None, scale: float, block: int, need_lse: bool,
) -> tuple[Tensor, Tensor | None]:
    """Query ``t`` (aligned at ``t + offset``) sees keys ``u`` with ``-after <= t + offset - u <= before``.
    Each query block multiplies against its band of at most ``block + before + after`` keys.  Without
    ``need_lse`` each block is one fused SDPA call on its band; with it, the softmax is written out."""
    L, S = q.shape[-2], k.shape[-2]
    outs, lses = [], []
    for t0 in range(0, L, block):
        t1 = min(t0 + block, L)
        lo, hi = max(0, t0 + offset - before), min(S, t1 - 1 + offset + after + 1)
        if hi <= lo:  # the whole block sees no key
            outs.append(q.new_zeros(*q.shape[:-2], t1 - t0, v.shape[-1]))
            lses.append(q.new_full((*q.shape[:-2], t1 - t0, 1), float("-inf")))
            continue
        d = torch.arange(t0 + offset, t1 + offset, device=q.device).view(-1, 1) - torch.arange(lo, hi, device=q.device)
        keep = (d <= before) & (d >= -after)  # (Bq, W)
        if key_ok is not None:
            keep = keep & key_ok[lo:hi]
        m = _sub(mask, slice(t0, t1), slice(lo, hi))
        qb, kb, vb = q[..., t0:t1, :], k[..., lo:hi, :], v[..., lo:hi, :]
        if need_lse:
            s = torch.matmul(qb, kb.transpose(-2, -1)) * scale  # (..., Bq, W)
            o, l = _softmax_part(s, keep, m, vb)
            lses.append(l)
        else:
            o = attention(qb, kb, vb, mask=merge_masks(m, keep), scale=scale, return_weights=False)[0]
        outs.append(o)
    out = torch.cat(outs, dim=-2)  # (..., L, Ev)
    return out, (torch.cat(lses, dim=-2) if need_lse else None)  # (..., L, 1)


def _as_window(window: int | tuple[int, int], causal: bool) -> tuple[int, int]:
    before, after = check.window("window", window)
    return before, (0 if causal else after)


def _check_mask(mask: Tensor | Mask | None, q: Tensor, k: Tensor, what: str) -> Tensor | None:
    if isinstance(mask, Mask):
        raise ConfigError(
            f"{what} takes its pattern from its arguments and an extra mask as a tensor (e.g. key padding "
            f"of shape (batch, 1, 1, S)), got the predicate {mask!r}; a predicate would have to be built "
            f"densely, which defeats O(n w): pass the pattern as arguments, or use memory_efficient_attention(mask=...)"
        )
    return resolve_mask(mask, q, k)


def _global_index(tokens: Sequence[int] | Tensor | None, L: int, S: int, device: torch.device) -> Tensor | None:
    if tokens is None:
        return None
    g = check.indices("global_tokens", tokens, below=max(L, S)).unique()
    return g.to(device) if g.numel() else None


def local_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    window: int | tuple[int, int],
    dilation: int = 1,
    global_tokens: Sequence[int] | Tensor | None = None,
    mask: Tensor | Mask | None = None,
    causal: bool = False,
    scale: float | None = None,
    block: int = 256,
    return_lse: bool = False,
) -> tuple[Tensor, Tensor | None]:
    r"""Sliding-window attention with dilation and global tokens (Longformer), in ``O(L * w)``.

    Query ``i``, at aligned position ``a = i + S - L`` (bottom-right, as every causal mask here), sees
    key ``j`` when ``-after * d <= a - j <= before * d`` and ``a - j`` is a multiple of the dilation
    ``d``; global tokens attend to every key and every query attends to them.  The result equals
    :func:`attnlab.functional.attention` with the mask
    ``(masks.window(before, after, dilation=d) | masks.global_tokens(g)) [& causal] [& mask]``.

    Args:
        window: ``w`` (``w`` keys on each side) or ``(before, after)``; ``(w - 1, 0)`` is the one-sided
            window of ``w`` keys of a causal local model.
        dilation: keep every ``d``-th key of a ``d`` times wider window.
        global_tokens: positions that attend to and are attended by all (e.g. ``[0]`` for ``[CLS]``).
        mask: an extra bool (True = may attend) or additive tensor broadcasting to ``(..., L, S)``,
            e.g. key padding ``(B, 1, 1, S)``.  Only the band of it is read.
        causal: also forbid keys after the query (then ``after`` is 0).
        block: query block size; the working memory is ``O(block * (block + before + after))`` per head.
        return_lse: also return the row log-sum-exp.  Without it (and without global tokens) each query
            block is one fused ``scaled_dot_product_attention`` call on its band of keys.

    Returns:
        ``(output (..., L, Ev), lse (..., L) or None)``: the output in the input dtype and the row
        log-sum-exp in float32 (float64 for float64 inputs); rows with no allowed key give zeros and ``-inf``.
    """
    check_qkv(q, k, v)
    check_options(scale, 1.0, 0.0)
    check_block("block", block)
    check.positive_int("dilation", dilation, fix="use dilation=1 for none")
    before, after = _as_window(window, causal)
    m = _check_mask(mask, q, k, "local_attention")
    work = work_dtype(q.dtype)
    L, S = q.shape[-2], k.shape[-2]
    if L == 0 or S == 0:  # no query, or no key to see: zeros, lse -inf
        lse0 = q.new_full((*q.shape[:-2], L), float("-inf"), dtype=work)
        return keyless_output(q, k, v), (lse0 if return_lse else None)
    qw, kw, vw = q.to(work), k.to(work), v.to(work)
    off, d = S - L, dilation
    s = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    g = _global_index(global_tokens, L, S, q.device)
    key_ok = None
    if g is not None:
        key_ok = torch.ones(S, dtype=torch.bool, device=q.device)
        key_ok[g[g < S]] = False  # global keys are attended through their own part below

    # The window, one residue class of positions mod d at a time (one class when d == 1).
    need_lse = return_lse or g is not None  # global tokens merge two softmaxes by their log-sum-exp
    out = q.new_zeros(*q.shape[:-2], L, v.shape[-1], dtype=work)  # (..., L, Ev)
    lse: Tensor | None = q.new_full((*q.shape[:-2], L, 1), float("-inf"), dtype=work)  # (..., L, 1)
    for r in range(min(d, max(S, 1))):
        start = (r - off) % d  # the first query whose aligned position is r mod d
        if start >= L:
            continue
        rows, cols = slice(start, None, d), slice(r, None, d)
        part = _band(
            qw[..., rows, :], kw[..., cols, :], vw[..., cols, :], (start + off - r) // d, before, after,
            None if key_ok is None else key_ok[cols], _sub(m, rows, cols), s, block, need_lse,
        )
        if d == 1:
            out, lse = part
        else:
            out[..., rows, :] = part[0]
            if lse is not None and part[1] is not None:
                lse[..., rows, :] = part[1]

    if g is not None:
        assert lse is not None
        gk = g[g < S]
        if gk.numel():  # every query attends to the global keys (disjoint from the window part)
            sg = torch.matmul(qw, kw.index_select(-2, gk).transpose(-2, -1)) * s  # (..., L, G)
            keep = gk.view(1, -1) <= torch.arange(off, L + off, device=q.device).view(-1, 1) if causal else None
            out, lse = _merge((out, lse), _softmax_part(sg, keep, _sub(m, slice(None), gk), vw.index_select(-2, gk)))
        gq = g[g < L]
        if gq.numel():  # the global queries attend to every key
            sq = torch.matmul(qw.index_select(-2, gq), kw.transpose(-2, -1)) * s  # (..., G, S)
            keep = torch.arange(S, device=q.device).view(1, -1) <= (gq + off).view(-1, 1) if causal else None
            og, lg = _softmax_part(sq, keep, _sub(m, gq, slice(None)), vw)
            out = out.index_copy(-2, gq, og)
            lse = lse.index_copy(-2, gq, lg)
    return out.to(q.dtype), (lse.squeeze(-1) if return_lse and lse is not None else None)


def bigbird_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    block: int = 64,
    window: int = 1,
    global_blocks: int = 1,
    random_blocks: int = 1,
    seed: int = 0,
    mask: Tensor | Mask | None = None,
    causal: bool = False,
    scale: float | None = None,
) -> tuple[Tensor, Tensor]:
    """BigBird block-sparse attention: each query block sees ``2 * window + 1`` neighbouring key blocks,
    the first ``global_blocks`` blocks (which in turn see everything) and ``random_blocks`` seeded random
    key blocks.  Equals dense attention with ``masks.bigbird(block, window, global_blocks, random_blocks,
    seed)`` (``& causal``, ``& mask``).  Work ``O(L * block * (2 * window + 1 + global_blocks +
    random_blocks))`` plus the dense rows of the global blocks.  Returns ``(output, lse)`` like
    :func:`local_attention`."""
    check_qkv(q, k, v)
    check_options(scale, 1.0, 0.0)
    check_block("block", block)
    m = _check_mask(mask, q, k, "bigbird_attention")
    work = work_dtype(q.dtype)
    L, S = q.shape[-2], k.shape[-2]
    if L == 0 or S == 0:  # no query, or no key to see: zeros, lse -inf
        return keyless_output(q, k, v), q.new_full((*q.shape[:-2], L), float("-inf"), dtype=work)
    qw, kw, vw = q.to(work), k.to(work), v.to(work)
    s = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    off = S - L
    nq, nk = -(-L // block), -(-S // block)
    table = bigbird_random_blocks(nq, nk, random_blocks, seed).tolist() if random_blocks else [[] for _ in range(nq)]
    outs, lses = [], []
    for qb in range(nq):
        t0, t1 = qb * block, min((qb + 1) * block, L)
        if qb < global_blocks:
            kblocks = list(range(nk))
        else:
            near = range(max(0, qb - window), min(nk, qb + window + 1))
            kblocks = sorted(set(near) | set(range(min(global_blocks, nk))) | set(table[qb]))
        idx = torch.cat([torch.arange(b * block, min((b + 1) * block, S)) for b in kblocks] or
                        [torch.zeros(0, dtype=torch.long)]).to(q.device)  # (K,)
        dense = len(kblocks) == nk
        kb = kw if dense else kw.index_select(-2, idx)  # (..., K, E)
        vb = vw if dense else vw.index_select(-2, idx)
        sc = torch.matmul(qw[..., t0:t1, :], kb.transpose(-2, -1)) * s  # (..., Bq, K)
        keep = idx.view(1, -1) <= torch.arange(t0 + off, t1 + off, device=q.device).view(-1, 1) if causal else None
        o, l = _softmax_part(sc, keep, _sub(m, slice(t0, t1), slice(None) if dense else idx), vb)
        outs.append(o)
        lses.append(l)
    return torch.cat(outs, dim=-2).to(q.dtype), torch.cat(lses, dim=-2).squeeze(-1)


def check_local_options(options: Mapping[str, Any]) -> None:
    """The values of kernel ``"local"``'s options, as :func:`local_attention` checks them (the global tokens' upper
    bound, the sequence length, is known only at the call)."""
    if "window" in options:
        check.window("window", options["window"])
    if "dilation" in options:
        check.positive_int("dilation", options["dilation"], fix="use dilation=1 for none")
    if options.get("global_tokens") is not None:
        check.indices("global_tokens", options["global_tokens"])


def local_kernel(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    mask: Tensor | Mask | None = None,
    causal: bool = False,
    scale: float | None = None,
    dropout: float = 0.0,
    return_weights: bool = False,
    window: int | tuple[int, int] = DEFAULT_WINDOW,
    dilation: int = 1,
    global_tokens: Sequence[int] | Tensor | None = None,
    **options: Any,
) -> tuple[Tensor, None]:
    """The registered kernel ``"local"``: :func:`local_attention` with ``window`` keys on each side (before
    the query only when causal), ``dilation`` and ``global_tokens`` as there.  A layer passes them per
    instance: ``MultiHeadAttention(..., kernel="local", kernel_options={"window": 64})``.  Never returns
    weights (ConfigError if asked); no dropout."""
    reject_options("local", options, ("window", "dilation", "global_tokens"))
    refuse("local", return_weights, dropout)
    out, _ = local_attention(
        q, k, v, window=window, dilation=dilation, global_tokens=global_tokens, mask=mask, causal=causal, scale=scale
    )
    return out, None
