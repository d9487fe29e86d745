"""The lab's language model samples as `attnlab generate` does (issue 31, section 5): its defaults do not loop on
its own example, the request's "sampling" settings give the library's text for the same settings, a greedy run that
loops says so (in the output and among the warnings), and bad settings are refused with one message (422)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from attnlab import MODELS
from attnlab.serve._lab import CONTINUATION
from attnlab.trained import SAMPLING, find_loop, load_language_model


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
    body = run(client, model="zh-lm", text="我们", sampling=sampling).json()  # 我们的一个新的一个新的…
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


def test_a_temperature_whose_logits_overflow_is_the_greedy_text(client: TestClient) -> None:
    """The hand-found {"temperature": 1e-300} gave 500: the T -> 0 limit, the likeliest character each time."""
    r = run(client, model="zh-lm", text="经济", sampling={"temperature": 1e-300})
    assert r.status_code == 200, r.text
    lm = load_language_model("zh-lm")
    greedy = lm.generate("经济", max_tokens=CONTINUATION, greedy=True)
    assert r.json()["output"]["continuation"] == "".join(lm.characters()[i] for i in greedy.ids)


@pytest.mark.parametrize(("sampling", "status", "message"), [
    (b'{"temperature": 1e-300}', 200, None),
    (b'{"temperature": 5e-324, "top_p": 5e-324}', 200, None),
    (b'{"temperature": 1e308, "repetition_penalty": 1e308}', 200, None),
    (b'{"top_k": 9223372036854775807, "seed": 9223372036854775807}', 200, None),
    (b'{"temperature": NaN}', 422, '"temperature" must be a number > 0, got nan'),
    (b'{"temperature": Infinity}', 422, '"temperature" must be a number > 0, got inf'),
    (b'{"temperature": 1e999}', 422, '"temperature" must be a number > 0, got inf'),
    (b'{"temperature": -1e308}', 422, '"temperature" must be a number > 0'),
    (b'{"top_p": NaN}', 422, '"top_p" must be in (0, 1], got nan'),
    (b'{"top_p": 1e308}', 422, '"top_p" must be in (0, 1]'),
    (b'{"top_k": -1}', 422, '"top_k" must be 0 (off) or a positive count'),
    (b'{"repetition_penalty": -Infinity}', 422, '"repetition_penalty" must be a number >= 1, got -inf'),
    (b'{"seed": 9223372036854775808}', 422, '"seed" must be an integer from 0'),
])
def test_every_number_works_or_is_refused_in_one_line(client: TestClient, sampling: bytes, status: int,
                                                      message: str | None) -> None:
    body = b'{"model": "zh-lm", "text": "\xe4\xb8\xad\xe5\x9b\xbd", "sampling": ' + sampling + b"}"  # 中国
    r = client.post("/api/run", content=body, headers={"content-type": "application/json"})
    assert r.status_code == status, r.text
    if message is not None:
        assert message in r.json()["error"] and "\n" not in r.json()["error"]
    else:
        assert len(r.json()["output"]["continuation"]) == CONTINUATION
