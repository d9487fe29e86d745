"""`attnlab circuit --discover` and `--sinks` on the bundled induction-2l: the files, the manifest, the numbers
printed; every bad input refused in one line with nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.cli import one_error_line

from attnlab.cli import main


def test_discover_writes_the_circuit_its_curve_and_every_number(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    code = main(["circuit", "--discover", "--model", "induction-2l", "--method", "eap", "--prompts", "8",
                 "--out", str(out)])
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == ["circuit.png", "discovery.json", "faithfulness.png"]
    js = json.loads((out / "discovery.json").read_text(encoding="utf-8"))
    m = js["manifest"]
    assert m["model"] == "induction-2l" and m["task"] == "induction" and m["method"] == "eap"
    assert m["ablation"] == "corrupt" and m["prompts"] == 8 and len(m["prompts_sha256"]) == 64
    assert js["graph"]["n_edges"] == 81 and len(js["edges"]) == 81
    c = js["circuit"]
    assert c["low"] <= c["faithfulness"] <= c["high"] and c["n_edges"] == len(c["edges"])
    assert js["faithfulness"]["curve"][-1]["faithfulness"] == pytest.approx(1.0)
    assert -1 <= js["against_exact"]["spearman"] <= 1 and 0 <= js["roc"]["auc"] <= 1
    said = capsys.readouterr().out
    assert "induction-2l: 81 edges" in said and "faithfulness" in said and "ROC AUC" in said


def test_sinks_prints_a_row_per_head(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["circuit", "--sinks", "--model", "induction-2l", "--out", str(tmp_path / "s")]) == 0
    js = json.loads((tmp_path / "s" / "sinks.json").read_text(encoding="utf-8"))
    assert len(js["heads"]) == 8
    assert len([line for line in capsys.readouterr().out.splitlines() if line[:1].isdigit()]) == 8


@pytest.mark.parametrize("argv,says", [
    (["--discover", "--task", "nope"], "unknown task"),
    (["--method", "eap"], "--method goes with --discover"),
    (["--discover", "--prompts", "1"], "at least 2"),
    (["--discover", "--method", "acdc", "--tau", "0"], "positive threshold"),
    (["--discover", "--steps", "3", "--method", "eap"], "--steps goes with --method eap-ig"),
    (["--discover", "--sinks"], "2 runs"),
    (["--text", "abc"], "--text goes with --sinks or --qk"),
    (["--qk", "1.0", "--sinks"], "--sinks and --qk are 2 runs"),
    (["--qk", "1.9", "--text", "abcd", "--query", "2", "--key", "1"], "does not exist"),
    (["--qk", "1.0", "--text", "abcd", "--query", "2"], "needs --query and --key"),
    (["--qk", "1.0", "--text", "abcd", "--query", "9", "--key", "1"], "positions must lie in 0..3"),
    (["--key", "1"], "--query and --key go with --qk"),
    (["--discover", "--objective", "metric"], "--objective goes with --method acdc"),
    (["--discover", "--model", "zh-sentiment"], "needs a language model"),
])
def test_bad_input_is_one_line_and_nothing_written(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   argv: list[str], says: str) -> None:
    out = tmp_path / "out"
    model = [] if "--model" in argv else ["--model", "induction-2l"]
    assert main(["circuit", *model, *argv, "--out", str(out)]) == 2
    assert says in one_error_line(capsys, "circuit")
    assert not out.exists()


def test_qk_prints_the_table_and_it_sums_to_the_score(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = "Gk3pQ9xZa+Lm7Rb/Ut2W" * 2
    assert main(["circuit", "--qk", "1.0", "--model", "induction-2l", "--text", text, "--query", "27", "--key", "8",
                 "--out", str(tmp_path / "q")]) == 0
    js = json.loads((tmp_path / "q" / "qk.json").read_text(encoding="utf-8"))
    assert js["sources"] == ["embed", "0.0", "0.1", "0.2", "0.3", "bias"]
    assert abs(sum(map(sum, js["table"])) - js["score"]) < 1e-3 and js["tokens"][27] == "Z"
    said = capsys.readouterr().out.splitlines()
    assert said[0].startswith("induction-2l head 1.0, query 27 ('Z') -> key 8 ('a')") and len(said) == 10


def test_acdc_at_one_threshold_keeps_its_circuit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["circuit", "--discover", "--model", "induction-2l", "--method", "acdc", "--tau", "0.05",
                 "--prompts", "4", "--out", str(tmp_path / "a")]) == 0
    js = json.loads((tmp_path / "a" / "discovery.json").read_text(encoding="utf-8"))
    assert js["acdc_tau"] == 0.05 and len(js["acdc"]) == 1 and js["manifest"]["objective"] == "kl"
    assert js["circuit"]["n_edges"] == js["acdc"][0]["n_kept"]
    said = capsys.readouterr().out
    assert "tau 0.05 (given; objective kl)" in said and "top 10%" not in said
