"""The lab's language model samples as `attnlab generate` does (issue 31, section 5): its defaults do not loop on
its own example, the request's "sampling" settings give the library's text for the same settings, a greedy run that
loops says so (in the output and among the warnings), and bad settings are refused with one message (422)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from attnlab import MODELS
from attnlab.serve import Lab, Limits, catalogue, create_app
from attnlab.serve._lab import CONTINUATION
from attnlab.trained import SAMPLING, find_loop, load_language_model


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app(Lab(catalogue()), Limits(), hosts=["testserver"]))


def run(client: TestClient, **body: Any) -> httpx.Response:
    return client.post("/api/run", json=body)


def test_the_models_list_gives_the_sampling_defaults(client: TestClient) -> None:
    models = {m["name"]: m for m in client.get("/api/models").json()["models"]}
    assert models["zh-lm"]["sampling"] == {**SAMPLING, "greedy": False, "seed": 0}
    assert "sampling" not in models["zh-sentiment"]


def test_the_first_answer_on_its_own_example_does_not_loop(client: TestClient) -> None:
    body = run(client, model="zh-lm", text=MODELS["zh-lm"].example).json()
    out = body["output"]
    assert out["loop"] is None and find_loop(list(out["continuation"])) is None
    assert len(out["continuation"]) == CONTINUATION and out["settings"]["top_p"] == SAMPLING["top_p"]
    assert not any("loops" in w for w in body["warnings"])


def test_settings_give_the_librarys_text(client: TestClient) -> None:
    settings = {"temperature": 0.6, "top_k": 12, "top_p": 0.8, "seed": 4}
    out = run(client, model="zh-lm", text="经济", sampling=settings).json()["output"]
    lm = load_language_model("zh-lm")
    want = lm.generate("经济", max_tokens=CONTINUATION, **settings)
    assert out["continuation"] == "".join(lm.characters()[i] for i in want.ids)
    assert out["settings"] == {**SAMPLING, "greedy": False, **settings}


def test_a_greedy_loop_is_said(client: TestClient) -> None:
    sampling = {"greedy": True, "repetition_penalty": 1, "no_repeat_ngram": 0}
    body = run(client, model="zh-lm", text="北京", sampling=sampling).json()
    assert body["output"]["loop"] is not None and "greedy decoding" in body["output"]["loop"]
    assert any("the generation loops" in w for w in body["warnings"])
    assert find_loop(list(body["output"]["continuation"])) is not None


@pytest.mark.parametrize(("model", "sampling", "message"), [
    ("zh-lm", {"top_p": 0}, '"top_p" must be in'),
    ("zh-lm", {"temperature": "hot"}, '"temperature" must be'),
    ("zh-lm", {"seed": -1}, '"seed" must be an integer'),
    ("zh-lm", {"beam": 3}, 'unknown "sampling" field'),
    ("zh-lm", [0.8], '"sampling" must be an object'),
    ("zh-sentiment", {"top_p": 0.9}, "leave it out"),
])
def test_bad_settings_are_refused(client: TestClient, model: str, sampling: Any, message: str) -> None:
    r = run(client, model=model, text="中国", sampling=sampling)
    assert r.status_code == 422 and message in r.json()["error"], r.text
