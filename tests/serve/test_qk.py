"""POST /api/qk through the ASGI test client: one head's attention score at one cell (query row, key column) split
into query-source x key-source terms, the numbers attnlab.circuits.qk_attribution gives, and every bad input a
one-line 4xx: a kind that cannot (by its ``can``), a head or position out of range, a causal key after its query, a
text or a run over the limits."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from attnlab import circuits as C
from attnlab.kinds import Budget
from attnlab.serve import Lab, Limits, catalogue, create_app


def cell(model: str, text: str, layer: int, head: int, query: int, key: int) -> dict[str, Any]:
    return {"model": model, "text": text, "layer": layer, "head": head, "query": query, "key": key}


@pytest.mark.parametrize(("model", "text", "at"), [
    ("zh-lm", "中国人民，中国人", (3, 0, 6, 1)),
    ("induction-2l", "abcXYZ+/abcX", (1, 0, 10, 3)),  # the induction head: the query 'c' reads the key after its twin
    ("zh-sentiment", "这本书写得很好", (1, 2, 0, 5)),  # an encoder: a key after the query is read too
])
def test_the_answer_is_qk_attribution(client: TestClient, model: str, text: str, at: tuple[int, int, int, int]) -> None:
    layer, head, query, key = at
    r = client.post("/api/qk", json=cell(model, text, *at))
    assert r.status_code == 200, r.text
    answer = r.json()
    tm = C.load_text_model(model)
    ids, tokens = tm.encode(text, "given")
    want = C.qk_attribution(tm.model, ids, layer, head, query, key).to_json()
    assert set(want) < set(answer)
    for name in ("layer", "head", "query", "key", "sources", "positions", "norm"):
        assert answer[name] == want[name], name
    assert answer["score"] == pytest.approx(want["score"], rel=1e-6)
    assert answer["table"] == [pytest.approx(row, rel=1e-6, abs=1e-9) for row in want["table"]]
    assert answer["query_side"] == pytest.approx(want["query_side"], rel=1e-6, abs=1e-9)
    assert answer["key_side"] == pytest.approx(want["key_side"], rel=1e-6, abs=1e-9)
    assert [(t["query_source"], t["key_source"]) for t in answer["top"]] == [
        (t["query_source"], t["key_source"]) for t in want["top"]]
    assert answer["tokens"] == tokens and (answer["query_token"], answer["key_token"]) == (tokens[query], tokens[key])
    total = sum(map(sum, answer["table"])) + answer["mask_bias"]
    assert total == pytest.approx(answer["score"], rel=1e-4, abs=1e-4)  # the terms sum to the score
    assert answer["model"] == model and answer["server_ms"] > 0
    if model == "induction-2l":  # the key side's previous-token heads carry it (docs/circuits.md)
        assert answer["key_side"]["0.0"] + answer["key_side"]["0.2"] > answer["score"] / 2


def test_the_capability_is_data(client: TestClient) -> None:
    """Which models can is what GET /api/models says (the page reads it), and the route asks the same kinds."""
    can = {m["name"]: "qk" in m["can"] for m in client.get("/api/models").json()["models"]}
    assert can["zh-lm"] and can["induction-2l"] and can["zh-sentiment"]
    assert not can["minilm"] and not can["dates-zh"]


@pytest.mark.parametrize(("body", "status", "message"), [
    (cell("zh-lm", "中国人民", 9, 0, 1, 0), 422, "head 9.0 does not exist; zh-lm has layers 0-3 and heads 0-3"),
    (cell("zh-lm", "中国人民", 0, 4, 1, 0), 422, "head 0.4 does not exist"),
    (cell("zh-lm", "中国人民", -1, 0, 1, 0), 422, "head -1.0 does not exist"),
    (cell("zh-lm", "中国人民", 0, 0, 4, 0), 422, '"query" 4 is not a position of the text: its 4 tokens are 0-3'),
    (cell("zh-lm", "中国人民", 0, 0, 1, 9), 422, '"key" 9 is not a position of the text'),
    (cell("zh-lm", "中国人民", 0, 0, 1, 2), 422, "query 1 does not see key 2: zh-lm is causal"),
    (cell("zh-sentiment", "这本书", 0, 0, 0, 4), 422, '"key" 4 is not a position of the text: its 4 tokens are 0-3'),
    (cell("minilm", "The cat", 0, 0, 1, 0), 422, "minilm is an encoder; QK attribution"),
    (cell("dates-zh", "March 5", 0, 0, 1, 0), 422, "dates-zh is a translator; QK attribution"),
    (cell("nothing", "x", 0, 0, 0, 0), 404, "unknown model"),
    (cell("zh-lm", "", 0, 0, 0, 0), 422, '"text" is empty'),
    (cell("zh-lm", "中" * 200, 0, 0, 1, 0), 413, "reads at most 128 in one pass"),
    ({"model": "zh-lm", "text": "中国", "layer": 0, "head": 0, "query": 1}, 422,
     '"layer", "head", "query" and "key" are needed'),
    ({**cell("zh-lm", "中国", 0, 0, 1, 0), "query": "1"}, 422, '"query" must be an integer (a query position'),
    ({**cell("zh-lm", "中国", 0, 0, 1, 0), "key": 1.5}, 422, '"key" must be an integer'),
    ({**cell("zh-lm", "中国", 0, 0, 1, 0), "key": 10**18}, 422, f'"key" {10**18} is not a position'),
    ({**cell("zh-lm", "中国", 0, 0, 1, 0), "compare": "中"}, 422, '"compare" is not read here'),
    ({**cell("zh-lm", "中国", 0, 0, 1, 0), "sampling": {"seed": 1}}, 422, '"sampling" is not read here'),
    ({**cell("zh-lm", "中国", 0, 0, 1, 0), "what": "trace"}, 422, '"what" is not read here'),
    ({**cell("zh-lm", "中国", 0, 0, 1, 0), "extra": 1}, 422, "unknown field(s) 'extra'; the fields are model, text"),
])
def test_bad_input(client: TestClient, body: dict[str, Any], status: int, message: str) -> None:
    r = client.post("/api/qk", json=body)
    assert r.status_code == status and message in r.json()["error"], r.text
    assert "\n" not in r.json()["error"]
    assert client.get("/healthz").status_code == 200  # still serving


def test_a_cell_is_no_field_of_the_other_routes(client: TestClient) -> None:
    for route in ("/api/run", "/api/ablate", "/api/attribute", "/api/download"):
        r = client.post(route, json={"model": "zh-lm", "text": "中国", "layer": 0, "head": 0, "query": 1})
        assert r.status_code == 422 and "unknown field(s) 'query'" in r.json()["error"], (route, r.text)


def test_a_run_over_the_budget_is_refused_before_it_runs() -> None:
    """What QK attribution keeps (every source's output at every position) is bounded by the lab's Budget: 413."""
    lab = Lab(catalogue(), budget=Budget(kept=10_000, how="shorten the text"))
    client = TestClient(create_app(lab, Limits(), hosts=["testserver"]))
    r = client.post("/api/qk", json=cell("zh-lm", "中国人民，中国人民", 3, 0, 6, 1))
    assert r.status_code == 413, r.text
    error = r.json()["error"]
    assert "QK attribution on 9 tokens keeps every head's and MLP's output" in error and "shorten the text" in error
