"""ClassifierConfig(positional="rotary"): positions inside the encoder's attention; trains, saves and loads."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from helpers.reviews import write_reviews

from attnlab.errors import ConfigError
from attnlab.models import AttentionClassifier, ClassifierConfig, load_classifier, save_classifier
from attnlab.training import ClassifyTrainConfig, load_trained, train_classifier


def tiny(**options: object) -> AttentionClassifier:
    torch.manual_seed(0)
    base: dict[str, object] = {"d_model": 12, "n_heads": 3, "n_layers": 2, "dropout": 0.0, "max_length": 9,
                               "positional": "rotary"}
    return AttentionClassifier(ClassifierConfig(23, n_classes=3, **{**base, **options})).eval()


def test_rotary_reaches_every_layer_and_adds_no_table() -> None:
    model = tiny(pooling="mean")
    assert model.position.table is None
    assert model.encoder is not None
    assert all(layer.self_attn.config.rotary for layer in model.encoder.layers)
    a = model(torch.tensor([[2, 5, 6, 7]]))
    b = model(torch.tensor([[2, 7, 6, 5]]))  # the same tokens in another order
    assert (a - b).abs().max() > 1e-4
    alone = model(torch.tensor([[2, 5, 6, 7, 11]]))  # padding is still masked (padding sits after the text)
    padded = model(torch.tensor([[2, 5, 6, 7, 11, 0, 0, 0], [2, 9, 9, 9, 9, 9, 9, 4]]))
    torch.testing.assert_close(padded[:1], alone, atol=1e-6, rtol=1e-5)


def test_rotary_needs_encoder_layers() -> None:
    with pytest.raises(ConfigError, match="n_layers=0"):
        ClassifierConfig(23, n_layers=0, pooling="attention", positional="rotary")
    with pytest.raises(ConfigError, match="even"):
        ClassifierConfig(23, d_model=15, n_heads=3, positional="rotary")  # d_k = 5


def test_file_round_trip(tmp_path: Path) -> None:
    model = tiny(pooling="attention")
    save_classifier(tmp_path / "m.safetensors", model, {})
    loaded, _ = load_classifier(tmp_path / "m.safetensors")
    assert loaded.config.positional == "rotary" and loaded.config == model.config
    ids = torch.tensor([[2, 3, 4, 5, 6]])
    torch.testing.assert_close(loaded(ids), model(ids), atol=0, rtol=0)




@pytest.mark.slow
def test_trains_saves_and_loads(tmp_path: Path) -> None:
    data = write_reviews(tmp_path / "reviews.csv", 300, longest=12)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        final = train_classifier(
            data, tmp_path / "run", model={"d_model": 16, "n_heads": 2, "n_layers": 1, "positional": "rotary",
                                           "pooling": "mean", "dropout": 0.0},
            config=ClassifyTrainConfig(epochs=4, batch_size=16, lr=3e-3, patience=0), max_length=16, device="cpu",
            progress=False, log=lambda _: None)
    finally:
        torch.set_num_threads(threads)
    assert final["valid_accuracy"] > 0.8, final  # 好/差 decides the label: a working model finds it
    clf = load_trained(tmp_path / "run")
    assert clf.model.config.positional == "rotary"
    (label, p), = clf.predict(["abc好def"])
    assert label in ("pos", "neg") and 0.5 <= p <= 1.0
