"""What the API takes and answers, as OpenAPI for FastAPI's own schema (``app.openapi()``): the JSON body of
``POST /api/run``, ``/api/ablate``, ``/api/attribute``, ``/api/qk`` and ``/api/download`` (read by hand in
``_app.py``, so that each bad field is one line naming it, and described here so that the schema says it too), and
every answer of each route, errors included (``{"error": ONE LINE}``). tests/serve/test_fuzz.py generates requests
from this schema with Schemathesis and checks each answer against it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["ablate_answers", "ablate_body", "download_answers", "download_body", "health_answers", "models_answers",
           "page_answers", "qk_answers", "qk_body", "run_answers", "run_body"]

ERROR = {"type": "object", "required": ["error"], "additionalProperties": False,
         "properties": {"error": {"type": "string", "description": "one line: what was wrong and how to fix it"}}}
_STRINGS = {"type": "array", "items": {"type": "string"}}
_NUMBER_ROWS = {"type": "array", "items": {"type": "array", "items": {"type": "number"}}}


def _error(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": ERROR}}}


# the answers any route may give: the Guard's refusals (Host, Origin) and a failed model
_ALWAYS: dict[int | str, dict[str, Any]] = {
    "403": _error("a cross-site request (its Origin is another site)"),
    "421": _error("a Host that is not this server's (DNS rebinding)"),
}
# the answers of a route that reads a JSON body and runs a model
_BODY_ERRORS: dict[int | str, dict[str, Any]] = {
    "400": _error("the body is not JSON, not a JSON object, nests too deep, or holds a lone surrogate (not Unicode)"),
    "404": _error("an unknown model"),
    "413": _error("a body, a text or a tokenised text over its limit"),
    "415": _error("a body not sent as application/json"),
    "422": _error("a field of the wrong type, an empty text, an unknown field, a layer, head or position out of "
                  "range, a model that cannot do what the route asks, an integer of more than 19 digits"),
    "499": _error("the client left before its turn"),
    "500": _error("the model failed (the message names the cause)"),
    "503": _error("too many runs waiting (with Retry-After)"),
    "504": _error("the run took longer than the server's timeout"),
}


def _body(models: Sequence[str], max_chars: int, extra: dict[str, Any]) -> dict[str, Any]:
    text = {"type": "string", "minLength": 1, "maxLength": max_chars}
    index = {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    schema = {"type": "object", "required": ["model", "text", *extra], "additionalProperties": False,
              "properties": {"model": {"type": "string", "enum": list(models)}, "text": text,
                             "compare": {"anyOf": [text, {"type": "null"}]}, "layer": index,
                             "head": {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]},
                             "sampling": {"anyOf": [{"type": "object"}, {"type": "null"}],
                                          "description": "a language model's sampling settings (temperature, "
                                                         "top_k, top_p, repetition_penalty, no_repeat_ngram, greedy, "
                                                         "seed); another model refuses it"}, **extra}}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def run_body(models: Sequence[str], max_chars: int) -> dict[str, Any]:
    """The ``openapi_extra`` of ``POST /api/run``: the request body's schema."""
    return _body(models, max_chars, {})


def download_body(models: Sequence[str], max_chars: int) -> dict[str, Any]:
    """The ``openapi_extra`` of ``POST /api/download``."""
    return _body(models, max_chars, {"what": {"type": "string", "enum": ["trace", "viewer"]}})


_OUTPUT = {"anyOf": [{"type": "null"}, {"type": "object"}],
           "description": "the task's output (a classifier's label and probability, a translation, a continuation), "
                          "null for an encoder"}
_RUN = {
    "type": "object",
    "required": ["model", "kind", "text", "tokens", "output", "labels", "view", "viewer", "warnings", "server_ms"],
    "properties": {
        "model": {"type": "string"}, "kind": {"type": "string", "enum": ["encoder", "classifier", "translator", "lm"]},
        "text": {"type": "string"}, "tokens": _STRINGS, "output": _OUTPUT, "labels": {"type": "object"},
        "view": {"type": "object", "required": ["layer", "head", "n_layers", "n_heads"],
                 "properties": {k: {"type": "integer"} for k in ("layer", "head", "n_layers", "n_heads")}},
        "viewer": {"type": "object"}, "warnings": _STRINGS, "server_ms": {"type": "number"},
        "compare": {"type": "object", "required": ["text", "tokens", "output", "labels"],
                    "properties": {"text": {"type": "string"}, "tokens": _STRINGS, "output": _OUTPUT,
                                   "labels": {"type": "object"}}},
        "difference": {"type": "object", "required": ["kind", "tv", "reason"],
                       "properties": {"kind": {"type": "string"},
                                      "tv": {"anyOf": [_NUMBER_ROWS, {"type": "null"}]},
                                      "reason": {"anyOf": [{"type": "string"}, {"type": "null"}]}}},
    },
}


def run_answers() -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of ``POST /api/run``."""
    return {"200": {"description": "the run", "content": {"application/json": {"schema": _RUN}}},
            **_BODY_ERRORS, **_ALWAYS}


def ablate_body(models: Sequence[str], max_chars: int) -> dict[str, Any]:
    """The ``openapi_extra`` of ``POST /api/ablate``: a run's body with the head to ablate."""
    body = _body(models, max_chars, {"layer": {"type": "integer"}, "head": {"type": "integer", "minimum": 0}})
    for field in ("compare", "sampling"):  # an ablation reads one text, with the model's own distribution
        body["requestBody"]["content"]["application/json"]["schema"]["properties"].pop(field)
    return body


_ABLATED = {
    "type": "object",
    "required": ["model", "layer", "head", "tokens", "outputs", "output", "total_variation"],
    "properties": {
        "model": {"type": "string"}, "layer": {"type": "integer"}, "head": {"type": "integer"}, "tokens": _STRINGS,
        "outputs": {"type": "array", "items": {"type": "object", "required": ["token", "before", "after"],
                                               "properties": {"token": {"type": "string"},
                                                              "before": {"type": "number"},
                                                              "after": {"type": "number"}}}},
        "output": {"type": "string"}, "total_variation": {"type": "number"},
    },
}


def ablate_answers() -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of ``POST /api/ablate``: the output before and after zero-ablating one head."""
    return {"200": {"description": "the output before and after", "content": {"application/json":
                                                                              {"schema": _ABLATED}}},
            **_BODY_ERRORS, **_ALWAYS}


def attribute_body(models: Sequence[str], max_chars: int) -> dict[str, Any]:
    """The ``openapi_extra`` of ``POST /api/attribute``: a run's body for one text."""
    body = _body(models, max_chars, {})
    for field in ("compare", "layer", "head"):  # attribution reads one text's run, every layer
        body["requestBody"]["content"]["application/json"]["schema"]["properties"].pop(field)
    return body


_CELLS = {"type": "array", "items": {"type": "array", "items": {"anyOf": [{"type": "number"}, {"type": "null"}]}}}
_ATTRIBUTED = {
    "type": "object",
    "required": ["model", "kind", "rows", "columns", "split", "reading", "methods", "agreement", "server_ms"],
    "properties": {
        "model": {"type": "string"}, "kind": {"type": "string"}, "rows": _STRINGS, "columns": _STRINGS,
        "split": {"type": "integer"}, "reading": {"type": "string"},
        "methods": {"type": "object", "additionalProperties": _CELLS},
        "agreement": {"anyOf": [{"type": "number"}, {"type": "null"}]}, "server_ms": {"type": "number"},
    },
}


def attribute_answers() -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of ``POST /api/attribute``: each output token's signed scores over what it read."""
    return {"200": {"description": "the attribution", "content": {"application/json": {"schema": _ATTRIBUTED}}},
            **_BODY_ERRORS, **_ALWAYS}


def qk_body(models: Sequence[str], max_chars: int) -> dict[str, Any]:
    """The ``openapi_extra`` of ``POST /api/qk``: one text, a head and an attention cell (query row, key column)."""
    position = {"type": "integer", "minimum": 0}
    body = _body(models, max_chars, {"layer": position, "head": position, "query": position, "key": position})
    for field in ("compare", "sampling"):  # one text, read in one pass
        body["requestBody"]["content"]["application/json"]["schema"]["properties"].pop(field)
    return body


_SIDE = {"type": "object", "additionalProperties": {"type": "number"}}
_QK = {
    "type": "object",
    "required": ["model", "tokens", "query_token", "key_token", "layer", "head", "query", "key", "sources", "table",
                 "score", "scale", "mask_bias", "positions", "norm", "query_side", "key_side", "top", "server_ms"],
    "properties": {
        "model": {"type": "string"}, "tokens": _STRINGS, "query_token": {"type": "string"},
        "key_token": {"type": "string"}, "layer": {"type": "integer"}, "head": {"type": "integer"},
        "query": {"type": "integer"}, "key": {"type": "integer"}, "sources": _STRINGS, "table": _NUMBER_ROWS,
        "score": {"type": "number"}, "scale": {"type": "number"}, "mask_bias": {"type": "number"},
        "positions": {"type": "string"}, "norm": {"type": "string"}, "query_side": _SIDE, "key_side": _SIDE,
        "top": {"type": "array", "items": {"type": "object", "required": ["query_source", "key_source", "term"],
                                           "properties": {"query_source": {"type": "string"},
                                                          "key_source": {"type": "string"},
                                                          "term": {"type": "number"}}}},
        "server_ms": {"type": "number"},
    },
}


def qk_answers() -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of ``POST /api/qk``: the head's score at the cell, split into source terms."""
    return {"200": {"description": "the score's table of query-source x key-source terms",
                    "content": {"application/json": {"schema": _QK}}},
            **_BODY_ERRORS, **_ALWAYS}


def download_answers() -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of ``POST /api/download``: the trace file or the standalone viewer."""
    return {"200": {"description": "trace.attn or viewer.html, as an attachment",
                    "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
                                "text/html": {"schema": {"type": "string"}}}},
            **_BODY_ERRORS, **_ALWAYS}


def models_answers() -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of ``GET /api/models``."""
    model = {"type": "object", "required": ["name", "kind", "can", "languages", "example"],
             "properties": {"name": {"type": "string"}, "kind": {"type": "string"}, "can": _STRINGS,
                            "languages": _STRINGS,
                            "example": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}
    limits = {"type": "object", "required": ["max_chars", "queue", "timeout_s"],
              "properties": {"max_chars": {"type": "integer"}, "queue": {"type": "integer"},
                             "timeout_s": {"type": "number"}}}
    schema = {"type": "object", "required": ["models", "limits"],
              "properties": {"models": {"type": "array", "items": model}, "limits": limits}}
    return {"200": {"description": "the models offered and the server's limits",
                    "content": {"application/json": {"schema": schema}}}, **_ALWAYS}


def health_answers() -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of ``GET /healthz``."""
    schema = {"type": "object", "required": ["status", "version", "busy", "runs", "skipped", "cancelled", "loaded"],
              "properties": {"status": {"type": "string", "enum": ["ok"]}, "version": {"type": "string"},
                             "busy": {"type": "integer"}, "runs": {"type": "integer"},
                             "skipped": {"type": "integer"}, "cancelled": {"type": "integer"},
                             "loaded": _STRINGS}}
    return {"200": {"description": "the server is up", "content": {"application/json": {"schema": schema}}},
            **_ALWAYS}


def page_answers() -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of ``GET /``: the page."""
    return {"200": {"description": "the lab's page", "content": {"text/html": {"schema": {"type": "string"}}}},
            **_ALWAYS}
