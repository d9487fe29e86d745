"""AttentionClassifier's summed bigram (and trigram) embeddings, meanmax pooling and embedding norm: a pair's row
is found by its saved key, padding never leaks, and the keys travel in the model file."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from attnlab.errors import ConfigError, InputError
from attnlab.models import AttentionClassifier, ClassifierConfig, count_bigrams, load_classifier, save_classifier
from attnlab.models.classifier import count_trigrams

V = 23


def tiny(**options: object) -> AttentionClassifier:
    torch.manual_seed(0)
    base: dict[str, object] = {"d_model": 12, "n_heads": 3, "n_layers": 1, "dropout": 0.0, "max_length": 9,
                               "bigrams": 4, "pooling": "meanmax", "embed_norm": True}
    return AttentionClassifier(ClassifierConfig(V, **{**base, **options})).eval()


def test_each_position_gets_the_row_of_the_pair_starting_there() -> None:
    model = tiny()
    model.set_bigrams(torch.tensor([6 * V + 7, 5 * V + 6]))  # kept pairs (5, 6) and (6, 7), in any order
    rows = model.bigram_ids(torch.tensor([[2, 5, 6, 7, 0, 0], [2, 6, 7, 5, 6, 9]]))
    # sorted keys: (5, 6) -> row 2, (6, 7) -> row 3; 1 = a pair not kept; 0 = padding or the last position
    assert rows.tolist() == [[1, 2, 3, 0, 0, 0], [1, 3, 1, 2, 1, 0]]


def test_count_bigrams_keeps_the_most_frequent_pairs_deterministically() -> None:
    ids = [[2, 5, 6, 7], [2, 5, 6, 0, 0], [2, 7, 5, 6]]
    keys = count_bigrams(ids, 2, V)  # (5, 6) three times; (2, 5) twice; (2, 7), (6, 7), (7, 5) once
    assert keys.tolist() == sorted([5 * V + 6, 2 * V + 5])
    assert count_bigrams(ids, 10, V, min_count=2).tolist() == sorted([5 * V + 6, 2 * V + 5])
    assert count_bigrams(ids, 3, V).tolist() == sorted([5 * V + 6, 2 * V + 5, 2 * V + 7])  # ties: smaller key


@pytest.mark.parametrize("pooling", ["meanmax", "mean", "cls"])
def test_padding_changes_nothing_with_bigrams(pooling: str) -> None:
    model = tiny(pooling=pooling)
    model.set_bigrams(count_bigrams([[2, 5, 6, 7, 11], [2, 9, 9, 4]], 4, V))
    alone = model(torch.tensor([[2, 5, 6, 7, 11]]))
    batch = model(torch.tensor([[2, 5, 6, 7, 11, 0, 0, 0, 0], [2, 9, 9, 9, 9, 9, 9, 9, 4]]))
    torch.testing.assert_close(batch[:1], alone, atol=1e-6, rtol=1e-5)


def test_the_bigram_embedding_is_added_and_matters() -> None:
    model = tiny()
    ids = torch.tensor([[2, 5, 6, 7]])
    before = model(ids)
    model.set_bigrams(torch.tensor([5 * V + 6]))  # (5, 6) now has its own row instead of "not kept"
    assert (model(ids) - before).abs().max() > 1e-4
    with torch.no_grad():  # its row equal to the "not kept" row: back to the first logits
        model.bigram.weight[2] = model.bigram.weight[1]  # type: ignore[union-attr]
    torch.testing.assert_close(model(ids), before)


def test_meanmax_is_mean_and_max_of_the_real_states_and_an_empty_row_is_finite() -> None:
    model = tiny(n_layers=0)
    ids = torch.tensor([[2, 5, 6, 0], [0, 0, 0, 0]])
    x, real = model.encode(ids)
    pooled = model._pool(x, real)
    torch.testing.assert_close(pooled[0], torch.cat([x[0, :3].mean(0), x[0, :3].amax(0)]))
    assert torch.equal(pooled[1], torch.zeros(24)) and torch.isfinite(model(ids)).all()


def test_keys_and_options_travel_in_the_model_file(tmp_path: Path) -> None:
    model = tiny(embed_dropout=0.3, head_dropout=0.2)
    model.set_bigrams(torch.tensor([5 * V + 6, 6 * V + 7]))
    ids = torch.tensor([[2, 5, 6, 7, 5, 6]])
    save_classifier(tmp_path / "m.safetensors", model, {})
    loaded, _ = load_classifier(tmp_path / "m.safetensors")
    assert loaded.config == model.config
    assert torch.equal(loaded.bigram_keys, model.bigram_keys)
    torch.testing.assert_close(loaded(ids), model(ids))


def test_bad_bigram_settings() -> None:
    with pytest.raises(ConfigError, match="bigrams"):
        ClassifierConfig(V, bigrams=-1)
    with pytest.raises(ConfigError, match="embed_dropout"):
        ClassifierConfig(V, embed_dropout=1.5)
    with pytest.raises(ConfigError, match="no bigram table"):
        tiny(bigrams=0).set_bigrams(torch.tensor([1]))
    with pytest.raises(InputError, match="at most bigrams=4"):
        tiny().set_bigrams(torch.arange(5))


def test_each_position_gets_the_row_of_the_triple_starting_there() -> None:
    model = tiny(trigrams=3)
    model.set_trigrams(torch.tensor([(6 * V + 7) * V + 5, (5 * V + 6) * V + 7]))  # (5, 6, 7) and (6, 7, 5)
    rows = model.trigram_ids(torch.tensor([[2, 5, 6, 7, 0, 0], [2, 6, 7, 5, 6, 7]]))
    # sorted keys: (5, 6, 7) -> row 2, (6, 7, 5) -> row 3; 1 = not kept; 0 = reaches padding or the end
    assert rows.tolist() == [[1, 2, 0, 0, 0, 0], [1, 3, 1, 2, 0, 0]]
    assert model.trigram_ids(torch.tensor([[2, 5]])).tolist() == [[0, 0]]  # too short for any triple
    model.set_bigrams(torch.tensor([5 * V + 6]))  # the pairs are looked up as before
    assert model.bigram_ids(torch.tensor([[2, 5, 6, 7]])).tolist() == [[1, 2, 1, 0]]


def test_count_trigrams_keeps_the_most_frequent_triples_deterministically() -> None:
    ids = [[2, 5, 6, 7], [2, 5, 6, 0, 0], [9, 5, 6, 7, 1]]
    key = {t: (t[0] * V + t[1]) * V + t[2] for t in [(5, 6, 7), (2, 5, 6), (6, 7, 1), (9, 5, 6)]}
    assert count_trigrams(ids, 2, V).tolist() == sorted([key[5, 6, 7], key[2, 5, 6]])  # twice each
    assert count_trigrams(ids, 10, V, min_count=2).tolist() == sorted([key[5, 6, 7], key[2, 5, 6]])
    assert len(count_trigrams(ids, 10, V)) == 4  # (5, 6, 0) and (6, 0, 0) touch padding: not counted


def test_trigrams_matter_travel_in_the_model_file_and_padding_changes_nothing(tmp_path: Path) -> None:
    model = tiny(trigrams=4)
    ids = torch.tensor([[2, 5, 6, 7, 5, 6]])
    before = model(ids)
    model.set_trigrams(count_trigrams([[2, 5, 6, 7, 5, 6], [2, 9, 9, 4]], 4, V))
    assert (model(ids) - before).abs().max() > 1e-4
    padded = model(torch.tensor([[2, 5, 6, 7, 5, 6, 0, 0, 0], [2, 9, 9, 4, 9, 9, 4, 9, 9]]))
    torch.testing.assert_close(padded[:1], model(ids), atol=1e-6, rtol=1e-5)
    save_classifier(tmp_path / "m.safetensors", model, {})
    loaded, _ = load_classifier(tmp_path / "m.safetensors")
    assert loaded.config == model.config and torch.equal(loaded.trigram_keys, model.trigram_keys)
    torch.testing.assert_close(loaded(ids), model(ids))
    with pytest.raises(ConfigError, match="no trigram table"):
        tiny().set_trigrams(torch.tensor([1]))
    with pytest.raises(InputError, match="at most trigrams=4"):
        model.set_trigrams(torch.arange(5))
    with pytest.raises(ConfigError, match="trigrams"):
        ClassifierConfig(V, trigrams=-1)
