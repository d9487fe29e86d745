"""`attnlab train classify`, `evaluate`, `predict`, and a trained folder in `trace_text`/`show`; every bad input is
one line on stderr, exit 2, and leaves the last good checkpoint as it was."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from helpers.cli import fingerprint, one_error_line

from attnlab.cli import main
from attnlab.training import lr_at

TINY = ["--d-model", "12", "--n-heads", "3", "--n-layers", "1", "--d-ff", "20", "--min-frequency", "1",
        "--batch-size", "8", "--no-progress", "--checkpoint-every", "10"]


def train(data: Path, out: Path, *extra: str) -> int:
    return main(["train", "classify", "--data", str(data), "--out", str(out), *TINY, *extra])


@pytest.fixture
def trained(tiny_classifier: tuple[Path, Path], one_thread: None) -> tuple[Path, Path]:
    """TINY, 2 epochs at 5e-3: this test's copy of the session's one run (tests/conftest.py)."""
    return tiny_classifier


def test_schedule_warms_up_then_decays_to_zero() -> None:
    assert [lr_at(s, 10, 2, 1.0) for s in (1, 2)] == [0.5, 1.0]
    assert math.isclose(lr_at(6, 10, 2, 1.0), 0.5) and lr_at(10, 10, 2, 1.0) == 0.0


@pytest.mark.slow
def test_train_writes_the_run_and_evaluate_predict_show_use_it(
    trained: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data, out = trained
    for name in ("model.safetensors", "tokenizer.json", "config.json", "metrics.jsonl", "curves.png", "final.json"):
        assert (out / name).is_file(), name
    assert len(list((out / "checkpoints").glob("step-*"))) == 2
    final = json.loads((out / "final.json").read_text())
    assert final["test_stderr"] == pytest.approx(math.sqrt(final["test_accuracy"] * (1 - final["test_accuracy"])
                                                           / final["test_n"]))
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert {r["split"] for r in rows} == {"train", "valid"} and all(r["loss"] > 0 for r in rows)
    capsys.readouterr()

    assert main(["evaluate", "--model", str(out)]) == 0
    line = capsys.readouterr().out
    assert f"accuracy {final['test_accuracy']:.4f} ± {final['test_stderr']:.4f}" in line

    assert main(["predict", "--model", str(out), "abc好de", "kk差"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split("\t")[0] in ("pos", "neg") and 0.5 <= float(ln.split("\t")[1]) <= 1 for ln in lines] == [True] * 2

    from attnlab import trace_text

    trace = trace_text("abc好de", model=out)
    assert trace.records[0].key_tokens == ["[CLS]", "a", "b", "c", "好", "d", "e"]
    assert trace.meta["label"] in ("pos", "neg") and trace.n_layers == 1
    assert main(["show", "abc好de", "--model", str(out), "--out", str(tmp_path / "show"), "--no-viewer"]) == 0
    assert (tmp_path / "show" / "heatmap.png").is_file()


@pytest.mark.slow
def test_refusals_leave_the_run_as_it_was(trained: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    data, out = trained
    before = fingerprint(out)
    assert train(data, out, "--epochs", "2", "--lr", "5e-3") == 2
    assert "already holds a run" in one_error_line(capsys, "train")
    assert train(data, out, "--epochs", "3", "--lr", "5e-3", "--resume") == 2
    err = one_error_line(capsys, "train")
    assert "train.epochs (2 then, 3 now)" in err and "train.lr" not in err
    assert fingerprint(out) == before


def test_a_batch_that_does_not_fit_in_memory(reviews: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from attnlab.models import AttentionClassifier

    data = reviews

    def no_memory(self: object, ids: object, key_padding_mask: object = None) -> None:
        raise RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate memory: you "
                           "tried to allocate 98765432100 bytes")

    monkeypatch.setattr(AttentionClassifier, "forward", no_memory)
    assert train(data, tmp_path / "oom") == 2
    err = one_error_line(capsys, "train")
    assert "does not fit in memory" in err and "lower --batch-size (now 8)" in err
    assert not (tmp_path / "oom" / "checkpoints").exists()


@pytest.mark.slow
def test_corrupt_checkpoint_and_corrupt_model(trained: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    data, out = trained
    latest = out / "checkpoints" / (out / "checkpoints" / "latest").read_text().strip()
    opt = latest / "optimizer.safetensors"
    opt.write_bytes(opt.read_bytes()[:100])
    assert train(data, out, "--epochs", "2", "--lr", "5e-3", "--resume") == 2
    assert "is damaged" in one_error_line(capsys, "train")
    model = out / "model.safetensors"
    model.write_bytes(model.read_bytes()[:-50])
    assert main(["predict", "--model", str(out), "好"]) == 2
    assert "corrupt" in one_error_line(capsys, "predict")


@pytest.mark.parametrize("task", ["classify", "translate", "lm", "induction"])
def test_a_config_file_that_is_not_utf8_or_not_json_is_one_line(task: str, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A Latin-1 --config gave a UnicodeDecodeError traceback: now one line naming the file and the byte offset;
    an integer past Python's 4,300 digits and nesting past the stack are "not valid JSON" too."""
    config = tmp_path / "latin1.json"
    config.write_bytes('{"train": {"note": "café"}}'.encode("latin-1"))  # é: 0xE9, byte 23 (from 0)
    assert main(["train", task, "--config", str(config), "--out", str(tmp_path / "run")]) == 2
    assert (f"--config {str(config)!r} is not UTF-8: byte 0xE9 at byte offset 23 (line 1"
            in one_error_line(capsys, "train"))
    for content, says in (('{"train": {"epochs": ' + "1" * 5000 + "}}", "holds an integer of more than 4,300 digits"),
                          ('{"train": ' + "[" * 100_000 + "]" * 100_000 + "}", "it nests too deep")):
        config.write_text(content, encoding="utf-8")
        assert main(["train", task, "--config", str(config), "--out", str(tmp_path / "run")]) == 2
        assert says in one_error_line(capsys, "train")
    assert not (tmp_path / "run").exists()


def test_bad_data(tmp_path: Path, capsys: pytest.CaptureFixture[str], one_thread: None) -> None:
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert train(empty, tmp_path / "a") == 2
    assert "is empty" in one_error_line(capsys, "train")
    one = tmp_path / "one.csv"
    one.write_text("text,label\n" + "".join(f"text {i},pos\n" for i in range(30)))
    assert train(one, tmp_path / "b") == 2
    assert "only one class" in one_error_line(capsys, "train")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


@pytest.mark.slow
def test_long_texts_are_truncated_and_counted(reviews: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              one_thread: None) -> None:
    assert train(reviews, tmp_path / "cut", "--max-length", "6", "--max-steps", "3") == 0
    out = capsys.readouterr().out
    assert "texts longer than max_length=6 tokens" in out
    n = int(out.split("truncated ")[1].split()[0])
    assert n > 100


@pytest.mark.slow
def test_show_on_the_tutorials_additive_model(reviews: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              one_thread: None) -> None:
    out = tmp_path / "additive"
    assert train(reviews, out, "--n-layers", "0", "--pooling", "attention", "--max-steps", "8") == 0
    from attnlab import trace_text

    trace = trace_text("ab好", model=out)
    record = trace.records[0]
    assert [r.kind for r in trace.records] == ["cross"] and record.query_tokens == ["[pool]"]
    assert record.key_tokens == ["[CLS]", "a", "b", "好"]
    assert main(["show", "ab好", "--model", str(out), "--out", str(tmp_path / "s"), "--no-viewer"]) == 0
    assert main(["show", "ab好", "--model", str(out), "--out", str(tmp_path / "s"), "--kind", "self"]) == 2
    assert "no self attention" in one_error_line(capsys, "show")
    assert main(["predict", "--model", str(out), "--explain", "ab好"]) == 0  # no encoder: no ALTI-Logit, said so
    built = capsys.readouterr().out.splitlines()[2]
    assert built.startswith("  built the ") and "(not for this model: " in built, built


def test_the_run_logs_itself_and_says_its_expected_time(reviews: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str], one_thread: None) -> None:
    out = tmp_path / "timed"
    assert train(reviews, out, "--max-steps", "12") == 0
    printed = capsys.readouterr().out.splitlines()
    (line,) = [ln for ln in printed if ln.startswith("expected time: about ")]
    assert "for the 7 steps left" in line and "over the first 5" in line  # 12 steps, 5 of them timed
    logged = (out / "train.log").read_text(encoding="utf-8").splitlines()
    assert logged == printed[:-1]  # every line the run printed, but the command's own last one
    assert logged[0].startswith("data: ") and logged[-2].startswith("test accuracy ")


class Stop(Exception):
    pass


@pytest.mark.slow
def test_resume_reads_the_saved_options_and_a_runs_config_starts_it_again(
        reviews: Path, tmp_path: Path, one_thread: None) -> None:
    from attnlab.training import ClassifyTrainConfig, train_classifier

    model = {"d_model": 12, "n_heads": 3, "n_layers": 1, "d_ff": 20, "dropout": 0.2}
    config = ClassifyTrainConfig(epochs=2, batch_size=8, lr=4e-3, min_frequency=1, checkpoint_every=10, patience=0)
    whole = train_classifier(reviews, tmp_path / "whole", model=model, config=config, max_length=20,
                             label_column="label", progress=False, log=lambda _: None)

    def stop_at_validation(line: str) -> None:
        if "valid loss" in line:
            raise Stop

    with pytest.raises(Stop):
        train_classifier(reviews, tmp_path / "cut", model=model, config=config, max_length=20, progress=False,
                         log=stop_at_validation)
    assert main(["train", "classify", "--out", str(tmp_path / "cut"), "--resume", "--no-progress"]) == 0  # no option
    assert json.loads((tmp_path / "cut" / "final.json").read_text()) == whole

    # a finished run's config.json (with its text and label columns) is a --config file for a new run
    again = tmp_path / "again"
    assert main(["train", "classify", "--config", str(tmp_path / "whole" / "config.json"), "--out", str(again),
                 "--no-progress"]) == 0
    assert json.loads((again / "final.json").read_text()) == whole


@pytest.mark.parametrize(("name", "content", "line"), [
    ("missing.csv", "text,label\nab好,pos\ncd差\nef好,pos\n", 3),
    ("empty.csv", "text,label\nab好,pos\ncd差,neg\nef好, \n", 4),
    ("empty.tsv", "text\tlabel\nab好\t\ncd差\tneg\n", 2),
    ("null.jsonl", '{"text": "ab好", "label": "pos"}\n{"text": "cd差", "label": null}\n', 2),
])
def test_a_text_without_a_label_is_refused_naming_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            name: str, content: str, line: int) -> None:
    data = tmp_path / name
    data.write_text(content, encoding="utf-8")
    assert train(data, tmp_path / "run") == 2
    assert f"line {line}: the text has no label" in one_error_line(capsys, "train")
    assert not (tmp_path / "run").exists()


def test_a_config_saved_when_bucket_was_a_flag_still_reads(reviews: Path, tmp_path: Path, one_thread: None) -> None:
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"train": {"bucket": True, "min_frequency": 1}, "model": {"d_model": 12, "n_heads": 3,
                                                                                      "n_layers": 1}}))
    assert main(["train", "classify", "--data", str(reviews), "--config", str(old), "--out", str(tmp_path / "r"),
                 "--max-steps", "2", "--batch-size", "8", "--no-progress"]) == 0
    assert json.loads((tmp_path / "r" / "config.json").read_text())["train"]["bucket"] == 50


def test_predict_warns_on_unknown_characters_reads_stdin_and_refuses_an_empty_text(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    assert main(["predict", "--model", "zh-sentiment", "好好好好好好好好好☃", "这本书写得很好", "hello"]) == 0
    captured = capsys.readouterr()
    assert [ln.split("\t")[2] for ln in captured.out.splitlines()] == ["好好好好好好好好好☃", "这本书写得很好", "hello"]
    warned = captured.err.strip().splitlines()
    assert len(warned) == 2 and warned[0].startswith(  # any unknown character is said, with its share
        "attnlab predict: warning: 1 of the 10 characters of '好好好好好好好好好☃' (10%) are unknown to the model "
        "'zh-sentiment' ('☃', read as [UNK])")
    assert warned[1].startswith("attnlab predict: warning: 'hello' is mostly not in CJK script")
    assert main(["predict", "--model", "zh-sentiment", "☃☃ ☃☃☃"]) == 2  # nothing it knows: refused
    assert "every character of '☃☃ ☃☃☃' is unknown to the model 'zh-sentiment'" in one_error_line(capsys, "predict")

    monkeypatch.setattr("sys.stdin", io.StringIO("很好\n太差了\n"))
    assert main(["predict", "--model", "zh-sentiment", "-"]) == 0
    assert [ln.split("\t")[2] for ln in capsys.readouterr().out.splitlines()] == ["很好", "太差了"]
    monkeypatch.setattr("sys.stdin", io.StringIO("很好\n\n太差了\n"))
    assert main(["predict", "--model", "zh-sentiment", "-"]) == 2  # the empty line answered in its place, refused
    out = capsys.readouterr().out
    assert [ln.split("\t")[:2] for ln in out.splitlines()][1] == ["-", "-"] and out.count("\n") == 3
    assert main(["predict", "--model", "zh-sentiment", " "]) == 2
    assert "the text to classify is empty" in one_error_line(capsys, "predict")


def test_predict_prints_the_calibrated_probability_and_explains_it(capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    from attnlab.training import load_trained

    clf = load_trained("zh-sentiment")
    assert clf.temperature != 1.0
    text = "这本书写得很好"
    probs = torch.softmax(clf.logits([text])[0] / clf.temperature, -1)
    assert main(["predict", "--model", "zh-sentiment", "--explain", text]) == 0
    first, blanked, built, attended = capsys.readouterr().out.splitlines()
    assert first == f"{clf.labels[int(probs.argmax())]}\t{float(probs.max()):.4f}\t{text}"
    label, p, drops = clf.blank_out(text)
    top = max(drops, key=lambda d: d[1])
    blank = clf._blank_character()
    without = torch.softmax(clf.logits([text[:top[0]] + blank + text[top[0] + 1:]])[0] / clf.temperature, -1)
    assert top[1] == pytest.approx(p - float(without[clf.labels.index(label)]), abs=1e-6)
    assert blanked.startswith(f"  matters most (drop in P({label}) when blanked out): {text[top[0]]} {top[1]:+.3f}")
    from attnlab.analysis import alti_logit

    alti = alti_logit(clf.model.eval(), torch.tensor([clf.tokenizer.encode(text)]), clf.labels.index(label))
    j = int(abs(alti.tokens[1:]).argmax()) + 1  # position 0 is [CLS], not a character
    assert built.startswith(f"  built the {label} logit (ALTI-Logit, signed: + pushed it up): "
                            f"{text[j - 1]} {alti.tokens[j]:+.2f}"), built
    assert len(built.split("): ")[1].split()) == 10  # five characters, each with its signed share
    shares = [float(s) for s in attended.split(":")[1].split()[1::2]]
    assert attended.startswith("  attended most (pooled attention") and shares == sorted(shares, reverse=True)
    assert len(shares) == 5 and 0 < sum(shares) <= 1
    assert main(["predict", "--model", "zh-sentiment", "--explain", "☃☃好☃☃☃"]) == 0
    attended = capsys.readouterr().out.splitlines()[3]
    assert attended.split(":")[1].split()[::2].count("☃") >= 4  # the character an [UNK] hides, not "[UNK]"


def test_pooled_attention_reads_what_the_pooling_reads() -> None:
    from types import SimpleNamespace

    import torch

    from attnlab.analysis import pooled_attention

    weights = torch.tensor([[[[0.5, 0.5, 0.0], [0.0, 0.2, 0.8], [0.0, 0.2, 0.8]]]])  # (1, H=1, Lq, Lk)
    rec = SimpleNamespace(weights=weights, key_tokens=["[CLS]", "a", "b"])
    trace = SimpleNamespace(kinds=("self",), select=lambda kind: [rec] if kind == "self" else [])
    assert pooled_attention(trace, "cls") == [("[CLS]", 0.5), ("a", 0.5), ("b", 0.0)]  # the [CLS] row
    mean = pooled_attention(trace, "meanmax")  # every row
    assert [t for t, _ in mean] == ["[CLS]", "a", "b"]
    assert [w for _, w in mean] == pytest.approx([0.5 / 3, 0.9 / 3, 1.6 / 3])


def test_show_on_the_bundled_classifier_prints_its_calibrated_prediction(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from attnlab.training import load_trained

    [(label, prob)] = load_trained("zh-sentiment").predict(["这本书写得很好"])
    assert main(["show", "这本书写得很好", "--model", "zh-sentiment", "--out", str(tmp_path), "--no-viewer"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"prediction: {label} {prob:.2f} (calibrated probability)"


def test_a_killed_run_is_read_from_its_last_checkpoint_with_one_line_saying_so(
        trained: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    _, out = trained
    (out / "model.safetensors").unlink()  # what a run killed before its end leaves: checkpoints, no final model
    latest = (out / "checkpoints" / "latest").read_text().strip()
    for command in (["predict", "--model", str(out), "ab好"], ["evaluate", "--model", str(out)]):
        assert main(command) == 0
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"attnlab {command[0]}: warning: "), err
        assert f"using its last checkpoint, {latest}, not the final model" in err[0]
