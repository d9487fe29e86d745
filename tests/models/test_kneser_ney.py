"""The Kneser-Ney baseline against a brute-force reading of Chen & Goodman's formulas, and its distributions sum
to one over the vocabulary."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from attnlab.errors import ConfigError, InputError
from attnlab.models.kneser_ney import KneserNey, bits_per_token, discounts


def brute_force(train: list[int], order: int, V: int):
    """P(w | history) by the formulas, over dicts of tuples: raw counts at the top order, continuation counts below."""
    grams = {order: Counter(tuple(train[i:i + order]) for i in range(len(train) - order + 1))}
    for k in range(order - 1, 0, -1):
        grams[k] = Counter(g[1:] for g in grams[k + 1])  # distinct left extensions of each k-gram
    d = {k: discounts(np.array(list(c.values()))) for k, c in grams.items()}

    def p(w: int, history: tuple[int, ...], k: int) -> float:
        if k == 0:
            return 1.0 / V
        lower = p(w, history[1:] if len(history) >= k else history, k - 1) if k > 1 else 1.0 / V
        if len(history) < k - 1:
            return lower
        h = history[len(history) - (k - 1):] if k > 1 else ()
        row = {g[-1]: c for g, c in grams[k].items() if g[:-1] == h}
        total = sum(row.values())
        if total == 0:
            return lower
        D = d[k]
        gamma = sum(D[min(c, 3) - 1] for c in row.values()) / total
        c = row.get(w, 0)
        return max(c - (D[min(c, 3) - 1] if c else 0.0), 0.0) / total + gamma * lower

    def prob(w: int, history: tuple[int, ...]) -> float:
        return p(w, tuple(history[max(0, len(history) - (order - 1)):]), order)

    return prob


@pytest.mark.parametrize("order", [1, 2, 3, 5])
def test_matches_the_formulas_and_sums_to_one(order: int) -> None:
    V = 7
    rng = np.random.default_rng(order)
    # a stream with structure (repeats) and noise, so that counts of 1, 2, 3 and 4+ all occur
    base = rng.integers(0, V, 40)
    train = np.concatenate([base, base[:25], rng.integers(0, V, 60), base[5:30]])
    model = KneserNey.fit(train, order, V)
    prob = brute_force(train.tolist(), order, V)
    test = rng.integers(0, V, 30)
    got = 2.0 ** model.log2_probs(test)
    want = [prob(int(test[t]), tuple(test[:t].tolist())) for t in range(len(test))]
    assert np.max(np.abs(got - want)) < 1e-12, np.max(np.abs(got - want))
    for history in ([], [3], [2, 5], [4, 1, 3], [int(x) for x in train[:6]], [6, 6, 6, 6], [int(x) for x in test[:4]]):
        dist = model.distribution(history)
        assert dist.shape == (V,) and (dist > 0).all()
        assert abs(dist.sum() - 1.0) < 1e-12, dist.sum()
        want_row = [prob(w, tuple(history)) for w in range(V)]
        assert np.max(np.abs(dist - want_row)) < 1e-12
    # the batched teacher distributions (ngram_teach): every position of every row, each row its own history
    windows = np.stack([test[:9], test[9:18], train[:9]])  # (3, 9)
    batched = model.distributions(windows)  # (3, 9, V) float32
    assert batched.shape == (3, 9, V) and batched.dtype == np.float32
    for b, row in enumerate(windows):
        for t in range(9):
            want_row = [prob(w, tuple(int(x) for x in row[: t + 1])) for w in range(V)]
            assert np.max(np.abs(batched[b, t] - want_row)) < 1e-6, (b, t)


def test_a_known_small_example() -> None:
    # "abab" with V = 2 (a=0, b=1), bigrams: ab x2, ba x1 -> top-order counts {ab: 2, ba: 1}.
    # n1 = 1, n2 = 1: Y = 1/3, D1 = 1 - 2 Y n2/n1 = 1/3, D2 = 2 - 3 Y n3/n2 = 2.
    # Unigram continuation counts: b preceded by {a} -> 1, a preceded by {b} -> 1; n1 = 2, n2 = 0: fixed D = 0.5.
    # P1(b) = (1 - 0.5)/2 + (0.5 + 0.5)/2 * 1/2 = 0.5.  P2(b | a) = (2 - 2)/2 + (2/2) * 0.5 = 0.5 (D2 eats all).
    model = KneserNey.fit(np.array([0, 1, 0, 1]), 2, 2)
    assert model.distribution([0]).tolist() == pytest.approx([0.5, 0.5])
    # P2(a | b) = (1 - 1/3)/1 + (1/3)/1 * 0.5 = 5/6
    assert model.distribution([1]).tolist() == pytest.approx([5 / 6, 1 / 6])


def test_more_data_of_a_pattern_lowers_the_bits() -> None:
    pattern = np.tile(np.arange(5), 50)
    model = KneserNey.fit(pattern, 3, 5)
    assert bits_per_token(model.log2_probs(np.tile(np.arange(5), 4))) < 0.5


def test_bad_input() -> None:
    with pytest.raises(ConfigError, match="order"):
        KneserNey.fit(np.array([0, 1]), 0, 2)
    with pytest.raises(InputError, match=r"0\.\.1"):
        KneserNey.fit(np.array([0, 1, 2]), 2, 2)
    with pytest.raises(ConfigError, match="int64"):
        KneserNey.fit(np.array([0, 1, 2]), 6, 10_000)
