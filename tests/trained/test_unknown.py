"""One unknown-character rule for every model kind (issue 29, item 5): warn when any character (or token) of a text
is unknown to the model, naming them and their share; refuse a text of nothing else.  The rule itself, then every
bundled model of every kind through :class:`attnlab.Model` (what the CLI, the Python API and the lab call)."""

from __future__ import annotations

import re
import warnings

import pytest

from attnlab import Model
from attnlab.errors import InputError
from attnlab.trained import SHOWN_UNKNOWN, unknown_warning


def test_nothing_unknown_is_no_warning() -> None:
    assert unknown_warning(list("中国"), [False, False], text="中国", model="m") is None


def test_any_unknown_character_is_named_with_its_share() -> None:
    said = unknown_warning(list("中国☃人☃"), [False, False, True, False, True], text="中国☃人☃", model="m")
    assert said is not None and said.startswith(
        "2 of the 5 characters of '中国☃人☃' (40%) are unknown to the model 'm' ('☃', read as [UNK])")
    one = unknown_warning(list("a" * 199 + "☃"), [False] * 199 + [True], text="a" * 199 + "☃", model="m")
    assert one is not None and "1 of the 200 characters" in one and "(0%)" in one  # one in 200 still warns
    tokens = unknown_warning(["the", "zork", "ate"], [False, True, False], text="the zork ate", model="m",
                             unit="token")
    assert tokens is not None and "1 of the 3 tokens" in tokens and "('zork', read as [UNK])" in tokens


def test_whitespace_is_not_counted_unless_it_is_all_there_is() -> None:
    said = unknown_warning(["a", " ", "☃"], [False, False, True], text="a ☃", model="m")
    assert said is not None and "1 of the 2 characters" in said
    with pytest.raises(InputError, match=r"every character of '☃ ☃' is unknown to the model 'm' \('☃', all 2 read"):
        unknown_warning(["☃", " ", "☃"], [True, False, True], text="☃ ☃", model="m")  # the space is no reading
    assert unknown_warning(["\n"], [False], text="\n", model="lm") is None  # a language model reads a line break
    with pytest.raises(InputError, match="every character"):
        unknown_warning(["\u3000"], [True], text="\u3000", model="lm")
    with pytest.raises(InputError, match="no character to read"):
        unknown_warning([], [], text="", model="m")


def test_many_unknown_characters_are_counted_and_the_first_shown() -> None:
    text = "".join(chr(0xE000 + i) for i in range(SHOWN_UNKNOWN + 5)) + "好"
    said = unknown_warning(list(text), [True] * (SHOWN_UNKNOWN + 5) + [False], text=text, model="m")
    assert said is not None and f"{SHOWN_UNKNOWN + 5} of the {SHOWN_UNKNOWN + 6} characters" in said
    shown = re.search(r"\('(.*?)', read as", said)
    assert shown is not None and shown.group(1) == repr(text[:SHOWN_UNKNOWN] + "…")[1:-1]
    with pytest.raises(InputError, match="one flag per piece"):
        unknown_warning(["a"], [True, False], text="a", model="m")


# every bundled model: one unknown character among known ones warns, nothing known is refused (minilm's messages name
# it by its folder's name, all-MiniLM-L6-v2)
CASES = {"minilm": ("the cat ☃ sat", "token", 4), "zh-sentiment": ("这本书写得很好☃", "character", 8),
         "dates-zh": ("March 5, 2021 ☃", "character", 12), "dates-zh/luong": ("March 5, 2021 ☃", "character", 12),
         "tutorial-en-zh": ("the cat ☃", "token", 3), "zh-lm": ("中国☃", "character", 3),
         "induction-2l": ("abc☃", "character", 4)}


@pytest.mark.parametrize("name", list(CASES))
def test_every_kind_warns_on_one_unknown_character_and_refuses_nothing_known(name: str) -> None:
    text, unit, n = CASES[name]
    model = Model.load(name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcome = model.run(text, trace=False)
    shown = "all-MiniLM-L6-v2" if name == "minilm" else name
    said = f"1 of the {n} {unit}s of {text!r} ({1 / n:.0%}) are unknown to the model {shown!r} ('☃', read as [UNK])"
    assert any(said in w for w in outcome.warnings), outcome.warnings
    assert any(said in str(w.message) for w in caught)  # also issued as a warning
    with pytest.raises(InputError, match=rf"every {unit} of '☃☃ ☃' is unknown to the model {re.escape(repr(shown))}"):
        model.run("☃☃ ☃", trace=False)
