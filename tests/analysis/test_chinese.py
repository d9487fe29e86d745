"""Chinese head labels: the segmented corpus reader, token-to-character matching, and the counts of heads whose
attention is built by hand (previous character, the word's first character, verb to object) against the fixed
offsets; `attnlab analyze --segmented` end to end on zh-sentiment, and its bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attnlab.analysis import CharCounts, chinese_counts, chinese_scores, default_segmented, read_segmented
from attnlab.analysis.chinese import SegmentedSentence, char_tokens, pos_pattern_sentences
from attnlab.cli import main
from attnlab.errors import InputError

LINES = "我们/r  爱/v  祖国/n  ，/w  很/d  好/a  的/u  书/n\n\n１２月/t  ３１日/t  发表/v  讲话/n  。/w\n"


def sentences(tmp_path, text: str = LINES) -> list[SegmentedSentence]:
    path = tmp_path / "seg.txt"
    path.write_text(text, encoding="utf-8")
    return read_segmented(path)


def test_read_segmented(tmp_path) -> None:
    first, second = sentences(tmp_path)
    assert first.words == ["我们", "爱", "祖国", "，", "很", "好", "的", "书"] and first.tags[:3] == ["r", "v", "n"]
    assert first.text == "我们爱祖国，很好的书" and first.name == "line 1" and second.name == "line 3"
    assert read_segmented(tmp_path / "seg.txt", limit=1) == [first]
    assert read_segmented(tmp_path / "seg.txt", max_chars=10) == [first]  # the second has 11 characters
    default = read_segmented(default_segmented(), limit=3)
    assert default[0].words[:2] == ["迈向", "充满"] and default[0].tags[:2] == ["v", "v"]


@pytest.mark.parametrize(("text", "words"), [
    ("人民/n 日报\n", "line 1: '日报' is not a 'word/TAG'"),
    ("人民/n\n好/a 书/\n", "line 2: '书/' is not"),
    ("人民/n\n/n\n", "line 2: '/n' is not"),
])
def test_malformed_lines_are_named(tmp_path, text: str, words: str) -> None:
    with pytest.raises(InputError, match=words):
        sentences(tmp_path, text)


def test_not_utf8_empty_and_missing(tmp_path) -> None:
    path = tmp_path / "gbk.txt"
    path.write_bytes("人民/n\n".encode() + "日报/n\n".encode("gbk"))
    with pytest.raises(InputError, match="line 2 is not UTF-8"):
        read_segmented(path)
    with pytest.raises(InputError, match="holds no sentence"):
        sentences(tmp_path, "\n\n")
    with pytest.raises(InputError, match="no segmented corpus"):
        read_segmented(tmp_path / "missing.txt")


def test_char_tokens_skip_specials_and_normalise_full_width(tmp_path) -> None:
    _, second = sentences(tmp_path)  # １２月３１日发表讲话。
    tokens = ["[CLS]", "1", "2", "月", "3", "1", "[UNK]", "发", "表", "讲", "话", "。", "[SEP]"]
    assert char_tokens(second, tokens) == list(range(1, 12))
    assert char_tokens(second, ["[CLS]", "12", "月"]) is None  # two characters in one token
    assert char_tokens(second, tokens[:-3]) is None  # too few
    assert char_tokens(second, [*tokens[:3], "日", *tokens[4:]]) is None  # a different character


def pointing(targets: list[list[int]], n: int) -> np.ndarray:
    """``(1, H, n, n)`` attention where head ``h``'s query ``i`` puts all its weight on ``targets[h][i]``."""
    w = np.zeros((1, len(targets), n, n))
    for h, row in enumerate(targets):
        for i, j in enumerate(row):
            w[0, h, i, j] = 1.0
    return w


def test_counts_of_hand_made_heads(tmp_path) -> None:
    first, _ = sentences(tmp_path)  # 我们 爱 祖国 ， 很 好 的 书: characters 0..9, [CLS] at 0 of the tokens
    tokens = ["[CLS]", *first.text, "[SEP]"]
    n = len(tokens)
    word_first = [0, 1, 1, 3, 4, 4, 6, 7, 8, 9, 10, 11]  # token -> its word's first character's token
    previous = [0, 0, *range(1, n - 1)]  # token -> the one before it
    verb_object = list(range(n))
    verb_object[4] = verb_object[5] = 3  # 祖, 国 (the object noun) -> 爱 (the verb)
    w = pointing([previous, word_first, verb_object], n)
    counts = chinese_counts(w, first, tokens)
    assert counts.sentences == 1 and counts.skipped == 0
    # multi-character words: 我们, 祖国 -> 4 query characters; previous character stays inside for 们, 国
    assert counts.queries == 4 and counts.same_word is not None
    # 们 -> 我 and 国 -> 祖 inside; 我 -> [CLS] and 祖 -> 爱 (head 0), or only themselves (heads 1, 2): no prediction
    assert counts.same_word[0].tolist() == [2.0, 2.0, 0.0]
    assert counts.offsets[-1] == 2 and counts.offsets[1] == 2 and counts.offsets[-2] == 0
    rows = {r["relation"]: r for r in chinese_scores(counts)}
    assert rows["same-word"]["baseline"] == 0.5 and rows["same-word"]["accuracy"] == 0.5
    assert rows["word-first"]["accuracy"] == 1.0 and rows["word-first"]["head"] in (0, 1)
    assert rows["word-first"]["count"] == 2 and rows["word-first"]["baseline_offset"] == -1
    # 祖国 -> 爱 by word attention: head 2 (both characters), and head 0 (祖 -> 爱; 国 -> 祖 is its own word)
    assert rows["v->n"]["count"] == 1 and rows["v->n"]["accuracy"] == 1.0 and rows["v->n"]["head"] in (0, 2)
    assert rows["v->n"]["direction"] == "dep->head" and rows["v->n"]["baseline_offset"] == -1
    assert CharCounts().merge(counts).merge(counts).queries == 8
    assert chinese_counts(w, first, tokens[:-3]).skipped == 1


def test_pos_patterns(tmp_path) -> None:
    first, second = sentences(tmp_path)
    arcs = {s.relations[d]: (s.heads[d], d) for s in pos_pattern_sentences(first) for d in range(len(s.words))
            if s.heads[d] >= 0}
    assert arcs == {"v->n": (1, 2), "a->n": (5, 7)}  # 很/d is followed by 好/a, no verb
    arcs2 = {s.relations[d]: (s.heads[d], d) for s in pos_pattern_sentences(second) for d in range(len(s.words))
             if s.heads[d] >= 0}
    assert arcs2 == {"v->n": (2, 3)}


def test_cli_segmented_on_zh_sentiment(tmp_path, capsys) -> None:
    out = tmp_path / "out"
    assert main(["analyze", "--model", "zh-sentiment", "--segmented", "--sentences", "3", "--out", str(out)]) == 0
    doc = json.loads((out / "chinese.json").read_text(encoding="utf-8"))
    assert doc["sentences"] == 3 and doc["model"] == "zh-sentiment" and doc["corpus"].endswith("199801.txt")
    assert doc["labels"][0]["relation"] == "same-word" and 0.0 <= doc["labels"][0]["accuracy"] <= 1.0
    assert "same-word" in capsys.readouterr().out


def test_cli_segmented_on_the_language_model(tmp_path, capsys) -> None:
    out = tmp_path / "out"
    assert main(["analyze", "--model", "zh-lm", "--segmented", "--sentences", "3", "--out", str(out)]) == 0
    doc = json.loads((out / "chinese.json").read_text(encoding="utf-8"))
    assert doc["sentences"] == 3 and doc["skipped"] == 0 and doc["model"] == "zh-lm"  # its context: 64 characters
    assert {r["relation"] for r in doc["labels"]} >= {"same-word", "word-first", "word-last"}


def test_cli_segmented_bad_input_is_one_line(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("人民/n 日报/n\n我们/r 爱/v 祖国\n", encoding="utf-8")
    for args, words in ((["--segmented", str(bad)], "line 2: '祖国' is not a 'word/TAG'"),
                        (["some text", "--segmented", str(bad)], "give no TEXT"),
                        (["--segmented", str(bad), "--sentences", "0"], "--sentences takes a positive")):
        assert main(["analyze", "--model", "zh-sentiment", *args, "--out", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and words in err, err
    good = tmp_path / "good.txt"
    good.write_text("人民/n 日报/n\n", encoding="utf-8")
    assert main(["analyze", "--model", str(tmp_path / "no-model"), "--segmented", str(good), "--out",
                 str(tmp_path / "out")]) == 2
    assert len(capsys.readouterr().err.splitlines()) == 1
    assert not (tmp_path / "out").exists()
