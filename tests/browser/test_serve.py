"""``attnlab serve``'s page in real Chromium: type and see the output and the view update, switch models (a language
model's continuation included), compare two texts, step through a translation, download the trace, the standalone
viewer and a PNG; the viewer's hostile texts, typed into the page and sent to the API, run nothing.  Every page fails
its test on a console error, a page error, a dialog, or a request anywhere but the server itself (and data:/blob:)."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from helpers.cli import lab_server
from helpers.hostile import HOSTILE

import attnlab as al
from attnlab.serve._lab import CONTINUATION
from attnlab.trained import SAMPLING, find_loop, load_language_model

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with lab_server() as url:
        yield url


@dataclass
class Lab:
    """The lab's page and everything it did that a test must fail on."""

    page: Any
    problems: list[str] = field(default_factory=list)

    def js(self, expression: str) -> Any:
        return self.page.evaluate(expression)

    def shot(self, name: str, clip: dict[str, float] | None = None) -> None:
        folder = os.environ.get("ATTNLAB_SCREENSHOTS")
        if folder:
            Path(folder).mkdir(parents=True, exist_ok=True)
            self.page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=clip is None, clip=clip)


@pytest.fixture
def lab(browser: Any, server: str) -> Iterator[Lab]:
    context = browser.new_context(viewport={"width": 1280, "height": 1000}, accept_downloads=True)
    page = context.new_page()
    v = Lab(page)
    allowed = (server, "data:", "blob:", "about:")
    page.on("console", lambda m: m.type == "error" and v.problems.append(f"console error: {m.text}"))
    page.on("pageerror", lambda e: v.problems.append(f"page error: {e}"))
    page.on("request", lambda r: r.url.startswith(allowed) or v.problems.append(f"request {r.url}"))

    def on_dialog(d: Any) -> None:
        v.problems.append(f"dialog {d.type}: {d.message}")
        d.dismiss()

    page.on("dialog", on_dialog)
    page.goto(server)
    wait_runs(v, 1)
    yield v
    context.close()
    assert not v.problems, "the page misbehaved:\n" + "\n".join(v.problems)


def wait_runs(v: Lab, n: int) -> None:
    """Until the page has drawn ``n`` runs and nothing is on its way (or shows an error).  Polled with evaluate:
    the page's CSP refuses the string evaluation that playwright's wait_for_function uses."""
    done = (f"!!window.attnlabLab && ((attnlabLab.runs >= {n} && !attnlabLab.busy) || attnlabLab.error !== '')")
    deadline = time.monotonic() + 60
    while not v.js(done):
        assert time.monotonic() < deadline, f"the page drew {v.js('window.attnlabLab && attnlabLab.runs')} runs"
        v.page.wait_for_timeout(50)
    assert v.js("attnlabLab.error") == "", v.js("attnlabLab.error")
    v.page.evaluate("attnlab.idle()")


def type_text(v: Lab, selector: str, text: str) -> None:
    """Type as a user does (one key at a time: the page waits for a pause, then runs once)."""
    runs = v.js("attnlabLab.runs")
    v.page.fill(selector, "")
    v.page.type(selector, text, delay=5)
    wait_runs(v, runs + 1)


def type_after_error(v: Lab, selector: str, text: str) -> None:
    """:func:`type_text` while the page shows an error (which :func:`wait_runs` would take for the answer): until
    a new run is drawn, and then no error."""
    runs = v.js("attnlabLab.runs")
    v.page.fill(selector, "")
    v.page.type(selector, text, delay=5)
    deadline = time.monotonic() + 60
    while not v.js(f"attnlabLab.runs > {runs} && !attnlabLab.busy"):
        assert time.monotonic() < deadline, v.js("attnlabLab.error")
        v.page.wait_for_timeout(50)
    assert v.js("attnlabLab.error") == "", v.js("attnlabLab.error")
    v.page.evaluate("attnlab.idle()")


def test_the_page_runs_minilm_at_once_and_redraws_as_you_type(lab: Lab) -> None:
    assert lab.js("attnlabLab.last.model") == "minilm"
    assert lab.js("attnlab.state.rec") == 5  # it opens on the last layer, as the API's "view" says
    assert lab.js("[attnlab.state.view, attnlab.state.mean]") == ["head", True]  # the mean of its heads (viz/_first.py)
    assert lab.js("attnlabLab.last.view") == {"layer": 5, "head": -1, "n_layers": 6, "n_heads": 12}
    lab.js("attnlab.set({rec: 2})")  # the reader's place is kept while they type
    assert lab.js("attnlab.records.length") == 6 and lab.js("attnlab.records[0].query_tokens[2]") == "cat"
    type_text(lab, "#text", "A dog barked at the moon.")
    assert "dog" in (lab.page.text_content("#tokens") or "")
    assert lab.js("attnlab.records[0].key_tokens").count("dog") == 1
    assert lab.js("attnlab.state.rec") == 2
    assert lab.js("attnlabLab.last.labels.labels.length") == 6
    assert "ms on the server" in (lab.page.text_content("#status") or "")
    lab.shot("serve-minilm")


def test_switching_models_shows_each_task_output(lab: Lab) -> None:
    runs = lab.js("attnlabLab.runs")
    lab.page.select_option("#model", "zh-sentiment")
    wait_runs(lab, runs + 1)
    assert lab.page.input_value("#text") == "这本书写得很好"  # the box held MiniLM's example: now the model's own
    assert lab.js("attnlabLab.last.output.label") == "pos"
    lab.shot("serve-zh-sentiment")
    lab.page.fill("#text", "")  # an error, then a good text: the error is gone
    deadline = time.monotonic() + 10
    while lab.js("attnlabLab.error") != "Type some text.":
        assert time.monotonic() < deadline
        lab.page.wait_for_timeout(50)
    assert lab.js("window.attnlab") is None and lab.page.text_content("#output") == ""  # no output of another text
    runs = lab.js("attnlabLab.runs")
    lab.page.fill("#text", "这部电影太好看了")
    while not lab.js(f"attnlabLab.runs > {runs} && !attnlabLab.busy"):
        assert time.monotonic() < deadline + 50
        lab.page.wait_for_timeout(50)
    assert lab.js("attnlabLab.error") == "" and "Type some text." not in (lab.page.text_content("#status") or "")
    out = lab.page.text_content("#output") or ""
    label, probability = lab.js("[attnlabLab.last.output.label, attnlabLab.last.output.probability]")
    assert label in out and f"{probability:.2f}" in out and "calibrated probability" in out

    lab.page.select_option("#model", "dates-zh")  # the box keeps the review, of which dates-zh knows nothing: 422
    deadline = time.monotonic() + 60
    while "every character of '这部电影太好看了' is unknown to the model 'dates-zh'" not in lab.js("attnlabLab.error"):
        assert time.monotonic() < deadline, lab.js("attnlabLab.error")
        lab.page.wait_for_timeout(50)
    assert lab.page.text_content("#output") == ""  # the refusal clears the classifier's output
    lab.problems[:] = [p for p in lab.problems if "status of 422" not in p]  # the browser logs the refused request
    type_after_error(lab, "#text", "3 October 1990")
    assert "1990年10月3日" in (lab.page.text_content("#output") or "") and "confidence" in (
        lab.page.text_content("#output") or "")
    assert "-0.000" not in (lab.page.text_content("#output") or "")  # a confidence that rounds to 0 has no sign
    # the decoding steps, one at a time: the slider chooses the step, the viewer focuses its query
    assert lab.page.is_visible("#steps")
    n = int(lab.page.get_attribute("#steps", "max") or 0)
    assert n == 10
    lab.page.fill("#steps", "4")
    lab.page.dispatch_event("#steps", "input")
    assert "step 4 of 10: 1 9 9 0" in (lab.page.text_content("#step-text") or "")
    assert lab.js("attnlab.state.kind") == "cross" and lab.js("attnlab.state.focus.i") == 3
    lab.shot("serve-dates")

    # the language model: a Chinese text first (zh-lm knows no English), then the model; its sampled continuation
    lab.page.select_option("#model", "zh-sentiment")
    type_text(lab, "#text", "中国")
    runs = lab.js("attnlabLab.runs")
    lab.page.select_option("#model", "zh-lm")
    wait_runs(lab, runs + 1)
    continuation = lab.js("attnlabLab.last.output.continuation")
    assert lab.js("attnlabLab.last.kind") == "lm" and len(continuation) == 20
    assert lab.page.text_content("#output .lab-continuation") == continuation
    assert "中国" + continuation in (lab.page.text_content("#output") or "")
    assert lab.js("attnlab.records[0].key_tokens.length") == 2 + 20 - 1  # the text and its continuation


def test_compare_shows_two_linked_viewers_and_their_difference(lab: Lab) -> None:
    runs = lab.js("attnlabLab.runs")
    lab.page.check("#compare-on")  # the second text starts as the first: one run
    wait_runs(lab, runs + 1)
    type_text(lab, "#compare", "The dog sat on the mat because it was tired.")
    assert lab.js("attnlab.panes.length") == 2
    assert lab.js("attnlab.panes[1].records[0].key_tokens[2]") == "dog"
    said = re.search(r"most in layer (\d+)", lab.page.text_content("#difference") or "")
    assert said is not None
    # both viewers open on the layer the line names as most different (and the API's "view" says so)
    assert lab.js("attnlab.panes.map(p => p.records[p.state.rec].layer)") == [int(said.group(1))] * 2
    assert lab.js("attnlabLab.last.view.layer") == int(said.group(1))
    out = lab.page.text_content("#output") or ""
    assert "A: " in out and "B: " in out
    lab.shot("serve-compare")


def test_a_failed_run_clears_the_previous_result(lab: Lab) -> None:
    runs = lab.js("attnlabLab.runs")
    lab.page.select_option("#model", "zh-lm")
    wait_runs(lab, runs + 1)
    assert lab.js("attnlabLab.last.model") == "zh-lm" and lab.page.text_content("#output")
    lab.page.fill("#text", "中" * 3000)  # past zh-lm's context: 413
    deadline = time.monotonic() + 30
    while "shorten the text" not in lab.js("attnlabLab.error"):
        assert time.monotonic() < deadline, lab.js("attnlabLab.error")
        lab.page.wait_for_timeout(50)
    # nothing of the last run stays beside the error: no output, tokens, warnings or viewer of another text
    assert lab.js("attnlabLab.last") is None and lab.js("window.attnlab") is None
    for part in ("#output", "#tokens", "#warnings", "#difference", "#attnlab-viewer"):
        assert lab.js(f"document.querySelector('{part}').textContent") == "", part
    assert not lab.page.is_visible("#steps-box")
    lab.shot("serve-failed-run-cleared")
    # the browser logs the refused request itself; that one console line is the 413 this test asked for
    lab.problems[:] = [p for p in lab.problems if "status of 413" not in p]
    runs = lab.js("attnlabLab.runs")
    lab.page.fill("#text", "中国")  # a good text draws again, on the first view
    while not lab.js(f"attnlabLab.runs > {runs} && !attnlabLab.busy"):
        assert time.monotonic() < deadline + 60
        lab.page.wait_for_timeout(50)
    lab.page.evaluate("attnlab.idle()")
    assert lab.js("[attnlab.state.mean, attnlabLab.last.model]") == [True, "zh-lm"]


def test_dates_warnings_show_once_and_name_the_input(lab: Lab) -> None:
    runs = lab.js("attnlabLab.runs")
    lab.page.select_option("#model", "dates-zh")
    wait_runs(lab, runs + 1)
    type_text(lab, "#text", "Feb 30, 2021")
    page_text = lab.page.text_content("body") or ""
    assert page_text.count("30 February 2021, which does not exist") == 1, page_text
    assert "the translation of" not in page_text
    lab.shot("serve-dates-input-problem")
    type_text(lab, "#text", "Friday, March 5, 2021")
    # the step line and the viewer name a step by the token it writes: the last step writes 五
    assert lab.js("attnlab.records[attnlab.state.rec].query_tokens[attnlab.state.focus.i]") == "五"
    assert "星 期 五 ←" in (lab.page.text_content("#step-text") or "")


def test_downloads(lab: Lab, tmp_path: Path) -> None:
    with lab.page.expect_download() as got:
        lab.page.click("#dl-trace")
    path = tmp_path / "trace.attn"
    got.value.save_as(path)
    assert got.value.suggested_filename == "trace.attn"
    trace = al.AttentionTrace.load(path)
    assert trace.records[0].key_tokens[2] == "cat"
    with lab.page.expect_download() as got:
        lab.page.click("#dl-viewer")
    assert got.value.suggested_filename == "viewer.html"
    got.value.save_as(tmp_path / "viewer.html")
    assert "Content-Security-Policy" in (tmp_path / "viewer.html").read_text(encoding="utf-8")
    with lab.page.expect_download() as got:
        lab.page.get_by_role("button", name="Save PNG").click()
    assert got.value.suggested_filename.endswith(".png")


def test_hostile_text_runs_nothing(lab: Lab) -> None:
    refused = False
    for text in HOSTILE:
        if text == "🐱\u200d👤🎉":  # no token MiniLM knows: refused (the one unknown-character rule), shown as text
            lab.page.fill("#text", "")
            lab.page.type("#text", text, delay=5)
            deadline = time.monotonic() + 60
            while not ("🐱" in lab.js("attnlabLab.error") and "is unknown to the model" in lab.js("attnlabLab.error")):
                assert time.monotonic() < deadline, lab.js("attnlabLab.error")
                lab.page.wait_for_timeout(50)
            lab.problems[:] = [p for p in lab.problems if "status of 422" not in p]
            refused = True
        else:
            (type_after_error if refused else type_text)(lab, "#text", text)
            refused = False
            assert lab.js("attnlabLab.last.text") == text
            assert lab.js("window.attnlabLab.last.tokens.length") >= 2
        assert lab.js("document.querySelectorAll('img, iframe, object, embed').length") == 0
        assert lab.js("document.scripts.length") == 1
    lab.page.wait_for_timeout(300)  # an injected handler would have fired by now (the fixture fails on a dialog)


def test_clicking_a_head_ablates_it(lab: Lab) -> None:
    """With "click a head to ablate it" on, choosing one head in the viewer shows the language model's next
    characters before and after that head's output is zeroed (POST /api/ablate, attnlab.circuits)."""
    lab.page.select_option("#model", "zh-lm")
    wait_runs(lab, 2)
    lab.page.check("#ablate-on")
    lab.js("attnlab.set({view: 'matrix', head: 0})")
    lab.page.click(".heads button[data-head='2']")
    deadline = time.monotonic() + 60
    while lab.js("attnlabLab.ablations") < 1:
        assert time.monotonic() < deadline and lab.js("attnlabLab.error") == "", lab.js("attnlabLab.error")
        lab.page.wait_for_timeout(50)
    text = lab.page.inner_text("#ablation")
    layer = lab.js("attnlab.records.filter((r) => r.kind === attnlab.records[attnlab.state.rec].kind)"
                   ".indexOf(attnlab.records[attnlab.state.rec])")
    assert f"head {layer}.2 ablated" in text and "total variation" in text, text
    assert lab.page.locator("#ablation table tr").count() == 6  # the header and the 5 likeliest next characters
    lab.shot("lab-ablation")
    lab.page.uncheck("#ablate-on")
    assert lab.page.inner_text("#ablation") == ""


def test_clicking_an_attention_cell_splits_its_score(lab: Lab) -> None:
    """In one head's matrix view, a click on a cell (query row x key column) shows why that query looks at that key:
    the head's score there split into query-source x key-source terms, the largest and each side's totals (POST
    /api/qk, attnlab.circuits.qk_attribution); a model that cannot says nothing of it."""
    lab.page.select_option("#model", "induction-2l")
    wait_runs(lab, 2)
    assert "click a cell" in lab.page.inner_text("#qk")
    assert lab.js("attnlabLab.last.text") == "abcXYZ+/abcX"
    lab.js("attnlab.set({view: 'matrix', rec: 1, head: 0, zoom: 24})")  # layer 1 head 0: the induction head
    lab.page.evaluate("attnlab.idle()")
    query, key = 10, 3  # the second 'c' and the token after the first: 'X'
    point = lab.js(f"attnlab.where({{i: {query}, j: {key}}})")
    lab.page.mouse.move(point["x"], point["y"])
    lab.page.mouse.click(point["x"], point["y"])
    deadline = time.monotonic() + 60
    while lab.js("attnlabLab.qks") < 1:
        assert time.monotonic() < deadline and lab.js("attnlabLab.error") == "", lab.js("attnlabLab.error")
        lab.page.wait_for_timeout(50)
    text = lab.page.inner_text("#qk")
    assert "head 1.0, query 10 “c” → key 3 “X”" in text and "before the softmax" in text, text
    tables = lab.page.locator("#qk table")
    assert tables.count() == 3  # the largest terms, the query side's totals, the key side's
    assert tables.nth(0).locator("tr").count() == 9  # the header and the 8 largest terms
    key_side = tables.nth(2).locator("td").all_inner_texts()
    assert {"0.0", "0.2"} & set(key_side[:4:2]), key_side  # the previous-token heads lead the key side
    lab.page.set_viewport_size({"width": 1280, "height": 1500})  # the panel and the matrix under it, in one view
    lab.page.locator("#qk").evaluate("e => e.scrollIntoView({block: 'start'})")
    box = lab.page.locator("#qk").bounding_box()
    stage = lab.page.locator("#attnlab-viewer .stage").bounding_box()
    assert box is not None and stage is not None
    point = lab.js(f"attnlab.where({{i: {query}, j: {key}}})")
    top, bottom = max(0, box["y"] - 8), min(stage["y"] + stage["height"], point["y"] + 160)  # to a few rows below
    lab.shot("lab-qk", clip={"x": 0, "y": top, "width": 1280, "height": bottom - top})
    lab.page.mouse.click(point["x"], point["y"])  # the same cell again: nothing new is asked
    lab.page.wait_for_timeout(300)
    assert lab.js("attnlabLab.qks") == 1
    lab.page.select_option("#model", "minilm")  # an encoder cannot: no hint, and a click asks nothing
    wait_runs(lab, 3)
    assert lab.page.inner_text("#qk") == ""
    lab.js("attnlab.set({view: 'matrix', head: 0})")
    lab.page.evaluate("attnlab.idle()")
    point = lab.js("attnlab.where({i: 2, j: 1})")
    lab.page.mouse.move(point["x"], point["y"])
    lab.page.mouse.click(point["x"], point["y"])
    lab.page.wait_for_timeout(300)
    assert lab.js("attnlabLab.qks") == 1 and lab.page.inner_text("#qk") == ""


def test_the_output_is_attributed_to_what_it_read(lab: Lab) -> None:
    """With "attribute the output" on, zh-lm's continuation is shown as a table of its characters (rows) over the
    characters each one read (columns), one method at a time; a translator's output tokens over the source and the
    output before them; a model with no output tokens says it has none (POST /api/attribute, issue 31 section 6)."""
    lab.page.select_option("#model", "zh-lm")
    wait_runs(lab, 2)
    lab.page.check("#attribute-on")

    def wait_attributions(n: int) -> None:
        deadline = time.monotonic() + 90
        while lab.js("attnlabLab.attributions") < n:
            assert time.monotonic() < deadline and lab.js("attnlabLab.error") == "", lab.js("attnlabLab.error")
            lab.page.wait_for_timeout(50)

    wait_attributions(1)
    continuation = lab.js("attnlabLab.last.output.continuation")
    rows = lab.page.locator("#attribution table tr")
    assert rows.count() == 1 + len(continuation)  # the header, then one row per generated character
    assert [rows.nth(i + 1).locator("th").inner_text() for i in range(3)] == list(continuation[:3])
    header = [c.strip() for c in rows.nth(0).locator("th").all_inner_texts()]
    assert header[1:3] == ["中", "国"]  # the prompt first
    assert lab.page.locator("#attribution td.lab-unread").count() == sum(range(len(continuation)))  # not yet written
    assert lab.page.input_value("#attribution-method") == "ALTI-Logit"
    lab.page.select_option("#attribution-method", "gradient x input")
    assert lab.page.input_value("#attribution-method") == "gradient x input"
    assert "Spearman" in lab.page.inner_text("#attribution")
    lab.shot("lab-attribution")

    lab.page.select_option("#model", "tutorial-en-zh")
    wait_attributions(2)
    assert lab.page.locator("#attribution table tr").count() == 1 + len(lab.js("attnlabLab.last.output.target_tokens"))
    assert "the source | the output before" in lab.page.inner_text("#attribution")
    lab.page.select_option("#model", "minilm")
    deadline = time.monotonic() + 60
    while "needs a model that writes them (" not in lab.page.inner_text("#attribution"):
        assert time.monotonic() < deadline
        lab.page.wait_for_timeout(50)
    lab.page.uncheck("#attribute-on")
    assert lab.page.inner_text("#attribution") == ""


def test_the_language_model_offers_sampling_and_does_not_loop(lab: Lab) -> None:
    """The sampling controls (temperature, top-k, top-p, seed) appear for zh-lm at the library's defaults and only
    there, its first answer on its own example does not loop, a changed control runs again with it (issue 31)."""
    assert lab.page.is_hidden("#sampling")  # MiniLM: nothing to sample
    runs = lab.js("attnlabLab.runs")
    lab.page.select_option("#model", "zh-lm")
    wait_runs(lab, runs + 1)
    assert lab.page.input_value("#text") == "中国"  # its own example
    assert lab.page.is_visible("#sampling")
    shown = {name: float(lab.page.input_value(f"#{name}")) for name in ("temperature", "top-k", "top-p", "seed")}
    assert shown == {"temperature": SAMPLING["temperature"], "top-k": SAMPLING["top_k"], "top-p": SAMPLING["top_p"],
                     "seed": 0}
    continuation = lab.js("attnlabLab.last.output.continuation")
    assert len(continuation) == CONTINUATION and lab.js("attnlabLab.last.output.loop") is None
    assert find_loop(list(continuation)) is None
    out = lab.page.text_content("#output") or ""
    assert "中国" + continuation in out and "top-p 0.9" in out and "⚠" not in out
    lab.shot("serve-zh-lm-sampling")

    runs = lab.js("attnlabLab.runs")
    lab.page.fill("#temperature", "0.5")
    lab.page.dispatch_event("#temperature", "input")
    wait_runs(lab, runs + 1)
    assert lab.js("attnlabLab.last.output.settings.temperature") == 0.5
    lm = load_language_model("zh-lm")
    want = lm.generate("中国", max_tokens=CONTINUATION, temperature=0.5, seed=0)
    assert lab.js("attnlabLab.last.output.continuation") == "".join(lm.characters()[i] for i in want.ids)

    assert not lab.page.is_checked("#greedy") and lab.js("attnlabLab.last.output.settings.greedy") is False

    # a model whose defaults are greedy (induction-2l copies): greedy is on and the controls it ignores are greyed
    # out; turning it off samples with them
    runs = lab.js("attnlabLab.runs")
    lab.page.select_option("#model", "induction-2l")
    wait_runs(lab, runs + 1)
    assert lab.page.is_checked("#greedy") and lab.js("attnlabLab.last.output.settings.greedy") is True
    assert all(lab.page.is_disabled(f"#{name}") for name in ("temperature", "top-k", "top-p", "seed"))
    lab.shot("serve-induction-greedy")
    runs = lab.js("attnlabLab.runs")
    lab.page.uncheck("#greedy")
    wait_runs(lab, runs + 1)
    assert lab.js("attnlabLab.last.output.settings.greedy") is False and lab.page.is_enabled("#temperature")

    runs = lab.js("attnlabLab.runs")
    lab.page.select_option("#model", "zh-sentiment")
    wait_runs(lab, runs + 1)
    assert lab.page.is_hidden("#sampling")
