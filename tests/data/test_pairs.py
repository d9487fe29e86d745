"""attnlab.data pairs: tab-separated files and their errors, load_pairs, and the source/target PairTokenizer."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest

from attnlab.data import (
    Pairs,
    PairTokenizer,
    build_pair_tokenizer,
    load_pairs,
    make_dates,
    read_pairs,
)
from attnlab.data._corpus import hash_bucket
from attnlab.data._pair_tokenize import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from attnlab.errors import InputError, ModelLoadError, TooLongError

TATOEBA = [  # Tatoeba's export: English, Chinese, attribution
    "Go.\t去吧。\tCC-BY 2.0 (France) Attribution: tatoeba.org #2877272 (CM) & #333 (Martha)",
    "Hi.\t你好。\tCC-BY 2.0 (France) Attribution: tatoeba.org #538123 (CM) & #891077 (Martha)",
    "Run.\t你用跑的。\tCC-BY 2.0 (France) Attribution: tatoeba.org #4008918 (JSakuragi) & #3748344 (egg0073)",
]


def write(tmp_path: Path, content: str | bytes, name: str = "pairs.tsv") -> Path:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


# --- read_pairs ------------------------------------------------------------------------------------------


def test_tatoeba_lines_with_attribution(tmp_path: Path) -> None:
    pairs = read_pairs(write(tmp_path, "\n".join(TATOEBA) + "\n\n"))
    assert pairs.source == ("Go.", "Hi.", "Run.") and pairs.target == ("去吧。", "你好。", "你用跑的。")
    assert pairs.tag == ("", "", "")


def test_anki_header_bom_crlf_and_other_columns(tmp_path: Path) -> None:
    text = "\ufeff#separator:tab\r\n#html:false\r\n去吧。\tGo.\r\n\r\n你好。\tHi.\r\n"
    pairs = read_pairs(write(tmp_path, text), source_column=1, target_column=0)
    assert pairs.source == ("Go.", "Hi.") and pairs.target == ("去吧。", "你好。")


@pytest.mark.parametrize(("content", "pattern"), [
    ("Go.\t去吧。\nHi.\n", r"line 2: 1 tab-separated field\(s\) \('Hi\.'\), but line 1 has 2"),
    ("Go.\n", r"line 1: 1 tab-separated field\(s\).*target column 1"),
    ("Go.\t去吧。\tCC\nHi.\t你好。\n", r"line 2: 2 tab-separated field\(s\).*line 1 has 3"),
    ("Go.\t去吧。\nHi.\t你好。\tCC\n", r"line 2: 3 tab-separated field\(s\).*line 1 has 2"),
    ("Go.\t去吧。\n\t你好。\n", r"line 2: the source \(column 0\) is empty"),
    ("Go.\t去吧。\n\nHi.\t \n", r"line 3: the target \(column 1\) is empty"),
    ("", "holds no pairs"),
    ("\n  \n\n", "holds no pairs"),
    ("#separator:tab\n", "holds no pairs"),
    (b"Go.\t\xe5\x8e\xbb\xe5\x90\xa7\n\xff\xfeHi.\t\xe4\xbd\xa0\n", r"line 2: bytes that are not UTF-8"),
])
def test_every_error_names_the_line(tmp_path: Path, content: str | bytes, pattern: str) -> None:
    with pytest.raises(InputError, match=pattern):
        read_pairs(write(tmp_path, content))


def test_bad_columns_and_missing_file(tmp_path: Path) -> None:
    path = write(tmp_path, "\n".join(TATOEBA))
    with pytest.raises(InputError, match="two different column numbers"):
        read_pairs(path, source_column=1, target_column=1)
    with pytest.raises(InputError, match=r"line 1: 3 tab-separated.*target column 3"):
        read_pairs(path, target_column=3)
    with pytest.raises(InputError, match="is not a file"):
        read_pairs(tmp_path / "nothing.tsv")


# --- load_pairs --------------------------------------------------------------------------------------------


def test_a_file_is_deduplicated_and_split_by_its_source(tmp_path: Path) -> None:
    lines = [f"sentence {i} here.\t第{i}句。" for i in range(300)]
    lines += [f"sentence {i} here.\t第{i}个句子。" for i in range(0, 300, 3)]  # a second translation
    lines += lines[:40]  # duplicates
    splits = load_pairs(str(write(tmp_path, "\n".join(lines))))
    assert splits.stats == {"pairs read": 440, "duplicates dropped": 40, "distinct sources": 300}
    assert len(splits.train) + len(splits.valid) + len(splits.test) == 400
    sources = [set(p.source) for p in (splits.train, splits.valid, splits.test)]
    assert not sources[0] & sources[1] and not sources[0] & sources[2] and not sources[1] & sources[2]
    assert 15 <= len(splits.test) <= 65 and 15 <= len(splits.valid) <= 65
    assert "duplicates dropped: 40" in splits.summary() and splits.extra == {}
    # file order changes nothing
    shuffled = load_pairs(str(write(tmp_path, "\n".join(reversed(lines)), "reversed.tsv")))
    assert (shuffled.train, shuffled.valid, shuffled.test) == (splits.train, splits.valid, splits.test)


@pytest.mark.slow
def test_load_pairs_dates_and_unknown_spec(tmp_path: Path) -> None:
    dates = load_pairs("dates", seed=2)
    assert dates.source == "dates" and len(dates.train) == 40_000 and "unseen_years" in dates.extra
    assert dates.test == make_dates(seed=2).test
    with pytest.raises(InputError, match="neither 'dates', 'sentences' nor a file"):
        load_pairs(str(tmp_path / "missing.tsv"))
    held_out = next(f"sentence {i}." for i in range(100) if hash_bucket(f"sentence {i}.") < 20)  # valid or test
    one = write(tmp_path, f"{held_out}\t句子。\n")
    with pytest.raises(InputError, match="none is left to train on"):
        load_pairs(str(one))


# --- PairTokenizer -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dates_tok() -> tuple[PairTokenizer, Pairs]:
    task = make_dates(n_train=3000, n_valid=0, n_test=300, n_unseen=0, seed=1)
    return build_pair_tokenizer(task.train), task.test


def test_special_ids_and_target_round_trip(dates_tok) -> None:
    tok, test = dates_tok
    for side in (tok.source, tok.target):
        assert [side.id_of(t) for t in ("[PAD]", "[UNK]", "[BOS]", "[EOS]")] == [0, 1, 2, 3]
    ids = tok.encode_target(list(test.target), 20)
    assert all(x[0] == BOS_ID and x[-1] == EOS_ID and UNK_ID not in x for x in ids)
    assert [tok.decode_target(x) for x in ids] == list(test.target)
    assert tok.decode_target([BOS_ID, *ids[0][1:-1], EOS_ID, *ids[1][1:]]) == test.target[0]  # stops at EOS
    assert tok.decode_target([PAD_ID, BOS_ID, UNK_ID, *ids[0][1:], PAD_ID]) == test.target[0]  # specials dropped
    assert tok.target_tokens(ids[0])[0] == "[BOS]" and "".join(tok.target_tokens(ids[0])[1:-1]) == test.target[0]
    assert tok.target_vocab_size == len(set("".join(test.target)) | set("0123456789年月日星期一二三四五六")) + 4


def test_source_ids_tokens_and_spans_line_up(dates_tok) -> None:
    tok, test = dates_tok
    ids = tok.encode_source(list(test.source), 64)
    for text, row in zip(test.source, ids, strict=True):
        tokens, spans = tok.source_tokens(text), tok.source_spans(text)
        assert len(tokens) == len(spans) == len(row) and row[-1] == EOS_ID and tokens[-1] == "[EOS]"
        assert spans[-1] == (len(text), len(text))
        for token, (a, b) in zip(tokens[:-1], spans[:-1], strict=True):
            piece = text[a:b]
            assert token == ("▁" if piece.isspace() else unicodedata.normalize("NFKC", piece)), (text, token, piece)
        # every character of the text is covered once, in order
        assert "".join(text[a:b] for a, b in spans) == text


def test_spans_find_the_year_digits() -> None:
    pairs = Pairs.of([("Friday, March 5, 2021", "2021年3月5日星期五", "en_US"),
                      ("5 марта\u202f2021 г.", "2021年3月5日", "ru_RU")])
    tok = build_pair_tokenizer(pairs)
    text = "Friday, March 1, 2015"  # a year never seen, written with digits seen
    year = [i for i, (a, b) in enumerate(tok.source_spans(text)) if 17 <= a < 21]
    assert [tok.source_tokens(text)[i] for i in year] == ["2", "0", "1", "5"] and year[0] == 17
    assert tok.unknown_source("Friday, March 5, 1987") == ["9", "8", "7"]  # digits never seen
    nbsp = "5 марта\u00a02021  г."  # odd spaces read as one plain-space token, spans on the text as given
    tokens, spans = tok.source_tokens(nbsp), tok.source_spans(nbsp)
    assert tokens[:8] == ["5", "▁", "м", "а", "р", "т", "а", "▁"] and spans[7] == (7, 8)
    assert tokens[12:14] == ["▁", "г"] and spans[12] == (12, 14) and tok.unknown_source(nbsp) == []


def test_unknown_characters(dates_tok) -> None:
    tok, _ = dates_tok
    text = "Friday ☃, March Ω 5, 2021"
    assert tok.unknown_source(text) == ["☃", "Ω"]
    row = tok.encode_source([text], 64)[0]
    assert row.count(UNK_ID) == 2 and tok.source_tokens(text).count("[UNK]") == 2
    assert tok.unknown_source("Friday, March 5, 2021") == []
    assert tok.encode_target(["2021年3月5日☃"], 20)[0][-2] == UNK_ID


def test_too_long_and_truncate(dates_tok) -> None:
    tok, _ = dates_tok
    text = "Friday, March 5, 2021"  # 21 characters + EOS
    assert len(tok.encode_source([text], 22)[0]) == 22
    with pytest.raises(TooLongError, match=r"22 tokens.*max_length 21") as info:
        tok.encode_source(["May 5, 2021", text], 21)
    assert (info.value.n_tokens, info.value.limit) == (22, 21) and "source text 1" in str(info.value)
    cut = tok.encode_source([text], 10, truncate=True)[0]
    assert len(cut) == 10 and cut[-1] == EOS_ID and cut[:9] == tok.encode_source([text], 22)[0][:9]
    with pytest.raises(TooLongError, match="target text 0"):
        tok.encode_target(["2021年3月5日"], 5)
    with pytest.raises(InputError, match="a list of texts"):
        tok.encode_source(text, 40)  # type: ignore[arg-type]


def test_json_save_and_restore(dates_tok, tmp_path: Path) -> None:
    tok, test = dates_tok
    path = tmp_path / "tokenizer.json"
    path.write_text(tok.to_json(), encoding="utf-8")
    again = PairTokenizer.from_json(path.read_text(encoding="utf-8"))
    texts = [*test.source[:50], "Friday ☃ 5"]
    assert again.encode_source(texts, 64) == tok.encode_source(texts, 64)
    assert again.encode_target(list(test.target[:50]), 20) == tok.encode_target(list(test.target[:50]), 20)
    assert (again.source_vocab_size, again.target_vocab_size, again.source_kind) == (
        tok.source_vocab_size, tok.target_vocab_size, "char")
    assert json.loads(tok.to_json())["format"] == "attnlab.pair_tokenizer"
    for bad in ("not json", "[1, 2]", json.dumps({"format": "attnlab.pair_tokenizer", "version": 1,
                                                   "source_kind": "char", "source": {}, "target": {}})):
        with pytest.raises(ModelLoadError):
            PairTokenizer.from_json(bad)


ENGLISH = Pairs.of([
    ("The cat sat on the mat.", "猫坐在垫子上。", "locative"),
    ("The dog sat on the mat.", "狗坐在垫子上。", "locative"),
    ("The cat saw the dog.", "猫看见了狗。", "svo"),
    ("Did the dog see the cat?", "狗看见猫了吗？", "question"),
])


@pytest.mark.parametrize("kind", ["word", "bpe", "wordpiece"])
def test_english_sources(kind: str) -> None:
    tok = build_pair_tokenizer(ENGLISH, source=kind, vocab_size=80)
    text = "The  cat sat on the zebra."
    tokens, spans, ids = tok.source_tokens(text), tok.source_spans(text), tok.encode_source([text], 30)[0]
    assert len(tokens) == len(spans) == len(ids) and tokens[-1] == "[EOS]"
    for token, (a, b) in zip(tokens[:-1], spans[:-1], strict=True):
        assert token == "[UNK]" or token.removeprefix("##") == text[a:b].lower()
    mat = "The cat sat on the mat."
    assert "mat" in [mat[a:b] for a, b in tok.source_spans(mat)]  # a whole word: its alignment can be checked
    unknown = tok.unknown_source(text)
    assert unknown and "".join(unknown) in ("zebra", "zbr") and "[UNK]" in tokens
    assert tok.decode_target(tok.encode_target(["狗看见猫了吗？"], 12)[0]) == "狗看见猫了吗？"  # ？ kept as written


def test_bad_tokenizer_arguments() -> None:
    with pytest.raises(InputError, match="unknown source tokenizer 'chars'"):
        build_pair_tokenizer(ENGLISH, source="chars")
    with pytest.raises(InputError, match="no training pairs"):
        build_pair_tokenizer(Pairs.of([]))
