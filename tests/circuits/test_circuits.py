"""attnlab.circuits against float64 references of its own, and the properties that pin each intervention down."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlab import circuits as C
from attnlab.errors import InputError
from attnlab.functional.rotary import apply_rotary
from attnlab.models import AttentionClassifier, ClassifierConfig
from attnlab.models.bert import BertConfig, BertEncoder
from attnlab.models.lm import CausalLM, LMConfig

V = 13


def lm(mlp: bool = False, norm: bool = False, layers: int = 2) -> CausalLM:
    model = CausalLM(LMConfig(vocab_size=V, context=16, d_model=12, n_heads=3, n_layers=layers, mlp=mlp,
                              norm=norm)).double().eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.2)  # non-zero biases, norms away from 1, embeddings larger than 0.02
    return model


def inputs(b: int = 2, t: int = 7) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randint(0, V, (b, t)), torch.randint(0, V, (b, t))


VARIANTS = [(False, False), (True, True), (False, True), (True, False)]


def reference_heads(model: CausalLM, ids: torch.Tensor) -> list[torch.Tensor]:
    """Each layer's per-head results ``(B, T, H, M)`` of an attention-only, norm-free CausalLM, recomputed from its
    weights in float64 with explicit loops over heads (no attnlab layer code but rotary)."""
    x = model.embed.weight[ids].double()  # (B, T, M)
    out = []
    for block in model.blocks:
        attn = block.self_attn
        h, t = attn.n_heads, ids.shape[1]
        d = attn.q_proj.weight.shape[0] // h
        results = []
        total = torch.zeros_like(x)
        for head in range(h):
            rows = slice(head * d, (head + 1) * d)
            q = x @ attn.q_proj.weight[rows].T + attn.q_proj.bias[rows]  # (B, T, D)
            k = x @ attn.k_proj.weight[rows].T + attn.k_proj.bias[rows]
            v = x @ attn.v_proj.weight[rows].T + attn.v_proj.bias[rows]
            q, k = apply_rotary(q), apply_rotary(k)
            scores = q @ k.transpose(1, 2) / d**0.5  # (B, T, T)
            scores = scores.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
            r = scores.softmax(-1) @ v @ attn.out_proj.weight[:, rows].T  # (B, T, M)
            results.append(r)
            total = total + r
        out.append(torch.stack(results, 2))  # (B, T, H, M)
        x = x + total + attn.out_proj.bias
    return out


@torch.no_grad()
def test_cache_equals_a_float64_reference_and_the_model_output() -> None:
    model = lm()
    ids, _ = inputs()
    logits, cache = C.run_with_cache(model, ids)
    assert (logits - model(ids)).abs().max() < 1e-12  # the weights' readable path vs the fused one
    for i, ref in enumerate(reference_heads(model, ids)):
        assert (cache[f"blocks.{i}.attn.hook_result"] - ref).abs().max() < 1e-12
    assert set(cache.names) == set(C.hook_names(model))


@pytest.mark.parametrize(("mlp", "norm"), VARIANTS)
def test_edits_that_change_nothing_change_nothing_and_a_full_patch_is_the_clean_run(mlp: bool, norm: bool) -> None:
    model = lm(mlp, norm)
    clean, corrupt = inputs()
    ref = model(clean).detach()
    same = {name: (lambda x: x.clone()) for name in C.hook_names(model)
            if not name.endswith("hook_result") and not name.startswith("ln_final")}
    out, _ = C.run_with_hooks(model, clean, same)
    assert (out - ref).abs().max() < 1e-12  # the pattern edit recomputes z = pattern @ v: the same numbers
    _, cache = C.run_with_cache(model, clean)
    out, _ = C.run_with_hooks(model, corrupt, {"blocks.0.hook_resid_pre": lambda x: cache["blocks.0.hook_resid_pre"]})
    assert (out - ref).abs().max() < 1e-12  # the whole stream before the first layer is the whole input
    heads = {f"blocks.{i}.attn.hook_{s}": (lambda x, n=f"blocks.{i}.attn.hook_{s}": cache[n])
             for i in range(2) for s in ("q", "k", "v")}
    out, _ = C.run_with_hooks(model, clean, heads)
    assert (out - ref).abs().max() < 1e-12


@pytest.mark.parametrize(("mlp", "norm"), VARIANTS)
def test_residual_patching_properties(mlp: bool, norm: bool) -> None:
    model = lm(mlp, norm)
    clean, corrupt = inputs()
    corrupt[:, :3] = clean[:, :3]  # the first three tokens agree
    metric = C.logit_diff(4, 5)  # at the last position
    post = C.patch_resid(model, clean, corrupt, metric, "hook_resid_post")
    assert post.values.shape == (2, 7) and post.axes == ("layer", "position")
    assert abs(post.restored[-1, -1] - 1) < 1e-9  # the last stream at the read position is the whole answer
    assert np.abs(post.restored[-1, :-1]).max() < 1e-9  # the last layer's other positions are never read
    pre = C.patch_resid(model, clean, corrupt, metric)
    assert np.abs(pre.restored[0, :3]).max() < 1e-9  # where the inputs agree, patching changes nothing


@pytest.mark.parametrize(("mlp", "norm"), VARIANTS)
def test_direct_logit_attribution_sums_to_the_logit_difference(mlp: bool, norm: bool) -> None:
    model = lm(mlp, norm)
    ids, _ = inputs()
    for row in range(2):
        for position in (-1, 3):
            dla = C.direct_logit_attribution(model, ids, 2, 7, position=position, row=row)
            assert abs(dla.total - dla.logit_diff) < 1e-5
            assert dla.layers.shape == (2,) and dla.heads.shape == (2, 3)


@torch.no_grad()
def test_direct_logit_attribution_equals_the_reference_without_norms() -> None:
    model = lm()
    ids, _ = inputs()
    u = (model.embed.weight[2] - model.embed.weight[7]).double()
    refs = reference_heads(model, ids)
    dla = C.direct_logit_attribution(model, ids, 2, 7, position=4, row=1)
    assert np.abs(dla.heads - np.stack([(r[1, 4] @ u).numpy() for r in refs])).max() < 1e-12


@pytest.mark.parametrize(("mlp", "norm"), VARIANTS)
def test_logit_lens_ends_at_the_logits(mlp: bool, norm: bool) -> None:
    model = lm(mlp, norm).float()
    ids, _ = inputs()
    lens = C.logit_lens(model, ids)
    assert lens.logits.shape == (3, 2, 7, V)
    assert (lens.logits[-1] - model(ids)).abs().max() < 1e-5
    first = (model.norm(model.embed.weight[ids]) @ model.embed.weight.T)  # the embeddings alone, own statistics
    assert (lens.logits[0] - first).abs().max() < 1e-5


def test_composition_scores_equal_a_loop_over_pairs() -> None:
    model = lm(layers=3)
    comp = C.composition_scores(model)
    w = [[{n: getattr(b.self_attn, f"{n}_proj").weight.detach().double()[h * 4:(h + 1) * 4] for n in "qkv"}
          | {"o": b.self_attn.out_proj.weight.detach().double()[:, h * 4:(h + 1) * 4]} for h in range(3)]
         for b in model.blocks]
    for l1 in range(3):
        for h1 in range(3):
            ov = w[l1][h1]["v"].T @ w[l1][h1]["o"].T  # (M, M): x @ W_V @ W_O
            for l2 in range(3):
                for h2 in range(3):
                    qk = w[l2][h2]["q"].T @ w[l2][h2]["k"]  # (M, M): W_Q W_K^T
                    ov2 = w[l2][h2]["v"].T @ w[l2][h2]["o"].T
                    for mode, right in (("q", qk), ("k", qk.T), ("v", ov2)):
                        expect = (torch.linalg.norm(ov @ right) / torch.linalg.norm(ov) / torch.linalg.norm(right)
                                  if l1 < l2 else 0.0)
                        assert abs(comp.of(mode)[l1, h1, l2, h2] - float(expect)) < 1e-12
    edges = comp.strongest(4)
    assert len(edges) == 4 and edges[0][3] >= edges[-1][3] and all(e[1][0] < e[2][0] for e in edges)


def test_head_patching_shapes_and_a_last_layer_head_equals_its_path_to_the_logits() -> None:
    model = lm()
    clean, corrupt = inputs()
    metric = C.logit_diff([4, 5], [6, 7], positions=[-2, -1])
    z = C.patch_heads(model, clean, corrupt, metric, "z")
    assert z.values.shape == (2, 3) and z.axes == ("layer", "head")
    assert C.patch_heads(model, clean, corrupt, metric, "q", by_position=True).values.shape == (2, 3, 7)
    path = C.path_patch(model, clean, corrupt, metric)  # every head to the logits
    assert np.abs(path.values[1] - z.values[1]).max() < 1e-12  # nothing after the last layer to freeze
    assert z.top() == tuple(np.unravel_index(np.argmax(np.abs(z.restored)), z.restored.shape))


@pytest.mark.parametrize("into", ["q", "k", "v"])
def test_path_patching_equals_the_residual_route(into: str) -> None:
    """Sender 0.h -> receiver 1.r's q/k/v in a two-layer attention-only model: the receiver's input is the corrupted
    stream plus the sender's clean-minus-corrupted result, computed here through a residual edit."""
    model = lm(norm=True)
    clean, corrupt = inputs()
    metric = C.target_prob(3, positions=[-1])
    got = C.path_patch(model, clean, corrupt, metric, receiver=(1, 2), into=into, senders=[(0, 1)])  # type: ignore[arg-type]
    _, cc = C.run_with_cache(model, clean, ["blocks.0.attn.hook_result"])
    _, kc = C.run_with_cache(model, corrupt, ["blocks.0.attn.hook_result"])
    delta = cc["blocks.0.attn.hook_result"][:, :, 1] - kc["blocks.0.attn.hook_result"][:, :, 1]  # (B, T, M)
    name = f"blocks.1.attn.hook_{into}"
    _, kept = C.run_with_hooks(model, corrupt, {"blocks.1.hook_resid_pre": lambda x: x + delta}, keep=[name])

    def receiver(x: torch.Tensor) -> torch.Tensor:
        y = x.clone()
        y[:, :, 2] = kept[name][:, :, 2]
        return y

    out, _ = C.run_with_hooks(model, corrupt, {name: receiver})
    assert abs(got.values[0, 1] - float(metric(out))) < 1e-12
    assert np.isnan(got.values[1]).all() and np.isnan(got.values[0, [0, 2]]).all()


def test_ablation() -> None:
    model = lm()
    ids, other = inputs(1)
    metric = C.logit_diff(1, 2)
    zero = C.ablate(model, ids, metric, [(0, 1), (1, 2)])

    def zeros(h: int):
        def edit(x: torch.Tensor) -> torch.Tensor:
            y = x.clone()
            y[:, :, h] = 0
            return y
        return edit

    out, _ = C.run_with_hooks(model, ids, {"blocks.0.attn.hook_z": zeros(1), "blocks.1.attn.hook_z": zeros(2)})
    assert zero.after == pytest.approx(float(metric(out)), abs=1e-12)
    assert zero.before == float(metric(model(ids).detach()))
    same = C.ablate(model, ids, metric, [(1, 0)], "mean", reference=ids)  # the mean of one row is that row
    assert same.change == pytest.approx(0, abs=1e-12)
    assert C.ablate(model, ids, metric, [(1, 0)], "resample", reference=ids).change == pytest.approx(0, abs=1e-12)
    assert C.ablate(model, ids, metric, [(1, 0)], "resample", reference=other).change != 0


def test_attribution_patching_is_the_derivative_of_the_interpolation() -> None:
    model = lm(True, True)
    clean, corrupt = inputs()
    metric = C.logit_diff(3, 9)
    ap = C.attribution_patching(model, clean, corrupt, metric)
    _, cc = C.run_with_cache(model, clean)
    _, kc = C.run_with_cache(model, corrupt)
    eps = 1e-6
    for layer, head in ((0, 0), (1, 2)):
        name = f"blocks.{layer}.attn.hook_z"

        def nudge(x: torch.Tensor, s: float, name: str = name, head: int = head) -> torch.Tensor:
            y = x.clone()
            y[:, :, head] += s * (cc[name][:, :, head] - kc[name][:, :, head])
            return y

        up, _ = C.run_with_hooks(model, corrupt, {name: lambda x: nudge(x, eps)})
        down, _ = C.run_with_hooks(model, corrupt, {name: lambda x: nudge(x, -eps)})
        slope = (float(metric(up)) - float(metric(down))) / (2 * eps)
        assert ap.estimate[layer, head] == pytest.approx(slope, rel=1e-5, abs=1e-8)
    assert ap.exact.shape == (2, 3) and -1 <= ap.spearman <= 1


def test_metrics() -> None:
    logits = torch.randn(2, 5, V, dtype=torch.float64)
    assert float(C.logit_diff(1, 2)(logits)) == pytest.approx(float((logits[:, -1, 1] - logits[:, -1, 2]).mean()))
    assert float(C.target_prob(3, [0, 2])(logits)) == pytest.approx(
        float(logits[:, [0, 2]].softmax(-1)[..., 3].mean()))
    targets = torch.randint(0, V, (2, 5))
    ce = torch.nn.functional.cross_entropy(logits[:, 1:].reshape(-1, V), targets[:, 1:].reshape(-1))
    assert float(C.loss_on(targets, [1, 2, 3, 4])(logits)) == pytest.approx(float(ce))
    assert float(C.logit_diff(1, 0)(torch.tensor([[0.0, 2.0]]))) == 2.0  # a classifier's (B, C)
    assert np.isnan(C.restored(1.0, 2.0, 2.0))


@pytest.mark.parametrize("norm_first", [True, False])
def test_the_classifier_encoder(norm_first: bool) -> None:
    model = AttentionClassifier(ClassifierConfig(vocab_size=V, d_model=12, n_heads=3, n_layers=2, dropout=0.0,
                                                 max_length=9, norm_first=norm_first)).double().eval()
    clean, corrupt = torch.randint(1, V, (2, 6)), torch.randint(1, V, (2, 6))
    out, cache = C.run_with_cache(model, clean)
    assert (out - model(clean)).abs().max() < 1e-12 and cache["blocks.1.attn.hook_pattern"].shape == (2, 3, 6, 6)
    metric = C.logit_diff(1, 0)
    heads = C.patch_heads(model, clean, corrupt, metric)
    assert heads.values.shape == (2, 3)
    every = {f"blocks.{i}.hook_resid_post": (lambda x, i=i: cache[f"blocks.{i}.hook_resid_post"]) for i in (1,)}
    patched, _ = C.run_with_hooks(model, corrupt, every)
    assert (patched - out).abs().max() < 1e-12
    assert C.composition_scores(model).k.shape == (2, 3, 2, 3)
    with pytest.raises(InputError, match="unembedding"):
        C.logit_lens(model, clean)


def test_the_bert_encoder() -> None:
    cfg = BertConfig(vocab_size=V, hidden_size=12, num_hidden_layers=2, num_attention_heads=3, intermediate_size=20,
                     max_position_embeddings=10, type_vocab_size=2, layer_norm_eps=1e-12)
    model = BertEncoder(cfg).double().eval()
    clean, corrupt = inputs(1, 6)
    out, cache = C.run_with_cache(model, clean)
    assert (out - model(clean)).abs().max() < 1e-12 and "blocks.0.hook_resid_mid" in cache
    metric = lambda h: h[:, 0, 0].mean()  # noqa: E731  any scalar of the output
    resid = C.patch_resid(model, clean, corrupt, metric, "hook_resid_mid")
    assert resid.values.shape == (2, 6)
    assert abs(C.patch_resid(model, clean, corrupt, metric, "hook_resid_post").restored[-1, 0] - 1) < 1e-9


def test_bad_input() -> None:
    model = lm()
    clean, corrupt = inputs()
    metric = C.logit_diff(1, 2)
    with pytest.raises(InputError, match=r"\(2, 7\) \(clean\) and \(2, 5\)"):
        C.patch_resid(model, clean, corrupt[:, :5], metric)
    with pytest.raises(InputError, match=r"sender 1\.0 is not below receiver 1\.1"):
        C.path_patch(model, clean, corrupt, metric, receiver=(1, 1), senders=[(1, 0)])
    with pytest.raises(InputError, match=r"no head is below receiver 0\.1"):
        C.path_patch(model, clean, corrupt, metric, receiver=(0, 1))
    with pytest.raises(InputError, match="does not exist"):
        C.path_patch(model, clean, corrupt, metric, receiver=(2, 0))
    with pytest.raises(InputError, match="unknown hook points"):
        C.run_with_hooks(model, clean, {"blocks.0.hook_nothing": lambda x: x})
    with pytest.raises(InputError, match="CausalLM"):
        C.run_with_cache(torch.nn.Linear(2, 2), clean)
    with pytest.raises(InputError, match="vocabulary"):
        C.direct_logit_attribution(model, clean, V, 0)
    with pytest.raises(InputError, match="same shape"):
        C.run_with_hooks(model, clean, {"blocks.0.attn.hook_z": lambda x: x[:, :1]})
    with pytest.raises(InputError, match="reference"):
        C.ablate(model, clean, metric, [(0, 0)], "mean")


def _own_models() -> list[tuple[str, torch.nn.Module]]:
    cfg = BertConfig(vocab_size=V, hidden_size=12, num_hidden_layers=2, num_attention_heads=3, intermediate_size=20,
                     max_position_embeddings=10, type_vocab_size=2, layer_norm_eps=1e-12)
    classifier = AttentionClassifier(ClassifierConfig(vocab_size=V, d_model=12, n_heads=3, n_layers=2, dropout=0.0,
                                                      max_length=9, norm_first=True)).double().eval()
    return [("lm", lm(mlp=True, norm=True)), ("classifier", classifier), ("bert", BertEncoder(cfg).double().eval())]


@pytest.mark.parametrize("rows", [1, 2])
@pytest.mark.parametrize("which", ["lm", "classifier", "bert"])
def test_batched_patching_equals_one_run_a_cell(which: str, rows: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cells run side by side (a one-row input: the blocks below the patched layer once, the stream repeated there)
    give what one run per cell gives, for every site."""
    from attnlab.circuits import _patch

    model = dict(_own_models())[which]
    clean, corrupt = torch.randint(1, V, (rows, 6)), torch.randint(1, V, (rows, 6))
    metric = (lambda h: h[:, 0, :3].sum(-1).mean()) if which == "bert" else C.logit_diff(1, 0)
    runs = [lambda site=site: C.patch_heads(model, clean, corrupt, metric, site).values
            for site in ("z", "q", "pattern")]
    runs.append(lambda: C.patch_resid(model, clean, corrupt, metric, "hook_resid_mid").values)
    batched = [run() for run in runs]
    monkeypatch.setattr(_patch, "BATCH_ROWS", 1)
    for got, run in zip(batched, runs, strict=True):
        assert np.abs(got - run()).max() < 1e-10
