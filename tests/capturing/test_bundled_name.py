"""The name "zh-sentiment" in trace_text, `attnlab show`, `predict` and `evaluate`: resolved by attnlab.locate;
a missing folder is a clear ModelLoadError naming `make train-zh`.

The tests point ``attnlab._bundled.HERE`` at a temporary package folder holding a tiny classifier trained here,
so they run the same whether or not this checkout has the real model built."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from helpers.reviews import write_reviews

import attnlab._bundled as bundled
from attnlab import locate, trace_text
from attnlab.capturing import model_config
from attnlab.cli import main
from attnlab.errors import ModelLoadError
from attnlab.training import ClassifyTrainConfig, train_classifier


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny classifier's run folder (trained once for this module, 1 thread)."""
    root = tmp_path_factory.mktemp("zh")
    data = write_reviews(root / "reviews.csv", 200, longest=12)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        train_classifier(data, root / "run", model={"d_model": 12, "n_heads": 3, "n_layers": 1, "d_ff": 16},
                         config=ClassifyTrainConfig(epochs=2, batch_size=16, lr=5e-3), max_length=16, device="cpu",
                         progress=False, log=lambda _: None)
    finally:
        torch.set_num_threads(threads)
    return root / "run"


@pytest.fixture
def package(tiny_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``attnlab._bundled`` pointed at a folder whose zh-sentiment/ holds the tiny model's final files."""
    here = tmp_path / "_bundled"
    folder = here / "zh-sentiment"
    folder.mkdir(parents=True)
    for name in ("model.safetensors", "config.json", "tokenizer.json"):
        shutil.copy(tiny_run / name, folder / name)
    monkeypatch.setattr(bundled, "HERE", here)
    return folder


@pytest.mark.slow
def test_the_name_resolves_to_the_bundled_folder(package: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    found = locate("zh-sentiment")
    assert (found.kind, found.bundled, found.path) == ("classifier", "zh-sentiment", package / "model.safetensors")
    assert bundled.bundled_folder("zh-sentiment") == package
    assert locate("minilm").kind == "huggingface"
    assert (locate(package).kind, locate(package).bundled) == ("classifier", None)  # a path, not a name
    assert model_config("zh-sentiment")["model_type"] == "attnlab-classifier"

    trace = trace_text("abc好de", model="zh-sentiment")
    assert trace.meta["model"] == "zh-sentiment" and trace.meta["label"] in ("pos", "neg")
    assert trace.records[0].key_tokens == ["[CLS]", "a", "b", "c", "好", "d", "e"]  # characters, not [UNK]

    monkeypatch.chdir(tmp_path)  # a folder named like the model in the working directory does not shadow the name
    (tmp_path / "zh-sentiment").mkdir()
    capsys.readouterr()
    assert main(["predict", "--model", "zh-sentiment", "abc好de", "kk差"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split("\t")[0] in ("pos", "neg") for ln in lines] == [True, True]
    assert main(["evaluate", "--model", "zh-sentiment"]) == 0  # on the test split of the data it records
    assert capsys.readouterr().out.startswith("accuracy ")
    assert main(["show", "abc好de", "--model", "zh-sentiment", "--out", str(tmp_path / "show"), "--no-viewer",
                 "--layer", "0"]) == 0
    assert (tmp_path / "show" / "heatmap.png").is_file()


def test_a_missing_bundled_folder_names_make_train_zh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(bundled, "HERE", tmp_path)  # a package folder without zh-sentiment/
    with pytest.raises(ModelLoadError, match="make train-zh"):
        trace_text("这本书写得很好", model="zh-sentiment")
    (tmp_path / "zh-sentiment").mkdir()  # an empty folder (no config.json) is not a model either
    with pytest.raises(ModelLoadError, match=r"zh-sentiment/ holds no config\.json.*make train-zh"):
        locate("zh-sentiment")
    for command in (["predict", "--model", "zh-sentiment", "好"], ["evaluate", "--model", "zh-sentiment"],
                    ["show", "好", "--model", "zh-sentiment", "--out", str(tmp_path / "o")]):
        assert main(command) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "make train-zh" in err, err
    assert not (tmp_path / "o").exists()  # nothing written


def test_the_real_package_folder() -> None:
    """In this checkout the name gives the shipped folder (with its model file), or the make-train-zh error."""
    real = Path(bundled.__file__).resolve().parent / "zh-sentiment"
    if (real / "config.json").is_file():
        path = locate("zh-sentiment").path
        assert path == real / "model.safetensors" and path.is_file()
    else:
        with pytest.raises(ModelLoadError, match="make train-zh"):
            locate("zh-sentiment")


def test_load_trained_reads_the_bundled_classifier_by_name() -> None:
    from attnlab._bundled import bundled_folder
    from attnlab.training import load_trained

    folder = bundled_folder("zh-sentiment")
    assert folder is not None, "the bundled zh-sentiment folder is part of the package"
    by_name = load_trained("zh-sentiment")
    by_path = load_trained(folder)
    text = ["质量太差了，不推荐。"]
    assert by_name.predict(text) == by_path.predict(text)
