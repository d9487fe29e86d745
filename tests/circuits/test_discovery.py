"""Circuit discovery (attnlab.circuits discovery): the edge graph, the masked forward that patches one edge,
exact edge patching, EAP against its defining first-order formula (float64, 1e-6), EAP-IG, ACDC, faithfulness
with its bootstrap interval, the manifest; then the bundled induction-2l, where the answer is known."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlab import locate
from attnlab.circuits import (
    PromptPairs,
    Task,
    acdc,
    compare_scores,
    eap,
    eap_ig,
    edge_auc,
    exact_edge_patching,
    faithfulness_curve,
    graph_of,
    induction_task,
    manifest,
    masked_forward,
    run_with_cache,
    run_with_hooks,
    sender_outputs,
)
from attnlab.circuits._discover import alternative
from attnlab.errors import InputError
from attnlab.models.lm import CausalLM, LMConfig, load_lm

V = 11


def lm(mlp: bool = True, norm: bool = True, layers: int = 2, heads: int = 3) -> CausalLM:
    torch.manual_seed(0)
    model = CausalLM(LMConfig(vocab_size=V, context=16, d_model=4 * heads, n_heads=heads, n_layers=layers, mlp=mlp,
                              norm=norm)).double().eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.3)
    return model


def pairs(b: int = 4, t: int = 7, seed: int = 0) -> PromptPairs:
    g = torch.Generator().manual_seed(seed)
    clean = torch.randint(1, V, (b, t), generator=g)
    corrupt = torch.randint(1, V, (b, t), generator=g)
    targets = torch.randint(1, V, (b, 2), generator=g)
    return PromptPairs("toy", clean, corrupt, (t - 2, t - 1), targets, (targets % (V - 1)) + 1, seed)


TASK = Task("toy", "random pairs", lambda m, n, s: pairs(n, seed=s))


def test_the_graph_counts_every_edge_into_q_k_v_and_the_output() -> None:
    g = graph_of(lm(mlp=False, norm=False, layers=2, heads=4))  # induction-2l's shape
    assert g.n_edges == 81  # 1 x 12 into layer 0, 5 x 12 into layer 1, 9 into the output
    assert g.names[0] == "embed -> 0.0.q" and g.names[-1] == "1.3 -> output"
    g = graph_of(lm(mlp=True, layers=2, heads=3))
    # layer 0 heads: 1 sender x 9; m0: 4; layer 1 heads: 5 x 9; m1: 8; output: 9
    assert g.n_edges == 9 + 4 + 45 + 8 + 9
    assert "0.2 -> m0" in g.names and "m0 -> 1.1.k" in g.names and "1.0 -> m0" not in g.names


@pytest.mark.parametrize("mlp,norm", [(True, True), (False, False)])
def test_no_edge_patched_is_the_model_and_every_edge_corrupted_is_the_corrupted_run(mlp: bool, norm: bool) -> None:
    model, p = lm(mlp, norm), pairs()
    g = graph_of(model)
    with torch.no_grad():
        clean_out = model(p.clean)
        assert torch.allclose(masked_forward(g, model, p.clean, check=True).output, clean_out, atol=1e-10)
        alt = sender_outputs(g, model, p.corrupt)
        every = masked_forward(g, model, p.clean, alt, torch.ones(1, g.n_edges, dtype=torch.float64)).output
        assert torch.allclose(every, model(p.corrupt), atol=1e-9)  # every receiver reads the corrupted stream


def test_one_edge_patched_is_that_receivers_input_alone() -> None:
    """Every edge into head 1.1's keys corrupted = its keys patched from the corrupted run (hook_k, head 1 only);
    the edge embed -> output alone = the last stream less the clean embedding plus the corrupted one."""
    model, p = lm(), pairs()
    g = graph_of(model)
    alt = sender_outputs(g, model, p.corrupt)
    w = torch.zeros(1, g.n_edges, dtype=torch.float64)
    for i, name in enumerate(g.names):
        if name.endswith("-> 1.1.k"):
            w[0, i] = 1
    got = masked_forward(g, model, p.clean, alt, w).output
    _, cache = run_with_cache(model, p.corrupt, ["blocks.1.attn.hook_k"])

    def put(k: torch.Tensor) -> torch.Tensor:
        k = k.clone()
        k[:, :, 1] = cache["blocks.1.attn.hook_k"][:, :, 1]
        return k

    want, _ = run_with_hooks(model, p.clean, {"blocks.1.attn.hook_k": put})
    assert torch.allclose(got, want, atol=1e-10)

    clean = sender_outputs(g, model, p.clean)
    w = g.mask(["embed -> output"]).double()[None]
    got = masked_forward(g, model, p.clean, alt, w).output
    want, _ = run_with_hooks(model, p.clean, {"blocks.1.hook_resid_post": lambda x: x - clean[:, :, 0] + alt[:, :, 0]})
    assert torch.allclose(got, want, atol=1e-10)


@pytest.mark.parametrize("ablation", ["corrupt", "mean", "resample"])
def test_eap_is_the_first_order_term_of_exact_patching(ablation: str) -> None:
    """EAP's score of each edge = d/de m(edge carrying e of the alternative) at e = 0 (central differences,
    float64), to 1e-6."""
    model, p = lm(), pairs()
    g = graph_of(model)
    scores = eap(model, p, TASK, ablation=ablation, n_boot=10)
    _, alt = alternative(g, model, p, ablation)
    eps = 1e-5
    rng = np.random.default_rng(0)
    for e in rng.choice(g.n_edges, 12, replace=False):
        w = torch.zeros(2, g.n_edges, dtype=torch.float64)
        w[0, e], w[1, e] = eps, -eps
        with torch.no_grad():
            out = masked_forward(g, model, p.clean, alt, w).output
        b = len(p)
        m = torch.stack([TASK.metric(out[:b], p), TASK.metric(out[b:], p)])  # (2, B)
        fd = ((m[0] - m[1]) / (2 * eps)).numpy()
        np.testing.assert_allclose(scores.per_prompt[:, e], fd, atol=1e-6, rtol=0)


def test_eap_ig_with_one_step_is_eap_and_exact_patching_is_the_metric_change() -> None:
    model, p = lm(), pairs()
    a, b = eap(model, p, TASK, n_boot=10), eap_ig(model, p, TASK, steps=1, n_boot=10)
    np.testing.assert_allclose(a.per_prompt, b.per_prompt, atol=1e-10)
    ig = eap_ig(model, p, TASK, steps=4, n_boot=10)
    assert ig.steps == 4 and not np.allclose(ig.per_prompt, a.per_prompt)
    ex = exact_edge_patching(model, p, TASK, chunk=7, n_boot=10)
    g = graph_of(model)
    _, alt = alternative(g, model, p, "corrupt")
    e = 17
    with torch.no_grad():
        m1 = TASK.metric(masked_forward(g, model, p.clean, alt, g.mask([e]).double()[None]).output, p)
        m0 = TASK.metric(model(p.clean), p)
    np.testing.assert_allclose(ex.per_prompt[:, e], (m1 - m0).numpy(), atol=1e-10)
    sampled = exact_edge_patching(model, p, TASK, edges=[3, 5], n_boot=10)
    assert np.isnan(sampled.per_prompt[:, 0]).all() and not np.isnan(sampled.per_prompt[:, 3]).any()
    assert -1 <= compare_scores(a, ex)["spearman"] <= 1


def test_faithfulness_runs_from_empty_to_full_with_an_interval() -> None:
    model, p = lm(), pairs(b=6)
    g = graph_of(model)
    order = np.arange(g.n_edges)
    f = faithfulness_curve(model, p, TASK, order, ns=[0, 10, g.n_edges], n_boot=200, seed=3)
    np.testing.assert_allclose(f.value[[0, -1]], [0.0, 1.0], atol=1e-9)
    assert (f.low <= f.value + 1e-9).all() and (f.value <= f.high + 1e-9).all()
    again = faithfulness_curve(model, p, TASK, order, ns=[0, 10, g.n_edges], n_boot=200, seed=3)
    np.testing.assert_array_equal(f.high, again.high)  # seeded
    js = f.to_json()
    assert js["n_prompts"] == 6 and len(js["curve"]) == 3 and "cpr" in js and "cmd" in js


def test_acdc_keeps_everything_at_minus_infinity_and_nothing_at_infinity() -> None:
    model, p = lm(), pairs()
    n = graph_of(model).n_edges
    assert acdc(model, p, TASK, -np.inf).n_kept == n
    none = acdc(model, p, TASK, np.inf, objective="metric")
    assert none.n_kept == 0 and none.tries == n
    with pytest.raises(InputError, match="objective"):
        acdc(model, p, TASK, 0.1, objective="loss")


def test_the_manifest_names_what_a_circuit_came_from() -> None:
    model, p = lm(), pairs()
    m = manifest(model, "toy", TASK, p, "eap", "corrupt")
    assert len(m["model_sha256"]) == 64 and m["prompts_sha256"] == pairs().digest() and m["prompts"] == 4
    assert m["prompts_sha256"] != pairs(seed=1).digest()
    assert {"attnlab", "torch", "numpy", "python"} <= set(m["versions"])


def test_bad_input_is_one_clear_error() -> None:
    model, p = lm(), pairs()
    with pytest.raises(InputError, match="ablation"):
        eap(model, p, TASK, ablation="zero")
    with pytest.raises(InputError, match="weights"):
        masked_forward(graph_of(model), model, p.clean, sender_outputs(graph_of(model), model, p.clean),
                       torch.zeros(1, 3))
    with pytest.raises(InputError, match="at least 2"):
        induction_task().prompts(model, 1)


@pytest.fixture(scope="module")
def induction() -> tuple[CausalLM, PromptPairs]:
    model, _ = load_lm(locate("induction-2l").path)
    return model, induction_task().prompts(model, 24, seed=0)


def test_on_induction_2l_the_methods_find_the_k_composition_edges(induction: tuple[CausalLM, PromptPairs]) -> None:
    model, p = induction
    task = induction_task()
    ex = exact_edge_patching(model, p, task, n_boot=100)
    ig = eap_ig(model, p, task, n_boot=100)
    assert compare_scores(ig, ex)["spearman"] > 0.7
    g = graph_of(model)
    k_edges = [g.index(f"0.0 -> 1.{h}.k") for h in range(4)]
    assert (ex.mean[k_edges] < 0).all()  # corrupting the previous-token head's keys into the induction heads hurts
    truth = g.mask([f"0.{p_} -> 1.{h}.k" for p_ in (0, 2) for h in range(4)]).numpy()
    assert edge_auc(ig.mean, truth) > 0.6
    r = acdc(model, p, task, 0.1)
    assert {f"0.0 -> 1.{h}.k" for h in (0, 3)} <= set(r.kept_names())
    assert r.n_kept < g.n_edges / 2


def test_the_zh_induction_task_repeats_held_out_text() -> None:
    from attnlab.circuits import load_text_model, task_named

    tm = load_text_model("zh-lm")
    task = task_named("zh-induction", tm)
    p = task.prompts(tm.model, 4, seed=0)
    assert p.clean.shape == (4, 40) and (p.clean[:, :20] == p.clean[:, 20:]).all()
    assert (p.corrupt[:, 20:] == p.clean[:, 20:]).all() and (p.corrupt[:, :20] != p.clean[:, :20]).any()
    assert p.digest() == task.prompts(tm.model, 4, seed=0).digest()
    with torch.no_grad():
        assert (task.metric(tm.model(p.clean), p) > task.metric(tm.model(p.corrupt), p)).all()
    with pytest.raises(InputError, match="tokenizer"):
        task_named("zh-induction").prompts(tm.model, 4)


def test_the_zh_contrast_task_flips_the_clause_after_danshi() -> None:
    from attnlab.circuits import load_text_model, task_named

    tm = load_text_model("zh-sentiment")
    task = task_named("zh-contrast", tm)
    p = task.prompts(tm.model, 6, seed=1)
    differs = (p.clean != p.corrupt).any(0)
    assert differs.any() and not differs[:-4].any()  # only the clause after 但是 differs
    with torch.no_grad():
        assert (task.metric(tm.model(p.clean), p) > 0).all() and (task.metric(tm.model(p.corrupt), p) < 0).all()
    scores = eap(tm.model, p, task, n_boot=10)
    assert scores.per_prompt.shape == (6, graph_of(tm.model).n_edges) == (6, 110)
    with pytest.raises(InputError, match="at most"):
        task.prompts(tm.model, 500)
