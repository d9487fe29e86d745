"""POST /api/ablate through the ASGI test client: a head of the bundled language model and classifier ablated, the
numbers the library gives, and every bad input a one-line 4xx."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from attnlab import circuits as C


@pytest.mark.parametrize(("model", "text"), [("zh-lm", "中国人民中国"), ("zh-sentiment", "这本书写得很好")])
def test_a_head_ablated(client: TestClient, model: str, text: str) -> None:
    r = client.post("/api/ablate", json={"model": model, "text": text, "layer": 1, "head": 2})
    assert r.status_code == 200, r.text
    answer = r.json()
    assert (answer["model"], answer["layer"], answer["head"]) == (model, 1, 2)
    expect = C.ablate_text(C.load_text_model(model), text, 1, 2)
    assert answer["outputs"] == expect["outputs"] and answer["total_variation"] == expect["total_variation"]
    assert 0 < answer["total_variation"] <= 1
    if model == "zh-sentiment":
        assert {o["token"] for o in answer["outputs"]} == {"pos", "neg"}
        assert sum(o["before"] for o in answer["outputs"]) == pytest.approx(1, abs=1e-3)
    else:
        assert len(answer["outputs"]) == 5
        before = [o["before"] for o in answer["outputs"]]
        assert before == sorted(before, reverse=True)


@pytest.mark.parametrize(("body", "status", "message"), [
    ({"model": "zh-lm", "text": "中国", "layer": 9, "head": 0}, 422, "head 9.0 does not exist"),
    ({"model": "zh-lm", "text": "中国", "layer": 1}, 422, '"layer" and "head" are needed'),
    ({"model": "zh-lm", "text": "中国", "layer": "1", "head": 0}, 422, '"layer" must be an integer'),
    ({"model": "dates-zh", "text": "March 5", "layer": 0, "head": 0}, 422, "dates-zh is a translator; ablating"),
    ({"model": "minilm", "text": "The cat", "layer": 0, "head": 0}, 422, "minilm is an encoder; ablating"),
    ({"model": "nothing", "text": "x", "layer": 0, "head": 0}, 404, "unknown model"),
    ({"model": "zh-lm", "text": "", "layer": 0, "head": 0}, 422, '"text" is empty'),
])
def test_bad_input(client: TestClient, body: dict[str, object], status: int, message: str) -> None:
    r = client.post("/api/ablate", json=body)
    assert r.status_code == status and message in r.json()["error"], r.text
    assert client.get("/healthz").status_code == 200  # still serving
