"""``attnlab train TASK --help`` shows each option's default as the config field of that name holds it: the help is
built from the configs (which import no torch), so it cannot drift from them."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest

from attnlab.cli import main
from attnlab.models import ClassifierConfig, LMConfig, Seq2SeqConfig, TransformerSeq2SeqConfig
from attnlab.training import ClassifyTrainConfig, InductionTrainConfig, LMTrainConfig, TranslateTrainConfig

CONFIGS: dict[str, tuple[type, ...]] = {  # each task's configs: the model's, then the training's
    "classify": (ClassifierConfig, ClassifyTrainConfig),
    "translate": (Seq2SeqConfig, TransformerSeq2SeqConfig, TranslateTrainConfig),
    "lm": (LMConfig, LMTrainConfig),
    "induction": (InductionTrainConfig,),
}
OPTION = re.compile(r"^  (--[a-z][a-z-]*)(?: [A-Z][A-Z_=]*| \{[^}]*\})?(?:\s{2,}(.*))?$")


def help_of(task: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """``--option -> its help`` (wrapped lines joined) from ``attnlab train TASK --help``."""
    monkeypatch.setenv("COLUMNS", "400")
    with pytest.raises(SystemExit) as exited:
        main(["train", task, "--help"])
    assert exited.value.code == 0
    helps: dict[str, str] = {}
    current = None
    for line in capsys.readouterr().out.splitlines():
        match = OPTION.match(line)
        if match:
            current = match.group(1)
            helps[current] = match.group(2) or ""
        elif current and line.startswith("    ") and line.strip():
            helps[current] = f"{helps[current]} {line.strip()}".strip()
        else:
            current = None
    return helps


def field_defaults(configs: tuple[type, ...], name: str) -> list[Any]:
    """The defaults of the field ``name`` in each of ``configs`` that has one."""
    return [f.default for c in configs for f in dataclasses.fields(c)
            if f.name == name and f.default is not dataclasses.MISSING]


def means(shown: str, value: Any) -> bool:
    """Whether ``shown`` (what follows "default " in the help) reads as ``value``."""
    if shown == "none":
        return value is None or value == ""
    if isinstance(value, bool):
        return shown == ("on" if value else "off")
    if isinstance(value, int):
        return re.fullmatch(r"-?\d+", shown) is not None and int(shown) == value
    if isinstance(value, float):
        try:
            return float(shown) == value
        except ValueError:
            return False
    return shown == value


@pytest.mark.parametrize("task", list(CONFIGS))
def test_every_option_of_a_config_field_shows_that_fields_default(
        task: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    helps = help_of(task, capsys, monkeypatch)
    checked, wrong = [], []
    for option, text in helps.items():
        defaults = field_defaults(CONFIGS[task], option[2:].replace("-", "_"))
        if not defaults:
            continue
        found = re.findall(r"\(default ([^()]*)\)", text)
        if len(found) != 1 or not text.endswith(f"(default {found[0]})") or not all(
                means(found[0], d) for d in defaults):
            wrong.append(f"{option}: {text!r} for the field's default(s) {defaults}")
        checked.append(option)
    assert wrong == []
    assert len(checked) >= {"classify": 37, "translate": 30, "lm": 24, "induction": 11}[task], checked


def test_the_help_follows_a_field_whose_default_changes(capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Not a copy: give InductionTrainConfig another default and the help says that one."""
    fields = InductionTrainConfig.__dataclass_fields__  # type: ignore[attr-defined]
    monkeypatch.setattr(fields["max_steps"], "default", 1234)
    assert help_of("induction", capsys, monkeypatch)["--max-steps"].endswith("(default 1234)")
