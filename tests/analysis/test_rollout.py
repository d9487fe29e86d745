"""Rollout against a plain loop; flow against a float64 Edmonds-Karp and against enumerating every
cut on tiny graphs; Spearman against scipy; blank-out importance and the agreement of raw attention,
rollout and flow with it on a tiny classifier the test trains."""

from __future__ import annotations

import itertools
from collections import deque

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr
from torch import nn

from attnlab.analysis import (
    SOLVERS,
    blank_out_importance,
    flow,
    flow_error_bound,
    residual_attention,
    rollout,
    spearman,
    spearman_agreement,
)
from attnlab.analysis.rollout import FLOW_SCALE, _flow_rows_sparse
from attnlab.capturing import capture, load_model
from attnlab.errors import InputError, ShapeError
from attnlab.layers import MultiHeadAttention


def random_attention(rng: np.random.Generator, layers: int, heads: int, n: int) -> np.ndarray:
    w = rng.random((layers, heads, n, n)) ** 3  # skewed, some near-zero edges
    return w / w.sum(-1, keepdims=True)


def layered(w: np.ndarray) -> tuple[np.ndarray, int]:
    """The dense capacity matrix of the layered graph, built independently: node (l, t) = l * n + t."""
    a = 0.5 * w.mean(axis=1) + 0.5 * np.eye(w.shape[-1])
    a = a / a.sum(-1, keepdims=True)
    n_l, n, _ = a.shape
    cap = np.zeros(((n_l + 1) * n, (n_l + 1) * n))
    for layer in range(n_l):
        for i in range(n):
            for j in range(n):
                cap[layer * n + j, (layer + 1) * n + i] = a[layer, i, j]
    return cap, n


def edmonds_karp(cap: np.ndarray, s: int, t: int) -> float:
    """Plain float64 Edmonds-Karp: augment along shortest residual paths until none is left."""
    residual = cap.copy()
    total = 0.0
    while True:
        parent = {s: s}
        queue = deque([s])
        while queue and t not in parent:
            u = queue.popleft()
            for v in np.nonzero(residual[u] > 1e-15)[0]:
                if v not in parent:
                    parent[int(v)] = u
                    queue.append(int(v))
        if t not in parent:
            return total
        path, v = [], t
        while v != s:
            path.append((parent[v], v))
            v = parent[v]
        push = min(residual[u, v] for u, v in path)
        for u, v in path:
            residual[u, v] -= push
            residual[v, u] += push
        total += push


def min_cut_by_enumeration(cap: np.ndarray, s: int, t: int) -> float:
    """The smallest capacity over every s-t cut (max-flow min-cut theorem), for graphs of a few nodes."""
    others = [v for v in range(len(cap)) if v not in (s, t)]
    best = np.inf
    for r in range(len(others) + 1):
        for side in itertools.combinations(others, r):
            src = np.zeros(len(cap), dtype=bool)
            src[[s, *side]] = True
            best = min(best, cap[src][:, ~src].sum())
    return float(best)


def test_residual_convention_and_rollout_loop() -> None:
    rng = np.random.default_rng(0)
    w = random_attention(rng, 3, 2, 5)
    a = residual_attention(w)
    np.testing.assert_allclose(a.sum(-1), 1.0)
    np.testing.assert_allclose(a[1], (0.5 * w[1].mean(0) + 0.5 * np.eye(5)))  # rows of w sum to 1: no rescale
    want = a[0]
    for layer in range(1, 3):
        want = a[layer] @ want
    got = rollout(w)
    np.testing.assert_allclose(got[-1], want, rtol=1e-12)
    np.testing.assert_allclose(got[0], a[0])
    np.testing.assert_allclose(got.sum(-1), 1.0)
    # a fully masked row (zeros) becomes all-self after the residual, never NaN
    w[0, :, 2] = 0.0
    assert np.isfinite(rollout(w)).all() and residual_attention(w)[0, 2, 2] == 1.0
    with pytest.raises(ShapeError, match="q_len == k_len"):
        rollout(np.ones((1, 1, 2, 3)) / 3)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize(("layers", "n", "seed"), [(1, 3, 0), (2, 3, 1), (2, 4, 2), (3, 3, 3)])
def test_flow_matches_edmonds_karp(layers: int, n: int, seed: int, solver: str) -> None:
    w = random_attention(np.random.default_rng(seed), layers, 2, n)
    got = flow(w, solver=solver)
    cap, _ = layered(w)
    bound = flow_error_bound(layers, n)
    for t in range(n):
        for s in range(n):
            want = edmonds_karp(cap, s, layers * n + t)
            assert abs(got[t, s] - want) <= bound, (t, s, got[t, s], want, bound)


@pytest.mark.parametrize("solver", SOLVERS)
def test_flow_matches_every_cut_on_a_tiny_graph(solver: str) -> None:
    w = random_attention(np.random.default_rng(7), 2, 1, 3)  # 9 nodes: 2**7 cuts per pair
    cap, n = layered(w)
    got = flow(w, solver=solver)
    for t in range(n):
        for s in range(n):
            assert got[t, s] == pytest.approx(min_cut_by_enumeration(cap, s, 2 * n + t), abs=flow_error_bound(2, 3))


def test_flow_of_identity_attention_and_coarse_scale() -> None:
    eye = np.broadcast_to(np.eye(4), (2, 3, 4, 4)).copy()
    np.testing.assert_allclose(flow(eye), np.eye(4))
    w = random_attention(np.random.default_rng(5), 2, 2, 4)
    fine, coarse = flow(w, targets=[1]), flow(w, targets=[1], scale=1000)
    assert np.abs(fine - coarse).max() <= flow_error_bound(2, 4, 1000)
    assert (fine <= 1.0 + 1e-9).all()
    with pytest.raises(InputError, match="out of range"):
        flow(w, targets=[4])
    with pytest.raises(InputError, match="2\\*\\*30"):
        flow(w, scale=2**31)


def test_spearman_matches_scipy() -> None:
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=11), rng.normal(size=11)
    y[3] = y[5]  # a tie
    assert spearman(x, y) == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
    assert np.isnan(spearman([1, 1, 1], [1, 2, 3]))


class TinyClassifier(nn.Module):
    """[CLS]-first sequence classifier: embeddings, two attnlab attention blocks, a linear head on [CLS]."""

    def __init__(self, vocab: int, d: int = 16) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(12, d)
        self.blocks = nn.ModuleList(MultiHeadAttention(d, 2) for _ in range(2))
        self.head = nn.Linear(d, 2)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids) + self.pos(torch.arange(ids.shape[1]))
        for block in self.blocks:
            x = x + block(x)[0]
        return self.head(x[:, 0])  # (B, 2)


def test_agreement_with_blank_out_on_a_trained_classifier() -> None:
    """The label is 1 when token 3 occurs: blanking it out must matter most, and the three scores
    (raw, rollout, flow) come back as Spearman correlations with that importance."""
    torch.manual_seed(0)
    vocab, blank = 10, 1  # 0 = [CLS], 1 = blank, 3 = the trigger
    model = TinyClassifier(vocab)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(150):
        ids = torch.randint(4, vocab, (64, 9))
        y = torch.randint(0, 2, (64,))
        pos = torch.randint(1, 9, (64,))
        ids[y == 1, pos[y == 1]] = 3
        ids[:, 0] = 0
        loss = nn.functional.cross_entropy(model(ids), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    ids = [0, 5, 7, 3, 9, 4, 6, 8, 5]

    def score(x: list[int]) -> float:
        with torch.no_grad():
            return float(model(torch.tensor([x])).softmax(-1)[0, 1])

    assert score(ids) > 0.9, "the classifier learned the task"
    importance = blank_out_importance(score, ids, blank, positions=range(1, 9))
    assert int(np.argmax(importance)) == 3 and importance[0] == 0.0
    with torch.no_grad(), capture(model) as trace:
        model(torch.tensor([ids]))
    w = trace.weights.double().numpy()
    result = spearman_agreement(w, importance, position=0, inputs=range(1, 9))
    print({k: round(v, 3) for k, v in result.items()})
    assert set(result) == {"raw", "rollout", "flow"}
    assert result["rollout"] == pytest.approx(spearman(rollout(w)[-1][0, 1:], importance[1:]))
    assert all(-1.0 <= v <= 1.0 for v in result.values())
    with pytest.raises(ShapeError, match="one value per token"):
        spearman_agreement(w, importance[:-1])


def sparse_flow(w: np.ndarray, keep: int, targets: list[int] | None = None, sources: list[int] | None = None,
                scale: int = FLOW_SCALE) -> np.ndarray:
    """The sparse solver with each node keeping only its ``keep`` strongest incoming middle edges at first."""
    n = w.shape[-1]
    every = list(range(n))
    return _flow_rows_sparse(residual_attention(w), targets or every, sources or every, scale, keep)


@pytest.mark.parametrize(("layers", "n", "seed"), [(1, 7, 0), (2, 9, 1), (3, 11, 4), (4, 13, 2), (6, 24, 3)])
def test_every_solver_gives_scipys_flow(layers: int, n: int, seed: int) -> None:
    """The sparse solver (the default, at its own keep and at keeps small enough that its graph must grow) and
    the OR-Tools solver on the whole graph give exactly scipy's answer (the solver flow used first), on the same
    integer capacities: the same floats, not merely close; targets and sources in any order, repeated."""
    w = random_attention(np.random.default_rng(seed), layers, 3, n) ** 2  # sharper: more uneven edges
    w /= w.sum(-1, keepdims=True)
    want = flow(w, solver="scipy")
    np.testing.assert_array_equal(flow(w), want)
    np.testing.assert_array_equal(flow(w, solver="ortools"), want)
    for keep in (0, 1, 3):
        np.testing.assert_array_equal(sparse_flow(w, keep), want)
    picked = {"targets": [n - 1, 0, 2], "sources": [3, 1, n - 2, 1]}
    want = flow(w, solver="scipy", **picked)
    np.testing.assert_array_equal(flow(w, **picked), want)
    np.testing.assert_array_equal(flow(w, solver="ortools", **picked), want)
    np.testing.assert_array_equal(sparse_flow(w, 1, **picked), want)
    want = flow(w, solver="scipy", scale=1000)
    np.testing.assert_array_equal(flow(w, scale=1000), want)
    np.testing.assert_array_equal(sparse_flow(w, 0, scale=1000), want)
    with pytest.raises(InputError, match="solver must be one of sparse, ortools, scipy"):
        flow(w, solver="networkx")


def test_sparse_solver_grows_its_graph_until_a_cut_certifies_it() -> None:
    """With only the residual edges, the target's incoming and the source's outgoing edges (keep=0), the
    sparse graph's own max flow (scipy's, computed here) falls short of the whole graph's for most pairs,
    and of the trivial cuts too: the sparse solver still returns the whole graph's value, so it added edges
    until a cut of the whole graph matched its flow."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_flow

    layers, n = 4, 9
    w = random_attention(np.random.default_rng(8), layers, 2, n)
    caps = np.rint(residual_attention(w) * FLOW_SCALE).astype(np.int64)  # (L, to, from)
    whole = flow(w, solver="scipy")
    short = 0
    for t in range(n):
        for s in range(n):
            kept = caps.copy()
            off = ~np.eye(n, dtype=bool)
            off[t, :] = off[:, s] = False  # into the target's tokens, out of the source's: kept
            kept[1:-1, off] = 0
            dense = np.zeros(((layers + 1) * n, (layers + 1) * n), dtype=np.int32)
            for layer in range(layers):
                dense[layer * n:(layer + 1) * n, (layer + 1) * n:(layer + 2) * n] = kept[layer].T
            alone = maximum_flow(csr_matrix(dense), s, layers * n + t).flow_value / FLOW_SCALE
            assert alone <= whole[t, s]
            short += alone < whole[t, s]
    assert short > n * n // 2
    np.testing.assert_array_equal(sparse_flow(w, 0), whole)


@pytest.fixture(scope="module")
def minilm_trace() -> np.ndarray:
    """``(6, 12, 40, 40)``: the bundled MiniLM's attention on 40 tokens of English, as captured."""
    model, tokenizer, _ = load_model("minilm")
    text = " ".join(["The quick brown fox jumps over the lazy dog, and the dog sleeps on."] * 4)
    inputs = tokenizer(text, return_tensors="pt", truncation=True, max_length=40)
    with torch.no_grad(), capture(model) as trace:
        model(**inputs)
    return trace.weights.numpy()


@pytest.mark.parametrize("layers", [1, 2, 3, 6])
def test_sparse_flow_on_a_real_trace(minilm_trace: np.ndarray, layers: int) -> None:
    """On MiniLM's attention (the first ``layers`` layers, 40 tokens: its 24 strongest edges into each node are a
    sparse graph), the default solver equals OR-Tools on the whole graph for every pair, and so does a sparse
    graph of 2 edges a node that must grow; one process or two."""
    w = minilm_trace[:layers]
    want = flow(w, solver="ortools")
    np.testing.assert_array_equal(flow(w), want)
    np.testing.assert_array_equal(sparse_flow(w, 2), want)
    picked = {"targets": [39, 0, 17], "sources": [5, 0, 39]}
    np.testing.assert_array_equal(flow(w, workers=2, **picked), flow(w, solver="scipy", **picked))


def test_flow_in_worker_processes_equals_one_process() -> None:
    w = random_attention(np.random.default_rng(11), 2, 2, 5)
    np.testing.assert_array_equal(flow(w, workers=2), flow(w))
    with pytest.raises(InputError, match="workers"):
        flow(w, workers=0)
