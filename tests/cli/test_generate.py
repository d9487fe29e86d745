"""`attnlab generate` on the bundled zh-lm, in process: what it streams is the library's own sample for the same
seed, the trace and viewer it writes, and bad input (one line on stderr, exit 2, nothing written). (They ran as 8
subprocesses on a freshly trained tiny model in tests/training/test_lm.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from helpers.cli import one_error_line

import attnlab as al
from attnlab.cli import main
from attnlab.training import load_language_model


def test_it_streams_the_librarys_sample_and_writes_its_trace(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "gen"
    assert main(["generate", "--model", "zh-lm", "中国", "--max-tokens", "6", "--seed", "2", "--top-k", "5",
                 "--temperature", "0.8", "--out", str(out)]) == 0
    printed = capsys.readouterr()
    lm = load_language_model("zh-lm")
    sample = lm.generate("中国", max_tokens=6, seed=2, top_k=5, temperature=0.8)
    assert printed.out.splitlines()[0] == "中国" + lm.vocab.decode(sample.ids)
    assert any(line.startswith("6 characters, mean log-probability ") and "top-k 5," in line and "seed 2)" in line
               for line in printed.out.splitlines())
    assert printed.err == ""
    trace = al.AttentionTrace.load(out / "trace.attn")
    first = trace.select(kind="causal")[0]
    assert first.weights.shape[-1] == 2 + 6 - 1  # the prompt and every generated character but the last, read
    assert torch.allclose(first.weights.sum(-1), torch.ones(first.weights.shape[:-1]), atol=1e-5)
    assert sorted(p.name for p in out.iterdir()) == ["trace.attn", "viewer.html"]


def test_the_same_seed_gives_the_same_text_and_top_k_1_ignores_the_seed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def text(*args: str) -> str:
        assert main(["generate", "--model", "zh-lm", "人民", "--max-tokens", "8", *args,
                     "--out", str(tmp_path / str(len(list(tmp_path.iterdir()))))]) == 0
        return capsys.readouterr().out.splitlines()[0]

    assert text("--seed", "3") == text("--seed", "3")
    assert text("--top-k", "1", "--seed", "0") == text("--top-k", "1", "--seed", "7")


@pytest.mark.parametrize(("args", "message"), [
    (["--temperature", "0"], "--temperature must be a number > 0"),
    (["--temperature", "-1"], "--temperature must be a number > 0"),
    (["--max-tokens", "0"], "--max-tokens must be at least 1"),
    (["--top-k", "-2"], "--top-k must be 0"),
    (["--seed", "-1"], "--seed must be an integer from 0 to 2**63 - 1, got -1"),  # as the lab's "seed": -1
    (["--seed", str(2**63)], "--seed must be an integer from 0 to 2**63 - 1"),
    (["--temperature", "nan"], "--temperature must be a number > 0, got nan"),
    (["--temperature", "inf"], "--temperature must be a number > 0, got inf"),
    (["--temperature=-1e308"], "--temperature must be a number > 0"),
    (["--top-p", "nan"], "--top-p must be in (0, 1], got nan"),
    (["--top-p", "1e308"], "--top-p must be in (0, 1]"),
    (["--repetition-penalty", "inf"], "--repetition-penalty must be a number >= 1, got inf"),
    (["--repetition-penalty", "nan"], "--repetition-penalty must be a number >= 1, got nan"),
])
def test_bad_sampling_is_one_line_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     args: list[str], message: str) -> None:
    out = tmp_path / "g"
    assert main(["generate", "--model", "zh-lm", "中国", "--out", str(out), *args]) == 2
    assert message in one_error_line(capsys, "generate")
    assert not out.exists()


def test_unknown_prompts_and_other_models_are_refused_and_an_unknown_character_warns_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "g"
    assert main(["generate", "--model", "zh-lm", "☃♞🜁", "--out", str(out)]) == 2
    assert "every character of '☃♞🜁' is unknown" in one_error_line(capsys, "generate") and not out.exists()
    assert main(["generate", "--model", "zh-sentiment", "中国", "--out", str(out)]) == 2
    assert "is a classifier" in one_error_line(capsys, "generate") and not out.exists()
    assert main(["generate", "--model", "zh-lm", "中☃", "--max-tokens", "2", "--out", str(out)]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "1 of the 2 characters of '中☃' (50%)" in warnings[0], warnings
    assert "('☃', read as [UNK])" in warnings[0]


@pytest.mark.parametrize("prompt", [" ", "   ", "\n", "\t \n"])
def test_a_whitespace_prompt_is_refused_as_every_surface_refuses_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                    prompt: str) -> None:
    out = tmp_path / "g"
    assert main(["generate", "--model", "zh-lm", prompt, "--out", str(out)]) == 2
    assert f"the prompt is empty (got {prompt!r})" in one_error_line(capsys, "generate")
    assert not out.exists()


def test_a_temperature_whose_logits_overflow_takes_the_likeliest_character(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`attnlab generate 中国 --temperature 1e-300` gave a traceback: now the T -> 0 limit, the greedy text; 1e308
    samples (all but uniformly)."""
    assert main(["generate", "中国", "--temperature", "1e-300", "--max-tokens", "5", "--out",
                 str(tmp_path / "cold")]) == 0
    printed = capsys.readouterr()
    lm = load_language_model("zh-lm")
    greedy = lm.generate("中国", max_tokens=5, greedy=True)
    assert printed.out.splitlines()[0] == "中国" + lm.vocab.decode(greedy.ids)
    mean = sum(greedy.model_log_probs) / len(greedy.model_log_probs)  # the model's own: every surface's number
    assert f"mean log-probability {mean:.3f} per character (temperature 1e-300," in printed.out and printed.err == ""
    hot = ["generate", "中国", "--temperature", "1e308", "--max-tokens", "5", "--out", str(tmp_path / "hot")]
    assert main(hot) == 0
    assert "(temperature 1e+308," in capsys.readouterr().out
