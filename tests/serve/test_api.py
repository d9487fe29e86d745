"""The lab's JSON API through the ASGI test client: what each endpoint returns, the same figures as the library calls
the CLI makes, every bad input a one-line 4xx, the limits (503 + Retry-After, 504, 413), Host/Origin checks, and a
server that keeps serving after each of them."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
import torch
from fastapi.testclient import TestClient

import attnlab as al
from attnlab.serve import Lab, Limits, catalogue, create_app

SENTENCE = "The cat sat on the mat because it was tired."
HOSTS = ["testserver"]


def run(client: TestClient, **body: Any) -> httpx.Response:
    return client.post("/api/run", json=body)


def test_models_lists_the_bundled_models_by_name_kind_and_language_and_no_path(client: TestClient) -> None:
    r = client.get("/api/models")
    assert r.status_code == 200
    models = {m["name"]: m for m in r.json()["models"]}
    assert {n: m["kind"] for n, m in models.items()} == {n: al.KINDS[m.kind].api for n, m in al.MODELS.items()}
    assert models["minilm"]["kind"] == "encoder" and models["dates-zh/luong"]["kind"] == "translator"
    assert all(models[n]["example"] == m.example and m.suites for n, m in al.MODELS.items()), \
        "every bundled model has an example and a behaviour suite"
    assert models["zh-sentiment"]["languages"] == ["zh"] and models["zh-lm"]["languages"] == ["zh"]
    assert '"/' not in r.text and "_bundled" not in r.text  # the browser never sees (nor sends) a file path
    for name, model in models.items():  # each bundled model's example text runs on it
        assert isinstance(model["example"], str) and run(client, model=name, text=model["example"]).status_code == 200


def test_a_folder_named_at_start_is_offered_by_its_folder_name(tmp_path: Path) -> None:
    from attnlab.capturing.pretrained import BUNDLED
    from attnlab.serve import ModelEntry

    folder = al.locate("zh-sentiment").path.parent
    lm_folder = al.locate("zh-lm").path
    entries = catalogue([folder, folder, BUNDLED, lm_folder], bundled=False)
    assert [(e.name, e.kind) for e in entries] == [
        (folder.name, "classifier"), (f"{folder.name}-2", "classifier"), ("minilm", "huggingface"),
        (lm_folder.name, "lm")]
    assert Lab(entries).models()[-1] == {"name": lm_folder.name, "kind": "lm", "languages": [], "example": None,
                                         "can": ["ablate", "analyze", "attribute", "patch", "qk", "sample"],
                                         "sampling": {**al.trained.SAMPLING, "greedy": False, "seed": 0}}
    assert Lab(entries).models()[2]["example"] == "The cat sat on the mat because it was tired."  # named: bundled
    assert all(isinstance(e, ModelEntry) for e in entries)
    with pytest.raises(al.errors.ModelLoadError):
        catalogue([tmp_path])  # an empty folder is not a model


def test_healthz(client: TestClient) -> None:
    assert client.get("/healthz").json()["status"] == "ok"


def test_the_page_is_offline_and_its_csp_allows_only_its_own_script_and_style(client: TestClient) -> None:
    import base64
    import hashlib

    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    csp = r.headers["content-security-policy"]
    scripts = re.findall(r"<script>(.*?)</script>", r.text, flags=re.S)
    styles = re.findall(r"<style>(.*?)</style>", r.text, flags=re.S)
    assert len(scripts) == 1 and len(styles) == 1

    def digest(text: str) -> str:
        return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()

    assert f"script-src '{digest(scripts[0])}';" in csp and f"style-src '{digest(styles[0])}';" in csp
    for rule in ("default-src 'none'", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'",
                 "form-action 'none'"):
        assert rule in csp
    assert "unsafe" not in csp and not re.search(r"(src|href)=\"?https?:", r.text)
    assert r.headers["x-content-type-options"] == "nosniff"


def test_run_on_minilm_returns_tokens_labels_the_view_and_the_viewer_payload(client: TestClient) -> None:
    r = run(client, model="minilm", text=SENTENCE)
    assert r.status_code == 200, r.text
    body = r.json()
    expected = al.trace_text(SENTENCE)
    assert body["tokens"] == expected.records[0].key_tokens and body["tokens"][0] == "[CLS]"
    assert body["output"] is None and body["kind"] == "encoder" and body["server_ms"] > 0
    assert body["view"] == {"layer": 5, "head": -1, "n_layers": 6, "n_heads": 12}
    labels = body["labels"]
    assert len(labels["labels"]) == 6 and all(len(row) == 12 for row in labels["labels"])
    assert len(labels["metrics"]["entropy"]) == 6
    viewer = body["viewer"]
    assert viewer["format"] == "attnlab.viewer" and len(viewer["records"]) == 6
    assert viewer["heads"]["labels"] == labels["labels"]
    # the weights the page draws are the captured ones, within the 8-bit codes' error
    from attnlab.viz import _encode

    codes = _encode.decode(viewer["records"][2]["data"], (12, 13, 13))
    assert torch.allclose(torch.as_tensor(codes), expected.records[2].weights[0].double(), atol=_encode.MAX_ERROR)


def test_layer_and_head_choose_the_opening_view(client: TestClient) -> None:
    body = run(client, model="minilm", text="A short one.", layer=-2, head=3).json()
    assert body["view"]["layer"] == 4 and body["view"]["head"] == 3


def test_the_classifier_gives_its_calibrated_prediction(client: TestClient) -> None:
    text = "这部电影很好看，演员也很棒"
    body = run(client, model="zh-sentiment", text=text).json()
    [(label, probability)] = al.training.load_trained("zh-sentiment").predict([text])
    assert body["output"]["label"] == label and body["output"]["probability"] == pytest.approx(probability, abs=1e-5)
    assert body["output"]["calibrated"] is True
    assert body["tokens"][0] == "[CLS]" and len(body["tokens"]) == len(text) + 1


def test_the_translator_gives_its_translation_confidence_and_alignment(client: TestClient) -> None:
    text = "3 October 1990"
    body = run(client, model="dates-zh", text=text).json()
    [t] = al.training.load_translator("dates-zh").translate([text], warn=False)
    out = body["output"]
    assert out["translation"] == t.text == "1990年10月3日"
    assert out["confidence"] == pytest.approx(t.confidence, abs=1e-5)
    assert out["target_tokens"] == t.target_tokens and out["source_tokens"] == t.source_tokens
    assert len(out["alignment"]) == len(t.target_tokens) and len(out["alignment"][0]) == len(t.source_tokens)
    kinds = {r["kind"] for r in body["viewer"]["records"]}
    assert "cross" in kinds


def test_the_language_model_gives_its_continuation_as_attnlab_generate_does(client: TestClient,
                                                                            tmp_path: Path) -> None:
    from attnlab.trained import SHOWN_SAMPLING

    text = "中国"
    body = run(client, model="zh-lm", text=text).json()
    lm = al.training.load_language_model("zh-lm")
    expected = lm.generate(text, **SHOWN_SAMPLING)  # the shown run of every surface: generate's defaults, seed 0
    continuation = "".join(lm.characters()[i] for i in expected.ids)
    assert body["kind"] == "lm" and body["tokens"] == list(text)
    out = body["output"]
    assert out["continuation"] == continuation and len(continuation) == SHOWN_SAMPLING["max_tokens"]
    # the model's own mean log-probability of the continuation (not that of the penalised, truncated distribution)
    # written differently from the lab (generate's cached decoding): one uncached forward per generated character
    with torch.no_grad():
        steps = [torch.log_softmax(lm.model(torch.tensor([[*expected.prompt_ids, *expected.ids[:j]]]))[0, -1].float(),
                                   -1)[expected.ids[j]] for j in range(len(expected.ids))]
    own = torch.stack(steps).mean()
    assert out["log_probability"] == pytest.approx(float(own), abs=1e-5) and out["log_probability"] < 0
    # the viewer draws the causal attention of the text and its continuation (the last character is never read)
    assert body["labels"]["kind"] == "causal" and len(body["labels"]["labels"]) == lm.model.config.n_layers
    records = body["viewer"]["records"]
    assert {r["kind"] for r in records} == {"causal"}
    assert records[0]["key_tokens"] == [*text, *continuation[:-1]] and body["server_ms"] > 0
    r = client.post("/api/download", json={"model": "zh-lm", "text": text, "what": "trace"})
    assert r.status_code == 200, r.text
    path = tmp_path / "trace.attn"
    path.write_bytes(r.content)
    assert al.AttentionTrace.load(path).tokens == records[0]["key_tokens"]  # the steps, as attnlab generate saves


def test_the_head_notes_carry_the_sink_columns(client: TestClient) -> None:
    """The head notes the viewer shows on hover hold the first token's share and what its value writes, read in the
    run itself: attention_sinks' numbers on the text and continuation the viewer draws; none for a translator."""
    import numpy as np

    from attnlab.circuits import attention_sinks, load_text_model

    body = run(client, model="zh-lm", text="中国").json()
    tm = load_text_model("zh-lm")
    ids, _ = tm.encode("".join(body["viewer"]["records"][0]["key_tokens"]), "given")
    rows = attention_sinks(tm.model, ids)
    metrics = body["labels"]["metrics"]
    np.testing.assert_allclose(np.ravel(metrics["first"]), [r.first_share for r in rows], atol=1e-6)
    np.testing.assert_allclose(np.ravel(metrics["value_norm_ratio"]), [r.value_norm_ratio for r in rows], rtol=1e-5)
    assert body["viewer"]["heads"]["metrics"]["value_norm_ratio"] == metrics["value_norm_ratio"]
    notes = run(client, model="dates-zh", text="March 5").json()["labels"]["metrics"]
    assert "first" in notes and "value_norm_ratio" not in notes


def test_a_doubtful_translation_says_why_once(client: TestClient) -> None:
    body = run(client, model="tutorial-en-zh", text="Quantum chromodynamics binds quarks.").json()
    assert body["output"]["doubts"], body
    assert not set(body["warnings"]) & set(body["output"]["doubts"])


@pytest.mark.parametrize(("text", "first"), [
    ("Feb 30, 2021", "the input names 30 February 2021, which does not exist"),
    ("Monday, March 5, 2021", "the input's weekday is wrong: 5 March 2021 is a Friday, not a Monday"),
    ("I had pizza for lunch", "holds 0 of the three parts a date is written with"),
])
def test_dates_doubts_name_the_input_first_and_show_once(client: TestClient, text: str, first: str) -> None:
    body = run(client, model="dates-zh", text=text).json()
    doubts = body["output"]["doubts"]
    assert doubts and first in doubts[0], doubts  # the most informative reason first
    if "input" in first:  # the input is the problem, not the translation
        assert not any("the translation of" in d for d in doubts), doubts
    assert body["warnings"] == []  # the joined warning of the same doubts is not shown a second time


def test_a_download_reuses_the_run_it_downloads(lab: Lab, client: TestClient, tmp_path: Path) -> None:
    shown = run(client, model="zh-sentiment", text="这本书写得很好").json()
    calls = lab.model_calls
    for what in ("trace", "viewer"):
        r = client.post("/api/download", json={"model": "zh-sentiment", "text": "这本书写得很好", "what": what})
        assert r.status_code == 200, r.text
        if what == "trace":
            (tmp_path / "t.attn").write_bytes(r.content)
    assert lab.model_calls == calls  # the run on the page, not a new one
    trace = al.AttentionTrace.load(tmp_path / "t.attn")
    assert trace.meta["probability"] == pytest.approx(shown["output"]["probability"], abs=1e-5)
    r = client.post("/api/download", json={"model": "zh-sentiment", "text": "这部电影太好看了", "what": "trace"})
    assert r.status_code == 200 and lab.model_calls == calls + 1  # a text not on the page runs the model


def test_compare_opens_on_the_layer_where_the_texts_differ_most(client: TestClient) -> None:
    other = SENTENCE.replace("cat", "dog")
    body = run(client, model="minilm", text=SENTENCE, compare=other).json()
    per_layer = [sum(row) / len(row) for row in body["difference"]["tv"]]
    most = per_layer.index(max(per_layer))
    assert body["view"]["layer"] == most and body["view"]["head"] == -1
    assert [p["first"]["layer"] for p in body["viewer"]["panes"]] == [most, most]
    alone = run(client, model="minilm", text=SENTENCE).json()
    assert alone["view"]["layer"] == 5 and alone["viewer"]["first"] == {"kind": "self", "layer": 5, "head": -1}


def test_compare_gives_both_sides_and_the_difference_of_their_attention(client: TestClient) -> None:
    same = run(client, model="minilm", text=SENTENCE, compare=SENTENCE).json()
    assert same["viewer"]["format"] == "attnlab.viewer.compare" and len(same["viewer"]["panes"]) == 2
    assert same["difference"]["tv"] == [[0.0] * 12] * 6
    changed = run(client, model="minilm", text=SENTENCE, compare=SENTENCE.replace("cat", "dog")).json()
    tv = torch.tensor(changed["difference"]["tv"])
    a, b = al.trace_text(SENTENCE).stack(), al.trace_text(SENTENCE.replace("cat", "dog")).stack()
    assert torch.allclose(tv, (0.5 * (a - b).abs().sum(-1).mean(-1)).float(), atol=1e-4)
    assert changed["compare"]["tokens"][2] == "dog"
    longer = run(client, model="minilm", text=SENTENCE,
                 compare="A much longer text than the first one, by far, with more words.").json()
    assert longer["difference"]["tv"] is None and "tokens" in longer["difference"]["reason"]


BAD = [
    ({"model": "nope", "text": "x"}, 404, "unknown model 'nope'; the lab offers minilm"),
    ({"model": "/etc", "text": "x"}, 404, "unknown model"),
    ({}, 422, 'the body names no "model"; name one the lab offers: minilm'),
    ({"text": "x"}, 422, 'the body names no "model"'),
    ({"model": "zh-sentiment", "text": "好" * 10_000}, 413, "would keep 800,170,009 weights"),
    ({"model": "minilm", "text": ""}, 422, '"text" is empty'),
    ({"model": "minilm", "text": "   "}, 422, '"text" is empty'),
    ({"model": "minilm"}, 422, '"text" must be a string'),
    ({"model": "minilm", "text": 3}, 422, '"text" must be a string'),
    ({"model": "minilm", "text": "x" * 10_001}, 413, "the limit is 10000"),
    ({"model": "minilm", "text": "a " * 999}, 413, "at most 512"),
    ({"model": "minilm", "text": "a", "layer": 6}, 422, "layer 6 is out of range: the model has 6 layers"),
    ({"model": "minilm", "text": "a", "head": 12}, 422, "head 12 is out of range: the model has 12 heads"),
    ({"model": "minilm", "text": "a", "layer": "2"}, 422, '"layer" must be an integer'),
    ({"model": "minilm", "text": "a", "bogus": 1}, 422, "unknown field(s) 'bogus'"),
    ({"model": "dates-zh", "text": "1" * 200}, 413, "at most"),
    ({"model": "zh-lm", "text": ""}, 422, '"text" is empty'),
    ({"model": "zh-lm", "text": "中" * 109}, 413, "zh-lm continues at most 108 (its context of 128 less the 20"),
    ({"model": "zh-lm", "text": "Привет"}, 422, "every character of 'Привет' is unknown to the model 'zh-lm'"),
    ({"model": "zh-sentiment", "text": "☃☃"}, 422, "every character of '☃☃' is unknown to the model 'zh-sentiment'"),
    ({"model": "dates-zh", "text": "☃ ☃"}, 422, "every character of '☃ ☃' is unknown to the model 'dates-zh'"),
    ({"model": "minilm", "text": "☃"}, 422, "every token of '☃' is unknown to the model"),
]


@pytest.mark.parametrize(("body", "status", "says"), BAD)
def test_bad_input_is_a_one_line_4xx_and_the_server_keeps_serving(client: TestClient, body: dict[str, Any],
                                                                   status: int, says: str) -> None:
    r = run(client, **body)
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert says in error and "\n" not in error and r.headers["content-type"] == "application/json"
    assert run(client, model="zh-sentiment", text="很好").status_code == 200


@pytest.mark.parametrize(("content", "kind", "status", "says"), [
    (b"{bad json", "application/json", 400, "not valid JSON"),
    (b"[1, 2]", "application/json", 400, "must be a JSON object"),
    (b'{"model": "minilm", "text": "a"}', "text/plain", 415, "Content-Type: application/json"),
    (b'{"model": "minilm", "text": "a"}', "", 415, "no content type"),
    (b"\xff\xfe", "application/json", 400, "not valid JSON"),
    (json.dumps({"model": "minilm", "text": "a" * 300_000}).encode(), "application/json", 413, "the limit is 256000"),
])
def test_malformed_requests(client: TestClient, content: bytes, kind: str, status: int, says: str) -> None:
    r = client.post("/api/run", content=content, headers={"content-type": kind} if kind else {})
    assert r.status_code == status and says in r.json()["error"], r.text


ROUTES = ["/api/run", "/api/download", "/api/ablate", "/api/attribute", "/api/qk"]
HUGE = b"1" * 5000  # past the 4,300 digits Python converts between int and str
DEEP = b"[" * 100_000 + b"]" * 100_000  # past the parser's stack (RecursionError)
# the hand-found bodies that gave 500 on the POST routes, and their neighbours
UNREADABLE = {
    "lone surrogate in text": (b'{"model": "minilm", "text": "a\\ud800b"}', 400,
                               'the "text" holds a lone surrogate \\ud800 at character 2'),
    "lone low surrogate in model": (b'{"model": "\\udc00", "text": "a"}', 400,
                                    'the "model" holds a lone surrogate \\udc00 at character 1'),
    "lone surrogate in a field name": (b'{"model": "zh-lm", "text": "a", "sampling": {"\\ud800": 1}}', 400,
                                       'a field name in "sampling" holds a lone surrogate \\ud800'),
    "5000-digit layer": (b'{"model": "minilm", "text": "a", "layer": ' + HUGE + b', "head": 0}', 422,
                         '"layer" is an integer of 5000 digits (111111111111...111111); no field takes more than 19'),
    "5000-digit head": (b'{"model": "minilm", "text": "a", "layer": 0, "head": -' + HUGE + b"}", 422,
                        '"head" is an integer of 5000 digits'),
    "5000-digit seed": (b'{"model": "zh-lm", "text": "a", "sampling": {"seed": ' + HUGE + b"}}", 422,
                        '"sampling"."seed" is an integer of 5000 digits'),
    "nested 100,000 deep": (b'{"model": "minilm", "text": "a", "layer": ' + DEEP + b"}", 400,
                            "the body nests too deep to read"),
    "nested 10 deep": (b'{"model": "minilm", "text": "a", "layer": [[[[[[[[[[0]]]]]]]]]]}', 400,
                       "the body nests deeper than 8 levels"),
}


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("case", list(UNREADABLE))
def test_what_no_field_can_hold_is_a_one_line_4xx_on_every_route(client: TestClient, route: str, case: str) -> None:
    """A lone surrogate (no UTF-8 encodes it), an integer past 4,300 digits, nesting past the parser's stack: each
    was a 500 on every POST route."""
    content, status, says = UNREADABLE[case]
    r = client.post(route, content=content, headers={"content-type": "application/json"})
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert says in error and "\n" not in error and len(error) < 300, error
    assert client.get("/healthz").status_code == 200


def test_an_integer_in_range_is_read_and_refused_by_its_field(client: TestClient) -> None:
    r = run(client, model="minilm", text="a", layer=-(10**18))
    assert r.status_code == 422 and f"layer {-(10**18)} is out of range" in r.json()["error"]


def test_unknown_paths_and_methods_are_json_errors(client: TestClient) -> None:
    assert client.get("/api/nothing").status_code == 404 and "GET /api/models" in client.get("/x").json()["error"]
    r = client.get("/api/run")
    assert r.status_code == 405 and "GET is not allowed" in r.json()["error"]
    assert r.headers["allow"] == "POST" and "it takes POST" in r.json()["error"]  # RFC 9110: a 405 names them
    for path in ROUTES:
        assert client.put(path).headers["allow"] == "POST"
    wrong = client.post("/api/models")
    assert wrong.status_code == 405 and wrong.headers["allow"] == "GET"
    assert client.delete("/healthz").headers["allow"] == "GET"


def test_host_and_origin_of_another_site_are_refused(lab: Lab) -> None:
    client = TestClient(create_app(lab, hosts=["127.0.0.1"], port=8765), base_url="http://127.0.0.1:8765")
    assert client.get("/healthz").status_code == 200
    rebinding = client.get("/api/models", headers={"host": "attacker.example:8765"})
    assert rebinding.status_code == 421 and "not this server's" in rebinding.json()["error"]
    assert client.get("/healthz", headers={"host": "127.0.0.1:9999"}).status_code == 421
    cross = client.post("/api/run", json={"model": "zh-sentiment", "text": "好"},
                        headers={"origin": "http://attacker.example"})
    assert cross.status_code == 403 and "cross-site" in cross.json()["error"]
    same = client.post("/api/run", json={"model": "zh-sentiment", "text": "好"},
                       headers={"origin": "http://127.0.0.1:8765"})
    assert same.status_code == 200


def test_downloads_are_the_trace_file_and_a_standalone_viewer(client: TestClient, tmp_path: Path) -> None:
    r = client.post("/api/download", json={"model": "minilm", "text": SENTENCE, "what": "trace"})
    assert r.status_code == 200 and 'filename="trace.attn"' in r.headers["content-disposition"]
    (tmp_path / "t.attn").write_bytes(r.content)
    trace = al.AttentionTrace.load(tmp_path / "t.attn")
    assert torch.allclose(trace.stack(), al.trace_text(SENTENCE).stack(), atol=1e-6)
    page = client.post("/api/download", json={"model": "minilm", "text": SENTENCE, "compare": "The dog sat.",
                                              "what": "viewer"})
    assert page.status_code == 200 and "Content-Security-Policy" in page.text and "attnlab.viewer.compare" in page.text
    bad = client.post("/api/download", json={"model": "minilm", "text": SENTENCE, "what": "pdf"})
    assert bad.status_code == 422 and '"what" must be' in bad.json()["error"]


# ----- limits and failures, with a stand-in lab whose runs block, sleep or fail ------------------------------------
class StandInLab(Lab):
    def __init__(self) -> None:
        super().__init__(catalogue())
        self.gate = threading.Event()
        self.mode = "ok"
        self.calls = 0

    def run(self, model: str, text: str, **kw: Any) -> dict[str, Any]:
        self.calls += 1
        if self.mode == "block":
            self.gate.wait(10)
        if self.mode == "fail":
            raise RuntimeError("the weights hold NaN")
        return {"model": model, "text": text}


def run_alone(coroutine: Any) -> Any:
    """``asyncio.run(coroutine)`` in a thread of its own: a browser test's playwright (sync API) keeps an event loop
    running in this worker's main thread for the rest of the session, where ``asyncio.run`` refuses to start."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()

def test_over_the_queue_limit_is_503_with_retry_after_and_the_waiting_runs_finish() -> None:
    lab = StandInLab()
    lab.mode = "block"
    app = create_app(lab, Limits(queue=2), hosts=HOSTS)

    async def scenario() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
            body = {"model": "minilm", "text": "a"}
            first = [asyncio.create_task(c.post("/api/run", json=body)) for _ in range(2)]
            await asyncio.sleep(0.3)  # both admitted: one runs, one waits
            over = await c.post("/api/run", json=body)
            lab.gate.set()
            return [over, *await asyncio.gather(*first)]

    over, *done = run_alone(scenario())
    assert over.status_code == 503 and over.headers["retry-after"] == "1" and "busy" in over.json()["error"]
    assert [r.status_code for r in done] == [200, 200]


def test_a_request_whose_client_left_while_it_waited_is_never_run() -> None:
    lab = StandInLab()
    lab.mode = "block"
    app = create_app(lab, hosts=HOSTS)

    async def scenario() -> dict[str, Any]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
            first = asyncio.create_task(c.post("/api/run", json={"model": "minilm", "text": "a"}))
            await asyncio.sleep(0.2)  # the first runs (blocked); the next waits its turn
            messages = [{"type": "http.request", "body": b'{"model": "minilm", "text": "b"}', "more_body": False}]

            async def receive() -> dict[str, Any]:  # the client sends its request, then is gone
                return messages.pop(0) if messages else {"type": "http.disconnect"}

            async def send(message: dict[str, Any]) -> None:
                pass

            scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
                     "scheme": "http", "path": "/api/run", "raw_path": b"/api/run", "query_string": b"",
                     "root_path": "", "headers": [(b"host", b"testserver"), (b"content-type", b"application/json")],
                     "client": ("127.0.0.1", 5), "server": ("testserver", 80)}
            gone = asyncio.create_task(app(scope, receive, send))
            await asyncio.sleep(0.2)
            lab.gate.set()
            assert (await first).status_code == 200
            await gone
            return (await c.get("/healthz")).json()

    health = run_alone(scenario())
    assert lab.calls == 1 and health["runs"] == 1 and health["skipped"] == 1 and health["busy"] == 0


def test_a_run_over_the_time_limit_is_504_and_the_next_is_served() -> None:
    lab = StandInLab()
    lab.mode = "block"
    client = TestClient(create_app(lab, Limits(timeout_s=0.2), hosts=HOSTS))
    r = client.post("/api/run", json={"model": "minilm", "text": "a"})
    assert r.status_code == 504 and "longer than 0.2 s" in r.json()["error"]
    lab.mode = "ok"
    lab.gate.set()
    assert client.post("/api/run", json={"model": "minilm", "text": "b"}).status_code == 200


def test_a_model_that_fails_gives_a_json_error_naming_the_cause_and_the_next_request_works() -> None:
    lab = StandInLab()
    lab.mode = "fail"
    client = TestClient(create_app(lab, hosts=HOSTS), raise_server_exceptions=False)
    r = client.post("/api/run", json={"model": "minilm", "text": "a"})
    assert r.status_code == 500 and r.json() == {"error": "the model failed: RuntimeError: the weights hold NaN"}
    lab.mode = "ok"
    assert client.post("/api/run", json={"model": "minilm", "text": "a"}).status_code == 200


def test_the_model_cache_is_bounded() -> None:
    import gc
    import weakref

    lab = Lab(catalogue(), cache=1)
    lab.run("dates-zh", "3 May 2001")
    first = weakref.ref(lab.loaded(lab.entry("dates-zh")).loaded)
    lab.run("minilm", "The cat sat.")
    encoder = weakref.ref(lab.loaded(lab.entry("minilm")).loaded[0])
    lab.run("zh-sentiment", "好")
    assert lab.cached == ["zh-sentiment"]
    gc.collect()
    assert first() is None and encoder() is None  # evicted models are freed: no other cache keeps them
    with pytest.raises(al.errors.InputError, match="at least 1"):
        Lab(catalogue(), cache=0)


def test_the_page_script_is_the_viewer_then_the_lab_in_one_function() -> None:
    from importlib import resources

    from attnlab.serve import _page
    from attnlab.viz.html import SCRIPTS

    js = _page.script()
    viewer = [resources.files("attnlab.viz").joinpath("assets", n).read_text(encoding="utf-8") for n in SCRIPTS]
    lab_js = resources.files("attnlab.serve").joinpath("assets", "lab.js").read_text(encoding="utf-8")
    at = [js.index(text) for text in [*viewer, lab_js]]
    assert at == sorted(at) and js.startswith("(() => {") and js.rstrip().endswith("})();")


@pytest.mark.parametrize("bad", [{"queue": 0}, {"max_chars": True}, {"max_body": 1.5}, {"timeout_s": 0},
                                 {"timeout_s": float("inf")}, {"timeout_s": True}])
def test_limits_refuse_what_no_server_can_use(bad: dict[str, Any]) -> None:
    """A limit is the server's configuration: a ConfigError naming the option (not an HTTP 500 before any request)."""
    with pytest.raises(al.errors.ConfigError, match=r"must be (1 or more|a number of seconds > 0)"):
        Limits(**bad)



def test_a_run_past_its_deadline_is_stopped_and_frees_the_worker() -> None:
    """The run's next module call raises once the deadline passed: the worker serves the next request at once
    instead of running on (the stand-in would run a minute of forward passes)."""
    import threading
    import time

    import torch

    from attnlab.serve._queue import RunCancelled, RunQueue

    layer, x = torch.nn.Linear(8, 8), torch.zeros(1, 8)
    stopped = threading.Event()

    def long_run() -> None:
        deadline = time.monotonic() + 60
        try:
            while time.monotonic() < deadline:
                layer(x)
        except RunCancelled:
            stopped.set()
            raise

    class Here:
        async def is_disconnected(self) -> bool:
            return False

    async def scenario() -> tuple[int, bool, dict[str, int]]:
        queue = RunQueue(2, timeout_s=0.2)
        try:
            await queue.call(Here(), long_run)
        except ApiError as exc:
            status = exc.status
        answered = await asyncio.wait_for(queue.call(Here(), lambda: layer(x)), timeout=20)  # not after 60 s
        return status, answered is not None, queue.counts()

    from attnlab.serve._queue import ApiError

    status, answered, counts = run_alone(scenario())
    assert status == 504 and stopped.is_set() and answered
    assert counts == {"busy": 0, "runs": 2, "skipped": 0, "cancelled": 1}
    assert not torch.nn.modules.module._global_forward_pre_hooks  # the hook left with the run
