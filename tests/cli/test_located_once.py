"""Every command that runs a model finds it once (issue 40: `analyze --model zh-lm` resolved the name 5 times):
:func:`attnlab.locate` is called one time per command, and what it found is passed down to the loaders."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import attnlab._bundled as bundled
from attnlab.cli import main

pytestmark = pytest.mark.slow

COMMANDS = {
    "predict": ["predict", "--model", "zh-sentiment", "很好"],
    "translate": ["translate", "--model", "dates-zh", "Friday, March 5, 2021"],
    "show": ["show", "--model", "zh-sentiment", "很好", "--out", "{out}"],
    "analyze": ["analyze", "--model", "induction-2l", "abcXYZ+/abcX", "--out", "{out}"],
    "generate": ["generate", "--model", "induction-2l", "abcXYZ+/abcX", "--max-tokens", "3", "--out", "{out}"],
    "patch": ["patch", "--model", "induction-2l", "--clean", "abcXYZ+/abcX", "--corrupt", "abcXYZ+/abcQ", "--out",
              "{out}"],
    "circuit": ["circuit", "--model", "induction-2l", "--out", "{out}"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_the_model_is_located_once(command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []
    real = bundled.locate

    def counting(*args: object, **kwargs: object) -> object:
        calls.append(args[0])
        return real(*args, **kwargs)  # type: ignore[arg-type]

    # every module holding it by name, as imported (a module first imported during an earlier test holds that test's
    # counting function, which the test's monkeypatch does not know to undo)
    for name, module in list(sys.modules.items()):
        if not name.startswith("attnlab"):  # (another package's lazy attributes may import what is not installed)
            continue
        held = getattr(module, "locate", None)
        if held is real or getattr(held, "__name__", "") == "counting":
            monkeypatch.setattr(module, "locate", counting)
    argv = [a.replace("{out}", str(tmp_path / "out")) for a in COMMANDS[command]]
    assert main(argv) == 0
    assert len(calls) == 1, calls
