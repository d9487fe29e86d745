"""One way to run a model (``attnlab.Model``): one text on each bundled model gives the same output, score and warnings
through every surface (the Python API, ``trace_text``, ``attnlab show``, ``predict``, ``translate``, ``generate``, the
behaviour suites and the lab's ``POST /api/run``), to 1e-6 where a surface gives the number and to its printed
digits where it prints it; a long text is read whole on every surface.

``python tests/capturing/test_run.py`` prints the table (surface x bundled model -> output)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import attnlab as al
from attnlab.cli import main
from attnlab.kinds import KIND

# one text per bundled model the lab offers; each chosen to carry a warning where the model has one to give
TEXTS = {"minilm": "The cat sat on the mat.", "zh-sentiment": "☃这本书写得很好", "dates-zh": "Feb 30, 2021",
         "dates-zh/luong": "Feb 30, 2021", "dates-zh/transformer": "Feb 30, 2021",
         "tutorial-en-zh": "The cat sat on the mat.", "zh-lm": "中国", "induction-2l": "abcXYZ+/abcX"}
# 140 neutral characters of a restaurant visit; a strongly positive ending must move the prediction on every surface
NEUTRAL = ("这家店在市中心的一条小街上，我们是周六下午三点左右到的，店里有六七张桌子，墙上挂着几幅画，"
           "服务员给我们拿了菜单，菜单上有二十多个菜，我们点了四个菜和两碗饭，等了大约二十分钟菜才上齐，"
           "旁边一桌是一家人，带着两个小孩，窗外能看到对面的银行和一家书店，结账的时候用的是手机支付，走的时候")
POSITIVE = "太好吃了，非常满意，强烈推荐"


@pytest.fixture(scope="module")
def client() -> TestClient:
    from attnlab.serve import Lab, Limits, catalogue, create_app

    return TestClient(create_app(Lab(catalogue()), Limits(), hosts=["testserver"]))


def _score(kind: str, output: dict[str, Any]) -> tuple[str, float | None]:
    """The answer and the number a user is told of it: label and calibrated probability, translation and
    confidence, continuation and its mean log-probability; an encoder's token count."""
    if kind == "classifier":
        return output["label"], output["probability"]
    if kind == "translator":
        return output["translation"], output["confidence"]
    if kind == "lm":
        return output["continuation"], output["log_probability"]
    return str(output["n_tokens"]), None


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[list[str], list[str]]:
    assert main(list(args)) == 0
    got = capsys.readouterr()
    return got.out.splitlines(), [line.split(": warning: ", 1)[1] for line in got.err.splitlines()
                                  if ": warning: " in line and "font" not in line]


def surfaces(name: str, text: str, tmp: Path, capsys: pytest.CaptureFixture[str],
             client: TestClient) -> dict[str, tuple[str, float | None, int, tuple[str, ...]]]:
    """``surface -> (answer, number, digits it is given to, warnings)`` for ``text`` on the bundled model ``name``."""
    model = al.Model.load(name)
    kind = model.kind
    out: dict[str, tuple[str, float | None, int, tuple[str, ...]]] = {}
    ran = model.run(text)
    out["Model.run"] = (*_score(kind, ran.output), 17, ran.warnings)
    with pytest.warns(UserWarning) if ran.warnings else _nothing():
        meta = al.trace_text(text, model=name).meta
    if kind != "huggingface":
        answer_key, score_key = {"classifier": ("label", "probability"), "translator": ("translation", "confidence"),
                                 "lm": ("continuation", "log_probability")}[kind]
        out["trace_text meta"] = (meta[answer_key], meta[score_key], 17, tuple(meta["warnings"]))
    else:
        out["trace_text meta"] = (str(meta["n_tokens"]), None, 17, tuple(meta["warnings"]))
    lines, warned = _cli(capsys, "show", text, "--model", name, "--out", str(tmp / "show"), "--no-viewer")
    saved = al.AttentionTrace.load(tmp / "show" / "trace.attn").meta
    shown = _score(kind, {**saved, "n_tokens": saved.get("n_tokens")})
    out["show trace.attn"] = (*shown, 17, tuple(saved["warnings"]))
    out["show stdout"] = (_show_line(kind, lines), shown[1], 2 if kind == "classifier" else 17, tuple(warned))
    if kind == "classifier":
        [line], warned = _cli(capsys, "predict", "--model", name, text)
        label, prob, _ = line.split("\t")
        out["predict"] = (label, float(prob), 4, tuple(warned))
        lines, warned = _cli(capsys, "predict", "--model", name, "--explain", text)
        label, prob, _ = lines[0].split("\t")
        out["predict --explain"] = (label, float(prob), 4, tuple(dict.fromkeys(warned)))
    if kind == "translator":
        lines, warned = _cli(capsys, "translate", text, "--model", name, "--out", str(tmp / "tr"), "--no-viewer")
        out["translate"] = (lines[0], float(lines[1].split()[1]), 4, tuple(warned))
        [line], warned = _cli(capsys, "translate", text, text, "--model", name)[0][:1], []
        out["translate (list)"] = (line.split("\t")[0], float(line.split("\t")[1]), 4, ran.warnings)
    if kind == "lm":
        lines, warned = _cli(capsys, "generate", text, "--model", name, "--max-tokens", "20",  # the shown run
                             "--out", str(tmp / "gen"))
        [said] = [line for line in lines if " mean log-probability " in line]  # the number generate prints
        printed = float(said.split(" mean log-probability ")[1].split()[0])
        streamed = "\n".join(lines[:lines.index(said)]).rstrip("\n")  # the text, line breaks and all, then a blank
        out["generate"] = (streamed[len(text):], printed, 3, tuple(warned))
    if kind in ("classifier", "translator"):
        from attnlab.suites import observer

        [seen] = observer(model)([text])
        number = seen.probs.get(str(seen.output)) if kind == "classifier" else ran.output["confidence"]
        out["evaluate --suite"] = (str(seen.output), number, 17, (seen.warning,) if seen.warning else ())
        [many] = model.run_many([text])
        out["Model.run_many"] = (*_score(kind, many.output), 17, many.warnings)
    if kind == "classifier":  # the head ablation's "before" and analyze's pass read the text as every surface does
        rows = client.post("/api/ablate", json={"model": name, "text": text, "layer": 0, "head": 0}).json()["outputs"]
        best = max(rows, key=lambda r: r["before"])
        out["POST /api/ablate before"] = (best["token"], best["before"], 4, ran.warnings)
        from attnlab.analysis import trace_for_analysis

        analyzed = trace_for_analysis(text, name).meta
        out["analyze"] = (analyzed["label"], analyzed["probability"], 17, tuple(analyzed["warnings"]))
    body = client.post("/api/run", json={"model": name, "text": text}).json()
    lab_output = body["output"] or {"n_tokens": len(body["tokens"])}
    said = tuple(dict.fromkeys([*(lab_output.get("doubts") or ()), *body["warnings"]]))
    out["POST /api/run"] = (*_score(kind, lab_output), 17, said)
    return out


def agree(got: dict[str, tuple[str, float | None, int, tuple[str, ...]]]) -> tuple[str, ...]:
    """Check that every surface gives Model.run's answer, its number to the digits it is given to (1e-6 at most) and
    its warnings; the warnings."""
    answer, number, _, warned = got["Model.run"]
    assert len(got) >= 5
    for surface, (a, x, digits, w) in got.items():
        assert a == answer, (surface, a, answer)
        if number is not None:
            assert x is not None and abs(x - number) <= max(1e-6, 0.5 * 10**-digits), (surface, x, number)
        assert set(w) == set(warned), (surface, w, warned)
    return warned


def _show_line(kind: str, lines: list[str]) -> str:
    if kind == "huggingface":
        return re.search(r"(\d+) tokens", lines[0]).group(1)  # type: ignore[union-attr]
    first = lines[0]
    if kind == "classifier":
        return first.split()[1]
    return first.split(": ", 1)[1].replace("\\n", "\n")  # the one line writes a line break as its escape


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def test_every_kind_has_its_module_and_every_bundled_model_a_text_here() -> None:
    assert set(KIND) == set(al.KINDS) and set(TEXTS) == set(al.MODELS)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(TEXTS))
def test_one_text_gives_one_answer_on_every_surface(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    client: TestClient) -> None:
    got = surfaces(name, TEXTS[name], tmp_path, capsys, client)
    warned = agree(got)
    if name in ("zh-sentiment", "dates-zh"):
        assert warned  # the text was chosen to be warned of: warnings are compared, not two empty sets


@pytest.mark.slow
def test_a_long_text_is_read_whole_on_every_surface(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    client: TestClient) -> None:
    assert len(NEUTRAL) == 140
    before = surfaces("zh-sentiment", NEUTRAL, tmp_path / "a", capsys, client)
    after = surfaces("zh-sentiment", NEUTRAL + POSITIVE, tmp_path / "b", capsys, client)
    agree(before), agree(after)  # read whole: every surface gives the answer of Model.run, to its digits
    assert {"POST /api/ablate before", "analyze", "POST /api/run", "predict"} <= set(after)
    for surface in before:
        (la, pa, digits, _), (lb, pb, _, _) = before[surface], after[surface]
        p_pos = {"pos": pa, "neg": 1 - pa}[la], {"pos": pb, "neg": 1 - pb}[lb]
        assert p_pos[1] > p_pos[0] + 0.5 * 10**-digits, (surface, before[surface], after[surface])
    assert al.Model.load("zh-sentiment").run(NEUTRAL + POSITIVE).output["windows"] == 2


def test_a_short_text_gives_exactly_the_one_pass_logits_and_windows_cover_every_token() -> None:
    import torch

    from attnlab.trained import windows

    clf = al.Model.load("zh-sentiment").loaded
    ids = clf.encode(["这本书写得很好"])[0][0]
    logits, plan = clf.read(ids)
    assert len(plan.starts) == 1 and torch.equal(logits, clf.model(torch.tensor([ids])).float())
    for n in (2, 128, 129, 200, 255, 256, 1000):
        plan = windows(n, 128)
        assert (plan.starts[0] == 0 and plan.starts[-1] + plan.width == n - 1) or n <= 128
        assert len(plan.owner) == n - 1
        for j, w in enumerate(plan.owner):  # each token's state comes from a window that holds it
            assert plan.starts[w] <= j < plan.starts[w] + plan.width


def test_a_long_texts_trace_is_the_whole_text_with_rows_that_sum_to_one() -> None:
    import torch

    outcome = al.Model.load("zh-sentiment").run(NEUTRAL + POSITIVE)
    assert outcome.trace is not None
    n = len(NEUTRAL + POSITIVE) + 1
    for r in outcome.trace.records:
        assert r.weights.shape == (1, 4, n, n) and r.key_tokens == outcome.tokens and len(outcome.tokens) == n
        assert torch.allclose(r.weights.sum(-1), torch.ones(1, 4, n), atol=1e-5)


def test_options_of_another_kind_are_refused_naming_the_kinds_own() -> None:
    with pytest.raises(al.errors.InputError, match=r"beam do.* not apply to a classifier"):
        al.Model.load("zh-sentiment").run("很好", beam=3)
    with pytest.raises(al.errors.InputError, match="text_pair apply to Hugging Face encoders"):
        al.trace_text("很好", model="zh-sentiment", text_pair="x")


if __name__ == "__main__":  # the table of the closing note
    import contextlib
    import io
    import tempfile
    from types import SimpleNamespace

    from attnlab.serve import Lab, Limits, catalogue, create_app
    from attnlab.viz import one_line

    lab_client = TestClient(create_app(Lab(catalogue()), Limits(), hosts=["testserver"]))
    rows: dict[str, dict[str, str]] = {}
    out_buffer, err_buffer = io.StringIO(), io.StringIO()

    class Captured:
        def readouterr(self) -> SimpleNamespace:
            got = SimpleNamespace(out=out_buffer.getvalue(), err=err_buffer.getvalue())
            for b in (out_buffer, err_buffer):
                b.seek(0)
                b.truncate()
            return got

    columns = {**{n: (n, t) for n, t in TEXTS.items()},
               "zh-sentiment, 154 characters (2 windows)": ("zh-sentiment", NEUTRAL + POSITIVE)}
    for column, (name, text) in columns.items():
        with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(out_buffer), \
                contextlib.redirect_stderr(err_buffer):
            got = surfaces(name, text, Path(tmp), Captured(), lab_client)  # type: ignore[arg-type]
        for surface, (a, x, digits, w) in got.items():
            shown = one_line(a if x is None else f"{a} {x:.{min(digits, 6)}f}")  # a table row is one line
            rows.setdefault(surface, {})[column] = shown + (f" ({len(w)} warning{'s' * (len(w) > 1)})" if w else "")
    print("| surface | " + " | ".join(c if c not in TEXTS else f"{c}: {TEXTS[c]}" for c in columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for surface, cells in rows.items():
        print(f"| {surface} | " + " | ".join(cells.get(c, "—") for c in columns) + " |")
