"""The bundled MiniLM's attribution and corpus metrics through attnlab's own BERT encoder (what ``analyze
--attribution`` and ``analyze --corpus`` now run) equal the old path's, the same functions on transformers'
``BertModel`` with its tokenizer, within 1e-5; and ``BertTokenizer`` pads a batch as transformers' does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import attnlab as al
from attnlab.analysis import alti, attribute_text, corpus_metrics, norm_attention, value_zeroing
from attnlab.capturing import load_encoder, load_model
from attnlab.errors import InputError
from attnlab.models.bert import BertEncoder, BertTokenizer

transformers = pytest.importorskip("transformers")

TEXTS = ["The cat sat on the mat, because it was tired.", "A dog.", "  Héllo wörld: naïve café 3.14 ",
         "我喜欢这部电影", "don't stop-believing!!! [SEP] e-mail@example.com"]
TOLERANCE = 1e-5


def _largest(a: Any, b: Any) -> float:
    return float(np.nanmax(np.abs(np.asarray(a) - np.asarray(b))))


def test_analyze_paths_load_the_own_encoder() -> None:
    model, tokenizer, name = load_encoder("minilm")
    assert isinstance(model, BertEncoder) and isinstance(tokenizer, BertTokenizer) and "MiniLM" in name


def test_the_tokenizer_pads_a_batch_as_transformers_does() -> None:
    folder = al.locate("minilm").path
    ours, theirs = BertTokenizer(folder), transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
    for max_length in (None, 5):
        a = ours(TEXTS, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
        b = theirs(TEXTS, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
        assert set(a) == {"input_ids", "token_type_ids", "attention_mask"}
        for key in a:
            assert a[key].tolist() == b[key].tolist(), (key, max_length)
    assert ours.pad_token_id == theirs.pad_token_id and ours.cls_token_id == theirs.cls_token_id
    assert ours.vocab_size == theirs.vocab_size
    with pytest.raises(InputError, match="padding=True"):
        ours(TEXTS, return_tensors="pt")


@pytest.mark.slow
@pytest.mark.parametrize("text", ["The cat sat on the mat, tired.", "A dog."])
def test_attribution_equals_the_transformers_path(text: str) -> None:
    got = attribute_text(text, "minilm")  # through load_encoder: the own encoder
    net, tokenizer, _ = load_model("minilm")  # the old path: transformers' BertModel and tokenizer
    inputs = tokenizer(text, return_tensors="pt", truncation=False)

    def forward(k: int) -> Any:
        return net(**{key: v.repeat(k, 1) for key, v in inputs.items()})

    norms = norm_attention(net, forward).per_layer
    norms = norms / norms.sum(-1, keepdims=True)
    pairs = (("norm", got.norm, norms), ("value zeroing", got.value_zeroing, value_zeroing(net, forward)),
             ("alti", got.alti, alti(net, forward)))
    for name, ours, theirs in pairs:
        n = inputs["input_ids"].shape[1]
        assert ours.shape == theirs.shape == (6, n, n), name
        assert _largest(ours, theirs) <= TOLERANCE, f"{name}: largest difference {_largest(ours, theirs):.3g}"


def test_corpus_metrics_equal_the_transformers_path(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TEXTS) + "\n\n", encoding="utf-8")
    results = []
    for load in (load_encoder, load_model):
        model, tokenizer, _ = load("minilm")
        results.append(corpus_metrics(model, tokenizer, corpus, batch_size=3, max_length=12, progress=False))
    ours, theirs = results
    assert ours.names == theirs.names and ours.rows.tolist() == theirs.rows.tolist() and ours.texts == len(TEXTS)
    for metric, values in ours.means().items():
        assert _largest(values, theirs.means()[metric]) <= TOLERANCE, \
            f"{metric}: largest difference {_largest(values, theirs.means()[metric]):.3g}"
