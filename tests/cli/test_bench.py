"""`attnlab bench --quick` end to end with small sizes (as CI runs it), the memory method, and bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from attnlab.bench import measure_peak
from attnlab.cli import main


@pytest.mark.slow
def test_bench_quick_writes_json_table_and_plots(tmp_path):
    # In its own process, exactly as a user (and the issue) runs it: the memory pass changes glibc's
    # allocation settings for the rest of the process, which must not slow the other tests here.
    out = tmp_path / "bench"
    done = subprocess.run(
        [sys.executable, "-m", "attnlab.cli", "bench", "--quick", "--out", str(out)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads((out / "bench.json").read_text())
    cases = {r["case"] for r in doc["results"]}
    assert {"sdpa", "naive", "memory_efficient", "stats", "local", "linear", "linear_causal",
            "memory_efficient_backward", "naive_backward", "sdpa_window_mask"} <= cases
    assert {r["n"] for r in doc["results"]} == {512, 1024}
    for r in doc["results"]:
        assert r["note"] == "" and r["seconds"] > 0 and r["gflops"] > 0, r
    assert {g["name"] for g in doc["goals"]} and all(g["value"] is None for g in doc["goals"])  # sizes too small
    table = (out / "bench.md").read_text()
    assert "| memory_efficient | 512 |" in table and "## Benchmark targets" in table
    for png in ("time.png", "memory.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    err = done.stderr
    assert "[  1/" in err and "sdpa" in err  # progress lines


@pytest.mark.slow
def test_peak_memory_measures_a_known_allocation():
    _, peak = measure_peak(lambda: torch.ones(64 * 2**20 // 4).sum())
    assert peak is not None, "Linux /proc/self/clear_refs must be usable here (memory is reported missing elsewhere)"
    assert 60 <= peak <= 80, peak


@pytest.mark.parametrize("args", [["--max-n", "1000"], ["--max-n", "256"], ["--threads", "0"]])
def test_bench_bad_arguments_exit_2_without_output(tmp_path, capsys, args):
    out = tmp_path / "b"
    assert main(["bench", "--quick", *args, "--out", str(out)]) == 2
    assert "attnlab bench: error:" in capsys.readouterr().err
    assert not out.exists()


def test_bench_profile_prints_the_operator_table(capsys):
    assert main(["bench", "--profile", "linear", "--max-n", "512", "--threads", "1"]) == 0
    out = capsys.readouterr().out
    assert "linear at n=512" in out and "aten::" in out
    assert main(["bench", "--profile", "nope", "--max-n", "512"]) == 2
    assert "--profile takes a case name" in capsys.readouterr().err


def test_default_output_is_one_folder_per_run(tmp_path, monkeypatch, capsys):
    """Without --out, a run writes into attnlab-bench/<date>-<time>/ (runs never mix); the benchmark itself is
    replaced here by a stub that records where it was asked to write."""
    import attnlab.bench


    seen = []

    def fake_run(cfg, out, progress):
        seen.append(out)
        return {"total_seconds": 0.0, "goals": []}

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(attnlab.bench, "run", fake_run)
    assert main(["bench", "--quick"]) == 0
    assert len(seen) == 1 and seen[0].parent == Path("attnlab-bench"), seen
    assert len(seen[0].name) == len("20261123-193000") and seen[0].name[8] == "-", seen
    assert f"wrote {seen[0] / 'bench.json'}" in capsys.readouterr().out
