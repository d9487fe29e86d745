"""The induction circuit of the bundled `induction-2l`, found by the tools (attnlab.circuits.induction): the
detectors name previous-token heads in layer 0 and induction heads in layer 1 (all four of layer 1 share the work);
the strongest K-composition runs from one to the other; the head whose patching restores the most is an induction
head, and the induction heads together restore most of the logit difference; mean-ablating either group costs at
least 2 nats on the repeated half; path patching sends the previous-token head's effect through the induction head's
keys; attribution patching ranks the heads as exact patching does.
The same checks on an untrained model of the same shape fail, so they can. And the bundled model copies at every
length it was trained on."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnlab import locate
from attnlab.circuits.induction import InductionCircuit, find_induction_circuit, induction_inputs
from attnlab.models.lm import CausalLM, load_lm

pytestmark = pytest.mark.slow  # every tool on the model: ~5 CPU seconds


@pytest.fixture(scope="module")
def model() -> CausalLM:
    lm, _ = load_lm(locate("induction-2l").path)
    return lm


@pytest.fixture(scope="module")
def circuit(model: CausalLM) -> InductionCircuit:
    return find_induction_circuit(model)


def test_the_detectors_name_previous_token_heads_and_induction_heads(circuit: InductionCircuit) -> None:
    prev, ind = circuit.previous_token_head, circuit.induction_head
    assert prev[0] == 0 and ind[0] == 1
    assert circuit.scores["previous token"][prev] >= 0.5
    assert circuit.scores["induction"][ind] >= 0.4  # of at most ~0.5: only the second half can attend ahead
    assert all(layer == 0 for layer, _ in circuit.previous_token_heads)
    assert all(layer == 1 for layer, _ in circuit.induction_heads)
    assert circuit.scores["induction"][0].max() < 0.1 and circuit.scores["previous token"][1].max() < 0.2


def test_the_strongest_k_composition_runs_from_a_previous_token_head_to_an_induction_head(
        circuit: InductionCircuit) -> None:
    sender, receiver = circuit.k_pair
    assert sender in circuit.previous_token_heads and receiver in circuit.induction_heads
    # the issue asks for 10x the median of the others; scores are at most 1 and the others sit near the ~0.12 of
    # random matrices, so the raw ratio is small (1.7 on induction-2l); above that baseline it is large (24)
    assert circuit.k_composition_ratio >= 1.5
    assert circuit.k_composition_ratio_above_baseline >= 10


def test_patching_the_induction_heads_restores_the_logit_difference(circuit: InductionCircuit) -> None:
    assert circuit.clean_logit_diff - circuit.corrupt_logit_diff > 5  # the corruption matters
    assert circuit.top_patched in circuit.induction_heads  # the single head that restores the most
    assert circuit.patching[circuit.top_patched] >= 0.25
    assert circuit.group_patching >= 0.5
    for layer, head in circuit.previous_token_heads:  # their clean output alone points at the corrupt tokens
        assert circuit.patching[layer, head] < 0


def test_ablating_either_group_costs_two_nats(circuit: InductionCircuit) -> None:
    assert circuit.loss <= 1.0
    assert circuit.group_ablation["induction"] >= 2
    assert circuit.group_ablation["previous token"] >= 2


def test_path_patching_goes_through_the_keys(circuit: InductionCircuit) -> None:
    """The previous-token head's effect on the induction head arrives through its keys (K-composition): that path
    moves the metric more than any layer-0 head's path into its queries or values."""
    k = np.abs(circuit.paths["k"])
    assert (0, int(np.argmax(k))) in circuit.previous_token_heads
    assert k.max() > 3 * max(np.abs(circuit.paths["q"]).max(), np.abs(circuit.paths["v"]).max())
    assert k.max() >= 0.1


def test_attribution_patching_ranks_the_heads_as_exact_patching(circuit: InductionCircuit) -> None:
    assert circuit.spearman >= 0.8


def test_an_untrained_model_fails_the_same_checks(model: CausalLM) -> None:
    torch.manual_seed(0)
    fresh = CausalLM(model.config).eval()
    c = find_induction_circuit(fresh, induction_inputs(model.config.vocab_size, batch=8))
    assert c.scores["induction"].max() < 0.4 and c.scores["previous token"].max() < 0.5
    assert abs(c.clean_logit_diff - c.corrupt_logit_diff) < 1  # nothing to restore
    assert c.ablation.max() < 2 and max(c.group_ablation.values()) < 2


def test_the_bundled_model_copies_at_every_length(model: CausalLM) -> None:
    """L from 4 to 31 (the lengths it was trained on): on fresh sequences the repeated half's loss is low and
    its accuracy high at each length, not only on average (a fixed L would have taught "attend to t - L + 1")."""
    worst = []
    for length in range(4, 32):
        x = induction_inputs(model.config.vocab_size, length, 16, seed=1000 + length)
        with torch.no_grad():
            logits = model(x.clean)[:, x.positions]  # (B, L - 1, V)
        loss = float(F.cross_entropy(logits.flatten(0, 1), x.targets.flatten()))
        accuracy = float((logits.argmax(-1) == x.targets).float().mean())
        worst.append((loss, accuracy, length))
        assert loss <= 1.0 and accuracy >= 0.8, (length, loss, accuracy)
    print("worst length:", max(worst))
