"""`attnlab show`: the files it writes, the summary it prints, and bad input: exit code 2, one line on
stderr naming the problem, no traceback, and no file written."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import torch

import attnlab as al
from attnlab.cli import main

TOKENS = ["[CLS]", "the", "cat", "sat", "[SEP]"]
FIGURES = ["heatmap", "heads", "model"]


@pytest.fixture
def trace_file(tmp_path: Path) -> Path:
    """A small synthetic trace (2 layers x 3 heads, 5 tokens) saved as a file, to redraw without a model."""
    g = torch.Generator().manual_seed(0)
    records = [
        al.AttentionRecord(f"layer.{i}", "self", i, torch.randn(1, 3, 5, 5, generator=g).softmax(-1), TOKENS, TOKENS)
        for i in range(2)
    ]
    path = tmp_path / "in" / "trace.attn"
    path.parent.mkdir()
    return al.AttentionTrace(records, {"model": "synthetic"}).save(path)


def files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def expected_files(fmt: str = "png", viewer: bool = True) -> set[str]:
    names = {"trace.attn", *(f"{f}.{fmt}" for f in FIGURES)}
    return names | ({"viewer.html"} if viewer else set())


# ----- what it writes and prints -------------------------------------------------------------------
@pytest.mark.slow
def test_redraw_a_saved_trace(tmp_path, trace_file, capsys):
    out = tmp_path / "out"
    assert main(["show", "--trace", str(trace_file), "--out", str(out)]) == 0
    assert files(out) == expected_files()
    for fig in FIGURES:
        assert (out / f"{fig}.png").read_bytes().startswith(b"\x89PNG")
    page = (out / "viewer.html").read_text(encoding="utf-8")
    assert page.lstrip().lower().startswith("<!doctype html")
    assert not re.search(r"<(script|link)[^>]+(src|href)=\"(?!data:)", page), "the viewer is one self-contained file"
    again = al.AttentionTrace.load(out / "trace.attn")
    original = al.AttentionTrace.load(trace_file)
    assert torch.equal(again.weights, original.weights) and again.tokens == TOKENS
    printed = capsys.readouterr()
    assert printed.err == ""
    lines = printed.out.splitlines()
    assert lines[0] == "self-attention (synthetic): 2 layers x 3 heads, 5 tokens"
    assert lines[1] == "tokens: [CLS] the cat sat [SEP]"
    assert [line.split()[0] for line in lines[4:6]] == ["0", "1"]
    assert lines[-1].startswith(f"wrote {len(expected_files())} files to {out}")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "the staging folder is removed"


@pytest.mark.slow
def test_layer_head_and_format(tmp_path, trace_file):
    out = tmp_path / "out"
    args = ["show", "--trace", str(trace_file), "--out", str(out), "--layer", "0", "--head", "2", "--format", "svg"]
    assert main([*args, "--no-viewer"]) == 0
    assert files(out) == expected_files("svg", viewer=False)
    svg = (out / "heatmap.svg").read_text()
    assert "layer 0, head 2" in svg and "heatmap.png" not in files(out)
    assert "layer 0: all 3 heads" in (out / "heads.svg").read_text()


@pytest.mark.slow
def test_default_heatmap_is_the_mean_of_the_last_layer(tmp_path, trace_file):
    out = tmp_path / "out"
    assert main(["show", "--trace", str(trace_file), "--out", str(out), "--format", "svg"]) == 0
    assert "layer 1, mean of 3 heads" in (out / "heatmap.svg").read_text()


@pytest.mark.slow
def test_existing_folder_keeps_other_files(tmp_path, trace_file):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    (out / "heatmap.png").write_text("old")
    assert main(["show", "--trace", str(trace_file), "--out", str(out)]) == 0
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "heatmap.png").read_bytes().startswith(b"\x89PNG")
    assert files(out) == expected_files() | {"notes.txt"}


@pytest.mark.slow
def test_a_run_replaces_the_files_of_an_earlier_run(tmp_path, trace_file):
    """Another --format and --no-viewer: the earlier run's heatmap.png, heads.png, model.png and viewer.html go,
    so the folder never mixes two runs; files show does not write are kept."""
    out = tmp_path / "out"
    assert main(["show", "--trace", str(trace_file), "--out", str(out)]) == 0
    (out / "notes.txt").write_text("mine")
    assert main(["show", "--trace", str(trace_file), "--out", str(out), "--format", "svg", "--no-viewer"]) == 0
    assert files(out) == expected_files("svg", viewer=False) | {"notes.txt"}


@pytest.mark.slow
def test_default_output_is_a_folder_of_its_own_per_input(tmp_path, trace_file, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    other = al.AttentionTrace.load(trace_file)
    other.meta = {"model": "synthetic", "text": "Another text, entirely."}
    other_file = other.save(tmp_path / "other.attn")
    assert main(["show", "--trace", str(trace_file)]) == 0
    assert main(["show", "--trace", str(other_file)]) == 0
    runs = sorted((tmp_path / "attnlab-out").iterdir())
    assert len(runs) == 2 and all(files(r) == expected_files() for r in runs), runs
    assert any(r.name.startswith("another-text-entirely-") for r in runs), runs
    assert main(["show", "--trace", str(other_file)]) == 0  # the same input reuses its folder
    assert len(list((tmp_path / "attnlab-out").iterdir())) == 2
    assert "wrote 5 files to attnlab-out/another-text-entirely-" in capsys.readouterr().out


@pytest.mark.slow
def test_long_input_options(tmp_path, trace_file):
    """--tokens draws a range, --scale a colour scale, --compact stores trace.attn in float16."""
    out = tmp_path / "out"
    args = ["show", "--trace", str(trace_file), "--out", str(out), "--format", "svg", "--no-viewer"]
    assert main([*args, "--tokens", "1:4", "--scale", "log", "--compact"]) == 0
    heatmap, heads, model = ((out / f"{f}.svg").read_text() for f in FIGURES)
    assert "layer 1, mean of 3 heads, positions 1-3 of 5" in heatmap and "(log scale)" in heatmap
    assert "positions 1-3 of 5" in heads and "positions 1-3 of 5" in model
    back = al.AttentionTrace.load(out / "trace.attn")
    original = al.AttentionTrace.load(trace_file)
    assert back.meta["stored_dtype"] == "float16" and back.weights.dtype == torch.float32
    assert float((back.weights - original.weights).abs().max()) <= 2**-12
    saved = trace_file.stat().st_size - (out / "trace.attn").stat().st_size
    assert saved >= 2 * original.weights.numel() - 64, "two bytes a weight instead of four"
    assert main([*args, "--tokens", "3:", "--scale", "power", "--gamma", "0.3"]) == 0
    assert "positions 3-4 of 5" in (out / "heatmap.svg").read_text()
    assert "power scale, gamma 0.3" in (out / "heatmap.svg").read_text()
    assert "stored_dtype" not in al.AttentionTrace.load(out / "trace.attn").meta, "without --compact: exact"


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--tokens", "2:9"], ["--tokens 2:9", "5 tokens", "0..4"]),
        (["--tokens", "3:3"], ["START must be less than STOP"]),
        (["--tokens", "five"], ["START:STOP", "'five'"]),
        (["--tokens", "4"], ["START:STOP"]),
        (["--gamma", "0.3"], ["--gamma applies to --scale power"]),
        (["--scale", "power", "--gamma", "0"], ["--gamma must be a number > 0"]),
        (["--scale", "power", "--gamma", "nan"], ["--gamma must be a number > 0"]),
    ],
)
def test_bad_long_input_options(tmp_path, trace_file, capsys, extra, words):
    check_refused(tmp_path, capsys, ["--trace", str(trace_file), "--out", str(tmp_path / "out"), *extra], *words)


def test_tokens_beyond_the_model_limit_are_refused_before_it_loads(tmp_path, capsys, monkeypatch):
    from attnlab.capturing import pretrained

    monkeypatch.setattr(pretrained, "_load", lambda folder: pytest.fail("the model must not load"))
    check_refused(tmp_path, capsys, ["The cat sat.", "--tokens", "500:600", "--out", str(tmp_path / "o")],
                  "--tokens 500:600", "at most 512 tokens")
    check_refused(tmp_path, capsys, ["The cat sat.", "--max-length", "64", "--tokens", ":65",
                                     "--out", str(tmp_path / "o")], "at most 64 tokens")


def test_kind_option_on_a_trace_without_that_kind(tmp_path, trace_file, capsys):
    check_refused(tmp_path, capsys, ["--trace", str(trace_file), "--kind", "cross", "--out", str(tmp_path / "o")],
                  "no cross attention", "only self")


def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"attnlab {al.__version__}"


@pytest.mark.slow
def test_sigterm_removes_the_staging_folder(tmp_path):
    """A real `attnlab show` process killed with SIGTERM while it works: exit 143, one line, no files left."""
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "attnlab.cli", "show", SENTENCE, "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".out.*.tmp")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)  # the staging folder appears before the model loads
    assert list(tmp_path.glob(".out.*.tmp")), "the command never started its staging folder"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert err.strip().splitlines() == ["attnlab show: terminated"], err
    assert files(tmp_path) == set(), files(tmp_path)


def test_help_explains_every_option(capsys):
    with pytest.raises(SystemExit) as info:
        main(["show", "--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    for option in ("--out", "--layer", "--head", "--format", "--model", "--pair", "--merge", "--trace",
                   "--max-length", "--truncate", "--no-viewer", "--tokens", "--scale", "--gamma", "--compact"):
        assert option in text
    assert "examples:" in text and 'attnlab show "The cat sat on the mat' in text


# ----- bad input -----------------------------------------------------------------------------------
def check_refused(tmp_path: Path, capsys, args: list[str], *words: str) -> None:
    """Exit code 2, exactly one stderr line containing ``words``, and no new file anywhere in tmp_path."""
    before = files(tmp_path)
    assert main(["show", *args]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("attnlab show: error: ") and "Traceback" not in err
    for word in words:
        assert word in err, err
    assert files(tmp_path) == before, "a refused command must write nothing"


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--layer", "2"], ["layer 2", "2 layers"]),
        (["--layer", "-3"], ["layer -3"]),
        (["--layer", "first"], ["--layer", "'first'"]),
        (["--head", "3"], ["head 3", "3 heads"]),
        (["--head", "max"], ["--head", "'max'", "or 'mean'"]),
        (["--pair", "x"], ["--pair", "--trace"]),
        (["--model", "minilm"], ["--model", "--trace"]),
    ],
)
def test_bad_options_on_a_saved_trace(tmp_path, trace_file, capsys, extra, words):
    check_refused(tmp_path, capsys, ["--trace", str(trace_file), "--out", str(tmp_path / "out"), *extra], *words)


@pytest.mark.parametrize("model", ["minilm", "zh-sentiment", "dates-zh", "tutorial-en-zh", "zh-lm", "induction-2l"])
def test_a_text_of_nothing_the_model_knows_is_refused_on_every_kind(tmp_path, capsys, model):
    """The one unknown-character rule (attnlab.trained.unknown_warning): one line, exit 2, nothing written."""
    check_refused(tmp_path, capsys, ["☃☃ ☃", "--model", model, "--out", str(tmp_path / "o"), "--no-viewer"],
                  "of '☃☃ ☃' is unknown to the model", "read as [UNK]")


def test_text_and_trace_together_or_neither(tmp_path, trace_file, capsys):
    check_refused(tmp_path, capsys, ["hello", "--trace", str(trace_file), "--out", str(tmp_path / "o")], "not both")
    check_refused(tmp_path, capsys, ["--out", str(tmp_path / "o")], "nothing to show", "TEXT", "--trace")


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (None, ["no trace file"]),
        (b"", ["cannot read", "corrupt"]),
        (b"\x00garbage" * 50, ["cannot read"]),
        ("truncate", ["cannot read"]),
    ],
)
def test_corrupt_or_missing_trace_file(tmp_path, trace_file, capsys, content, words):
    bad = tmp_path / "in" / "bad.attn"
    if content == "truncate":
        bad.write_bytes(trace_file.read_bytes()[:-100])
    elif content is not None:
        bad.write_bytes(content)
    check_refused(tmp_path, capsys, ["--trace", str(bad), "--out", str(tmp_path / "out")], *words)


def test_foreign_safetensors_file(tmp_path, capsys):
    from safetensors.torch import save_file

    other = tmp_path / "weights.safetensors"
    save_file({"w": torch.zeros(2)}, str(other))
    check_refused(tmp_path, capsys, ["--trace", str(other), "--out", str(tmp_path / "out")], "not an attnlab trace")


def test_output_folder_that_cannot_be_written(tmp_path, trace_file, capsys):
    a_file = tmp_path / "taken"
    a_file.write_text("x")
    check_refused(tmp_path, capsys, ["--trace", str(trace_file), "--out", str(a_file)], "is a file, not a folder")
    check_refused(tmp_path, capsys, ["--trace", str(trace_file), "--out", str(a_file / "sub" / "out")], "is a file")
    if os.geteuid() != 0:  # root writes anywhere; /proc refuses everyone
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o555)
        check_refused(tmp_path, capsys, ["--trace", str(trace_file), "--out", str(locked / "out")], "permission")
    before = files(tmp_path)
    assert main(["show", "--trace", str(trace_file), "--out", "/proc/attnlab-out"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "cannot create '/proc/attnlab-out' in '/proc'" in err[0] and ".tmp" not in err[0], err
    assert "special file system" in err[0] and "No such file" not in err[0], err
    assert files(tmp_path) == before and not Path("/proc/attnlab-out").exists()


@pytest.mark.slow
def test_failure_while_writing_leaves_nothing(tmp_path, trace_file, capsys, monkeypatch):
    """A disk that fills up after the first figure: no output folder, no staging folder, one error line."""
    from attnlab.viz import static

    real_save, calls = static.save, []

    def fill_up(fig, path, **kwargs):
        calls.append(path)
        if len(calls) > 1:
            raise OSError(28, "No space left on device", str(path))
        return real_save(fig, path, **kwargs)

    # al.viz first: its lazy __getattr__ caches whatever static.save is when first touched, and the
    # undo must restore the real function, not the patched one.
    monkeypatch.setattr(al.viz, "save", fill_up, raising=False)
    monkeypatch.setattr(static, "save", fill_up)
    check_refused(tmp_path, capsys, ["--trace", str(trace_file), "--out", str(tmp_path / "out")], "No space left")
    assert len(calls) == 2


# ----- the real bundled model ----------------------------------------------------------------------
SENTENCE = "The cat sat on the mat because it was tired."


@pytest.mark.slow
def test_bundled_model_end_to_end(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["show", SENTENCE, "--out", str(out)]) == 0
    assert files(out) == expected_files()
    trace = al.AttentionTrace.load(out / "trace.attn")
    assert trace.tokens[0] == "[CLS]" and trace.tokens[-1] == "[SEP]" and "cat" in trace.tokens
    assert tuple(trace.weights.shape) == (6, 12, len(trace.tokens), len(trace.tokens))
    torch.testing.assert_close(trace.weights.sum(-1), torch.ones(6, 12, len(trace.tokens)))
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("self-attention (")
    assert printed[0].endswith(f": 6 layers x 12 heads, {len(trace.tokens)} tokens")
    assert [line.split()[0] for line in printed[4:10]] == [str(i) for i in range(6)]


@pytest.mark.slow
def test_bundled_model_pair_and_chinese(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["show", "我喜欢这部电影", "--pair", "The cat.", "--out", str(out), "--no-viewer"]) == 0
    trace = al.AttentionTrace.load(out / "trace.attn")
    assert trace.tokens.count("[SEP]") == 2 and "cat" in trace.tokens
    assert "tokens: [CLS]" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "words"),
    [
        ([""], ["empty"]),
        (["   "], ["empty"]),
        (["word " * 2000], ["2002 tokens", "add --truncate"]),
        ([SENTENCE, "--model", "/nonexistent/model"], ["/nonexistent/model"]),
        ([SENTENCE, "--kind", "causal"], ["--kind causal", "encoder"]),
    ],
)
def test_bad_text_or_model(tmp_path, capsys, args, words):
    check_refused(tmp_path, capsys, [*args, "--out", str(tmp_path / "out")], *words)


@pytest.mark.parametrize(("args", "words"), [(["--layer", "6"], ["--layer 6", "6 layers"]),
                                             (["--head", "12"], ["--head 12", "12 heads"]),
                                             (["--kind", "cross"], ["--kind cross", "encoder-decoder"])])
def test_out_of_range_is_refused_before_the_model_loads(tmp_path, capsys, monkeypatch, args, words):
    import importlib

    text = importlib.import_module("attnlab.capturing.pretrained")

    def no_load(folder):
        raise AssertionError("the model was loaded before the arguments were checked")

    monkeypatch.setattr(text, "_load", no_load)
    check_refused(tmp_path, capsys, [SENTENCE, *args, "--out", str(tmp_path / "out")], *words)


@pytest.mark.slow
def test_truncate_warns_in_one_line_without_a_source_path(tmp_path, capsys):
    assert main(["show", "word " * 600, "--truncate", "--out", str(tmp_path / "out"), "--no-viewer"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == ["attnlab show: warning: the input is 602 tokens long; truncated to the first 512 tokens"], err


@pytest.mark.slow
def test_folder_that_is_not_a_model(tmp_path, capsys):
    folder = tmp_path / "not-a-model"
    folder.mkdir()
    (folder / "readme.txt").write_text("hello")
    check_refused(tmp_path, capsys, [SENTENCE, "--model", str(folder), "--out", str(tmp_path / "out")], "not-a-model")


@pytest.mark.slow
def test_library_deprecation_warnings_stay_out_of_the_cli(tmp_path, trace_file, capsys, monkeypatch):
    """A dependency's DeprecationWarning (matplotlib 3.8 with a newer pyparsing, say) is not the user's concern;
    a UserWarning is, once, on one line."""
    import warnings

    from attnlab import viz

    draw = viz.heatmap

    def noisy(*args, **kwargs):
        warnings.warn("'parseString' deprecated - use 'parse_string'", DeprecationWarning, stacklevel=1)
        warnings.warn("something the user should know", UserWarning, stacklevel=1)
        return draw(*args, **kwargs)

    monkeypatch.setattr(viz, "heatmap", noisy)
    assert main(["show", "--trace", str(trace_file), "--out", str(tmp_path / "out"), "--no-viewer"]) == 0
    assert capsys.readouterr().err.splitlines() == ["attnlab show: warning: something the user should know"]


def test_the_cli_prints_what_users_should_know_and_not_the_interpreters_notes(capsys):
    """A warning for the user is one line; a ResourceWarning (a file an interrupted import left open, as a SIGTERM
    during start-up does) or a DeprecationWarning is not the user's business and prints nothing."""
    import warnings

    from attnlab.cli import _cli_behaviour

    with _cli_behaviour("show"):
        warnings.warn("unclosed file <_io.BufferedReader name='x.pyc'>", ResourceWarning, stacklevel=1)
        warnings.warn("old call", DeprecationWarning, stacklevel=1)
        warnings.warn("3 tokens are unknown", UserWarning, stacklevel=1)
    assert capsys.readouterr().err.splitlines() == ["attnlab show: warning: 3 tokens are unknown"]
