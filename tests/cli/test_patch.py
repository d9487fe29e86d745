"""`attnlab patch` and `attnlab circuit` on a tiny language-model folder: their files and numbers, and every bad
input refused in one line with nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers.cli import one_error_line

from attnlab import circuits as C
from attnlab.cli import main
from attnlab.data import CharTokenizer
from attnlab.models.lm import CausalLM, LMConfig, save_lm

CHARS = "abcdefgh"


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("toy")
    torch.manual_seed(3)
    vocab = CharTokenizer(("[UNK]", *CHARS))
    model = CausalLM(LMConfig(vocab_size=len(vocab), context=12, d_model=12, n_heads=3, n_layers=2, mlp=False,
                              norm=False))
    with torch.no_grad():
        model.embed.weight.mul_(30)  # away from the 0.02 start, so the runs differ visibly
    save_lm(folder, model, {"tokenizer": vocab.to_json()})
    return folder


@pytest.mark.parametrize("what", ["resid", "heads", "pattern", "path"])
def test_patch_writes_its_figure_and_every_number(toy: Path, tmp_path: Path, what: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    code = main(["patch", "--model", str(toy), "--clean", "abcabca", "--corrupt", "hgfdbca", "--target", "b",
                 "--distractor", "e", "--what", what, "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 0
    assert printed.startswith(f"{what}: logit difference 'b' - 'e': clean ")
    figure = {"resid": "resid.png", "heads": "heads.png", "pattern": "pattern.png", "path": "path.png"}[what]
    assert sorted(p.name for p in out.iterdir()) == sorted([figure, "patch.json"])
    data = json.loads((out / "patch.json").read_text(encoding="utf-8"))
    values = np.array(data["values"], dtype=float)
    restored = np.array(data["restored"], dtype=float)
    metric = data["metric"]
    assert values.shape == ((2, 7) if what == "resid" else (2, 3))
    ok = np.isfinite(values)
    assert np.allclose(restored[ok], (values[ok] - metric["corrupted"]) / (metric["clean"] - metric["corrupted"]))
    assert restored[tuple(data["top"]["index"])] == pytest.approx(np.nanmax(restored))  # the largest positive share
    if what == "heads":
        assert -1 <= data["attribution_patching"]["spearman"] <= 1
    if what == "path":
        assert data["receiver"] == "logits" and ok.all()  # every head reaches the logits


def test_patch_numbers_are_the_library_s(toy: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["patch", "--model", str(toy), "--clean", "abcabca", "--corrupt", "hgfdbca", "--target", "b",
                 "--distractor", "e", "--out", str(out)]) == 0
    tm = C.load_text_model(str(toy))
    ids, bad = tm.encode("abcabca", "clean")[0], tm.encode("hgfdbca", "corrupted")[0]
    expect = C.patch_heads(tm.model, ids, bad, C.logit_diff(CHARS.index("b") + 1, CHARS.index("e") + 1))
    data = json.loads((out / "patch.json").read_text(encoding="utf-8"))
    assert np.allclose(data["values"], expect.values)


def test_path_to_one_receiver(toy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["patch", "--model", str(toy), "--clean", "abcabca", "--corrupt", "hgfdbca", "--what", "path",
                 "--receiver", "1.2", "--into", "q", "--out", str(out)]) == 0
    data = json.loads((out / "patch.json").read_text(encoding="utf-8"))
    assert data["receiver"] == "1.2 q" and data["site"] == "blocks.1.attn.hook_q head 2"
    assert "restores" in capsys.readouterr().out


def test_circuit(toy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["circuit", "--model", str(toy), "--top", "4", "--out", str(out)]) == 0
    data = json.loads((out / "circuit.json").read_text(encoding="utf-8"))
    assert (out / "circuit.png").is_file() and len(data["strongest"]) == 4
    k = np.array(data["scores"]["k"])
    assert k.shape == (2, 3, 2, 3) and (k[1] == 0).all()
    best = data["strongest"][0]
    assert best["score"] == pytest.approx(max(np.max(np.array(data["scores"][m])) for m in "qkv"))
    first, second = capsys.readouterr().out.splitlines()[:2]
    baseline = data["random_baseline"]
    assert first == f"random matrices of these shapes score {baseline:.3f}: an edge means something only above it"
    assert 0 < baseline < 1 and second.startswith(f"{best['mode']}-composition {best['sender']} -> {best['receiver']}")
    assert second.endswith(f"({best['score'] / baseline:.1f} x the random score)")


BAD = [
    (["--clean", "abcab", "--corrupt", "abca"], "the clean text is 5 tokens and the corrupted text 4"),
    (["--clean", "abcab", "--corrupt", "abcaa", "--target", "z"], "--target 'z' is not an output of"),
    (["--clean", "abcab", "--corrupt", "abcaa", "--distractor", "ab"], "--distractor 'ab' is not an output of"),
    (["--clean", "abcab", "--corrupt", "abcaa", "--what", "path", "--sender", "1.0", "--receiver", "1.1"],
     "a path runs from an earlier layer to a later one: sender 1.0 is not below receiver 1.1"),
    (["--clean", "abcab", "--corrupt", "abcaa", "--what", "path", "--receiver", "0.1"],
     "a path runs from an earlier layer to a later one: no head is below receiver 0.1"),
    (["--clean", "abcab", "--corrupt", "abcaa", "--what", "path", "--receiver", "5.0"], "head 5.0 does not exist"),
    (["--clean", "abcab", "--corrupt", "abcaa", "--what", "path", "--receiver", "one"], "--receiver takes a head"),
    (["--clean", "abcab", "--corrupt", "abcaa", "--receiver", "1.0"], "--receiver and --sender are for --what path"),
    (["--clean", "xyz", "--corrupt", "abc"], "the clean text: every character of 'xyz' is unknown"),
    (["--clean", "", "--corrupt", ""], "the clean text is empty"),
]


@pytest.mark.parametrize(("args", "message"), BAD, ids=[m[:30] for _, m in BAD])
def test_patch_bad_input(toy: Path, tmp_path: Path, args: list[str], message: str,
                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["patch", "--model", str(toy), *args, "--out", str(out)]) == 2
    assert message in one_error_line(capsys, "patch")
    assert not out.exists()


@pytest.mark.parametrize("command", ["patch", "circuit"])
def test_a_model_kind_without_hooks_is_refused(command: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    args = ["--clean", "ab", "--corrupt", "cd"] if command == "patch" else []
    assert main([command, "--model", "dates-zh", *args, "--out", str(out)]) == 2
    assert "dates-zh is a translator: use attnlab translate" in one_error_line(capsys, command)
    assert not out.exists()


def test_circuit_bad_top(toy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["circuit", "--model", str(toy), "--top", "0", "--out", str(tmp_path / "out")]) == 2
    assert "--top" in one_error_line(capsys, "circuit")
    assert not (tmp_path / "out").exists()


def test_the_line_says_when_the_shares_say_little(toy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  recwarn: pytest.WarningsRecorder) -> None:
    from attnlab.circuits import load_text_model, patch_texts

    assert main(["patch", "--model", str(toy), "--clean", "abcabca", "--corrupt", "abcabca", "--target", "b",
                 "--distractor", "e", "--out", str(tmp_path / "same")]) == 0
    printed = capsys.readouterr().out
    assert "nothing to restore" in printed and "nan" not in printed.lower()
    assert not [w for w in recwarn if "spearman" in str(w.message).lower() or "constant" in str(w.message).lower()]
    data = json.loads((tmp_path / "same" / "patch.json").read_text(encoding="utf-8"))
    assert "nothing to restore" in data["caveat"] and data["attribution_patching"]["spearman"] is None
    tm = load_text_model(str(toy))
    swapped = patch_texts(tm, "hgfdbca", "abcabca", target="b", distractor="e")
    if swapped.result.corrupted > swapped.result.clean:
        assert "swap --clean and --corrupt" in swapped.summary()
    found = patch_texts(tm, "abcabca", "hgfdbca", target="b", distractor="e")
    assert float(np.asarray(found.result.restored)[found.top()]) == np.nanmax(found.result.restored)
