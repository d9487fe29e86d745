"""The helper every writing command shares (attnlab._commands._output), and the contract that keeps commands from
importing each other."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib

from attnlab._commands import _output
from attnlab.cli import COMMANDS
from attnlab.errors import InputError

ROOT = Path(__file__).resolve().parents[2]


def test_every_command_is_in_the_independence_contract() -> None:
    """A new command module must join the import-linter list, or it could import another command unseen."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    independent = [c for c in contracts["contracts"] if c["type"] == "independence"
                   and all(m.startswith("attnlab._commands.") for m in c["modules"])]
    assert len(independent) == 1
    assert sorted(independent[0]["modules"]) == sorted(f"attnlab._commands.{name}" for name in COMMANDS)


def test_run_name_is_the_first_words_and_a_hash_of_the_key() -> None:
    name = _output.run_name("The cat sat on the mat, because it was very tired indeed.", "key")
    slug, digest = name.rsplit("-", 1)
    assert slug == "the-cat-sat-on-the-mat-because-it-was" and len(digest) == 6
    assert _output.run_name("The cat", "key") != _output.run_name("The cat", "other key")
    assert _output.run_name("???", "key").startswith("input-")


def test_publish_moves_the_files_and_removes_the_stale_ones_it_owns(tmp_path: Path) -> None:
    out, base = _output.check_out(tmp_path / "a" / "b")
    assert base == tmp_path and not out.exists()
    out.mkdir(parents=True)
    (out / "old.png").write_text("an earlier run")
    (out / "notes.txt").write_text("the user's")
    with _output.staging(out, base) as stage:
        (stage / "new.png").write_text("this run")
        _output.publish(stage, out, ["new.png"], owned=("new.png", "old.png"))
    assert sorted(p.name for p in out.iterdir()) == ["new.png", "notes.txt"]
    assert not stage.exists()  # the staging folder is removed


def test_staging_is_removed_when_the_block_fails(tmp_path: Path) -> None:
    out, base = _output.check_out(tmp_path / "out")
    with pytest.raises(RuntimeError), _output.staging(out, base) as stage:
        (stage / "half.png").write_text("half")
        raise RuntimeError
    assert list(tmp_path.iterdir()) == []


def test_check_out_refuses_a_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    with pytest.raises(InputError, match="is a file, not a folder"):
        _output.check_out(tmp_path / "f")
    with pytest.raises(InputError, match=r"--layer takes an integer or 'mean', got 'x'"):
        _output.parse_int("x", "--layer", " or 'mean'")


def test_a_sigterm_the_moment_the_staging_folder_appears_still_removes_it(tmp_path, monkeypatch):
    """The signal lands right after mkdtemp made the folder (what a supervisor watching for it does): the command
    unwinds as terminated and the folder is gone, not left behind by a signal raised before its cleanup began."""
    import os
    import signal
    import tempfile

    from attnlab._commands import _output
    from attnlab.cli import Terminated, _cli_behaviour

    made = tempfile.mkdtemp

    def mkdtemp_then_sigterm(*args, **kwargs):
        folder = made(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGTERM)  # delivered at once unless held
        return folder

    monkeypatch.setattr(_output.tempfile, "mkdtemp", mkdtemp_then_sigterm)
    out = tmp_path / "out"
    with pytest.raises(Terminated), _cli_behaviour("show"), _output.staging(out, tmp_path):
        pytest.fail("the signal must end the command before its work starts")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("context_kept", [True, False])
def test_a_signal_a_library_turns_into_its_own_error_still_ends_as_terminated(monkeypatch, capsys, context_kept):
    """A SIGTERM that lands inside a library which calls back into Python and raises its own error instead (the
    safetensors loader reports ``ValueError: could not determine the shape of object type 'UntypedStorage'``, with
    no trace of the signal when context_kept is False): exit 143 and one line, not that error's traceback."""
    import os
    import signal

    from attnlab._commands import show
    from attnlab.cli import main

    def library_call(args):
        failed = False
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):  # the handler runs at the next bytecode boundaries
                pass
        except BaseException:
            failed = True
            if context_kept:
                raise ValueError("could not determine the shape of object type 'torch.storage.UntypedStorage'")  # noqa: B904 (as a library does)
        if failed:
            raise ValueError("could not determine the shape of object type 'torch.storage.UntypedStorage'")
        pytest.fail("the signal never reached the command")

    monkeypatch.setattr(show, "run", library_call)
    assert main(["show", "The cat sat."]) == 128 + signal.SIGTERM
    assert capsys.readouterr().err.strip().splitlines() == ["attnlab show: terminated"]


def test_an_error_with_no_signal_behind_it_keeps_its_traceback(monkeypatch):
    from attnlab._commands import show
    from attnlab.cli import main

    def broken(args):
        raise ValueError("a bug")

    monkeypatch.setattr(show, "run", broken)
    with pytest.raises(ValueError, match="a bug"):
        main(["show", "The cat sat."])
