"""QK attribution on Hugging Face causal language models (tiny random GPT-2, Llama, Qwen2 and Mistral from
tests/helpers/hf_models, float64): the table plus the mask's bias is the head's score, recomputed here apart from the
code under test (the projections' outputs in the model's eager run read by plain forward hooks, rotated by
transformers' own ``apply_rotary_pos_emb``), to 1e-10, and score differences along a row are the log-ratios of the
eager attention weights transformers returns; grouped-query heads read their group's key; Qwen2's projection biases
are in the ``bias`` row and column only; the model is left as it was; ``attnlab circuit --qk`` reads a saved
folder."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from helpers import hf_models
from helpers.cli import one_error_line

from attnlab.circuits import qk_attribution
from attnlab.cli import main
from attnlab.errors import InputError

pytest.importorskip("transformers")

IDS = torch.randint(1, hf_models.VOCAB, (10,), generator=torch.Generator().manual_seed(1))
CELLS = [(0, 0, 5, 2), (0, 3, 9, 9), (1, 1, 7, 0), (1, 2, 9, 4), (1, 3, 6, 6)]


def eager(model: Any) -> Any:
    """A copy of ``model`` running transformers' eager attention, as QK attribution reads it (the Llama family's eager
    softmax is float32: a later layer's input differs from the SDPA run's by about 1e-8 in float64)."""
    twin = copy.deepcopy(model)
    twin.set_attn_implementation("eager")
    return twin


def reference_scores(model: Any, ids: torch.Tensor, layer: int) -> torch.Tensor:
    """``(H, T, T)`` layer ``layer``'s pre-softmax scores (no mask) in the model's eager run: its projections' outputs
    caught by forward hooks, rotated as transformers rotates them, key heads repeated over their groups, times the
    module's ``scaling``."""
    model = eager(model)
    got: dict[str, torch.Tensor] = {}

    def keep(name: str) -> Any:
        def hook(_m: Any, _args: Any, out: torch.Tensor) -> None:
            got[name] = out.detach()
        return hook

    arch = model.config.model_type
    if arch == "gpt2":
        attn = model.transformer.h[layer].attn
        handles = [attn.c_attn.register_forward_hook(keep("qkv"))]
    else:
        attn = model.model.layers[layer].self_attn
        handles = [attn.q_proj.register_forward_hook(keep("q")), attn.k_proj.register_forward_hook(keep("k"))]
    try:
        with torch.no_grad():
            model(input_ids=ids[None], use_cache=False)
    finally:
        for h in handles:
            h.remove()
    d = attn.head_dim
    if arch == "gpt2":
        q, k, _ = got["qkv"][0].split(model.config.n_embd, dim=-1)
    else:
        q, k = got["q"][0], got["k"][0]
    t = ids.shape[0]
    q, k = q.view(t, -1, d).transpose(0, 1), k.view(t, -1, d).transpose(0, 1)  # (H, T, D), (Hkv, T, D)
    if arch != "gpt2":
        modeling = sys.modules[type(attn).__module__]
        cos, sin = model.model.rotary_emb(q, torch.arange(t)[None])
        q, k = modeling.apply_rotary_pos_emb(q[None], k[None], cos, sin)
        q, k = q[0], k[0]
    k = k.repeat_interleave(q.shape[0] // k.shape[0], dim=0)  # each query head h reads key head h // groups
    return (q @ k.transpose(-1, -2)) * attn.scaling  # (H, T, T)


def eager_weights(model: Any, ids: torch.Tensor) -> tuple[torch.Tensor, ...]:
    with torch.no_grad():
        out = eager(model)(input_ids=ids[None], use_cache=False, output_attentions=True)
    return tuple(w[0] for w in out.attentions)


@pytest.mark.parametrize("arch", hf_models.ARCHS)
def test_the_table_sums_to_the_models_own_score(arch: str) -> None:
    model = hf_models.model(arch)  # float64, 2 layers, 4 heads (the Llama family: 2 key/value heads)
    refs = [reference_scores(model, IDS, layer) for layer in range(2)]
    weights = eager_weights(model, IDS)
    worst = 0.0
    for layer, head, q, k in CELLS:
        r = qk_attribution(model, IDS, layer, head, q, k)
        assert r.sources == (("embed", "bias") if layer == 0 else ("embed", "0.0", "0.1", "0.2", "0.3", "m0", "bias"))
        assert r.mask_bias == 0.0  # a causal mask on an allowed pair adds nothing
        ref = float(refs[layer][head, q, k])
        worst = max(worst, abs(r.table.sum() + r.mask_bias - ref), abs(r.score - ref))
        # along a row the softmax's log-ratios are score differences: a check through transformers' eager attention
        if k != q:
            other = qk_attribution(model, IDS, layer, head, q, q)
            log_ratio = float(weights[layer][head, q, k].log() - weights[layer][head, q, q].log())
            assert abs((r.table.sum() - other.table.sum()) - log_ratio) < 1e-6
    assert worst < 1e-10
    gpt2 = arch == "gpt2"
    assert r.norm.startswith("LayerNorm" if gpt2 else "RMSNorm")
    assert r.positions.startswith("in embed" if gpt2 else "rotary")


@pytest.mark.parametrize("kv_heads", [1, 2])
def test_grouped_query_heads_read_their_groups_key(kv_heads: int) -> None:
    """The same model written with one key/value head per query head (each group's key and value weights repeated)
    gives every head the same table: head h reads key/value head h // (n_heads // n_kv_heads)."""
    grouped = hf_models.model("llama", kv_heads=kv_heads)
    full = hf_models.model("llama", kv_heads=4)
    groups = 4 // kv_heads
    state = {}
    for name, p in grouped.state_dict().items():
        if name.endswith(("k_proj.weight", "v_proj.weight")):
            p = p.view(kv_heads, -1, p.shape[-1]).repeat_interleave(groups, 0).reshape(-1, p.shape[-1])
        state[name] = p
    full.load_state_dict(state)
    with torch.no_grad():
        logits = grouped(input_ids=IDS[None], use_cache=False).logits
        assert torch.allclose(full(input_ids=IDS[None], use_cache=False).logits, logits, atol=1e-12)
    ref = reference_scores(grouped, IDS, 1)
    for head in range(4):
        r, r_full = qk_attribution(grouped, IDS, 1, head, 8, 3), qk_attribution(full, IDS, 1, head, 8, 3)
        assert abs(r.table.sum() - float(ref[head, 8, 3])) < 1e-10
        assert abs(r.table - r_full.table).max() < 1e-10


def test_qwen2s_projection_biases_are_in_the_bias_row_and_column_only() -> None:
    model = hf_models.model("qwen2")
    attn = model.model.layers[1].self_attn
    assert attn.q_proj.bias is not None and attn.k_proj.bias is not None
    r = qk_attribution(model, IDS, 1, 2, 9, 4)
    assert abs(r.table.sum() - float(reference_scores(model, IDS, 1)[2, 9, 4])) < 1e-10
    with torch.no_grad():
        attn.q_proj.bias.zero_()
        attn.k_proj.bias.zero_()
    r0 = qk_attribution(model, IDS, 1, 2, 9, 4)
    assert abs(r0.table.sum() - float(reference_scores(model, IDS, 1)[2, 9, 4])) < 1e-10
    assert abs(r0.table[:-1, :-1] - r.table[:-1, :-1]).max() < 1e-12  # the sources' own terms: unchanged
    assert abs(r0.table[-1] - r.table[-1]).max() > 1e-3 and abs(r0.table[:, -1] - r.table[:, -1]).max() > 1e-3


def test_the_model_is_left_as_it_was() -> None:
    from attnlab.capturing import _hf as capture_hf

    for arch in ("gpt2", "llama"):
        model = hf_models.model(arch)
        before_impl = model.config._attn_implementation
        state = {k: v.clone() for k, v in model.state_dict().items()}
        with torch.no_grad():
            before = model(input_ids=IDS[None], use_cache=False).logits
        qk_attribution(model, IDS, 1, 0, 6, 2)
        with pytest.raises(InputError, match="does not see key 7"):
            qk_attribution(model, IDS, 1, 0, 6, 7)
        with torch.no_grad():
            after = model(input_ids=IDS[None], use_cache=False).logits
        assert model.config._attn_implementation == before_impl
        assert torch.equal(before, after)
        assert all(torch.equal(v, state[k]) for k, v in model.state_dict().items())
        assert not capture_hf.LISTENERS and not capture_hf.EDITORS


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hf-lm")
    return {a: hf_models.folder(a, root / a) for a in ("gpt2", "llama")}  # float32, as save_pretrained writes them


def test_a_key_after_the_query_is_one_line(folders: dict[str, Path], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "x"
    assert main(["circuit", "--qk", "1.0", "--model", str(folders["llama"]), "--text", "When Mary and John went",
                 "--query", "1", "--key", "3", "--out", str(out)]) == 2
    assert "does not see key 3" in one_error_line(capsys, "circuit") and not out.exists()


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_circuit_qk_reads_a_saved_folder(arch: str, folders: dict[str, Path], tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "qk"
    assert main(["circuit", "--qk", "1.2", "--model", str(folders[arch]), "--text",
                 "When Mary and John went to the store", "--query", "6", "--key", "2", "--out", str(out)]) == 0
    js = json.loads((out / "qk.json").read_text(encoding="utf-8"))
    assert js["sources"] == ["embed", "0.0", "0.1", "0.2", "0.3", "m0", "bias"]
    assert abs(sum(map(sum, js["table"])) + js["mask_bias"] - js["score"]) < 1e-4
    printed = capsys.readouterr().out
    assert "head 1.2, query 6" in printed and ("RMSNorm" if arch == "llama" else "LayerNorm") in printed
