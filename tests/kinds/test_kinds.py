"""Kinds as objects (attnlab.kinds): one table agrees with the words messages use; each kind refuses options of
another, tells its output its own way, knows what a request costs before running it; and a throwaway kind, added
with one module's worth of code and one register() call, is served by every surface: Model.run, show, the lab's
API, the behaviour suites and patch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import attnlab as al
from attnlab.cli import main
from attnlab.errors import InputError
from attnlab.kinds import CAPABILITIES, KIND, Budget, Model, TooCostlyError, register, unregister
from attnlab.kinds.lm import LanguageModelKind

TEXTS = {"minilm": "The cat sat on the mat.", "zh-sentiment": "这本书写得很好", "dates-zh": "Feb 3, 2021",
         "zh-lm": "中国", "induction-2l": "abcXYZ+/abcX"}


def test_one_table_of_kinds_and_capabilities() -> None:
    assert set(KIND) == set(al.KINDS)
    for name, spec in KIND.items():
        assert spec.name == name and spec.can <= set(CAPABILITIES) and spec.noun == al.KINDS[name].noun
        assert spec.suites_as, name


@pytest.mark.parametrize("name", list(TEXTS))
def test_each_kind_tells_its_answer_and_score(name: str) -> None:
    model = Model.load(name)
    outcome = model.run(TEXTS[name])
    assert outcome.spec is model.spec and outcome.kind == model.kind
    if outcome.answer is None:  # an encoder answers nothing but its attention
        assert outcome.score is None and outcome.told() is None
        return
    told = str(outcome.told())
    assert outcome.told() is not None and "\n" not in told  # one line: a line break in the answer written as \n
    assert outcome.answer.replace("\n", "\\n") in told
    assert isinstance(outcome.score, float)


@pytest.mark.parametrize(("name", "option"), [("zh-lm", {"beam": 2}), ("zh-sentiment", {"temperature": 0.5}),
                                              ("dates-zh", {"truncate": True}), ("minilm", {"beam": 2})])
def test_an_option_of_another_kind_is_an_input_error_naming_the_kinds_own(name: str, option: dict[str, Any]) -> None:
    model = Model.load(name)
    noun = model.spec.noun
    with pytest.raises(InputError, match=f"{next(iter(option))} do\\(es\\) not apply to a {noun}"):
        model.run(TEXTS[name], **option)
    with pytest.raises(InputError, match="do\\(es\\) not apply"):
        model.run_many([TEXTS[name]], **option)


def test_a_run_over_budget_is_refused_before_the_model_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    model = Model.load("zh-sentiment")
    text = "好" * 10_000
    cost = model.cost(text)
    assert cost.tokens == 10_001 and cost.windows > 100 and cost.kept > 4 * 10**8  # the n x n display, 8 heads in all

    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the model ran")

    monkeypatch.setattr(type(model.spec), "run", never)
    with pytest.raises(TooCostlyError, match="over the 20,000,000 this surface allows; shorten it, or attnlab "
                                             "predict reads it whole"):
        model.run(text, budget=Budget(how="shorten it"))
    assert model.cost(text, trace=False).kept == 0
    monkeypatch.undo()
    assert model.run(text, trace=False).output["windows"] == cost.windows  # read whole, without the display


def test_a_classifier_ablation_reads_a_long_text_whole_as_every_surface() -> None:
    from attnlab.circuits import ablate_text, text_model

    model = Model.load("zh-sentiment")
    text = "这家店在市中心的一条小街上，" * 12 + "太好吃了"
    told = model.run(text, trace=False)
    assert told.output["windows"] > 1
    got = ablate_text(text_model(model), text, 0, 0)
    before = {r["token"]: r["before"] for r in got["outputs"]}
    assert before[told.answer] == round(told.score, 4)


def test_patching_refuses_a_text_longer_than_one_pass_instead_of_cutting_it() -> None:
    from attnlab.circuits import load_text_model, patch_texts

    tm = load_text_model("induction-2l")
    with pytest.raises(InputError, match="reads at most 64 in one pass"):
        patch_texts(tm, "ab" * 50, "ba" * 50)


# ----- a throwaway kind -----------------------------------------------------------------------------------------------
class EchoKind(LanguageModelKind):
    """A language model whose folder points at another one (config.json: {"format": "attnlab.echo/1", "lm": PATH})
    and which tells its continuation its own way."""

    name = "echo"  # type: ignore[assignment]

    def load(self, found: Any) -> Any:
        from attnlab.trained import load_language_model

        config = json.loads((found.path / "config.json").read_text(encoding="utf-8"))
        lm = load_language_model(config["lm"])
        lm.name = found.given
        return lm

    def told(self, outcome: Any) -> str | None:
        return f"echo says: {outcome.output['continuation']}"


@pytest.fixture
def echo(tmp_path: Path) -> Any:
    from attnlab._bundled import HERE, KindInfo

    folder = tmp_path / "echo"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"format": "attnlab.echo/1", "lm": str(HERE / "induction-2l")}))
    register(EchoKind(), KindInfo("echo model", "attnlab show", "echo", "a folder of an echo model"), "attnlab.echo/")
    yield folder
    unregister("echo")
    assert "echo" not in KIND and "echo" not in al.KINDS


def test_a_new_kind_is_served_by_every_surface(echo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from attnlab.serve import Lab, Limits, catalogue, create_app
    from attnlab.suites import evaluate_suite

    text = "abcXYZ+/abcX"
    model = Model.load(echo)  # Model.run
    assert model.kind == "echo" and model.spec.name == "echo"
    outcome = model.run(text)
    told = outcome.told()
    assert told is not None and told.startswith("echo says: ") and outcome.trace is not None

    assert main(["show", text, "--model", str(echo), "--out", str(tmp_path / "show"), "--no-viewer"]) == 0  # show
    assert capsys.readouterr().out.splitlines()[0] == told

    client = TestClient(create_app(Lab(catalogue([echo], bundled=False)), Limits(), hosts=["testserver"]))  # lab
    [described] = client.get("/api/models").json()["models"]
    assert described["kind"] == "echo" and "ablate" in described["can"] and "sampling" in described
    ran = client.post("/api/run", json={"model": "echo", "text": text})
    assert ran.status_code == 200 and ran.json()["kind"] == "echo" and ran.json()["tokens"] == list(text)
    ablated = client.post("/api/ablate", json={"model": "echo", "text": text, "layer": 1, "head": 0})
    assert ablated.status_code == 200 and ablated.json()["output"] == "next"

    suite = tmp_path / "echo.jsonl"  # the suites: its cases are a language model's
    suite.write_text("\n".join(json.dumps(line) for line in (
        {"suite": "echo", "kind": "echo", "capabilities": {"copy": "copies what came before"}},
        {"capability": "copy", "type": "MFT", "input": text, "expect": {"continues": "Y"}})) + "\n")
    result = evaluate_suite(echo, suite)
    assert len(result.results) == 1

    out = tmp_path / "patch"  # patch
    assert main(["patch", "--model", str(echo), "--clean", "abcabca", "--corrupt", "hgfdbca", "--out", str(out)]) == 0


def test_analyze_refuses_a_text_whose_attention_it_could_not_keep_before_running(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from attnlab.analysis import trace_for_analysis
    from attnlab.kinds.classifier import ClassifierKind

    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the model ran")

    monkeypatch.setattr(ClassifierKind, "run", never)  # 10,000 characters took 403 s and 22 GB before
    with pytest.raises(InputError, match="would keep 800,170,009 weights"):
        trace_for_analysis("好" * 10_000, "zh-sentiment")


def test_a_beam_wider_than_the_target_vocabulary_is_refused_before_decoding() -> None:
    model = Model.load("dates-zh")
    most = model.loaded.tokenizer.target_vocab_size
    with pytest.raises(InputError, match=f"from 1 \\(greedy\\) to {most} \\(the size of dates-zh's target"):
        model.run("March 5, 2021", beam=100_000)  # ran minutes and took gigabytes
    with pytest.raises(InputError, match="the beam must be an integer"):
        model.run_many(["March 5, 2021"], beam=0)
    assert model.run("March 5, 2021", beam=most, trace=False).answer  # the widest beam allowed runs
