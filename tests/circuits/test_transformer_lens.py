"""attnlab.circuits against TransformerLens on the same weights, in float64.

TransformerLens 4 has no HookedTransformer any more; its own model without Hugging Face is the native
``TransformerBridge`` (``transformer_lens.model_bridge.sources.native.boot``): pre-LN blocks with split q/k/v
projections and biases, rotary positions that rotate *adjacent* feature pairs ``(2i, 2i+1)`` (attnlab's layout;
``rotary_adjacent_pairs=True`` says so, and the native model uses that layout whatever the flag), exact GELU,
``attn_only`` and ``normalization_type=None`` for the attention-only toy.  attnlab's CausalLM maps onto it weight for
weight (the unembedding is the embedding, tied, with a zero bias).  Two things are adjusted, both TransformerLens's:
its rotary table is computed in float32 whatever the model's dtype, so the test rebuilds it with the same formula in
float64; and its patching functions store their results in a float32 tensor, so those are compared to 1e-6 (the
largest difference is printed on failure), not to float64 rounding.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlab import circuits as C
from attnlab.models.lm import CausalLM, LMConfig

pytestmark = [pytest.mark.crosscheck, pytest.mark.slow]

VOCAB, CTX, M, H, N = 11, 16, 12, 3, 2


def _pair(mlp: bool, norm: bool) -> tuple[CausalLM, object]:
    from transformer_lens.config import TransformerBridgeConfig
    from transformer_lens.model_bridge.sources.native import boot
    from transformer_lens.model_bridge.sources.native.model import NativeRotary

    torch.manual_seed(0)
    model = CausalLM(LMConfig(vocab_size=VOCAB, context=CTX, d_model=M, n_heads=H, n_layers=N, mlp=mlp,
                              norm=norm)).double().eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 1:  # biases and LayerNorm parameters away from their 0 / 1 start, so they count
                p.add_(torch.randn_like(p) * 0.3)
    cfg = TransformerBridgeConfig(d_model=M, n_layers=N, n_heads=H, d_head=M // H, d_mlp=4 * M, d_vocab=VOCAB,
                                  n_ctx=CTX, act_fn="gelu", positional_embedding_type="rotary",
                                  rotary_adjacent_pairs=True, normalization_type="LN" if norm else None,
                                  attn_only=not mlp, default_prepend_bos=False)
    bridge = boot(cfg, dtype=torch.float64).eval()
    sd = {"embed.weight": model.embed.weight, "unembed.weight": model.embed.weight,
          "unembed.bias": torch.zeros(VOCAB, dtype=torch.float64)}
    if norm:
        sd |= {"ln_final.weight": model.norm.weight, "ln_final.bias": model.norm.bias}
    parts = [("self_attn.q_proj", "attn.q"), ("self_attn.k_proj", "attn.k"), ("self_attn.v_proj", "attn.v"),
             ("self_attn.out_proj", "attn.o")]
    parts += [("norm1", "ln1")] if norm else []
    parts += [("ff.linear1", "mlp.in"), ("ff.linear2", "mlp.out")] if mlp else []
    parts += [("norm2", "ln2")] if mlp and norm else []
    for i, block in enumerate(model.blocks):
        for ours, theirs in parts:
            module = block.get_submodule(ours)
            sd[f"blocks.{i}.{theirs}.weight"] = module.weight
            sd[f"blocks.{i}.{theirs}.bias"] = module.bias
    bridge.load_state_dict({k: v.detach().clone() for k, v in sd.items()}, strict=True)
    for module in bridge.modules():
        if isinstance(module, NativeRotary):  # its table, in float64
            d = module.rotary_dim
            angles = torch.outer(torch.arange(CTX, dtype=torch.float64),
                                 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d))
            module.cos_cached = angles.cos().repeat_interleave(2, -1)
            module.sin_cached = angles.sin().repeat_interleave(2, -1)
    return model, bridge


def _close(name: str, ours: np.ndarray, theirs: np.ndarray, tol: float) -> None:
    worst = float(np.abs(np.asarray(ours) - np.asarray(theirs)).max())
    print(f"{name}: largest difference {worst:.3g} (tolerance {tol:g})")  # pytest -s shows the measured agreement
    assert worst < tol, f"{name}: largest difference {worst:.3g}"


SHAPES = [(True, True), (False, False), (False, True)]


@pytest.mark.parametrize(("mlp", "norm"), SHAPES)
def test_logits_cache_logit_lens_and_composition(mlp: bool, norm: bool) -> None:
    model, bridge = _pair(mlp, norm)
    ids = torch.randint(0, VOCAB, (2, 7))
    with torch.no_grad():
        tl_logits, tl_cache = bridge.run_with_cache(ids)  # type: ignore[attr-defined]
    logits, cache = C.run_with_cache(model, ids)
    _close("logits", logits, tl_logits, 1e-12)
    for i in range(N):
        for name in ("hook_resid_pre", "hook_resid_post", "attn.hook_pattern", "attn.hook_z", "attn.hook_q",
                     "attn.hook_k", "attn.hook_v", "hook_attn_out"):
            _close(name, cache[f"blocks.{i}.{name}"], tl_cache[f"blocks.{i}.{name}"], 1e-12)
    lens = tl_cache.logit_lens(positions=None, return_type="logits").values  # (N + 1, B, T, V)
    _close("logit lens", C.logit_lens(model, ids).logits, lens, 1e-6)
    ours = C.composition_scores(model)
    for mode in "QKV":
        _close(f"{mode}-composition", ours.of(mode.lower()),
               bridge.all_composition_scores(mode).detach().numpy(), 1e-6)  # type: ignore[attr-defined]


@pytest.mark.parametrize(("mlp", "norm"), SHAPES)
def test_activation_patching(mlp: bool, norm: bool) -> None:
    from transformer_lens import patching as P

    model, bridge = _pair(mlp, norm)
    clean, corrupt = torch.randint(0, VOCAB, (2, 6)), torch.randint(0, VOCAB, (2, 6))
    metric = C.logit_diff(3, 4, positions=[-2, -1])
    with torch.no_grad():
        _, clean_cache = bridge.run_with_cache(clean)  # type: ignore[attr-defined]
    _close("resid_pre", C.patch_resid(model, clean, corrupt, metric).values,
           P.get_act_patch_resid_pre(bridge, corrupt, clean_cache, metric), 1e-6)
    _close("attn_out", C.patch_resid(model, clean, corrupt, metric, "hook_attn_out").values,
           P.get_act_patch_attn_out(bridge, corrupt, clean_cache, metric), 1e-6)
    theirs = {"z": P.get_act_patch_attn_head_out_all_pos, "q": P.get_act_patch_attn_head_q_all_pos,
              "k": P.get_act_patch_attn_head_k_all_pos, "v": P.get_act_patch_attn_head_v_all_pos,
              "pattern": P.get_act_patch_attn_head_pattern_all_pos}
    for site, patch in theirs.items():
        _close(site, C.patch_heads(model, clean, corrupt, metric, site).values,  # type: ignore[arg-type]
               patch(bridge, corrupt, clean_cache, metric), 1e-6)
    by_pos = P.get_act_patch_attn_head_out_by_pos(bridge, corrupt, clean_cache, metric)  # (N, T, H)
    _close("z by position", C.patch_heads(model, clean, corrupt, metric, "z", by_position=True).values,
           np.asarray(by_pos).transpose(0, 2, 1), 1e-6)


@pytest.mark.parametrize(("mlp", "norm"), SHAPES)
def test_direct_logit_attribution(mlp: bool, norm: bool) -> None:
    """Per-head DLA against TransformerLens's per-head results through its final LayerNorm (``apply_ln=True``:
    centred, divided by the cached scale) read along gamma * (W_U[target] - W_U[distractor]).  (Its
    ``logit_attrs`` leaves gamma out on an unfolded bridge, and on a bridge folded by ``process_weights`` it
    divides by the scale once more, so it is not the reference.)"""
    model, bridge = _pair(mlp, norm)
    ids = torch.randint(0, VOCAB, (2, 7))
    with torch.no_grad():
        _, tl_cache = bridge.run_with_cache(ids)  # type: ignore[attr-defined]
        stack = tl_cache.stack_head_results(layer=-1, pos_slice=-1, apply_ln=norm)  # (N * H, B, M)
        gamma = model.norm.weight if norm else torch.ones(M, dtype=torch.float64)
        u = (model.embed.weight[3] - model.embed.weight[4]) * gamma
        for row in range(2):
            dla = C.direct_logit_attribution(model, ids, 3, 4, position=-1, row=row)
            _close("per-head DLA", dla.heads, (stack[:, row] @ u).numpy().reshape(N, H), 1e-6)
            assert abs(dla.total - dla.logit_diff) < 1e-5, (dla.total, dla.logit_diff)
