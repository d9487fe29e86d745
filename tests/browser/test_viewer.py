"""The viewer in a real browser (Debian's chromium, headless): every view draws, hovering and clicking
do what they say, shown values equal the trace's weights within the encoding's error, export writes
a PNG and a valid SVG, hostile tokens stay text, and nothing touches the network."""

from __future__ import annotations

import itertools
import re
import struct
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from helpers.hostile import HOSTILE

import attnlab as al
from attnlab.capturing import AttentionRecord, AttentionTrace
from attnlab.viz import _encode
from attnlab.viz.html import repr_html

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

SVG = "{http://www.w3.org/2000/svg}"
VALUE = re.compile(r": (\d\.\d{4}) \(±")
VIEW_TYPE = re.compile(r"@typedef \{Object\} View\b(.*?)\*/", re.S)  # the View interface of viewer.js
MEMBER = re.compile(r"@property \{(.+?)\} (\w+)")


def softmax(*shape: int, causal: bool = False) -> torch.Tensor:
    scores = torch.randn(*shape) * 2.5
    if causal:
        scores = scores.masked_fill(~torch.ones(shape[-2], shape[-1], dtype=torch.bool).tril(), float("-inf"))
    return scores.softmax(-1)


def mixed_trace(src: list[str] | None = None) -> AttentionTrace:
    """Two self layers over 7 source tokens, a causal layer over 5 target tokens, a 5 x 7 cross layer; 3 heads."""
    src = src or ["The", "cat", "sat", "on", "the", "mat", "."]
    tgt = ["Le", "chat", "est", "assis", "."]
    n = len(src)
    records = [AttentionRecord(f"encoder.layer.{i}", "self", i, softmax(1, 3, n, n), src, src) for i in range(2)]
    records.append(AttentionRecord("decoder.layer.0.self", "causal", 0, softmax(1, 3, 5, 5, causal=True), tgt, tgt))
    records.append(AttentionRecord("decoder.layer.0.cross", "cross", 0, softmax(1, 3, 5, n), tgt, src))
    return AttentionTrace(records, {"model": "tiny-test-model", "text": " ".join(src)})


def write(trace: AttentionTrace, tmp_path: Path, name: str = "viewer.html") -> Path:
    return al.viz.save_html(trace, tmp_path / name)


# ----- helpers that look at the page ------------------------------------------------------------------
def ink(v: Any) -> int:
    """How many pixels of the visible canvas are drawn in something other than white."""
    return int(v.js("""() => {
        const c = document.querySelector('.frame canvas');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && (d[i] < 235 || d[i + 1] < 235 || d[i + 2] < 235)) n++;
        return n;
    }"""))


def fingerprint(v: Any) -> int:
    return int(v.js("""() => {
        const c = document.querySelector('.frame canvas');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let h = 0;
        for (let i = 0; i < d.length; i++) h = (h * 31 + d[i] * (i % 97 + 1)) % 2147483647;
        return h;
    }"""))


def hover(v: Any, target: dict[str, Any]) -> None:
    pt = v.js("t => attnlab.where(t)", target)
    v.page.mouse.move(pt["x"], pt["y"])


def click(v: Any, target: dict[str, Any]) -> None:
    pt = v.js("t => attnlab.where(t)", target)
    v.page.mouse.click(pt["x"], pt["y"])


def export(v: Any, label: str) -> bytes:
    with v.page.expect_download() as info:
        v.page.get_by_role("button", name=label).click()
    return Path(info.value.path()).read_bytes()


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", data[16:24])


def svg_texts(data: bytes) -> list[str]:
    root = ET.fromstring(data)  # our own export: a parse error fails the test
    assert root.tag == f"{SVG}svg"
    assert float(root.get("width", 0)) > 0 and float(root.get("height", 0)) > 0
    return [t.text or "" for t in root.iter(f"{SVG}text")]


def status(v: Any) -> str:
    """The status line without its Unicode isolates (they keep right-to-left tokens inside their quotes)."""
    return (v.page.text_content(".status") or "").replace("\u2068", "").replace("\u2069", "")


def shown_value(v: Any) -> float:
    m = VALUE.search(status(v))
    assert m, f"no value in the status line: {status(v)!r}"
    return float(m.group(1))


def view_type() -> dict[str, str]:
    """The members of viewer.js's View type (tsc checks the views against it), as JavaScript `typeof` names."""
    js = (Path(al.viz.__file__).parent / "assets" / "viewer.js").read_text(encoding="utf-8")
    block = VIEW_TYPE.search(js)
    assert block, "viewer.js has no `@typedef {Object} View`"
    return {name: "function" if t.startswith("(") else t for t, name in MEMBER.findall(block.group(1))}


# ----- tests --------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_every_view_draws_and_exports_png_and_svg(open_viewer: Callable[..., Any], tmp_path: Path) -> None:
    v = open_viewer(write(mixed_trace(), tmp_path))
    for view in ("head", "model", "matrix"):
        v.page.click(f"button[data-view={view}]")
        v.js("attnlab.idle()")
        assert v.js("attnlab.state.view") == view
        assert ink(v) > 2000, f"the {view} view drew almost nothing"
        v.shot(f"synthetic-{view}")
        width, height = png_size(export(v, "Save PNG"))
        assert width > 250 and height > 100
        texts = svg_texts(export(v, "Save SVG"))
        assert any("tiny-test-model" in t for t in texts), "the export does not say what it shows"
        if view != "model":
            assert {"cat", "mat"} <= set(texts)


def test_hovering_a_token_changes_what_is_highlighted(open_viewer: Callable[..., Any], tmp_path: Path) -> None:
    v = open_viewer(write(mixed_trace(), tmp_path))
    before = fingerprint(v)
    hover(v, {"side": "q", "i": 1})
    assert v.js("attnlab.state.focus") == {"side": "q", "i": 1}
    focused = fingerprint(v)
    assert focused != before
    assert "Query 1 “cat” attends most to" in status(v)
    v.shot("synthetic-head-focus")
    hover(v, {"side": "k", "i": 5})  # a key token: the queries that attend to it
    assert v.js("attnlab.state.focus") == {"side": "k", "i": 5}
    assert "Key 5 “mat” is attended most by" in status(v)
    assert fingerprint(v) not in (before, focused)
    click(v, {"side": "k", "i": 5})  # click keeps the focus when the mouse leaves
    v.page.mouse.move(1, 1)
    assert v.js("attnlab.state.focus") == {"side": "k", "i": 5}
    v.page.focus(".stage")
    v.page.keyboard.press("ArrowDown")
    assert v.js("attnlab.state.focus") == {"side": "k", "i": 6}
    v.page.keyboard.press("Escape")
    assert v.js("attnlab.state.focus") is None
    assert fingerprint(v) == before


@pytest.mark.slow
def test_head_buttons_toggle_heads_and_the_mean(open_viewer: Callable[..., Any], tmp_path: Path) -> None:
    v = open_viewer(write(mixed_trace(), tmp_path))
    # the first view (viz/_first.py): the last self-attention layer, the mean of its heads, its button pressed
    assert v.js("[attnlab.state.kind, attnlab.state.rec, attnlab.state.mean]") == ["self", 1, True]
    assert v.page.get_attribute("button.head[data-head='-1']", "aria-pressed") == "true"
    assert "mean of heads" in (v.page.get_attribute(".stage", "aria-label") or "")
    mean = fingerprint(v)
    v.page.click("button.head[data-head='0']")  # a click on a head shows that head alone
    assert v.js("[...attnlab.state.heads]") == [0] and v.js("attnlab.state.mean") is False
    one_head = fingerprint(v)
    assert one_head != mean
    v.page.get_by_role("button", name="all", exact=True).click()
    assert sorted(v.js("[...attnlab.state.heads]")) == [0, 1, 2]
    all_heads = fingerprint(v)
    assert all_heads != one_head
    v.page.click("button.head[data-head='1']")
    assert sorted(v.js("[...attnlab.state.heads]")) == [0, 2]
    assert v.page.get_attribute("button.head[data-head='1']", "aria-pressed") == "false"
    assert fingerprint(v) not in (all_heads, one_head)
    v.page.dblclick("button.head[data-head='2']")
    assert v.js("[...attnlab.state.heads]") == [2]
    v.page.click("button.head[data-head='-1']")
    assert v.js("attnlab.state.mean") is True
    assert "mean of heads" in (v.page.get_attribute(".stage", "aria-label") or "")


def test_clicking_a_thumbnail_opens_that_head(open_viewer: Callable[..., Any], tmp_path: Path) -> None:
    v = open_viewer(write(mixed_trace(), tmp_path))
    v.page.click("button[data-view=model]")
    v.js("attnlab.idle()")
    click(v, {"row": 1, "col": 2})
    assert v.js("attnlab.state.view") == "matrix"
    assert v.js("[attnlab.state.rec, attnlab.state.head]") == [1, 2]
    assert "layer 1 (encoder.layer.1), self-attention, head 2" in (v.page.get_attribute(".stage", "aria-label") or "")
    assert v.page.get_attribute("button.head[data-head='2']", "aria-pressed") == "true"
    v.page.click("button[data-view=model]")  # and by keyboard: arrows move, Enter opens
    v.page.focus(".stage")
    for key in ("ArrowRight", "ArrowDown", "ArrowLeft", "Enter"):
        v.page.keyboard.press(key)
    assert v.js("[attnlab.state.view, attnlab.state.rec, attnlab.state.head]") == ["matrix", 1, 1]


@pytest.mark.slow
def test_value_on_hover_is_the_weight_within_the_encoding_error(open_viewer: Callable[..., Any],
                                                                tmp_path: Path) -> None:
    trace = mixed_trace()
    v = open_viewer(write(trace, tmp_path))
    v.page.click("button[data-view=matrix]")
    tol = _encode.MAX_ERROR + 5e-5  # the encoding's bound plus the rounding of four decimals
    worst = 0.0
    for rec in (0, 3):  # self 7 x 7 and cross 5 x 7
        v.js("r => attnlab.set({rec: r, kind: attnlab.records[r].kind})", rec)
        weights = trace.records[rec].weights[0]
        for head in (0, 2, -1):
            v.js("h => attnlab.set({head: h})", head)
            expected = weights.mean(0) if head < 0 else weights[head]
            for i, j in ((0, 0), (1, 3), (4, 6), (2, 5)):
                hover(v, {"i": i, "j": j})
                err = abs(shown_value(v) - float(expected[i, j]))
                worst = max(worst, err)
                where = f"record {rec} head {head} ({i}, {j})"
                assert err <= tol, f"{where}: shown {shown_value(v)}, weight {expected[i, j]:.6f}, error {err:.2e}"
    assert worst > 0  # the check compares real numbers, not a constant
    v.shot("synthetic-matrix-hover")


def test_causal_and_cross_kinds_are_selectable(open_viewer: Callable[..., Any], tmp_path: Path) -> None:
    v = open_viewer(write(mixed_trace(), tmp_path))
    kind = "select[aria-label='attention kind']"
    options = v.page.eval_on_selector_all(f"{kind} option", "os => os.map(o => o.textContent)")
    assert options == ["self-attention", "causal self-attention", "cross-attention"]
    v.page.select_option(kind, "cross")
    assert v.js("attnlab.state.rec") == 3
    hover(v, {"side": "k", "i": 6})  # the cross record has 7 keys and only 5 queries
    assert "Key 6 “.” is attended most by" in status(v)
    v.shot("synthetic-cross-head")
    v.page.select_option(kind, "causal")
    v.page.click("button[data-view=matrix]")
    hover(v, {"i": 1, "j": 3})  # above the diagonal: a causal weight of zero
    assert shown_value(v) == 0.0
    assert ink(v) > 2000


@pytest.mark.slow
def test_hostile_tokens_are_shown_literally_and_run_nothing(open_viewer: Callable[..., Any], tmp_path: Path) -> None:
    trace = mixed_trace(HOSTILE)
    trace.meta["text"] = "<img src=x onerror=alert(2)> \u2028 </script>"
    v = open_viewer(write(trace, tmp_path))
    assert v.js("document.querySelectorAll('img, iframe, object, embed').length") == 0
    assert v.js("document.scripts.length") == 2
    assert "<img src=x onerror=alert(2)>" in (v.page.text_content(".info") or "")
    for i, token in enumerate(HOSTILE):
        hover(v, {"side": "q", "i": i})
        assert f"Query {i} “{token}”" in status(v)
    v.shot("hostile-head")
    for view in ("head", "matrix", "model"):
        v.page.click(f"button[data-view={view}]")
        v.js("attnlab.idle()")
        texts = svg_texts(export(v, "Save SVG"))
        if view != "model":  # every token is there literally (long ones cut to the label width with an ellipsis)
            for token in HOSTILE:
                cut = [t for t in texts if t.endswith("…") and len(t) > 8 and token.startswith(t[:-1])]
                assert token in texts or cut, token
    v.shot("hostile-model")
    v.page.wait_for_timeout(200)  # give any injected handler the time to fire (the fixture fails on it)


def test_the_bundled_model_on_a_sentence_pair(open_viewer: Callable[..., Any], tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = al.trace_text("Where is the cat?", text_pair="The cat is on the mat.")
    assert trace.n_layers == 6 and trace.n_heads == 12
    v = open_viewer(write(trace, tmp_path))
    assert ink(v) > 2000
    v.shot("minilm-pair-head")
    v.page.click("button[data-view=model]")
    v.js("attnlab.idle()")
    assert v.js("document.querySelector('.status').textContent").startswith("Layer 0, head 0")
    v.shot("minilm-pair-model")
    click(v, {"row": 5, "col": 11})
    weights = trace.weights[5, 11]
    sep = trace.tokens.index("[SEP]")
    hover(v, {"i": 2, "j": sep})
    assert abs(shown_value(v) - float(weights[2, sep])) <= _encode.MAX_ERROR + 5e-5
    assert "[SEP]" in status(v)
    v.shot("minilm-pair-matrix")


def test_the_jupyter_iframe_runs_the_viewer(browser: Any) -> None:
    page = browser.new_page()
    problems: list[str] = []
    page.on("console", lambda m: m.type == "error" and problems.append(m.text))
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("dialog", lambda d: (problems.append(d.message), d.dismiss()))
    page.set_content(f"<!DOCTYPE html><html><body>{repr_html(mixed_trace(HOSTILE))}</body></html>")
    frame = page.frame_locator("iframe")
    frame.locator(".frame canvas").wait_for()
    inner = page.frames[1]
    inner.wait_for_function("window.attnlab && attnlab.timings.firstView !== null")
    assert inner.evaluate("attnlab.records.length") == 4
    assert "Query" not in (inner.text_content(".status") or "")
    # the sandbox holds: an opaque origin, so the viewer can neither read the notebook nor its storage
    assert inner.evaluate("self.origin") == "null"
    reach = "() => { try { return %s; } catch (e) { return e.name; } }"
    assert inner.evaluate(reach % "parent.document.title") == "SecurityError"
    assert inner.evaluate(reach % "localStorage.length") == "SecurityError"
    page.wait_for_timeout(200)
    page.close()
    assert not problems, problems


@pytest.mark.slow
def test_512_tokens_of_the_bundled_model_fit_in_8_mb(open_viewer: Callable[..., Any], tmp_path: Path) -> None:
    text = " ".join(
        f"Sentence {i} says that the attention of token {i} may differ from token {i + 1}." for i in range(60))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = al.trace_text(text, max_length=512, truncate=True)
    assert tuple(trace.weights.shape) == (6, 12, 512, 512)
    path = write(trace, tmp_path)
    assert path.stat().st_size <= 8 * 1024 * 1024, f"{path.stat().st_size / 2**20:.2f} MiB"
    v = open_viewer(path)
    assert ink(v) > 10000
    v.shot("minilm-512-head")
    v.js("attnlab.set({view: 'matrix', rec: 3, head: 7})")
    hover(v, {"i": 100, "j": 0})
    assert abs(shown_value(v) - float(trace.weights[3, 7, 100, 0])) <= _encode.MAX_ERROR + 5e-5
    v.shot("minilm-512-matrix")
    decoded = np.asarray(v.js("Array.from(attnlab.matrixOf(3, 7).slice(0, 512 * 8))"))
    assert np.abs(decoded - trace.weights[3, 7, :8].reshape(-1).double().numpy()).max() <= _encode.MAX_ERROR + 1e-6


def test_every_view_supplies_every_member_of_the_view_type(open_viewer: Callable[..., Any], tmp_path: Path) -> None:
    members = view_type()
    assert {"draw", "hover", "leave", "click", "key", "status", "heads", "help", "caption", "spot", "file", "seek",
            "available"} <= set(members)
    v = open_viewer(write(mixed_trace(), tmp_path))
    views = v.js("""() => Object.fromEntries(Object.entries(attnlab.views).map(
        ([name, view]) => [name, Object.fromEntries(Object.entries(view).map(([k, x]) => [k, typeof x]))]))""")
    assert list(views) == ["head", "model", "matrix", "neuron"]
    assert v.js("[...document.querySelectorAll('button[data-view]')].map(b => b.dataset.view)") == list(views)
    for name, got in views.items():
        assert got == members, f"the {name} view supplies {got}; the View type of viewer.js says {members}"


def test_an_unknown_view_is_an_error_not_another_views_behaviour(open_viewer: Callable[..., Any],
                                                                  tmp_path: Path) -> None:
    from playwright.sync_api import Error as PageError

    v = open_viewer(write(mixed_trace(), tmp_path))
    before = fingerprint(v)
    for name in ("bogus", "toString", "__proto__", ""):
        with pytest.raises(PageError, match=f'unknown view "{name}"; the views are head, model, matrix, neuron'):
            v.js("n => attnlab.set({view: n, head: 2})", name)
        assert v.js("[attnlab.state.view, attnlab.state.head]") == ["head", -1]  # refused before anything changed
    assert fingerprint(v) == before
    # A name set behind the page's back: the next draw, key or mouse event refuses it (the model view's keys
    # used to take over here).
    with pytest.raises(PageError, match='unknown view "bogus"'):
        v.js("() => { attnlab.state.view = 'bogus'; return attnlab.set({}); }")
    v.page.focus(".stage")
    v.page.keyboard.press("ArrowDown")
    for _ in range(40):
        if v.problems:
            break
        v.page.wait_for_timeout(50)
    assert len(v.problems) == 1 and 'unknown view "bogus"' in v.problems[0], v.problems
    assert v.js("attnlab.state.cursor") == {"row": 0, "col": 0}
    v.problems.clear()  # the page error above is the point of the test
    v.page.click("button[data-view=matrix]")  # the tabs still lead to real views
    assert v.js("attnlab.state.view") == "matrix" and ink(v) > 2000


# ----- issue 9: the viewer for real use ----------------------------------------------------------------------
def long_trace(n: int = 512, words: int = 450) -> AttentionTrace:
    """One self layer of n tokens and 2 heads, "needle" at token 300, with a caption text of `words` words."""
    tokens = [f"t{i}" for i in range(n)]
    tokens[300] = "needle"
    rec = AttentionRecord("encoder.layer.0", "self", 0, softmax(1, 2, n, n), tokens, tokens)
    text = " ".join(f"word{i}" for i in range(words))
    return AttentionTrace([rec], {"model": "tiny-test-model", "text": text})


def pair_trace() -> AttentionTrace:
    toks = ["[CLS]", "where", "is", "it", "?", "[SEP]", "on", "the", "mat", "[SEP]"]
    rec = AttentionRecord("encoder.layer.0", "self", 0, softmax(1, 2, 10, 10), toks, toks)
    return AttentionTrace([rec], {"model": "tiny-test-model", "text": "where is it?", "text_pair": "on the mat"})


def qk_trace(d: int = 8) -> tuple[AttentionTrace, torch.Tensor, torch.Tensor]:
    """Two self layers whose weights are softmax(q k^T / sqrt(d)) of the q and k vectors the record carries."""
    src = ["The", "cat", "sat", "on", "the", "mat", "."]
    records, qs, ks = [], [], []
    for layer in range(2):
        q, k = torch.randn(1, 2, 7, d), torch.randn(1, 2, 7, d)
        weights = (q @ k.transpose(-1, -2) / d**0.5).softmax(-1)
        rec = AttentionRecord(f"encoder.layer.{layer}", "self", layer, weights, src, src)
        rec.q, rec.k = q, k  # the optional fields of capture(model, qk=True), set here as the capture sets them
        records.append(rec)
        qs.append(q)
        ks.append(k)
    trace = AttentionTrace(records, {"model": "tiny-test-model", "text": " ".join(src)})
    return trace, torch.stack(qs), torch.stack(ks)


def download_of(v: Any, label: str) -> tuple[str, bytes]:
    with v.page.expect_download() as info:
        v.page.get_by_role("button", name=label).click()
    return info.value.suggested_filename, Path(info.value.path()).read_bytes()


def svg_elements(data: bytes) -> list[ET.Element]:
    return list(ET.fromstring(data).iter())


def test_head_view_legend_names_the_head_colours_in_exports(open_viewer: Callable[..., Any], tmp_path: Path) -> None:
    v = open_viewer(write(mixed_trace(), tmp_path))
    assert "mean of heads" in svg_texts(export(v, "Save SVG"))  # the first view
    v.page.click("button.head[data-head='0']")
    assert "head 0" in svg_texts(export(v, "Save SVG"))
    v.page.get_by_role("button", name="all", exact=True).click()
    texts = svg_texts(export(v, "Save SVG"))
    assert {"head 0", "head 1", "head 2"} <= set(texts)
    v.page.click("button.head[data-head='-1']")
    assert "mean of heads" in svg_texts(export(v, "Save SVG"))
    v.shot("issue9-head-legend-mean")


def test_model_view_hover_names_the_head_with_its_label_and_metrics(open_viewer: Callable[..., Any],
                                                                    tmp_path: Path) -> None:
    trace = mixed_trace()
    labels = [[f"kind-{layer}-{h}" for h in range(3)] for layer in range(2)]
    trace.meta["heads"] = {"kind": "self", "labels": labels,
                           "metrics": {"entropy": [[1.25 + layer + h / 10 for h in range(3)] for layer in range(2)]}}
    v = open_viewer(write(trace, tmp_path))
    v.page.click("button[data-view=model]")
    v.js("attnlab.idle()")
    before = fingerprint(v)
    hover(v, {"row": 1, "col": 2})
    assert v.js("attnlab.state.hover") == {"row": 1, "col": 2}
    assert status(v).startswith("Layer 1, head 2 — “kind-1-2” · entropy 2.45: click to open it.")
    assert fingerprint(v) != before  # the hovered thumbnail is outlined
    v.shot("issue9-model-hover-notes")
    v.page.mouse.move(1, 1)
    assert status(v).startswith("Layer 0, head 0 — “kind-0-0” · entropy 1.25: selected")
    assert fingerprint(v) == before
    texts = svg_texts(export(v, "Save SVG"))
    assert {"kind-0-0", "kind-1-2"} <= set(texts)  # the labels are drawn under their thumbnails
    plain = open_viewer(write(mixed_trace(), tmp_path, "plain.html"))  # no notes: the hover still names the head
    plain.page.click("button[data-view=model]")
    plain.js("attnlab.idle()")
    hover(plain, {"row": 0, "col": 1})
    assert status(plain).startswith("Layer 0, head 1: click to open it.")


def test_a_clicked_token_stays_focused_when_the_layer_changes(open_viewer: Callable[..., Any], tmp_path: Path) -> None:
    v = open_viewer(write(mixed_trace(), tmp_path))
    click(v, {"side": "q", "i": 3})
    v.page.mouse.move(1, 1)
    v.page.select_option("select[aria-label='layer']", "1")
    assert v.js("[attnlab.state.rec, attnlab.state.focus, attnlab.state.sticky]") == [1, {"side": "q", "i": 3}, True]
    assert "Query 3 “on” attends most to" in status(v)
    v.shot("issue9-focus-kept-layer1")
    v.page.focus(".stage")
    v.page.keyboard.press("Escape")
    hover(v, {"side": "q", "i": 2})  # a hover focus is not kept
    v.page.select_option("select[aria-label='layer']", "0")
    assert v.js("attnlab.state.focus") is None


@pytest.mark.slow
def test_512_tokens_labels_do_not_overlap_and_a_450_word_caption_wraps(open_viewer: Callable[..., Any],
                                                                       tmp_path: Path) -> None:
    path = write(long_trace(), tmp_path)
    assert path.stat().st_size < 8 * 1024 * 1024
    v = open_viewer(path)
    v.js("attnlab.set({view: 'matrix'})")
    v.page.mouse.move(1, 1)
    v.js("attnlab.set({zoom: 4})")
    for cell in ({"i": 101, "j": 103}, {"i": 2, "j": 5}):
        hover(v, cell)
        assert v.js("attnlab.state.cell") == cell
        labels = v.js("attnlab.placed()")
        for axis in ("q", "k"):
            at = sorted(p["at"] for p in labels if p["axis"] == axis)
            assert len(at) > 5
            assert min(b - a for a, b in itertools.pairwise(at)) >= 13 - 1e-6, f"{axis} labels overlap"
            assert any(p["bold"] and p["i"] == cell["i" if axis == "q" else "j"] for p in labels if p["axis"] == axis)
    v.shot("issue9-512-matrix-hover-labels")
    words = [f"word{i}" for i in range(450)]
    caption = " ".join(svg_texts(export(v, "Save SVG")))
    shown = set(re.sub("[\u2068\u2069“”]", " ", caption).split())
    assert [w for w in words if w not in shown] == [], "the caption is cut"
    assert "…" not in caption
    v.js("attnlab.set({view: 'head'})")
    v.shot("issue9-512-head-caption")
    assert ink(v) > 5000


def test_exports_carry_no_transient_marks_and_have_names_and_resolutions(open_viewer: Callable[..., Any],
                                                                          tmp_path: Path) -> None:
    v = open_viewer(write(mixed_trace(), tmp_path))
    v.page.click("button[data-view=matrix]")
    hover(v, {"i": 2, "j": 5})
    name, svg = download_of(v, "Save SVG")
    assert name == "tiny-test-model-matrix-view-self-layer1-mean.svg"  # the first view: the last layer, the mean
    els = svg_elements(svg)
    assert not [e for e in els if e.tag == f"{SVG}rect" and e.get("stroke") == "#000"], "the hover ring is baked in"
    bold = [e.text for e in els if e.tag == f"{SVG}text" and e.get("font-weight") == "bold"]
    assert bold and "".join(bold).startswith("Matrix view:") and "sat" not in bold and "mat" not in bold
    assert v.js("attnlab.state.cell") == {"i": 2, "j": 5}  # the page keeps its hover
    v.page.select_option("select[aria-label='PNG resolution']", "1")
    name1, png1 = download_of(v, "Save PNG")
    v.page.select_option("select[aria-label='PNG resolution']", "4")
    name4, png4 = download_of(v, "Save PNG")
    assert name1 == "tiny-test-model-matrix-view-self-layer1-mean.png" and name4.endswith("mean@4x.png")
    (w1, h1), (w4, h4) = png_size(png1), png_size(png4)
    assert (w4, h4) == (4 * w1, 4 * h1)
    assert "Saved" in status(v) and f"{w4} × {h4}" in status(v)
    v.page.click("button[data-view=model]")
    name, _ = download_of(v, "Save SVG")
    assert name == "tiny-test-model-model-view-self-all-layers.svg"  # not "-layer0"
    v.page.click("button[data-view=head]")
    hover(v, {"side": "q", "i": 1})  # a hover focus is transient: not in the export
    name, svg = download_of(v, "Save SVG")
    assert name == "tiny-test-model-head-view-self-layer1-mean.svg"
    assert not [e for e in svg_elements(svg) if e.get("fill") == "#F0E442"]
    click(v, {"side": "q", "i": 1})  # a clicked focus is a choice: kept, and the caption says so
    _, svg = download_of(v, "Save SVG")
    assert [e for e in svg_elements(svg) if e.get("fill") == "#F0E442"]
    assert "lines of query 1 “cat”" in " ".join(svg_texts(svg)).replace("\u2068", "").replace("\u2069", "")


def test_token_search_finds_and_goes_to_tokens_of_a_long_input(open_viewer: Callable[..., Any], tmp_path: Path) -> None:
    v = open_viewer(write(long_trace(), tmp_path))
    search = "input[aria-label='find token']"
    v.page.fill(search, "needle")
    assert "“needle”: 1 query token(s) (300), 1 key token(s) (300)" in status(v)
    v.page.press(search, "Enter")
    assert v.js("[attnlab.state.focus, attnlab.state.sticky]") == [{"side": "q", "i": 300}, True]
    assert v.js("document.querySelector('.stage').scrollTop") > 3000  # scrolled to it
    assert any(p["i"] == 300 and p["bold"] for p in v.js("attnlab.placed()"))
    v.shot("issue9-search-needle-head")
    v.js("attnlab.set({view: 'matrix'})")
    v.page.fill(search, "t12")  # t12, t120..t129: Enter walks through them
    v.page.press(search, "Enter")
    v.page.press(search, "Enter")
    assert v.js("attnlab.state.cell.i") == 120
    v.page.fill(search, "zebra")
    assert "No shown token contains “zebra”" in status(v)


def test_sentence_pair_filter_shows_a_to_b(open_viewer: Callable[..., Any], tmp_path: Path) -> None:
    v = open_viewer(write(pair_trace(), tmp_path))
    assert v.page.is_visible("select[aria-label='sentence pair']")
    v.page.select_option("select[aria-label='sentence pair']", "AB")
    v.js("attnlab.set({view: 'matrix'})")
    labels = v.js("attnlab.placed()")
    assert sorted(p["i"] for p in labels if p["axis"] == "q") == [0, 1, 2, 3, 4, 5]
    assert sorted(p["i"] for p in labels if p["axis"] == "k") == [6, 7, 8, 9]
    assert "sentence A → B" in (v.page.get_attribute(".stage", "aria-label") or "")
    hover(v, {"i": 1, "j": 8})
    assert status(v).startswith("Query 1 “where” → key 8 “mat”")
    v.shot("issue9-pair-a-to-b-matrix")
    v.page.select_option("select[aria-label='sentence pair']", "BA")
    labels = v.js("attnlab.placed()")
    assert sorted(p["i"] for p in labels if p["axis"] == "q") == [6, 7, 8, 9]
    single = open_viewer(write(mixed_trace(), tmp_path, "single.html"))
    assert not single.page.is_visible("select[aria-label='sentence pair']")  # one sentence: no filter


def test_token_range_and_colour_scale(open_viewer: Callable[..., Any], tmp_path: Path) -> None:
    trace = mixed_trace()
    v = open_viewer(write(trace, tmp_path))
    rng = "input[aria-label='token range']"
    v.page.fill(rng, "2:5")
    v.page.press(rng, "Enter")
    assert v.js("attnlab.state.range") == {"from": 2, "to": 5}
    assert sorted({p["i"] for p in v.js("attnlab.placed()")}) == [2, 3, 4]
    v.page.click("button[data-view=matrix]")
    v.js("attnlab.set({rec: 0, head: 0})")
    hover(v, {"i": 3, "j": 4})
    assert abs(shown_value(v) - float(trace.records[0].weights[0, 0, 3, 4])) <= _encode.MAX_ERROR + 5e-5
    assert "query tokens 2–4, key tokens 2–4" in (v.page.get_attribute(".stage", "aria-label") or "")
    v.shot("issue9-range-2-5-matrix")
    linear = fingerprint(v)
    for scale in ("power", "log"):
        v.page.select_option("select[aria-label='colour scale']", scale)
        assert fingerprint(v) != linear
        assert scale in " ".join(svg_texts(export(v, "Save SVG")))
    v.shot("issue9-range-log-matrix")
    v.page.fill(rng, "five")
    v.page.press(rng, "Enter")
    assert v.page.get_attribute(rng, "aria-invalid") == "true" and "e.g. 100:160" in status(v)
    assert v.js("attnlab.state.range") == {"from": 2, "to": 5}  # unchanged
    v.page.fill(rng, "")
    v.page.press(rng, "Enter")
    assert v.js("attnlab.state.range") is None


@pytest.mark.slow
def test_neuron_view_shows_the_q_k_terms_behind_a_weight(open_viewer: Callable[..., Any], tmp_path: Path) -> None:
    trace, q, k = qk_trace()
    v = open_viewer(write(trace, tmp_path))
    v.page.click("button[data-view=neuron]")
    v.js("attnlab.set({rec: 1, head: 1})")
    click(v, {"side": "q", "i": 2})
    hover(v, {"i": 2, "j": 5})
    text = status(v)
    qv, kv = q[1, 0, 1, 2].double(), k[1, 0, 1, 5].double()
    dot = float(qv @ kv)
    m = re.search(r"q·k = (-?\d+\.\d+) .*÷ √8 = (-?\d+\.\d+); softmax (\d\.\d+), captured weight (\d\.\d+)", text)
    assert m, text
    assert abs(float(m.group(1)) - dot) <= 2e-3 * (1 + abs(dot))  # float16 vectors
    assert abs(float(m.group(2)) - dot / 8**0.5) <= 1e-3 * (1 + abs(dot))
    weight = float(trace.records[1].weights[0, 1, 2, 5])
    assert abs(float(m.group(3)) - weight) <= 5e-3 and abs(float(m.group(4)) - weight) <= _encode.MAX_ERROR + 5e-5
    assert ink(v) > 3000
    v.shot("issue9-neuron-view")
    texts = svg_texts(export(v, "Save SVG"))
    assert "q·k / √d" in texts and any("query 2" in t for t in texts)
    plain = open_viewer(write(mixed_trace(), tmp_path, "plain.html"))  # no vectors: the tab says how to get them
    assert plain.page.is_disabled("button[data-view=neuron]")
    assert "qk=True" in (plain.page.get_attribute("button[data-view=neuron]", "title") or "")


def test_a_comparison_opens_where_the_traces_differ_most(open_viewer: Callable[..., Any], tmp_path: Path) -> None:
    a = mixed_trace()
    b = AttentionTrace([AttentionRecord(r.name, r.kind, r.layer, r.weights.clone(), r.query_tokens, r.key_tokens)
                        for r in a.records], {"model": "tiny-test-model"})
    b.records[0].weights = softmax(1, 3, 7, 7)  # only the first self-attention layer differs (the last is the same)
    v = open_viewer(al.viz.save_html([a, b], tmp_path / "compare.html"))
    # both panes open on layer 0 (the layer the difference names), the mean of its heads: not the last layer
    assert v.js("attnlab.panes.map(p => [p.state.rec, p.state.mean])") == [[0, True], [0, True]]
    single = open_viewer(al.viz.save_html(a, tmp_path / "single.html"))
    assert single.js("[attnlab.state.rec, attnlab.state.mean]") == [1, True]  # alone: the last layer


def test_two_traces_side_by_side_with_linked_controls(open_viewer: Callable[..., Any], tmp_path: Path) -> None:
    a, b = mixed_trace(), mixed_trace(["A", "dog", "ran", "to", "the", "red", "door"])
    b.meta["model"] = "other-model"
    path = al.viz.compare_html(a, b, tmp_path / "compare.html")
    assert path.read_text(encoding="utf-8") == al.viz.to_html([a, b])
    v = open_viewer(path)
    assert v.js("attnlab.panes.length") == 2
    assert v.page.locator(".pane h1").all_text_contents()[1].startswith("B: other-model")
    inks = v.js("""() => [...document.querySelectorAll('.frame canvas')].map(c => {
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i] < 235) n++; return n; })""")
    assert len(inks) == 2 and min(inks) > 1000
    v.page.locator(".pane").nth(0).locator("select[aria-label='layer']").select_option("1")
    v.page.locator(".pane").nth(0).locator("button[data-view=matrix]").click()
    assert v.js("attnlab.panes.map(p => [p.state.view, p.state.rec])") == [["matrix", 1], ["matrix", 1]]
    v.shot("issue9-compare-matrix")
    v.page.uncheck(".link input")
    v.page.locator(".pane").nth(1).locator("button[data-view=head]").click()
    assert v.js("attnlab.panes.map(p => p.state.view)") == ["matrix", "head"]
