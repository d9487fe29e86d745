"""attnlab.circuits on Hugging Face causal language models (GPT-2, Llama, Qwen2, Mistral; grouped-query attention in
the Llama family), against TransformerLens 4.3's ``TransformerBridge`` wrapped around a copy of the same model, in
float64.  The bridge runs the model's own modules (it switches them to eager attention), so activations agree to
float64 rounding; TransformerLens's patching functions store their results in a float32 tensor, so those are
compared to 1e-6.  The Llama family's RMSNorm computes in float32 whatever the model's dtype, so what passes through it
(the final norm's scale, direct logit attribution) agrees to float32 rounding, and is compared to 1e-6."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from helpers import hf_models

from attnlab import circuits as C
from attnlab.errors import InputError

pytestmark = [pytest.mark.crosscheck, pytest.mark.slow]

ARCH_CLASS = {"gpt2": "GPT2LMHeadModel", "llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM",
              "mistral": "MistralForCausalLM"}
SITES = ("hook_resid_pre", "attn.hook_q", "attn.hook_k", "attn.hook_v", "attn.hook_pattern", "attn.hook_z",
         "hook_attn_out", "hook_resid_mid", "hook_mlp_out", "hook_resid_post")


def _close(name: str, ours: object, theirs: object, tol: float) -> None:
    a = np.asarray(torch.as_tensor(ours).detach().double())
    b = np.asarray(torch.as_tensor(theirs).detach().double())
    assert a.shape == b.shape, f"{name}: shapes {a.shape} and {b.shape}"
    worst = float(np.abs(a - b).max())
    print(f"{name}: largest difference {worst:.3g} (tolerance {tol:g})")
    assert worst < tol, f"{name}: largest difference {worst:.3g}"


def _pair(arch: str) -> tuple[torch.nn.Module, object]:
    from transformer_lens.model_bridge.sources._bridge_builder import build_bridge_from_module

    model = hf_models.model(arch)
    bridge = build_bridge_from_module(copy.deepcopy(model), ARCH_CLASS[arch], hf_config=model.config)
    return model, bridge.eval()


def _state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


@pytest.fixture(scope="module", params=hf_models.ARCHS)
def pair(request: pytest.FixtureRequest) -> tuple[str, torch.nn.Module, object]:
    return (request.param, *_pair(request.param))


def test_cache_logits_lens_and_dla_equal_transformer_lens(pair: tuple[str, torch.nn.Module, object]) -> None:
    arch, model, bridge = pair
    ids = torch.randint(0, hf_models.VOCAB, (2, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        own = model(ids).logits  # transformers' own forward (SDPA): the instruments must not change it
        tl_logits, tl = bridge.run_with_cache(ids)  # type: ignore[attr-defined]
    before = _state(model)
    logits, cache = C.run_with_cache(model, ids)
    _close("logits (eager) vs TransformerLens", logits, tl_logits, 1e-10)
    plain, _ = C.run_with_hooks(model, ids)
    _close("logits without a pattern hook vs transformers", plain, own, 1e-10)
    a = C.anatomy(model)
    for i in range(a.n_layers):
        for site in SITES:
            _close(f"{arch} blocks.{i}.{site}", cache[f"blocks.{i}.{site}"], tl[f"blocks.{i}.{site}"], 1e-10)
        stack = tl.stack_head_results(layer=i + 1, pos_slice=None, apply_ln=False)  # (layers <= i, heads)
        ours = cache[f"blocks.{i}.attn.hook_result"].permute(2, 0, 1, 3)  # (H, B, T, M)
        _close(f"{arch} head results {i}", ours, stack[-a.n_heads:], 1e-10)
    _close(f"{arch} final scale", cache["ln_final.hook_scale"], tl["ln_final.hook_scale"], 1e-6)
    lens = C.logit_lens(model, ids).logits  # (N + 1, B, T, V)
    resid = tl.accumulated_resid(apply_ln=False)  # (N + 1, B, T, M), before the final norm
    with torch.no_grad():
        theirs = model.lm_head(a.final_norm(resid))
    # (the bridge ran eager attention, whose softmax the Llama family computes in float32; the lens runs SDPA)
    _close(f"{arch} logit lens", lens, theirs, 1e-10 if arch == "gpt2" else 1e-6)
    w_u = model.lm_head.weight.double()
    for row in range(2):
        dla = C.direct_logit_attribution(model, ids, 3, 5, row=row)
        heads = tl.stack_head_results(layer=-1, pos_slice=-1, apply_ln=True)  # (N * H, B, M): centred (LN), / scale
        gamma = a.final_norm.weight.double()
        _close(f"{arch} per-head DLA", dla.heads.ravel(), (heads[:, row] * gamma) @ (w_u[3] - w_u[5]), 1e-6)
        assert abs(dla.total - dla.logit_diff) < 1e-6, (dla.total, dla.logit_diff)
    for mode in "QKV":
        _close(f"{arch} {mode}-composition", C.composition_scores(model).of(mode.lower()),
               bridge.all_composition_scores(mode).detach().numpy(), 1e-6)  # type: ignore[attr-defined]
    after = _state(model)
    assert all(torch.equal(before[k], after[k]) for k in before)
    with torch.no_grad():
        assert torch.equal(model(ids).logits, own), "the model's outputs changed after the instruments ran"
    assert model.config._attn_implementation == "sdpa"


def test_patching_equals_transformer_lens(pair: tuple[str, torch.nn.Module, object]) -> None:
    from transformer_lens import patching as P

    arch, model, bridge = pair
    g = torch.Generator().manual_seed(2)
    clean, corrupt = torch.randint(0, hf_models.VOCAB, (2, 6), generator=g), torch.randint(0, hf_models.VOCAB, (2, 6),
                                                                                           generator=g)
    metric = C.logit_diff(3, 4, positions=[-2, -1])
    with torch.no_grad():
        _, clean_cache = bridge.run_with_cache(clean)  # type: ignore[attr-defined]
    _close(f"{arch} resid_pre", C.patch_resid(model, clean, corrupt, metric).values,
           P.get_act_patch_resid_pre(bridge, corrupt, clean_cache, metric), 1e-6)
    theirs = {"z": P.get_act_patch_attn_head_out_all_pos, "q": P.get_act_patch_attn_head_q_all_pos,
              "k": P.get_act_patch_attn_head_k_all_pos, "v": P.get_act_patch_attn_head_v_all_pos,
              "pattern": P.get_act_patch_attn_head_pattern_all_pos}
    for site, patch in theirs.items():
        _close(f"{arch} {site}", C.patch_heads(model, clean, corrupt, metric, site).values,  # type: ignore[arg-type]
               patch(bridge, corrupt, clean_cache, metric), 1e-6)
    by_pos = P.get_act_patch_attn_head_out_by_pos(bridge, corrupt, clean_cache, metric)  # (N, T, H)
    _close(f"{arch} z by position", C.patch_heads(model, clean, corrupt, metric, "z", by_position=True).values,
           np.asarray(by_pos).transpose(0, 2, 1), 1e-6)


def test_path_patching_equals_a_transformer_lens_hook_implementation(
        pair: tuple[str, torch.nn.Module, object]) -> None:
    """Path patching from each layer-0 head into head 1.1's keys, against the same two-step procedure written on
    TransformerLens's hooks (it ships no path patching of its own)."""
    arch, model, bridge = pair
    g = torch.Generator().manual_seed(3)
    clean, corrupt = torch.randint(0, hf_models.VOCAB, (1, 7), generator=g), torch.randint(0, hf_models.VOCAB, (1, 7),
                                                                                           generator=g)
    metric = C.logit_diff(3, 4)
    ours = C.path_patch(model, clean, corrupt, metric, receiver=(1, 1), into="k")
    z = [f"blocks.{i}.attn.hook_z" for i in range(2)]
    with torch.no_grad():
        _, cc = bridge.run_with_cache(clean)  # type: ignore[attr-defined]
        _, kc = bridge.run_with_cache(corrupt)  # type: ignore[attr-defined]
        for head in range(C.anatomy(model).n_heads):
            def freeze(name: str, head: int = head) -> object:  # (the bridge's hook.name is its alias target)
                def hook(x: torch.Tensor, hook: object) -> torch.Tensor:
                    y = kc[name].clone()
                    if name == z[0]:
                        y[:, :, head] = cc[name][:, :, head]
                    return y

                return hook

            kept: dict[str, torch.Tensor] = {}
            bridge.run_with_hooks(corrupt, fwd_hooks=[(n, freeze(n)) for n in z] + [  # type: ignore[attr-defined]
                ("blocks.1.attn.hook_k", lambda x, hook, kept=kept: kept.setdefault("k", x.clone()))])
            kv = C.anatomy(model).n_kv_heads
            group = 1 // (C.anatomy(model).n_heads // kv)  # the key/value head query head 1 reads

            def put(x: torch.Tensor, hook: object, group: int = group,
                    kept: dict[str, torch.Tensor] = kept) -> torch.Tensor:
                y = x.clone()
                y[:, :, group] = kept["k"][:, :, group]
                return y

            out = bridge.run_with_hooks(corrupt, fwd_hooks=[("blocks.1.attn.hook_k", put)])  # type: ignore[attr-defined]
            _close(f"{arch} path 0.{head} -> 1.1 k", ours.values[0, head], float(metric(out)), 1e-6)


@pytest.mark.parametrize("rows", [1, 2])
@pytest.mark.parametrize("arch", hf_models.ARCHS)
def test_batched_patching_equals_one_run_a_cell(arch: str, rows: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cells side by side (one row: the blocks below the patched layer once, the stream repeated there; the logits
    of the metric's last positions only) give what one full run per cell gives."""
    from attnlab.circuits import _patch

    model = hf_models.model(arch)
    g = torch.Generator().manual_seed(4)
    clean, corrupt = (torch.randint(0, hf_models.VOCAB, (rows, 5), generator=g) for _ in range(2))
    metric = C.logit_diff(3, 4, positions=[-2, -1])
    assert metric.last == 2  # type: ignore[attr-defined]
    runs = [lambda site=site: C.patch_heads(model, clean, corrupt, metric, site, by_position=True).values
            for site in ("z", "k", "pattern")]
    runs.append(lambda: C.patch_resid(model, clean, corrupt, metric).values)
    batched = [run() for run in runs]
    monkeypatch.setattr(_patch, "BATCH_ROWS", 1)
    for got, run in zip(batched, runs, strict=True):
        _close(f"{arch} batched", got, run(), 1e-10)


def test_an_unsupported_architecture_is_refused_naming_the_supported_ones() -> None:
    import transformers as T

    torch.manual_seed(0)
    bert = T.BertModel(T.BertConfig(num_hidden_layers=1, hidden_size=32, num_attention_heads=2,
                                    intermediate_size=64, vocab_size=50))
    with pytest.raises(InputError, match=r"GPT-2 \(gpt2\), Llama \(llama\), Qwen2 \(qwen2\), Mistral \(mistral\)"):
        C.anatomy(bert)


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_ablation_and_attribution_patching(arch: str) -> None:
    """Ablation by zero, mean and resample equals the same edit written by hand, and attribution patching's estimate
    is the first-order change of exact patching (its ranking agrees with it)."""
    model = hf_models.model(arch)
    g = torch.Generator().manual_seed(5)
    ids, reference = (torch.randint(0, hf_models.VOCAB, (n, 6), generator=g) for n in (2, 4))
    metric = C.logit_diff(3, 4)
    zero = C.ablate(model, ids, metric, [(1, 2)], "zero")

    def hand(x: torch.Tensor) -> torch.Tensor:
        y = x.clone()
        y[:, :, 2] = 0
        return y

    out, _ = C.run_with_hooks(model, ids, {"blocks.1.attn.hook_z": hand})
    assert abs(zero.after - float(metric(out))) < 1e-12
    for how in ("mean", "resample"):
        ablated = C.ablate(model, ids, metric, [(0, 1), (1, 3)], how, reference=reference)  # type: ignore[arg-type]
        assert np.isfinite(ablated.after) and ablated.after != ablated.before
    clean, corrupt = (torch.randint(0, hf_models.VOCAB, (1, 6), generator=g) for _ in range(2))
    ap = C.attribution_patching(model, clean, corrupt, metric)
    assert ap.estimate.shape == (2, 4) and ap.spearman > 0.5, ap.spearman
