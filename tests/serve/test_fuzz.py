"""Schemathesis against the lab's ASGI app in process (its ASGI transport; no socket): requests generated from
FastAPI's own OpenAPI schema of the app (``app.openapi()``: the bodies and answers of serve/_schema.py), valid and
invalid, for every operation. Each answer must be no 5xx, have a status, a content type and a body that the schema
declares. The number of cases each operation ran is printed (``pytest -s``)."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
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
