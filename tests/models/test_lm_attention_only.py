"""``LMConfig(mlp=False, norm=False)``: an attention-only causal LM (no feed-forward sublayer, no LayerNorm) that
saves and loads; a config.json without the fields still loads; the defaults leave every existing model as it was
(zh-lm loads, writes the same bytes and gives the same logits)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import torch

from attnlab._bundled import bundled_folder
from attnlab.errors import ConfigError
from attnlab.models.lm import CausalLM, LMConfig, load_lm, save_lm

TINY = {"vocab_size": 11, "context": 8, "d_model": 8, "n_heads": 2, "n_layers": 2}


def params(model: CausalLM) -> set[str]:
    return set(model.state_dict())


def test_attention_only_has_no_feed_forward_and_no_norm() -> None:
    full = CausalLM(LMConfig(**TINY))
    bare = CausalLM(LMConfig(**TINY, mlp=False, norm=False))
    assert any(".ff." in k for k in params(full)) and any("norm" in k for k in params(full))
    assert not any(".ff." in k or "norm" in k for k in params(bare)), sorted(params(bare))
    assert params(bare) == {k for k in params(full) if ".ff." not in k and "norm" not in k}
    no_mlp = CausalLM(LMConfig(**TINY, mlp=False))
    assert not any(".ff." in k or "norm2" in k for k in params(no_mlp)) and any("norm1" in k for k in params(no_mlp))
    no_norm = CausalLM(LMConfig(**TINY, norm=False))
    assert any(".ff." in k for k in params(no_norm)) and not any("norm" in k for k in params(no_norm))


def test_attention_only_is_the_sum_of_its_heads_in_float64() -> None:
    """With neither MLP nor norm the logits are (embed + sum of attention outputs) @ embed^T, computed here by hand
    from each block's attention module: nothing else is left in the forward."""
    torch.manual_seed(0)
    model = CausalLM(LMConfig(**TINY, mlp=False, norm=False)).double().eval()
    ids = torch.randint(0, TINY["vocab_size"], (3, 7))
    x = model.embed(ids)  # (B, L, M)
    for block in model.blocks:
        x = x + block.self_attn(x, causal=True)[0]  # (B, L, M)
    torch.testing.assert_close(model(ids), x @ model.embed.weight.T, rtol=0, atol=1e-12)


@pytest.mark.parametrize("mlp,norm", [(False, False), (False, True), (True, False)])
def test_the_fields_round_trip_through_config_json(tmp_path: Path, mlp: bool, norm: bool) -> None:
    torch.manual_seed(1)
    model = CausalLM(LMConfig(**TINY, mlp=mlp, norm=norm)).eval()
    save_lm(tmp_path, model, {"k": "v"})
    written = json.loads((tmp_path / "config.json").read_text())["config"]
    assert ("mlp" in written) == (not mlp) and ("norm" in written) == (not norm)
    back, meta = load_lm(tmp_path)
    assert back.config == model.config and meta == {"k": "v"}
    ids = torch.randint(0, TINY["vocab_size"], (2, 6))
    torch.testing.assert_close(back(ids), model(ids), rtol=0, atol=0)


def test_a_config_json_without_the_fields_loads_with_both_on(tmp_path: Path) -> None:
    model = CausalLM(LMConfig(**TINY)).eval()
    save_lm(tmp_path, model, {})
    header = json.loads((tmp_path / "config.json").read_text())
    assert "mlp" not in header["config"] and "norm" not in header["config"]  # the old format, byte for byte
    back, _ = load_lm(tmp_path)
    assert back.config.mlp is True and back.config.norm is True


@pytest.mark.parametrize("field", ["mlp", "norm"])
@pytest.mark.parametrize("value", [0, 1, "false", None])
def test_non_bool_fields_are_refused(field: str, value: object) -> None:
    with pytest.raises(ConfigError, match=rf"{field} must be True or False .*got"):
        LMConfig(**TINY, **{field: value})  # type: ignore[arg-type]


def test_zh_lm_is_unchanged(tmp_path: Path) -> None:
    """The bundled zh-lm loads with both fields on and, saved again, writes its own bytes (weights and config)."""
    folder = bundled_folder("zh-lm")
    model, meta = load_lm(folder)
    assert model.config.mlp and model.config.norm
    save_lm(tmp_path, model, meta)
    for name in ("model.safetensors", "config.json"):
        assert hashlib.sha256((tmp_path / name).read_bytes()).hexdigest() == \
            hashlib.sha256((folder / name).read_bytes()).hexdigest(), name
