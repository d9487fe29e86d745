"""Schemathesis against the lab's ASGI app in process (its ASGI transport; no socket): requests generated from
FastAPI's own OpenAPI schema of the app (``app.openapi()``: the bodies and answers of serve/_schema.py), valid and
invalid, for every operation. Each answer must be no 5xx, have a status, a content type and a body that the schema
declares. The number of cases each operation ran is printed (``pytest -s``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from attnlab.serve import Lab, Limits, catalogue, create_app

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
# examples per operation and mode: the POSTs run a model on each valid case (a fraction of a second each here)
EXAMPLES = {"GET": 8, "POST": 30}
RAW_EXAMPLES = 500  # raw bodies per route (most are refused at once; a valid one runs a model on at most 400 chars)


@pytest.fixture(scope="module")
def schema() -> Any:
    # every bundled model stays loaded (no reload between cases); texts up to 400 characters; no timeout in the way
    app = create_app(Lab(catalogue(), cache=8), Limits(max_chars=400, timeout_s=600), hosts=["testserver"])
    loaded = schemathesis.openapi.from_dict(app.openapi())
    loaded.app = app  # requests go to the app in process, through Schemathesis' ASGI transport
    return loaded


def _cases() -> list[tuple[str, str, GenerationMode]]:
    """Every operation with valid input, and those that take input (the POSTs' bodies) with invalid input too."""
    app = create_app(Lab(catalogue(), cache=8), Limits(max_chars=400), hosts=["testserver"])
    operations = [(method.upper(), path) for path, item in app.openapi()["paths"].items() for method in item]
    return [(m, p, mode) for m, p in operations
            for mode in (GenerationMode.POSITIVE, *([GenerationMode.NEGATIVE] if m == "POST" else []))]


CASES = _cases()


@pytest.mark.slow
@pytest.mark.parametrize(("method", "path", "mode"), CASES, ids=[f"{m} {p} {mode.value}" for m, p, mode in CASES])
def test_every_answer_is_declared_and_none_is_a_server_error(schema: Any, method: str, path: str,
                                                              mode: GenerationMode) -> None:
    operation = schema[path][method]
    statuses: dict[int, int] = {}

    @settings(max_examples=EXAMPLES[method], deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy(generation_mode=mode))
    def fuzz(case: Any) -> None:
        response = case.call_and_validate(checks=CHECKS)
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1

    fuzz()
    print(f"schemathesis {method} {path} {mode.value}: {sum(statuses.values())} cases, statuses "
          f"{dict(sorted(statuses.items()))}")
    assert sum(statuses.values()) > 0


# ----- raw bodies that look where bugs are: what the schema-driven generator never writes ---------------------------
HUGE = "HUGE_INTEGER"  # replaced in the raw body by an integer of 5,000 digits (Python converts at most 4,300)
DEEP = "DEEP_NESTING"  # replaced by a value nested thousands of levels deep
nasty_text = st.text(st.characters(categories=("L", "N", "P", "S", "Z", "Cc", "Cf", "Cs", "Co")), max_size=60)
nasty_number = st.one_of(st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True),
                         st.sampled_from([1e-300, 1e308, -0.0, 5e-324, HUGE]))
nasty = st.one_of(nasty_text, nasty_number, st.just(DEEP), st.booleans(), st.none(),
                  st.lists(nasty_text, max_size=3), st.dictionaries(nasty_text, nasty_number, max_size=3))
ROUTES = ("/api/run", "/api/download", "/api/ablate", "/api/attribute", "/api/qk")
MODELS = ("minilm", "zh-sentiment", "dates-zh", "zh-lm", "induction-2l")


@st.composite
def raw_bodies(draw: Any) -> bytes:
    named = st.sampled_from(MODELS)  # mostly a model the lab offers, so that the model runs on what follows
    texts = st.one_of(nasty_text, st.sampled_from(["中国", "The cat sat.", "好" * 400]))
    body: dict[str, Any] = {"model": draw(named) if draw(st.integers(0, 9)) else draw(nasty),
                            "text": draw(texts) if draw(st.integers(0, 3)) else draw(nasty)}
    if route := draw(st.sampled_from(["", "layer-head", "what", "cell"])):  # what the routes need, often in range
        body |= {"layer": draw(st.integers(-1, 3)), "head": draw(st.integers(-1, 3))} if route != "what" else {
            "what": draw(st.sampled_from(["trace", "viewer"]))}
        if route == "cell":  # /api/qk's attention cell: a query row and a key column
            body |= {"query": draw(st.integers(-1, 8)), "key": draw(st.integers(-1, 8))}
    for field in draw(st.lists(st.sampled_from(["layer", "head", "query", "key", "sampling", "compare", "what",
                                                "extra"]), max_size=2, unique=True)):
        body[field] = draw(st.one_of(nasty, st.dictionaries(st.sampled_from(
            ["temperature", "top_k", "top_p", "seed", "greedy", "repetition_penalty", "no_repeat_ngram"]),
            nasty_number, max_size=3)) if field == "sampling" else nasty)
    raw = json.dumps(body, ensure_ascii=True, allow_nan=True)  # a lone surrogate is written as its \ud800 escape
    depth = draw(st.sampled_from([9, 100, 10_000]))
    raw = raw.replace(f'"{HUGE}"', "7" * 5000).replace(f'"{DEEP}"', "[" * depth + "]" * depth)
    return raw.encode("ascii")


@pytest.mark.slow
@pytest.mark.parametrize("route", ROUTES)
def test_raw_bodies_with_surrogates_huge_numbers_and_deep_nesting_are_never_a_server_error(route: str) -> None:
    from fastapi.testclient import TestClient

    client = TestClient(create_app(Lab(catalogue(), cache=8), Limits(max_chars=400, timeout_s=600),
                                   hosts=["testserver"]))
    statuses: dict[int, int] = {}

    @settings(max_examples=RAW_EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(raw=raw_bodies())
    def fuzz(raw: bytes) -> None:
        response = client.post(route, content=raw, headers={"Content-Type": "application/json"})
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        assert response.status_code < 500, (raw[:300], response.text[:300])
        if response.status_code >= 400:
            error = response.json()["error"]
            assert "\n" not in error and len(error) < 600, error

    fuzz()
    print(f"raw bodies {route}: {sum(statuses.values())} requests, statuses {dict(sorted(statuses.items()))}")
    assert sum(statuses.values()) >= RAW_EXAMPLES
