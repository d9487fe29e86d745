"""``attnlab serve --model FOLDER`` in real Chromium with a user's own Hugging Face language model (issue 41): a random
Llama-family model with grouped-query attention, saved as a user saves one, is offered beside the bundled models; the
page samples its continuation (per token, with the sampling controls) and draws its attention, with no console error,
page error, dialog, or request anywhere but the server (its ablation is tests/kinds/test_hf_lm.py's, by the API)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import hf_models
from helpers.cli import lab_server

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("browser")]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = hf_models.folder("llama", tmp_path_factory.mktemp("user") / "my-llama")
    with lab_server("--model", str(folder)) as url:
        yield url


def _until(page: Any, expression: str) -> None:
    deadline = time.monotonic() + 60
    while not page.evaluate(expression):
        assert time.monotonic() < deadline, page.evaluate("window.attnlabLab && attnlabLab.error")
        page.wait_for_timeout(50)


def test_a_folder_model_is_sampled_drawn_and_ablated(browser: Any, server: str) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda m: m.type == "error" and problems.append(f"console error: {m.text}"))
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("request", lambda r: r.url.startswith((server, "data:", "blob:", "about:"))
            or problems.append(f"request {r.url}"))
    page.goto(server)
    _until(page, "!!window.attnlabLab && attnlabLab.runs >= 1 && !attnlabLab.busy")
    options = page.eval_on_selector_all("#model option", "os => os.map(o => o.value)")
    assert options[-1] == "my-llama" and "minilm" in options
    runs = page.evaluate("attnlabLab.runs")
    page.select_option("#model", "my-llama")
    page.fill("#text", "When Mary and John went to the store")
    _until(page, f"attnlabLab.runs > {runs} && !attnlabLab.busy && attnlabLab.last.model === 'my-llama'")
    assert page.evaluate("attnlabLab.error") == ""
    assert page.evaluate("attnlabLab.last.kind") == "hf-lm"
    assert "per token" in (page.text_content("body") or "")
    assert page.evaluate("attnlab.records.length") == 2  # two layers of causal attention
    assert page.is_visible("text=temperature")  # the sampling controls: the model can sample
    # QK attribution of a cell: in the text, it is split; in the continuation, only when the continuation read again
    # as text gives the tokens the model wrote (a byte-level model's random text often does not: it says so)
    page.evaluate("attnlab.set({view: 'matrix', rec: 1, head: 0, zoom: 20})")
    page.evaluate("attnlab.idle()")
    for n, (query, key) in enumerate([(4, 1), (page.evaluate("attnlabLab.last.tokens.length") + 3, 2)]):
        point = page.evaluate(f"attnlab.where({{i: {query}, j: {key}}})")
        page.mouse.move(point["x"], point["y"])
        page.mouse.click(point["x"], point["y"])
        _until(page, f"attnlabLab.qks > {n} || document.querySelector('#qk .lab-doubt') !== null")
        said = page.inner_text("#qk")
        if "gives other tokens than the model wrote" not in said:
            tokens = page.evaluate("attnlab.records[1].key_tokens")
            assert f"head 1.0, query {query} “{tokens[query]}” → key {key} “{tokens[key]}”" in said, said
        else:
            assert n == 1  # a cell of the text itself is always split
    folder = os.environ.get("ATTNLAB_SCREENSHOTS")
    if folder:
        page.screenshot(path=str(Path(folder) / "serve-folder-llama.png"), full_page=True)
    context.close()
    assert not problems, "the page misbehaved:\n" + "\n".join(problems)
