"""Each topic's verdict, asserted from its own computation (never from a stored answer)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from attnlab import explain
from attnlab.errors import ConfigError
from attnlab.functional import KERNELS


@pytest.mark.slow
def test_scaling_variance_saturation_and_both_halves_of_the_gradient_problem():
    n = explain.scaling(rows=400).numbers
    for d, ratio in n["var_over_d_k"].items():
        assert abs(ratio - 1) < 0.15, f"var(q·k)/d_k at d_k={d}: {ratio}"
    assert n["saturated_unscaled"] > 0.3 > n["saturated_scaled"]
    med, msq, big = n["median_grad_unscaled"], n["mean_sq_grad_unscaled"], n["d_k_big"]
    assert med[big] < med[n["d_k_peak"]] / 5  # the typical gradient vanishes...
    assert msq[big] > 100 * msq[n["d_k_small"]]  # ...while the tail explodes
    assert n["tail_ratio_unscaled"] > 100 * n["tail_ratio_scaled"]
    assert n["median_grad_scaled"][big] > 10 * med[big]


def test_softmax_matches_an_independent_computation_and_the_print_is_wrong():
    f = explain.softmax()
    scores = (10.0, 8.0, 2.0)
    z = sum(math.exp(s - 10.0) for s in scores)
    expected = [math.exp(s - 10.0) / z for s in scores]
    assert f.numbers["softmax"] == pytest.approx(expected, abs=1e-12)
    printed = f.numbers["printed"]
    assert [round(p, 2) for p in expected] != printed and f.numbers["wrong_entries"]
    assert "wrong" in f.verdict


def test_cosine_counterexample_flips_the_ranking_and_unit_vectors_agree():
    n = explain.cosine().numbers
    assert n["rank_flips"]
    assert (n["dot"][0] < n["dot"][1]) and (n["cosine"][0] > n["cosine"][1])
    assert n["unit_dot"] == pytest.approx(n["cosine"], abs=1e-12)


def test_temperature_below_one_sharpens_above_one_flattens():
    top = explain.temperature(rows=300).numbers["mean_max_weight"]
    assert top[0.5] > top[1.0] > top[2.0] > 1 / 16


def test_masks_both_tutorial_bugs_fail_and_attnlab_holds():
    n = explain.masking().numbers
    # bug 1: the tutorial's "masked" decoder sees the future; attnlab's causal layer does not
    assert n["tutorial_mha_pos0_change"] > 1e-3
    assert max(n["attnlab_mha_change"][:-1]) < 1e-6 < n["attnlab_mha_change"][-1]
    # bug 2: True = blocked fed to "mask == 0 is blocked" is anti-causal
    assert n["anti_causal_row0_future"] > 0.99
    assert n["attnlab_future_share"] == 0.0
    assert n["attnlab_given_blocked_row0_future"] > 0.99  # the same mask against attnlab's convention


def test_multihead_parameter_count_equals_single_head_and_dk_ne_dv_works():
    n = explain.multihead().numbers
    assert n["equal"]
    assert n["weights_multi"] == 4 * 512 * 512 == n["tutorial_formula"]
    assert n["biases_multi"] == 4 * 512
    assert n["dk_ne_dv_output"] == (2, 7, 24) and n["dk_ne_dv_weights"] == (2, 3, 7, 7)
    assert n["dk_ne_dv_value_proj"] == (3 * 11, 24) and n["dk_ne_dv_query_proj"] == (3 * 5, 24)


def test_additive_four_scores_are_distributions_and_concat_is_additive():
    n = explain.additive().numbers
    for name, s in n["row_sums"].items():
        assert s == pytest.approx(1.0, abs=1e-5), name
    assert n["concat_equals_additive_max_diff"] < 1e-6
    ws = [torch.tensor(w) for w in n["weights"].values()]
    assert all((a - b).abs().max() > 1e-3 for i, a in enumerate(ws) for b in ws[i + 1:])


def test_efficient_tutorial_rows_do_not_sum_to_one_and_shen_rows_do():
    n = explain.efficient().numbers
    assert n["implied_matches_output"] < 1e-5  # the implied matrix is what the snippet computes
    assert max(abs(n["tutorial_row_sum_min"] - 1), abs(n["tutorial_row_sum_max"] - 1)) > 0.5
    assert n["tutorial_row_sum_min"] < 0 and n["tutorial_negative_share"] > 0
    assert n["shen_row_sum_max_error"] < 1e-5 and n["shen_min_weight"] >= 0
    assert n["shen_implied_matches_attnlab"] < 1e-5


def test_cost_memory_grows_as_n_squared_for_dense_only():
    n = explain.cost(ns=(256, 1024), repeats=1).numbers  # n >> window, so local is O(n w)
    ratio = n["n_ratio"]
    assert n["memory_growth"]["dense"] > 0.6 * ratio**2
    assert n["memory_growth"]["linear"] < 1.5 * ratio
    assert n["memory_growth"]["local"] < 1.5 * ratio
    assert set(n["seconds"]) == {"dense", "linear", "local"} | ({"lsh"} & set(KERNELS))
    assert n["lsh_available"] == ("lsh" in KERNELS)
    # sparse patterns: Longformer's pairs grow as n, the Sparse Transformer's as n sqrt n, neither as n log n
    small, big = sorted(n["pattern_pairs"])
    per = {name: (n["pattern_pairs"][small][name], n["pattern_pairs"][big][name]) for name in n["pattern_pairs"][big]}
    longformer = next(v for k, v in per.items() if k.startswith("Longformer"))
    strided = next(v for k, v in per.items() if k.startswith("Sparse"))
    assert longformer[1] / big == pytest.approx(longformer[0] / small, rel=0.2)
    assert strided[1] / big**1.5 == pytest.approx(strided[0] / small**1.5, rel=0.2)
    assert strided[1] / (big * math.log2(big)) > 1.3 * strided[0] / (small * math.log2(small))


@pytest.mark.slow
def test_seeing_reads_the_bundled_model_and_a_trained_classifier():
    f = explain.seeing()
    n = f.numbers
    assert (n["n_layers"], n["n_heads"]) == (6, 12)
    assert n["tokens"][0] == "[CLS]" and n["tokens"][-1] == "[SEP]"
    assert all(0.0 <= s <= 1.0 for s in n["special_share"])
    assert not n["classifier_available"] and "--classifier zh-sentiment" in f.text  # it says the bundled one exists
    assert set(f.figures) == {"heatmap", "heads", "model"}
    folder = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "zh-trained"  # 2 x 4 heads, trained
    g = explain.seeing(classifier=folder)
    top = g.numbers["classifier_last_layer_top_keys"]
    assert g.numbers["classifier_available"] and len(top) == 3 and all(t in explain._seeing.REVIEW for t in top)
    assert "2 layers x 4 heads" in g.text and " ".join(top) in g.verdict


def test_unknown_topic_names_the_valid_ones():
    with pytest.raises(ConfigError) as err:
        explain.run("scalling")
    assert all(name in str(err.value) for name in explain.TOPICS)
