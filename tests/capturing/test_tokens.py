"""Tokens on traces: attaching, word merging for the three tokeniser styles, readable tokens, files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attnlab.capturing import AttentionRecord, AttentionTrace, attach_tokens, merge_words
from attnlab.capturing.tokens import detect_style, readable_tokens, word_groups
from attnlab.errors import InputError, ShapeError, TraceFileError

WORDPIECE = ["[CLS]", "un", "##believ", "##able", "cat", "##s", ".", "[SEP]"]
BYTELEVEL = ["<s>", "Un", "believ", "able", "Ġcat", "s", "Ġ", "ä½", "ł", "</s>"]  # "你" split over two bytes pieces
SENTENCEPIECE = ["▁un", "bel", "iev", "able", "▁cat", "s", "▁", "你好", "</s>"]
GROUPS = {
    "wordpiece": (WORDPIECE, [[0], [1, 2, 3], [4, 5], [6], [7]], ["[CLS]", "unbelievable", "cats", ".", "[SEP]"]),
    "bytelevel": (BYTELEVEL, [[0], [1, 2, 3], [4, 5], [6, 7, 8], [9]], ["<s>", "Unbelievable", "cats", "你", "</s>"]),
    "sentencepiece": (SENTENCEPIECE, [[0, 1, 2, 3], [4, 5], [6, 7], [8]], ["unbelievable", "cats", "你好", "</s>"]),
}


def _trace(tokens: list[str], heads: int = 3, seed: int = 0) -> AttentionTrace:
    g = torch.Generator().manual_seed(seed)
    n = len(tokens)
    w = torch.softmax(torch.randn(1, heads, n, n, generator=g), -1)
    return attach_tokens(AttentionTrace([AttentionRecord("enc.0", "self", 0, w)]), tokens)


@pytest.mark.parametrize("style", list(GROUPS))
def test_word_groups_and_merge_rule(style: str) -> None:
    tokens, groups, words = GROUPS[style]
    assert detect_style(tokens) == style
    assert word_groups(tokens, style) == groups
    trace = _trace(tokens)
    merged = merge_words(trace)
    r, w = merged[0], trace[0].weights
    assert r.weights.shape == (1, 3, len(groups), len(groups))
    # the rule, written out: mean over the query pieces of a word, sum over the key pieces of a word
    for a, qa in enumerate(groups):
        for b, kb in enumerate(groups):
            expect = w[0, :, qa][:, :, kb].sum(-1).mean(-1)
            torch.testing.assert_close(r.weights[0, :, a, b], expect)
    torch.testing.assert_close(r.weights.sum(-1), torch.ones(1, 3, len(groups)))
    assert readable_tokens(r.query_tokens or [], style, mark_word_starts=False) == words
    assert merged.meta["merge"] == "words" and trace[0].weights.shape[-1] == len(tokens)  # input untouched


@given(st.lists(st.sampled_from(["▁a", "b", "▁", "c", "<pad>"]), min_size=1, max_size=12), st.integers(1, 4))
@pytest.mark.slow
def test_merge_keeps_rows_summing_to_one(tokens: list[str], heads: int) -> None:
    merged = merge_words(_trace(tokens, heads), style="sentencepiece")
    n_words = len(word_groups(tokens, "sentencepiece"))
    assert merged[0].weights.shape == (1, heads, n_words, n_words)
    torch.testing.assert_close(merged[0].weights.sum(-1), torch.ones(1, heads, n_words))


def test_attach_tokens_encoder_decoder_and_cache() -> None:
    src, tgt = ["a", "b", "c"], ["x", "y"]
    w = torch.full((1, 2, 2, 3), 1 / 3)
    records = [
        AttentionRecord("e", "self", 0, torch.full((1, 2, 3, 3), 1 / 3)),
        AttentionRecord("d", "causal", 0, torch.full((1, 2, 2, 2), 0.5)),
        AttentionRecord("c", "cross", 0, w),
        AttentionRecord("d", "causal", 1, torch.full((1, 2, 1, 2), 0.5)),  # one query over a cache of two
    ]
    t = attach_tokens(AttentionTrace(records), src, tgt)
    assert [(r.query_tokens, r.key_tokens) for r in t] == [
        (src, src), (tgt, tgt), (tgt, src), (["y"], tgt)]
    assert records[0].query_tokens is None  # the input trace is not changed
    with pytest.raises(ShapeError, match="3 keys"):
        attach_tokens(AttentionTrace(records[:1]), ["a", "b"])


def test_merge_needs_tokens_and_a_known_style() -> None:
    bare = AttentionTrace([AttentionRecord("e", "self", 0, torch.full((1, 1, 2, 2), 0.5))])
    with pytest.raises(InputError, match="attach"):
        merge_words(bare)
    with pytest.raises(InputError, match="style"):
        merge_words(_trace(["a", "b"]), style="morse")


def test_readable_bytelevel_and_special() -> None:
    assert readable_tokens(["Ġcaf", "Ã©", "ĠðŁĺ", "Ĭ", "<|endoftext|>"], "bytelevel") == [
        "▁caf", "é", "▁\ufffd", "\ufffd", "<|endoftext|>"]
    merged = merge_words(_trace(["Ġcaf", "Ã©", "ĠðŁĺ", "Ĭ"]), "bytelevel")
    assert readable_tokens(merged[0].query_tokens or [], "bytelevel", mark_word_starts=False) == ["café", "😊"]


@pytest.mark.parametrize(("style", "one_word", "two_words"), [
    ("bytelevel", ["Ġc", "at"], ["Ġc", "Ġat"]),
    ("sentencepiece", ["▁c", "at"], ["▁c", "▁at"]),
])
def test_word_starts_are_marked_so_pieces_do_not_read_as_words(style, one_word, two_words) -> None:
    assert readable_tokens(one_word, style) == ["▁c", "at"]
    assert readable_tokens(two_words, style) == ["▁c", "▁at"]
    assert readable_tokens(two_words, style, mark_word_starts=False) == ["c", "at"]


# ----- trace files ---------------------------------------------------------------------------------
def test_save_load_roundtrip_with_cjk_and_emoji(tmp_path: Path) -> None:
    tokens = ["[CLS]", "猫", "坐在", "垫子", "上", "🐱", "naïve", "[SEP]"]
    trace = _trace(tokens)
    trace.records.append(AttentionRecord("dec", "cross", 0, torch.rand(2, 3, 4, 8), ["a", "😀", "b", "c"], tokens))
    trace.meta = {"model": "测试", "text": "猫坐在垫子上 🐱", "n": 3}
    path = trace.save(tmp_path / "t.attn")
    back = AttentionTrace.load(path)
    assert back.meta == trace.meta
    for a, b in zip(trace, back, strict=True):
        assert (a.name, a.kind, a.layer, a.query_tokens, a.key_tokens) == (
            b.name, b.kind, b.layer, b.query_tokens, b.key_tokens)
        assert torch.equal(a.weights, b.weights)


def _bad_files(tmp_path: Path) -> dict[str, Path]:
    from safetensors.torch import save_file

    good = _trace(["a", "b", "c"]).save(tmp_path / "good.attn")
    data = good.read_bytes()
    files = {
        "truncated": data[: len(data) // 2],
        "corrupt header": b"\xff" * 8 + data[8:],
        "garbage": b"not a safetensors file at all",
        "empty": b"",
    }
    out = {}
    for name, content in files.items():
        out[name] = tmp_path / f"{name.replace(' ', '_')}.attn"
        out[name].write_bytes(content)
    out["model file"] = tmp_path / "model.safetensors"
    save_file({"embeddings.weight": torch.randn(4, 3)}, str(out["model file"]), metadata={"format": "pt"})
    out["text file"] = tmp_path / "notes.txt"
    out["text file"].write_text("这不是 a trace\n", encoding="utf-8")
    header = json.dumps({"format": "attnlab.trace", "version": "1", "records": "[{", "meta": "{}"})
    out["bad json"] = tmp_path / "bad_json.attn"
    save_file({"r0": torch.rand(1, 1, 2, 2)}, str(out["bad json"]), metadata=json.loads(header))
    out["missing"] = tmp_path / "nowhere.attn"
    return out


def test_bad_trace_files_raise_trace_file_error(tmp_path: Path) -> None:
    for name, path in _bad_files(tmp_path).items():
        with pytest.raises(TraceFileError) as info:
            AttentionTrace.load(path)
        assert str(path) in str(info.value), name
