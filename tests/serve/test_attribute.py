"""POST /api/attribute through the ASGI test client: a language model's generated characters and a translator's
output tokens attributed over what they read, equal to the library's numbers for the same run; every bad input a
one-line 4xx."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient

from attnlab import Model
from attnlab.analysis import attribute_generation, attribute_translation


def cells(matrix: np.ndarray) -> list[list[float | None]]:
    return [[None if np.isnan(x) else round(float(x), 5) for x in row] for row in matrix]


def test_the_language_models_run_is_attributed(client: TestClient) -> None:
    body = {"model": "zh-lm", "text": "中国", "sampling": {"seed": 3}}
    run = client.post("/api/run", json=body).json()
    r = client.post("/api/attribute", json=body)
    assert r.status_code == 200, r.text
    answer = r.json()
    continuation = run["output"]["continuation"]
    assert "".join(answer["rows"]) == continuation and answer["split"] == 2
    assert "".join(answer["columns"]) == ("中国" + continuation)[:-1]  # the last character is read by none
    lm = Model.load("zh-lm")
    outcome = lm.run("中国", max_tokens=len(continuation), **{**run["output"]["settings"]})
    assert outcome.output["continuation"] == continuation  # the same run, so the same attribution
    expect = attribute_generation(lm.loaded.model, outcome.result.prompt_ids, outcome.result.ids)
    assert answer["methods"] == {"ALTI-Logit": cells(expect.alti_logit), "gradient x input": cells(expect.grad_x_input)}
    assert answer["agreement"] == round(expect.agreement(), 4)


def test_a_translators_run_is_attributed(client: TestClient) -> None:
    body = {"model": "tutorial-en-zh", "text": "The cat sat on the mat."}
    answer = client.post("/api/attribute", json=body).json()
    translator = Model.load("tutorial-en-zh").loaded
    (t,) = translator.translate([body["text"]])
    assert answer["rows"] == t.target_tokens and answer["split"] == len(t.source_tokens)
    assert answer["columns"] == [*t.source_tokens, "[BOS]", *t.target_tokens[:-1]]
    expect = attribute_translation(translator.model, translator.encode([body["text"]])[0], t.ids)
    assert answer["methods"] == {"gradient x input": cells(np.hstack([expect.grad_source, expect.grad_target]))}
    assert answer["agreement"] is None  # a recurrent translator: one method


@pytest.mark.parametrize(("body", "status", "message"), [
    ({"model": "minilm", "text": "The cat"}, 422, "minilm is an encoder; attribution"),
    ({"model": "zh-sentiment", "text": "很好"}, 422, "zh-sentiment is a classifier; attribution"),
    ({"model": "zh-lm", "text": "中国", "compare": "美国"}, 422, '"compare" is not read here'),
    ({"model": "zh-lm", "text": "中国", "layer": 0}, 422, '"layer" is not read here'),
    ({"model": "zh-lm", "text": "中国", "sampling": {"top_p": 2}}, 422, '"top_p" must be in (0, 1], got 2'),
    ({"model": "dates-zh", "text": "x", "sampling": {"seed": 1}}, 422, '"sampling" sets how a language model'),
    ({"model": "nothing", "text": "x"}, 404, "unknown model"),
    ({"model": "zh-lm", "text": ""}, 422, '"text" is empty'),
])
def test_bad_input(client: TestClient, body: dict[str, object], status: int, message: str) -> None:
    r = client.post("/api/attribute", json=body)
    assert r.status_code == status and message in r.json()["error"], r.text
    assert client.get("/healthz").status_code == 200  # still serving
