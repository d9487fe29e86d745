"""`attnlab explain`: the list, one topic writing its figures, bad input (one line, exit 2, no file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnlab import explain
from attnlab.cli import main


def test_list_names_every_topic(capsys):
    assert main(["explain"]) == 0
    out = capsys.readouterr().out
    for name, topic in explain.TOPICS.items():
        assert f"{name}" in out and topic.summary in out


def test_a_topic_prints_its_verdict_and_writes_its_figures(tmp_path, capsys):
    out = tmp_path / "figs"
    assert main(["explain", "softmax", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert explain.softmax().verdict in printed
    assert sorted(p.name for p in out.iterdir()) == ["softmax.png"]
    assert (out / "softmax.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("argv", [["explain", "scalling"], ["explain", "softmax", "--full"]])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, argv):
    out = tmp_path / "figs"
    assert main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("attnlab explain: error:")
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_out_that_is_a_file_is_refused(tmp_path, capsys):
    target = tmp_path / "taken"
    target.write_text("x")
    assert main(["explain", "softmax", "--out", str(target)]) == 2
    assert target.read_text() == "x"


def test_write_figures_is_all_or_nothing(tmp_path):
    good = explain.softmax()

    def broken():
        raise RuntimeError("drawing failed")

    bad = explain.Finding("t", "v", {}, (), {"a": good.figures["softmax"], "b": broken})
    with pytest.raises(RuntimeError):
        explain.write_figures(bad, tmp_path / "out")
    assert list(tmp_path.iterdir()) == []
    paths = explain.write_figures(good, tmp_path / "out")
    assert paths == [Path(tmp_path / "out" / "softmax.png")] and list(tmp_path.iterdir()) == [tmp_path / "out"]


def test_no_figures_prints_the_numbers_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "figs"
    assert main(["explain", "cosine", "--no-figures", "--out", str(out)]) == 0
    assert explain.cosine().verdict in capsys.readouterr().out
    assert not out.exists()
