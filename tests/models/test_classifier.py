"""AttentionClassifier: shapes, padding always masked, positions, capture, its file format."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save

from attnlab import capture
from attnlab._io import safetensors_bytes
from attnlab.errors import ConfigError, InputError, ModelLoadError
from attnlab.models import AttentionClassifier, ClassifierConfig, load_classifier, save_classifier
from attnlab.models.classifier import sinusoids

KERNELS = [("dense", {}), ("memory_efficient", {}), ("local", {"window": 2}), ("linear", {}), ("efficient", {})]


def tiny(**options: object) -> AttentionClassifier:
    torch.manual_seed(0)
    base: dict[str, object] = {"d_model": 12, "n_heads": 3, "n_layers": 2, "dropout": 0.0, "max_length": 9}
    return AttentionClassifier(ClassifierConfig(23, n_classes=3, **{**base, **options})).eval()


@pytest.mark.parametrize("pooling", ["cls", "mean", "attention"])
@pytest.mark.parametrize(("kernel", "options"), KERNELS)
def test_padding_changes_nothing(pooling: str, kernel: str, options: dict[str, object]) -> None:
    """The same text gives the same logits alone and padded inside a batch: padding is always masked."""
    model = tiny(pooling=pooling, kernel=kernel, kernel_options=options)
    alone = model(torch.tensor([[2, 5, 6, 7, 11]]))  # (1, C)
    batch = model(torch.tensor([[2, 5, 6, 7, 11, 0, 0, 0, 0], [2, 9, 9, 9, 9, 9, 9, 9, 4]]))  # (2, C)
    assert alone.shape == (1, 3) and batch.shape == (2, 3)
    torch.testing.assert_close(batch[:1], alone, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("positional", ["sinusoidal", "learned", "none"])
def test_positions_matter_unless_none(positional: str) -> None:
    model = tiny(positional=positional, pooling="mean", n_layers=1)
    a = model(torch.tensor([[2, 5, 6, 7]]))
    b = model(torch.tensor([[2, 7, 6, 5]]))  # the same tokens in another order
    moved = (a - b).abs().max().item()
    assert (moved < 1e-6) if positional == "none" else (moved > 1e-4), moved


def test_sinusoids_match_the_formula() -> None:
    pe = sinusoids(11, 6)
    for p in (0, 1, 7, 10):
        for i in range(3):
            angle = p / 10000 ** (2 * i / 6)
            assert math.isclose(pe[p, 2 * i].item(), math.sin(angle), abs_tol=1e-6)
            assert math.isclose(pe[p, 2 * i + 1].item(), math.cos(angle), abs_tol=1e-6)


def test_capture_records_every_layer_and_the_pooling() -> None:
    model = tiny(pooling="attention")
    ids = torch.tensor([[2, 5, 6, 7, 0, 0], [2, 8, 9, 10, 11, 12]])
    with capture(model) as trace:
        model(ids)
    kinds = [r.kind for r in trace.records]
    assert kinds == ["self", "self", "cross"]
    for r in trace.records:
        w = r.weights  # (B, H, q, k)
        assert w.shape[0] == 2 and w.shape[-1] == 6
        assert torch.all(w[0, ..., 4:] == 0), "padding received attention"
        torch.testing.assert_close(w.sum(-1)[1], torch.ones_like(w.sum(-1)[1]))
    assert trace.records[0].weights.shape[1:3] == (3, 6)  # 3 heads, 6 queries
    assert trace.records[2].weights.shape[1:3] == (1, 1)  # one pooling query


def test_tutorial_model_is_zero_layers_and_attention_pooling() -> None:
    model = tiny(n_layers=0, pooling="attention")
    assert model.encoder is None
    with capture(model) as trace:
        model(torch.tensor([[2, 5, 6]]))
    assert [r.kind for r in trace.records] == ["cross"]


def test_bad_config_and_bad_ids() -> None:
    with pytest.raises(ConfigError, match="pooling='cls' with n_layers=0"):
        ClassifierConfig(10, n_layers=0, pooling="cls")
    with pytest.raises(ConfigError, match="pooling"):
        ClassifierConfig(10, pooling="max")
    with pytest.raises(ConfigError, match="pad_id"):
        ClassifierConfig(10, pad_id=10)
    model = tiny()
    with pytest.raises(InputError, match="at most 9"):
        model(torch.zeros(1, 10, dtype=torch.long))
    with pytest.raises(InputError, match=r"\[0, 23\)"):
        model(torch.tensor([[2, 23]]))
    with pytest.raises(InputError, match="int64"):
        model(torch.zeros(1, 3))


def test_file_round_trip_and_corruption(tmp_path: Path) -> None:
    model = tiny(positional="learned", pooling="attention")
    path = tmp_path / "model.safetensors"
    save_classifier(path, model, {"note": "hello"})
    loaded, meta = load_classifier(path)
    assert meta["note"] == "hello" and loaded.config == model.config
    ids = torch.tensor([[2, 3, 4, 5]])
    torch.testing.assert_close(loaded(ids), model(ids), atol=0, rtol=0)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelLoadError, match="corrupt"):
        load_classifier(path)


def test_the_same_weights_and_header_are_the_same_bytes(tmp_path: Path) -> None:
    tensors = {"b.w": torch.ones(2, dtype=torch.float16), "a": torch.arange(3.0)}
    meta = {f"key{i}": str(i) for i in range(8)}
    assert len({save(tensors, metadata=meta) for _ in range(10)}) > 1  # the library's order changes per save
    written = {safetensors_bytes(tensors, meta) for _ in range(10)}
    assert len(written) == 1 and safetensors_bytes(tensors, dict(reversed(meta.items()))) in written
    data = written.pop()
    assert int.from_bytes(data[:8], "little") % 8 == 0
    (tmp_path / "t.safetensors").write_bytes(data)
    with safe_open(str(tmp_path / "t.safetensors"), framework="pt") as f:
        assert f.metadata() == meta and torch.equal(f.get_tensor("a"), tensors["a"])
        assert torch.equal(f.get_tensor("b.w"), tensors["b.w"])
    model = tiny()
    save_classifier(tmp_path / "one.safetensors", model, meta)
    save_classifier(tmp_path / "two.safetensors", model, dict(reversed(meta.items())))
    assert (tmp_path / "one.safetensors").read_bytes() == (tmp_path / "two.safetensors").read_bytes()
