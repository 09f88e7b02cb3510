"""The REST routes: health, the knowledge bases, the tools' specs and OpenAPI, and the tool calls.

A tool call goes through the backend an MCP call goes through (`LocalBackend.call`): the same
evidence session per client, result size limit, evidence dropping and error masking, so a
result is the structured content MCP returns. The arguments are validated here first only to
answer a mistake with 422 and pydantic's messages per field, which a script can act on.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Mount, Route

from evigraph.api.bodies import ApiError, ApiProblem, DbEntry, DbList, FieldError, Health, JsonBody, ToolList
from evigraph.api.catalog import Catalog
from evigraph.api.openapi import openapi_document
from evigraph.serving.backend import LocalBackend, Reply
from evigraph.serving.sessions import client_key
from evigraph.tools.definitions import Tool
from evigraph.tools.registry import load_tools
from evigraph.tools.toolkit import schema_hint

MAX_BODY = DEFAULT_MAX_REQUEST_BODY_SIZE
"""The MCP transport's limit, so a call that fits one surface fits the other."""
FAILURE_STATUS = {"tool": 400, "timeout": 504, "database": 503, "model provider": 502}
"""A failed call's status by its kind: the caller's to fix (400), or the server's (5xx)."""
API_PREFIX = "/api"
HEALTH = "/health"
WRITES_HINT = "start evigraph serve with --allow-writes (or --files-root DIR) to serve the write tools"


class Routes:
    """The route handlers over one catalog; `token` says whether the document shows bearer auth."""

    def __init__(self, catalog: Catalog, *, token: bool) -> None:
        self.catalog = catalog
        self.token = token

    def mount(self) -> Mount:
        """Everything under /api, so a wrong method or path there is the API's 405 or 404, not the UI's."""
        routes = [
            Route(HEALTH, self.health, methods=["GET"]),
            Route("/dbs", self.dbs, methods=["GET"]),
            Route("/tools", self.tools, methods=["GET"]),
            Route("/openapi.json", self.openapi, methods=["GET"]),
            Route("/tools/{name}", self.call, methods=["POST"]),
        ]
        return Mount(API_PREFIX, routes=routes)

    async def health(self, request: Request) -> Response:
        return JsonBody(Health().model_dump())

    async def dbs(self, request: Request) -> Response:
        entries = [DbEntry(name=n, open=self.catalog.is_open(n)) for n in self.catalog.names()]
        return JsonBody(DbList(dbs=entries, default=self.catalog.default()).model_dump())

    async def tools(self, request: Request) -> Response:
        async with self.catalog.select(request) as (db, backend):
            return JsonBody(ToolList(db=db, tools=backend.specs()).model_dump())

    async def openapi(self, request: Request) -> Response:
        async with self.catalog.select(request) as (_, backend):
            return JsonBody(openapi_document(backend.toolkit.tools(), backend.specs(), token=self.token))

    async def call(self, request: Request) -> Response:
        async with self.catalog.select(request) as (_, backend):
            tool = _offered(backend, request.path_params["name"])
            args = _arguments(await _body(request))
            try:
                tool.input.model_validate(args)
            except ValidationError as exc:
                raise ApiProblem(422, _invalid(tool, exc)) from None
            reply = await backend.call(client_key(request), tool.name, args)
        if reply.error:
            raise ApiProblem(FAILURE_STATUS.get(reply.failure or "", 500), _failed(reply))
        if _wants_text(request):
            return PlainTextResponse(reply.text)
        return JsonBody(reply.data)


def _offered(backend: LocalBackend, name: str) -> Tool:
    """The tool `name` as this server offers it; 403 for a write tool on a read-only server, else 404."""
    offered = {t.name: t for t in backend.toolkit.tools()}
    if name in offered:
        return offered[name]
    known = load_tools().get(name)
    if known is not None and known.write and backend.toolkit.read_only:
        raise ApiProblem(403, ApiError(error=f"{name} writes, and this server is read-only", hint=WRITES_HINT))
    raise ApiProblem(
        404,
        ApiError(
            error=f"no tool named {name!r} is served", hint="GET /api/tools lists them", available=sorted(offered)
        ),
    )


async def _body(request: Request) -> bytes:
    """The request body, refused past MAX_BODY before it is all read, and unless it is JSON."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY:
        raise _too_large()
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise _too_large()
        chunks.append(chunk)
    body = b"".join(chunks)
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if body.strip() and kind != "application/json":
        raise ApiProblem(
            415,
            ApiError(
                error=f"the arguments must be sent as application/json, not {kind or 'without a content type'}",
                hint="send the header Content-Type: application/json (curl: --json '{...}')",
            ),
        )
    return body


def _arguments(body: bytes) -> Any:
    """The JSON body; none at all is a call without arguments."""
    if not body.strip():
        return {}
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise ApiProblem(
            400, ApiError(error=f"the body is not valid JSON: {exc}", hint="send the arguments as one JSON object")
        ) from None


def _invalid(tool: Tool, exc: ValidationError) -> ApiError:
    errors = exc.errors(include_url=False, include_context=False, include_input=False)
    detail = [FieldError(loc=list(e["loc"]), msg=e["msg"], type=e["type"]) for e in errors]
    summary = "; ".join(f"{'.'.join(map(str, d.loc)) or 'arguments'}: {d.msg}" for d in detail[:5])
    return ApiError(error=f"invalid arguments for {tool.name}: {summary}", hint=schema_hint(tool), detail=detail)


def _failed(reply: Reply) -> ApiError:
    return ApiError(error=reply.text, kind=reply.failure or "internal")


def _too_large() -> ApiProblem:
    return ApiProblem(
        413,
        ApiError(
            error=f"the request body is over {MAX_BODY:,} bytes",
            hint="send less per call (ingest large files with --files-root and the files argument)",
        ),
    )


def _wants_text(request: Request) -> bool:
    """Whether the client asked for the LLM text (`Accept: text/plain`) rather than the JSON."""
    accept = request.headers.get("accept", "")
    return "text/plain" in accept and "application/json" not in accept
