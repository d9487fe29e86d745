"""The ASGI app: the page, ``GET /api/models``, ``POST /api/run``, ``/api/ablate``, ``/api/attribute``, ``/api/qk``,
``/api/download``, ``GET /healthz``.

Every limit is explicit (:class:`Limits`): text length (413), the model's own token limit (413), runs waiting or
running at once (then 503 with Retry-After), the time a request may wait and run (504).  Runs go one at a time, in
order of arrival, to one worker thread (:class:`~attnlab.serve._queue.RunQueue`: a model call uses every core it is
given); a request whose client left while it waited is skipped, and one whose client leaves mid-run costs that run
only.  A download of the run the lab has just made reuses it (:meth:`Lab.traces`) instead of running the model
again.  Requests whose Host is not one of the server's own names or whose Origin is another site are refused (DNS
rebinding, cross-site requests).  Errors are JSON, ``{"error": ONE LINE}``, with a 4xx status for bad input and 500
naming the cause when a model fails; the next request is served as usual.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from .. import __version__
from ..errors import AttnLabError, ConfigError, TooLongError
from . import _schema as schema
from ._lab import Lab, UnknownModelError
from ._page import csp, page
from ._queue import ApiError, RunQueue

__all__ = ["Limits", "create_app"]


@dataclass(frozen=True)
class Limits:
    """What one server takes at most; each is an option of ``attnlab serve``."""

    max_chars: int = 10_000  # characters of one text (each model's token limit applies too: MiniLM's 512 tokens of
    # English are about 2,500 characters)
    queue: int = 8  # runs waiting or running at once; beyond, 503 with Retry-After
    timeout_s: float = 30.0  # seconds a request may wait and run; beyond, 504
    max_body: int = 256_000  # bytes of a request body (two texts at the limit, escaped as JSON)

    def __post_init__(self) -> None:
        for name in ("max_chars", "queue", "max_body"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{_OPTIONS[name]} must be 1 or more, got {value!r}")
        if isinstance(self.timeout_s, bool) or not (isinstance(self.timeout_s, int | float)
                                                     and 0 < self.timeout_s < math.inf):
            raise ConfigError(f"{_OPTIONS['timeout_s']} must be a number of seconds > 0, got {self.timeout_s!r}")


# how `attnlab serve` and Limits name each limit, for the one message that serves both
_OPTIONS = {"max_chars": "--max-chars (Limits.max_chars)", "queue": "--queue (Limits.queue)",
            "max_body": "Limits.max_body", "timeout_s": "--timeout (Limits.timeout_s)"}


# what each request field is, for the one-line messages of a bad request
FIELDS = {"model": "a model name from GET /api/models", "text": "the text to run the model on",
          "compare": "a second text to compare with", "layer": "a layer index (from 0; negative from the end)",
          "head": "a head index (from 0)", "what": '"trace" or "viewer"',
          "sampling": "a language model's settings: temperature, top_k, top_p, repetition_penalty, no_repeat_ngram, "
                      "greedy, seed"}
# the fields of POST /api/qk alone: the attention cell, a query row and a key column of the head's heatmap
CELL = {"query": "a query position (from 0: the row of the attention cell)",
        "key": "a key position (from 0: the column of the attention cell)"}
SECURITY_HEADERS = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
                    "X-Frame-Options": "DENY", "Cache-Control": "no-store"}


def create_app(lab: Lab, limits: Limits | None = None, *, hosts: Sequence[str] = ("127.0.0.1", "localhost"),
               port: int | None = None) -> FastAPI:
    """The app over ``lab``.  ``hosts`` are the names a request's Host may give (with ``port``, when known; the
    ASGI test client's ``testserver`` is one more only when the caller adds it)."""
    limits = limits or Limits()
    allowed_hosts = _allowed(hosts, port)
    app = FastAPI(title="attnlab serve", version=__version__, docs_url=None, redoc_url=None, openapi_url=None)
    queue = RunQueue(limits.queue, limits.timeout_s)
    app.state.lab, app.state.limits, app.state.queue = lab, limits, queue
    names = [m["name"] for m in lab.models()]  # for the schema of the request bodies (app.openapi())

    app.add_middleware(Guard, hosts=allowed_hosts)

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> Response:
        return _error(exc.status, exc.message, exc.headers)

    @app.exception_handler(404)
    async def not_found(request: Request, exc: Exception) -> Response:
        return _error(404, f"no such page {request.url.path[:80]!r}; the API is GET /api/models, POST /api/run, "
                      f"POST /api/ablate, POST /api/attribute, POST /api/qk, POST /api/download and GET /healthz")

    @app.exception_handler(405)
    async def wrong_method(request: Request, exc: Exception) -> Response:
        allow = (getattr(exc, "headers", None) or {}).get("Allow")  # Starlette's router names the path's methods
        methods = f"; it takes {allow}" if allow else ""
        return _error(405, f"{request.method} is not allowed on {request.url.path[:80]}{methods}; the guide's Live "
                           f"lab page describes the API",
                      {"Allow": allow} if allow else None)

    @app.get("/", response_class=HTMLResponse, responses=schema.page_answers())
    async def index() -> Response:
        return HTMLResponse(page(), headers={"Content-Security-Policy": csp()})

    @app.get("/healthz", responses=schema.health_answers())
    async def healthz() -> dict[str, Any]:
        return {"status": "ok", "version": __version__, **queue.counts(), "loaded": lab.cached}

    @app.get("/api/models", responses=schema.models_answers())
    async def models() -> dict[str, Any]:
        return {"models": lab.models(), "limits": {"max_chars": limits.max_chars, "queue": limits.queue,
                                                   "timeout_s": limits.timeout_s}}

    @app.post("/api/run", openapi_extra=schema.run_body(names, limits.max_chars), responses=schema.run_answers())
    async def run(request: Request) -> Response:
        body = await _body(request, limits)
        model = lab.entry(body.get("model")).name  # an unknown model is refused before it queues
        text, compare = _text(body, "text", limits), _text(body, "compare", limits)
        layer, head = _index(body, "layer"), _index(body, "head")
        sampling = body.get("sampling")
        result = await queue.call(request, lambda: lab.run(model, text, compare=compare, layer=layer, head=head,
                                                     sampling=sampling))
        return JSONResponse(result)

    @app.post("/api/ablate", openapi_extra=schema.ablate_body(names, limits.max_chars),
              responses=schema.ablate_answers())
    async def ablate(request: Request) -> Response:
        """A language model's or classifier's output before and after zero-ablating one head."""
        body = await _body(request, limits)
        model = lab.entry(body.get("model")).name
        text = _text(body, "text", limits)
        layer, head = _index(body, "layer"), _index(body, "head")
        if layer is None or head is None:
            raise ApiError(422, '"layer" and "head" are needed: the head to ablate, e.g. {"layer": 1, "head": 0}')
        return JSONResponse(await queue.call(request, lambda: lab.ablate(model, text, layer, head)))

    @app.post("/api/attribute", openapi_extra=schema.attribute_body(names, limits.max_chars),
              responses=schema.attribute_answers())
    async def attribute(request: Request) -> Response:
        """Which tokens each output token of a language model's or translator's run used (ALTI-Logit, gradient x
        input)."""
        body = await _body(request, limits)
        model = lab.entry(body.get("model")).name
        text = _text(body, "text", limits)
        _not_read(body, ("compare", "layer", "head"), "attribution reads one text's run through every layer")
        sampling = body.get("sampling")
        return JSONResponse(await queue.call(request, lambda: lab.attribute(model, text, sampling)))

    @app.post("/api/qk", openapi_extra=schema.qk_body(names, limits.max_chars), responses=schema.qk_answers())
    async def qk(request: Request) -> Response:
        """Why one head looks from a query token to a key token of one text: its score split into query-side x
        key-side source terms (QK attribution)."""
        body = await _body(request, limits, CELL)
        model = lab.entry(body.get("model")).name
        text = _text(body, "text", limits)
        _not_read(body, ("compare", "sampling", "what"), "QK attribution reads one text in one pass")
        cell = {field: _index(body, field) for field in ("layer", "head", "query", "key")}
        if any(v is None for v in cell.values()):
            raise ApiError(422, '"layer", "head", "query" and "key" are needed: the head and the attention cell (query '
                                'row, key column), e.g. {"layer": 1, "head": 0, "query": 5, "key": 2}')
        layer, head, query, key = (int(v) for v in cell.values() if v is not None)
        return JSONResponse(await queue.call(request, lambda: lab.qk(model, text, layer, head, query, key)))

    @app.post("/api/download", openapi_extra=schema.download_body(names, limits.max_chars),
              responses=schema.download_answers())
    async def download(request: Request) -> Response:
        """The trace file (``"what": "trace"``) or a standalone viewer.html (``"viewer"``) of a run."""
        body = await _body(request, limits)
        model = lab.entry(body.get("model")).name
        text, compare = _text(body, "text", limits), _text(body, "compare", limits)
        what = body.get("what")
        if what not in ("trace", "viewer"):
            raise ApiError(422, f'"what" must be "trace" or "viewer", got {str(what)[:40]!r}')
        if what == "trace" and compare is not None:
            raise ApiError(422, 'a trace file holds one text: download "trace" without "compare"')
        sampling = body.get("sampling")
        data = await queue.call(request, lambda: _file(lab, model, text, compare, str(what), sampling))
        name, media = ("trace.attn", "application/octet-stream") if what == "trace" else ("viewer.html", "text/html")
        return Response(data, media_type=media, headers={"Content-Disposition": f'attachment; filename="{name}"'})

    @app.exception_handler(AttnLabError)
    async def bad_input(request: Request, exc: AttnLabError) -> Response:
        status = 404 if isinstance(exc, UnknownModelError) else 413 if isinstance(exc, TooLongError) else 422
        return _error(status, str(exc))

    @app.exception_handler(Exception)
    async def failed(request: Request, exc: Exception) -> Response:
        return _error(500, f"the model failed: {type(exc).__name__}: {exc}")

    return app


class Guard:
    """ASGI middleware: refuses a request whose Host is not one of ``hosts`` (421: DNS rebinding) or whose Origin is
    another site (403), and adds the security headers to every answer.  Plain ASGI, so that a handler still sees
    its client's disconnect."""

    def __init__(self, app: Any, hosts: set[str]) -> None:
        self.app, self.hosts, self.origins = app, hosts, {f"http://{h}" for h in hosts}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host, origin = headers.get("host", ""), headers.get("origin")
        refusal = None
        if host.lower() not in self.hosts:
            refusal = _error(421, f"the Host header {host[:80]!r} is not this server's; open "
                             f"http://{min(self.hosts)}/ (requests through another name are refused, against DNS "
                             f"rebinding)")
        elif origin is not None and origin.lower() not in self.origins:
            refusal = _error(403, f"cross-site request from origin {origin[:80]!r} refused; use the page this server "
                             f"serves")
        extra = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in SECURITY_HEADERS.items()]

        async def send_with_headers(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        if refusal is not None:
            await refusal(scope, receive, send_with_headers)
        else:
            await self.app(scope, receive, send_with_headers)


def _allowed(hosts: Sequence[str], port: int | None) -> set[str]:
    names = set()
    for h in hosts:
        h = h.lower()
        h = f"[{h}]" if ":" in h and not h.startswith("[") else h  # an IPv6 address, as a Host header writes it
        names.add(h)
        if port is not None:
            names.add(f"{h}:{port}")
    return names


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": " ".join(message.split())}, status_code=status, headers=headers)


def _not_read(body: dict[str, Any], fields: tuple[str, ...], why: str) -> None:
    """A 422 naming the first of ``fields`` the body gives that this route does not read, and why."""
    for field in fields:
        if body.get(field) is not None:
            raise ApiError(422, f'"{field}" is not read here: {why}; leave it out')


async def _body(request: Request, limits: Limits, own: dict[str, str] | None = None) -> dict[str, Any]:
    """The request's JSON object; a wrong content type (415), too large a body (413), bad JSON (400) or a field
    that is neither one of :data:`FIELDS` nor of the route's ``own`` (422) is refused."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise ApiError(415, f"the body must be JSON sent as Content-Type: application/json, got "
                       f"{kind[:60] or 'no content type'!r}")
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limits.max_body:
        raise ApiError(413, f"the request body is {declared} bytes; the limit is {limits.max_body}")
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > limits.max_body:
            raise ApiError(413, f"the request body is over {limits.max_body} bytes, the limit")
    try:
        body = json.loads(raw, parse_int=_parse_int)
    except RecursionError:  # the parser recursed once a level: nesting deeper than the stack
        raise ApiError(400, f"the body nests too deep to read; send a flat object such as {EXAMPLE}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ApiError(400, f"the body is not valid JSON ({exc}); send an object such as {EXAMPLE}") from None
    if not isinstance(body, dict):
        raise ApiError(400, f"the body must be a JSON object, got a JSON {type(body).__name__}")
    _check_values(body)
    fields = {**FIELDS, **(own or {})}
    unknown = sorted(set(body) - set(fields))
    if unknown:
        raise ApiError(422, f"unknown field(s) {', '.join(map(repr, unknown))[:120]}; the fields are "
                       f"{', '.join(fields)}")
    return body


EXAMPLE = '{"model": "minilm", "text": "The cat sat."}'
MAX_DEPTH = 8  # levels of a body's nesting: the fields are 2 deep ({"sampling": {"seed": 0}})
MAX_DIGITS = 19  # digits of an integer a body may hold: every index, count and seed is below 2**63 (19 digits)


class _HugeInt:
    """An integer of more than :data:`MAX_DIGITS` digits in a body, kept as its digits (never converted: Python
    refuses to convert more than 4,300) until :func:`_check_values` refuses it naming its field."""

    def __init__(self, digits: str) -> None:
        self.digits = digits


def _parse_int(digits: str) -> int | _HugeInt:
    return _HugeInt(digits) if len(digits.lstrip("-")) > MAX_DIGITS else int(digits)


def _check_values(body: dict[str, Any]) -> None:
    """Refuse what no field takes and a model could not survive, naming where it is: a string with a lone surrogate
    (a ``\\ud800`` escape without its pair: not Unicode, no UTF-8 encodes it; 400), nesting deeper than
    :data:`MAX_DEPTH` (400) and an integer of more than :data:`MAX_DIGITS` digits (422).  Iterative: a body the
    parser could read (less deep than the stack) is walked without recursion."""
    stack: list[tuple[Any, str, int]] = [(body, "", 0)]
    while stack:
        value, where, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ApiError(400, f"the body nests deeper than {MAX_DEPTH} levels (at {where}); its fields are at "
                           f"most 2 deep, e.g. {{\"sampling\": {{\"seed\": 0}}}}")
        if isinstance(value, str):
            _check_unicode(value, f"the {where}" if where else "a string")
        elif isinstance(value, _HugeInt):
            shown = value.digits if len(value.digits) <= 24 else f"{value.digits[:12]}...{value.digits[-6:]}"
            raise ApiError(422, f"{where} is an integer of {len(value.digits.lstrip('-'))} digits ({shown}); no field "
                           f"takes more than {MAX_DIGITS} digits: send a number in range (e.g. 0)")
        elif isinstance(value, dict):
            for key, item in reversed(value.items()):
                _check_unicode(key, f"a field name in {where}" if where else "a field name")
                named = f'"{key[:40]}"' if not where else f'{where}."{key[:40]}"'
                stack.append((item, named, depth + 1))
        elif isinstance(value, list):
            stack.extend((item, f"{where}[{i}]", depth + 1) for i, item in reversed(list(enumerate(value))))


def _check_unicode(text: str, what: str) -> None:
    """A 400 when ``text`` holds a lone surrogate: where (1-based, as the CLI says it) and how to fix it."""
    at = next((i for i, c in enumerate(text) if "\ud800" <= c <= "\udfff"), None)
    if at is not None:
        raise ApiError(400, f"{what} holds a lone surrogate \\u{ord(text[at]):04x} at character {at + 1}, which is not "
                       f"a character (no UTF-8 encodes it); send valid Unicode (a \\ud800-\\udbff escape must be "
                       f"followed by a \\udc00-\\udfff one)")


def _text(body: dict[str, Any], field: str, limits: Limits) -> Any:
    """A text field, checked for type, emptiness and length (``compare`` may be absent: None)."""
    value = body.get(field)
    if value is None and field == "compare":
        return None
    if not isinstance(value, str):
        got = "nothing" if value is None else f"a JSON {type(value).__name__}"
        raise ApiError(422, f'"{field}" must be a string ({FIELDS[field]}), got {got}')
    if not value.strip():
        raise ApiError(422, f'"{field}" is empty; give some text')
    if len(value) > limits.max_chars:
        raise ApiError(413, f'"{field}" is {len(value)} characters long; the limit is {limits.max_chars} (the server '
                       f"option --max-chars)")
    return value


def _index(body: dict[str, Any], field: str) -> int | None:
    value = body.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        said = {**FIELDS, **CELL}[field]
        raise ApiError(422, f'"{field}" must be an integer ({said}), got {json.dumps(value)[:40]}')
    return value


def _file(lab: Lab, model: str, text: str, compare: str | None, what: str, sampling: Any = None) -> bytes:
    """The bytes of a run's trace file or standalone viewer (the same run as /api/run, written to a temp folder)."""
    from ..viz.html import to_html

    traces = lab.traces(model, text, compare, sampling)
    if what == "viewer":
        return to_html(traces if len(traces) == 2 else traces[0]).encode("utf-8")
    with tempfile.TemporaryDirectory(prefix="attnlab-serve-") as tmp:
        path = Path(tmp) / "trace.attn"
        traces[0].save(path)
        return path.read_bytes()
