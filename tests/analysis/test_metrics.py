"""Per-head metrics against plain float64 loops, on odd shapes, self and causal (bottom-right)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon

from attnlab.analysis import HeadSums, head_metrics, js_distances, js_sums, mds, per_query_metrics
from attnlab.analysis.metrics import entropy_ratio, offset_mass, punct_mass
from attnlab.errors import InputError, ShapeError


def random_weights(rng: np.random.Generator, layers: int, heads: int, q: int, k: int, causal: bool) -> np.ndarray:
    scores = rng.normal(size=(layers, heads, q, k)) * 2
    if causal:  # bottom-right: query i sees keys up to i + k - q
        allowed = np.arange(k)[None, :] <= (np.arange(q) + k - q)[:, None]
        scores = np.where(allowed, scores, -np.inf)
    w = np.exp(scores - scores.max(-1, keepdims=True))
    return w / w.sum(-1, keepdims=True)


TOKENS = ["[CLS]", "the", "cat", ",", "sat", "!?", "[SEP]"]


def reference(w: np.ndarray, tokens: list[str], causal: bool) -> dict[str, np.ndarray]:
    """Each metric by loops over layers, heads, queries and keys."""
    n_l, n_h, q, k = w.shape
    out = {name: np.full((n_l, n_h, q), np.nan) for name in
           ("entropy", "entropy_ratio", "cls", "sep", "punct", "self", "previous", "next", "distance", "band",
            "first")}
    for l_ in range(n_l):
        for h in range(n_h):
            for i in range(q):
                pos = i + k - q
                row = w[l_, h, i]
                ent = -sum(p * math.log(p) for p in row if p > 0)
                out["entropy"][l_, h, i] = ent
                allowed = pos + 1 if causal else k
                if allowed > 1:
                    out["entropy_ratio"][l_, h, i] = ent / math.log(allowed)
                out["cls"][l_, h, i] = row[0]
                out["sep"][l_, h, i] = row[k - 1]
                out["punct"][l_, h, i] = row[3] + row[5]
                for name, off in (("self", 0), ("previous", -1), ("next", 1)):
                    if 0 <= pos + off < k:
                        out[name][l_, h, i] = row[pos + off]
                out["distance"][l_, h, i] = sum(row[j] * abs(pos - j) for j in range(k))
                out["band"][l_, h, i] = sum(row[j] for j in range(k) if abs(pos - j) <= 2)
                if not causal or pos >= 1:  # a causal query at 0 sees only the first token: undefined
                    out["first"][l_, h, i] = row[0]
    return out


@pytest.mark.parametrize(("q", "causal"), [(7, False), (7, True), (4, True)])
def test_per_query_metrics_match_loops(q: int, causal: bool) -> None:
    rng = np.random.default_rng(q + causal)
    w = random_weights(rng, 2, 3, q, 7, causal)
    got = per_query_metrics(w, TOKENS, causal=causal)
    want = reference(w, TOKENS, causal)
    assert set(got) == set(want)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-12, atol=1e-12, err_msg=name)


def test_head_sums_reduce_like_the_concatenated_queries() -> None:
    """Sums over two inputs (and merged halves) give the mean over all their queries: a corpus needs no matrices."""
    rng = np.random.default_rng(0)
    a, b = random_weights(rng, 2, 3, 7, 7, False), random_weights(rng, 2, 3, 7, 7, False)
    sums = HeadSums().add(per_query_metrics(a, TOKENS)).add(per_query_metrics(b, TOKENS))
    merged = HeadSums().add(per_query_metrics(a, TOKENS)).merge(HeadSums().add(per_query_metrics(b, TOKENS)))
    for name, mean in sums.means().items():
        both = np.concatenate([per_query_metrics(x, TOKENS)[name] for x in (a, b)], axis=-1)
        np.testing.assert_allclose(mean, np.nanmean(both, axis=-1), rtol=1e-12)
        np.testing.assert_allclose(merged.means()[name], mean, rtol=1e-12)
    assert sums.count["previous"][0, 0] == 12  # 6 queries with a previous token in each input


def test_extremes() -> None:
    uniform = np.full((1, 1, 5, 5), 0.2)
    one_hot = np.eye(5)[None, None]
    assert np.allclose(entropy_ratio(uniform), 1.0) and np.allclose(entropy_ratio(one_hot), 0.0)
    assert np.allclose(offset_mass(one_hot, 0), 1.0)
    assert np.isnan(offset_mass(one_hot, -1)[..., 0]).all() and np.isnan(offset_mass(one_hot, 1)[..., -1]).all()
    causal_first = entropy_ratio(np.tril(np.ones((3, 3)))[None, None] / np.arange(1, 4)[:, None], causal=True)
    assert np.isnan(causal_first[..., 0]).all() and np.allclose(causal_first[..., 1:], 1.0)


def test_token_metrics_need_tokens_and_punctuation_rules() -> None:
    w = np.full((1, 1, 4, 4), 0.25)
    with pytest.raises(InputError, match="needs the key tokens"):
        per_query_metrics(w, None, names=["cls"])
    assert set(head_metrics(w)) == {"entropy", "entropy_ratio", "self", "previous", "next", "distance", "band",
                                    "first"}
    np.testing.assert_allclose(punct_mass(w, ["##.", "a", "Ġ,", "—"]), 0.75)
    with pytest.raises(ShapeError, match="3 key tokens"):
        punct_mass(w, ["a", "b", "c"])
    with pytest.raises(ShapeError, match="layers, heads, q, k"):
        per_query_metrics(np.ones((4, 4)))


def test_js_distances_match_scipy() -> None:
    rng = np.random.default_rng(3)
    w = random_weights(rng, 2, 2, 5, 5, True)  # zeros in the rows: 0 log 0 handled
    got = js_distances(w)
    heads = w.reshape(4, 5, 5)
    want = np.zeros((4, 4))
    for a in range(4):
        for b in range(4):
            div = [jensenshannon(heads[a, i], heads[b, i], base=2) ** 2 for i in range(5)]
            want[a, b] = math.sqrt(np.mean(div))
    np.testing.assert_allclose(got, want, atol=1e-7)
    assert np.allclose(np.diag(got), 0.0) and np.allclose(got, got.T)
    disjoint = np.stack([np.eye(4)[[0, 0, 0, 0]], np.eye(4)[[1, 1, 1, 1]]])[None]  # (1, 2, 4, 4)
    assert js_distances(disjoint)[0, 1] == pytest.approx(1.0)
    total, n = js_sums(np.concatenate([w, w], axis=2))  # sums over 10 queries = twice the 5
    np.testing.assert_allclose(np.sqrt(total / n), got, atol=1e-7)


def test_mds_recovers_planar_points() -> None:
    rng = np.random.default_rng(1)
    pts = rng.normal(size=(9, 2))
    d = np.linalg.norm(pts[:, None] - pts[None], axis=-1)
    emb = mds(d)
    np.testing.assert_allclose(np.linalg.norm(emb[:, None] - emb[None], axis=-1), d, atol=1e-9)
    with pytest.raises(ShapeError, match="square"):
        mds(np.ones((2, 3)))
