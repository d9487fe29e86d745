"""Attention rollout and attention flow (Abnar & Zuidema 2020, "Quantifying attention flow in transformers").

Both treat the layers as a graph whose nodes are (layer, token) and whose edges carry attention.
**Residual convention**: a layer's edges are ``A~ = 0.5 * mean_heads(A) + 0.5 * I``, rows renormalised
to sum to one (:func:`residual_attention`): the residual connection lets half of each token through
unchanged, as the paper does.  Heads are averaged here because both methods are defined per layer.

* **Rollout**: ``R_l = A~_l @ R_{l-1}`` with ``R_0 = A~_0``; ``R[i, j]`` is how much output token ``i``
  draws from input token ``j`` through every path (products of edges, summed over paths).
* **Flow**: the value of the maximum flow from input node ``(0, j)`` to output node ``(L, i)`` when the
  edge from ``(l, j')`` to ``(l + 1, i')`` has capacity ``A~_l[i', j']``.  It is computed with
  OR-Tools' ``SimpleMaxFlow`` (push-relabel) on a sparse part of the graph whose answer a cut of the whole
  graph certifies (``"sparse"``, the default: :func:`_flow_rows_sparse`), on the whole graph (``"ortools"``),
  or with ``scipy.sparse.csgraph.maximum_flow`` (Dinic's algorithm, the reference); all take integer
  capacities: each capacity is multiplied by ``scale`` (default 2**30) and rounded, and all three return the
  same values (the exact max-flow of those integers).  Rounding moves every edge by at
  most ``0.5 / scale``, so every cut, and the minimum cut, moves by at most ``0.5 * E / scale``, ``E`` the
  number of edges (``L * n * n``): under 5e-5 for 6 layers of 128 tokens, 7e-4 at 512 tokens.  A flow
  never exceeds 1 (the sink's incoming capacities are one row of ``A~``), so ``scale`` up to 2**30 keeps
  every capacity and flow inside scipy's 32-bit integers.

Letters: L layers, H heads, n tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import InputError, ShapeError
from .metrics import as_weights

__all__ = [
    "FLOW_SCALE",
    "SOLVERS",
    "blank_out_importance",
    "flow",
    "flow_error_bound",
    "residual_attention",
    "rollout",
    "spearman",
    "spearman_agreement",
]

FLOW_SCALE = 2**30


def residual_attention(w: Any, residual: float = 0.5) -> np.ndarray:
    """``(L, n, n)``: ``(1 - residual) * mean_heads(w) + residual * I``, each row renormalised to sum to one
    (a row of zeros stays zeros when ``residual`` is 0)."""
    a = as_weights(w, keep_float32=True)  # float32 weights are averaged in float64 without a float64 copy
    if a.shape[2] != a.shape[3]:
        raise ShapeError(f"rollout and flow need self-attention (q_len == k_len), got {a.shape[2]} x {a.shape[3]}")
    if not 0.0 <= residual <= 1.0:
        raise InputError(f"residual must be a share between 0 and 1 (0.5 in Abnar & Zuidema), got {residual}")
    mixed = (1.0 - residual) * a.mean(axis=1, dtype=np.float64)  # (L, n, n)
    mixed[:, np.arange(a.shape[2]), np.arange(a.shape[2])] += residual
    total = mixed.sum(-1, keepdims=True)
    np.divide(mixed, total, out=mixed, where=total > 0)
    return mixed


def rollout(w: Any, residual: float = 0.5) -> np.ndarray:
    """``(L, n, n)``: the rollout after each layer; ``rollout(w)[-1][i, j]`` is the share of output
    token ``i`` that comes from input token ``j``.  Rows sum to one.  ``residual=0`` chains matrices that
    already account for the residual (value zeroing's, given as ``(L, 1, n, n)``)."""
    a = residual_attention(w, residual)
    out = np.empty_like(a)
    out[0] = a[0]
    for layer in range(1, a.shape[0]):
        np.matmul(a[layer], out[layer - 1], out=out[layer])  # (n, n)
    return out


def _scaled(a: np.ndarray, scale: int) -> np.ndarray:
    """``(L, n, n)`` integer capacities: ``a * scale`` rounded (``rint``, so both solvers see the same graph)."""
    return np.rint(a * scale).astype(np.int64)


def flow_error_bound(n_layers: int, n_tokens: int, scale: int = FLOW_SCALE) -> float:
    """The largest difference between :func:`flow`'s values and the exact max-flow of the real-valued graph."""
    return 0.5 * n_layers * n_tokens * n_tokens / scale


SOLVERS = ("sparse", "ortools", "scipy")

SPARSE_KEEP = 24
"""How many of its strongest incoming middle edges (its largest attention weights) each node keeps in the
sparse graph of :func:`_flow_rows_sparse`.  Any value gives the same answer, only the time changes: on the
128-token MiniLM trace of benchmarks/rollout_flow.py, 24 answered 97% of the pairs with one solve (0.7 ms
a pair; 8 needed more solves: 1.3 ms; 40: 1.1 ms), and keeping each node's strongest outgoing edges as well,
or instead, was slower (0.9 and 1.6 ms)."""


def flow(
    w: Any,
    targets: Sequence[int] | None = None,
    sources: Sequence[int] | None = None,
    *,
    scale: int = FLOW_SCALE,
    workers: int = 1,
    solver: str = "sparse",
) -> np.ndarray:
    """``(len(targets), len(sources))``: the attention flow from each input token ``sources[s]`` to each
    output position ``targets[t]`` (default: every token for both), within :func:`flow_error_bound`.

    Every (target, source) pair is one max-flow problem.  ``solver="sparse"`` (the default) solves it with
    OR-Tools' push-relabel on the graph's strongest edges and proves the answer with a cut of the whole graph,
    adding edges until one does (:func:`_flow_rows_sparse`); ``solver="ortools"`` solves the whole graph of
    the middle layers, built once and re-solved with only the source's and the target's arcs changed
    (:func:`_flow_rows_ortools`); ``solver="scipy"`` builds one scipy graph per target and runs Dinic's
    algorithm (:func:`_flow_rows_scipy`, the slowest, the reference).  All see the same integer capacities
    and return the same values.  ``workers > 1`` shares the targets among that many processes, started the way Python
    starts them by default (fork on Linux before 3.14, forkserver from 3.14, spawn on macOS and Windows): under the
    last two a script that calls this must do so under ``if __name__ == "__main__":``."""
    if not 1 <= scale <= FLOW_SCALE:
        raise InputError(f"scale must be between 1 and 2**30 (capacities are 32-bit integers), got {scale}")
    if not isinstance(workers, int) or workers < 1:
        raise InputError(f"workers must be a positive number of processes, got {workers!r}")
    if solver not in SOLVERS:
        raise InputError(f"solver must be one of {', '.join(SOLVERS)}, got {solver!r}")
    a = residual_attention(w)
    n = a.shape[1]
    tgt = list(range(n)) if targets is None else [_token(t, n, "targets") for t in targets]
    src = list(range(n)) if sources is None else [_token(s, n, "sources") for s in sources]
    rows = {"sparse": _flow_rows_sparse, "ortools": _flow_rows_ortools, "scipy": _flow_rows_scipy}[solver]
    if workers == 1 or len(tgt) < 2:
        return rows(a, tgt, src, scale)
    from concurrent.futures import ProcessPoolExecutor

    chunks = [tgt[i::workers] for i in range(min(workers, len(tgt)))]  # interleaved: even work per process
    with ProcessPoolExecutor(max_workers=len(chunks)) as pool:
        parts = list(pool.map(rows, [a] * len(chunks), chunks, [src] * len(chunks), [scale] * len(chunks)))
    out = np.zeros((len(tgt), len(src)))
    for i, part in enumerate(parts):
        out[i::workers] = part
    return out


def _flow_rows_ortools(a: np.ndarray, targets: list[int], sources: list[int], scale: int) -> np.ndarray:
    """The flow rows of ``targets`` for the residual attention ``a`` ``(L, n, n)``, on one OR-Tools graph.

    Only layer 0's column ``s`` leaves input node ``(0, s)`` (no edge enters layer 0), and only the last
    layer's row ``t`` enters output node ``(L, t)``; every other edge is the same for every pair.  So the
    graph holds the middle layers once: node ``(l - 1) * n + t`` is token ``t`` before layer ``l``
    (``l = 1..L-1``), plus a source node feeding layer 1 with ``a[0, :, s]`` and a sink fed by layer
    ``L - 1`` with ``a[-1, t, :]``; a pair only sets those ``2 n`` capacities and solves again."""
    from ortools.graph.python import max_flow

    caps = _scaled(a, scale)  # (L, n_to, n_from)
    n_l, n, _ = caps.shape
    if n_l == 1:  # one layer: the only path from (0, s) to (1, t) is the edge itself
        return caps[0][np.ix_(targets, sources)] / scale
    solver = max_flow.SimpleMaxFlow()
    mid = caps[1:-1]  # the middle layers' edges, (l - 1, to, from)
    solver.add_arcs_with_capacity(*_middle_arcs(mid, *np.nonzero(mid)))
    source, sink = (n_l - 1) * n, (n_l - 1) * n + 1
    nodes = np.arange(n)
    out_of_source = solver.add_arcs_with_capacity(np.full(n, source), nodes, caps[0, :, 0])  # into layer 1
    into_sink = solver.add_arcs_with_capacity((n_l - 2) * n + nodes, np.full(n, sink), caps[-1, 0])  # out of L-1
    out = np.zeros((len(targets), len(sources)))
    for ti, t in enumerate(targets):
        solver.set_arcs_capacity(into_sink, caps[-1, t])
        for si, s in enumerate(sources):
            solver.set_arcs_capacity(out_of_source, caps[0, :, s])
            if solver.solve(source, sink) != solver.OPTIMAL:
                raise RuntimeError(f"OR-Tools max-flow did not solve target {t}, source {s}")  # not bad input
            out[ti, si] = solver.optimal_flow() / scale
    return out


def _flow_rows_sparse(a: np.ndarray, targets: list[int], sources: list[int], scale: int,
                      keep: int = SPARSE_KEEP) -> np.ndarray:
    """The flow rows of ``targets`` for the residual attention ``a`` ``(L, n, n)``, each pair solved on a
    sparse graph and certified on the whole one.

    The graph is :func:`_flow_rows_ortools`'s (source, the middle layers, sink), but a pair's solve sees only
    the middle edges of :func:`_strongest`, every edge into the target's tokens and out of the source's
    tokens, and all the source's and sink's arcs.  Its max flow ``f`` is a flow of the whole graph, so at most
    the whole graph's; its min cut, priced with every edge of the whole graph, is at least the whole graph's
    max flow.  When that price is ``f`` (no left-out edge crosses the cut), ``f`` is the whole graph's max flow;
    otherwise the crossing edges join the sparse graph and it is solved again (:func:`_certified_flow`).
    The cuts around the source and around the sink (the source's column of layer 0, the target's row of the
    last layer) are checked first: most pairs end there (99% of MiniLM's at 128 tokens).  Integer capacities
    throughout, so the values are exactly those of the other solvers."""
    caps = _scaled(a, scale)  # (L, n_to, n_from)
    n_l, n, _ = caps.shape
    if n_l == 1:  # one layer: the only path from (0, s) to (1, t) is the edge itself
        return caps[0][np.ix_(targets, sources)] / scale
    mid = caps[1:-1]  # (L - 2, n_to, n_from): edge (l - 1) * n + from -> l * n + to, l = 1..L-2
    strong = _strongest(mid, keep)
    base = _middle_arcs(mid, *np.nonzero(strong))
    trivial = np.minimum.outer(caps[-1].sum(1), caps[0].sum(0))  # (n_t, n_s): the cut around sink, source
    source, sink = (n_l - 1) * n, (n_l - 1) * n + 1
    tokens = np.arange(n)
    out = np.zeros((len(targets), len(sources)))
    for ti, t in enumerate(targets):
        layer, frm = np.nonzero(~strong[:, t])  # the edges into the target's tokens left out of strong
        into_t = _middle_arcs(mid, layer, t, frm)
        sink_arcs = ((n_l - 2) * n + tokens, np.full(n, sink), caps[-1, t])
        for si, s in enumerate(sources):
            layer, to = np.nonzero(~strong[:, :, s])
            out_of_s = _middle_arcs(mid, layer[to != t], to[to != t], s)  # the edge s -> t is in into_t
            source_arcs = (np.full(n, source), tokens, caps[0, :, s])
            chosen = strong.copy()
            chosen[:, t, :] = chosen[:, :, s] = True
            arcs = [np.concatenate(part) for part in zip(base, into_t, out_of_s, source_arcs, sink_arcs, strict=True)]
            value = _certified_flow(mid, chosen, arcs, source, sink, int(trivial[t, s]))
            out[ti, si] = value / scale
    return out


def _strongest(mid: np.ndarray, keep: int) -> np.ndarray:
    """``(L - 2, n, n)`` bool: the middle edges of the sparse graph: every node's ``keep`` strongest
    incoming edges (the largest of its row of ``mid``) and its residual edge (the diagonal)."""
    n_mid, n, _ = mid.shape
    if keep >= n:
        return np.ones(mid.shape, dtype=bool)
    chosen = np.zeros(mid.shape, dtype=bool)
    if keep > 0 and n_mid > 0:
        np.put_along_axis(chosen, np.argpartition(-mid, keep - 1, axis=2)[:, :, :keep], True, axis=2)
    chosen[:, np.arange(n), np.arange(n)] = True
    return chosen


def _middle_arcs(mid: np.ndarray, layer: Any, to: Any, frm: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(tails, heads, capacities)`` of the edges ``mid[layer, to, frm]`` of a stack of layers ``mid``
    ``(layers, n_to, n_from)`` (index arrays, or ints broadcast against them): the edge goes from node
    ``layer * n + frm`` to node ``(layer + 1) * n + to`` (for the middle layers ``caps[1:-1]``, node ``(l - 1) * n + i``
    is token ``i`` before layer ``l``)."""
    n = mid.shape[1]
    layer, to, frm = np.broadcast_arrays(layer, to, frm)
    return layer * n + frm, (layer + 1) * n + to, mid[layer, to, frm]


def _certified_flow(mid: np.ndarray, chosen: np.ndarray, arcs: list[np.ndarray], source: int, sink: int,
                    bound: int) -> int:
    """The max-flow value of the whole graph (middle edges ``mid``) from a max flow of its part ``arcs``
    (``[tails, heads, capacities]``, holding every source and sink arc and the middle edges marked in
    ``chosen``, ``(L - 2, n, n)``): solved; if the value is not ``bound`` (a cut of the whole graph) and the
    part's min cut is crossed by middle edges left out, those are added and it is solved again."""
    from ortools.graph.python import max_flow

    n = mid.shape[1]
    tails, heads, capacities = arcs
    while True:
        solver = max_flow.SimpleMaxFlow()
        solver.add_arcs_with_capacity(tails, heads, capacities)
        if solver.solve(source, sink) != solver.OPTIMAL:
            raise RuntimeError(f"OR-Tools max-flow did not solve a graph of {len(tails)} arcs")  # not bad input
        value = int(solver.optimal_flow())
        if value == bound:
            return value  # a flow as large as a cut of the whole graph: the max flow
        side = np.zeros(sink + 1, dtype=bool)
        side[solver.get_source_side_min_cut()] = True
        inside = side[:source].reshape(-1, n)  # (L - 1, n): which middle nodes are on the source's side
        crossing = inside[:-1, None, :] & ~inside[1:, :, None]  # (L - 2, n_to, n_from): edge leaves that side
        missing = crossing & ~chosen & (mid > 0)
        if not missing.any():
            return value  # the part's min cut costs the same in the whole graph: a flow as large as a cut
        chosen |= missing
        added = _middle_arcs(mid, *np.nonzero(missing))
        grown = [np.concatenate(pair) for pair in zip((tails, heads, capacities), added, strict=True)]
        tails, heads, capacities = grown


def _edges(caps: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(rows, cols, caps)`` of the layered graph up to the last layer's input: node ``l * n + t`` is
    token ``t`` before layer ``l`` (``l = 0..L-1``); edge ``(l, j) -> (l + 1, i)`` has capacity
    ``caps[l, i, j]``.  The last layer's edges are added per target by :func:`_graph`."""
    rows, cols, data = _middle_arcs(caps[:-1], *np.nonzero(caps[:-1]))  # (L-1, n_to, n_from)
    return rows.astype(np.int32), cols.astype(np.int32), data


def _graph(caps: np.ndarray, edges: tuple[np.ndarray, np.ndarray, np.ndarray], target: int) -> Any:
    """The graph for one output position as a CSR matrix of integer capacities: the layered graph of
    :func:`_edges` plus one sink node ``L * n`` fed by the last layer's row ``target``.  The other
    output nodes cannot reach the sink, so they are left out (a sixth fewer edges for 6 layers)."""
    from scipy.sparse import csr_matrix

    n_l, n, _ = caps.shape
    last = caps[-1, target]  # (n_from,)
    frm = np.nonzero(last)[0]
    sink = n_l * n
    rows = np.concatenate([edges[0], ((n_l - 1) * n + frm).astype(np.int32)])
    cols = np.concatenate([edges[1], np.full(len(frm), sink, dtype=np.int32)])
    data = np.concatenate([edges[2], last[frm]]).astype(np.int32)
    graph = csr_matrix((data, (rows, cols)), shape=(sink + 1, sink + 1))
    graph.sort_indices()
    return graph


def _flow_rows_scipy(a: np.ndarray, targets: list[int], sources: list[int], scale: int) -> np.ndarray:
    """The flow rows of ``targets`` with scipy's Dinic, one graph built per target (the reference solver)."""
    from scipy.sparse.csgraph import maximum_flow

    caps = _scaled(a, scale)
    n_l, n, _ = caps.shape
    edges = _edges(caps)
    out = np.zeros((len(targets), len(sources)))
    for ti, t in enumerate(targets):
        graph = _graph(caps, edges, t)
        for si, s in enumerate(sources):
            out[ti, si] = maximum_flow(graph, s, n_l * n).flow_value / scale
    return out


def _token(i: int, n: int, what: str) -> int:
    if not -n <= int(i) < n:
        raise InputError(f"{what}: token {i} is out of range for {n} tokens (0..{n - 1}, or negative from the end)")
    return int(i) % n


def spearman(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Spearman's rank correlation (ties get their mean rank); NaN when either side is constant."""
    from scipy.stats import rankdata

    rx, ry = rankdata(np.asarray(x, dtype=np.float64)), rankdata(np.asarray(y, dtype=np.float64))
    if rx.shape != ry.shape:
        raise ShapeError(f"spearman needs two sequences of one length, got {rx.shape} and {ry.shape}")
    if np.ptp(rx) == 0 or np.ptp(ry) == 0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


def blank_out_importance(score: Callable[[Sequence[int]], float], ids: Sequence[int], blank_id: int,
                         positions: Sequence[int] | None = None) -> np.ndarray:
    """``(n,)``: how much ``score(ids)`` (say, the probability of the predicted class) drops when each
    token is replaced by ``blank_id`` (0 at the positions not in ``positions``) — the blank-out
    importance Abnar & Zuidema compare attention with."""
    ids = list(ids)
    base = float(score(ids))
    out = np.zeros(len(ids))
    for i in positions if positions is not None else range(len(ids)):
        blanked = [*ids[:i], blank_id, *ids[i + 1:]]
        out[i] = base - float(score(blanked))
    return out


def spearman_agreement(w: Any, importance: Sequence[float] | np.ndarray, position: int = 0,
                       inputs: Sequence[int] | None = None) -> dict[str, float]:
    """Spearman correlation, over the input tokens ``inputs`` (default: all), of the importance of each
    token with what output ``position`` (e.g. [CLS], which a classifier reads) attends to it:
    ``raw`` (the last layer's head-mean attention), ``rollout`` and ``flow``."""
    a = as_weights(w)
    n = a.shape[-1]
    keep = list(range(n)) if inputs is None else list(inputs)
    imp = np.asarray(importance, dtype=np.float64)
    if imp.shape != (n,):
        raise ShapeError(f"importance must have one value per token ({n}), got shape {imp.shape}")
    scores = {
        "raw": a[-1].mean(axis=0)[position],
        "rollout": rollout(a)[-1][position],
        "flow": flow(a, targets=[position])[0],
    }
    return {name: spearman(s[keep], imp[keep]) for name, s in scores.items()}
