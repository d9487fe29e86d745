"""``attnlab predict`` writes one line of three tab-separated fields per text, whatever the text holds."""

from __future__ import annotations

import pytest

from attnlab._commands.predict import one_field
from attnlab.cli import main


def test_control_characters_of_the_text_are_written_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    text = "这本书\t写得很好\n\x1b[31m好\\看"
    assert main(["predict", "--model", "zh-sentiment", text]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.count("\t") == 2 and "\x1b" not in out
    label, probability, shown = out.rstrip("\n").split("\t")
    assert shown == "这本书\\t写得很好\\n\\x1b[31m好\\\\看" == one_field(text)
    assert label in ("pos", "neg") and 0.5 <= float(probability) <= 1


def test_printable_text_is_written_as_it_is() -> None:
    assert one_field("The cat sat. 猫坐着 ☃") == "The cat sat. 猫坐着 ☃"


def test_a_value_that_rounds_to_zero_prints_without_a_sign() -> None:
    from attnlab._commands.predict import signed

    assert [signed(x, 3) for x in (-0.0001, 0.0001, -0.0, 0.0, 0.0006, -0.0006, 0.846)] == [
        "0.000", "0.000", "0.000", "0.000", "+0.001", "-0.001", "+0.846"]


def test_every_text_of_a_batch_is_answered_in_its_place(capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("这本书写得很好\n\n☃☃\n送货太慢了\n"))
    assert main(["predict", "--model", "zh-sentiment", "-"]) == 2  # some were refused
    printed = capsys.readouterr()
    rows = [line.split("\t") for line in printed.out.splitlines()]
    assert [r[2] for r in rows] == ["这本书写得很好", "", "☃☃", "送货太慢了"]
    assert [r[:2] for r in rows][1:3] == [["-", "-"], ["-", "-"]] and rows[0][0] == "pos" and rows[3][0] == "neg"
    errors = [line for line in printed.err.splitlines() if line.startswith("attnlab predict: error: ")]
    assert [e.split(":")[2].strip() for e in errors] == ["text 2", "text 3"]


def test_explain_refuses_a_text_it_would_take_minutes_on_before_running(capsys: pytest.CaptureFixture[str]) -> None:
    from attnlab._commands.predict import EXPLAIN_MOST

    assert main(["predict", "--model", "zh-sentiment", "--explain", "好" * (EXPLAIN_MOST + 1)]) == 2
    printed = capsys.readouterr()
    assert printed.out == "" and f"at most {EXPLAIN_MOST:,} characters; one has {EXPLAIN_MOST + 1:,}" in printed.err
