"""Progress off a terminal: plain lines every few percent and no carriage return; on a terminal, tqdm's bar."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from attnlab._progress import LineProgress, progress_bar
from attnlab.cli import main


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("total", "every", "lines"), [(100, 5.0, 20), (37, 10.0, 10), (7, 5.0, 7)])
def test_off_a_terminal_a_plain_line_every_few_percent(total: int, every: float, lines: int) -> None:
    out = io.StringIO()
    with progress_bar(total, unit="text", desc="corpus metrics", file=out, every=every) as bar:
        assert isinstance(bar, LineProgress)
        for i in range(total):
            bar.set_postfix(loss=f"{1 / (i + 1):.3f}")
            bar.update(1)
    text = out.getvalue()
    assert "\r" not in text and text.endswith("\n")
    printed = text.splitlines()
    assert len(printed) == lines  # one per `every` percent crossed; the last is 100%, so close adds none
    counts = [int(re.match(r"corpus metrics: (\d+)/(\d+) text", line)[1]) for line in printed]  # type: ignore[index]
    assert counts == sorted(counts) and counts[-1] == total
    assert printed[-1].startswith(f"corpus metrics: {total}/{total} text (100%)") and "loss=" in printed[-1]


def test_a_stop_before_the_end_prints_where_it_stopped_and_a_resumed_bar_starts_where_it_was() -> None:
    out = io.StringIO()
    bar = progress_bar(200, initial=50, unit="step", file=out)
    bar.update(3)  # 26.5%: under the next 5% (the resumed 25% is not printed again)
    assert out.getvalue() == ""
    bar.close()
    bar.close()
    (line,) = out.getvalue().splitlines()
    assert line.startswith("53/200 step (26%)")


def test_on_a_terminal_tqdms_bar_and_hidden_nothing() -> None:
    tty = Terminal()
    with progress_bar(10, unit="step", file=tty) as bar:
        bar.update(10)
    assert "\r" in tty.getvalue() and "10/10" in tty.getvalue()
    quiet = io.StringIO()
    with progress_bar(10, shown=False, file=quiet) as bar:
        bar.update(10)
    assert quiet.getvalue() == ""


@pytest.mark.slow
def test_training_into_a_pipe_prints_lines_not_carriage_returns(
        reviews: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], one_thread: None) -> None:
    assert main(["train", "classify", "--data", str(reviews), "--out", str(tmp_path / "run"), "--d-model", "12",
                 "--n-heads", "3", "--n-layers", "1", "--d-ff", "20", "--min-frequency", "1", "--batch-size", "8",
                 "--max-steps", "20", "--eval-every", "10"]) == 0
    printed = capsys.readouterr()
    assert "\r" not in printed.err and "\r" not in printed.out
    steps = [line for line in printed.err.splitlines() if re.match(r"\d+/20 step", line)]
    assert [int(line.split("/")[0]) for line in steps] == list(range(1, 21))  # 20 steps: one line each 5%
    assert all("loss=" in line for line in steps)
    assert sum(line.startswith("step 10: valid loss") for line in printed.out.splitlines()) == 1
