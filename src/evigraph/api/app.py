"""The ASGI app `evigraph serve` runs: the REST routes, MCP at /mcp when asked for, and the web
UI's static files at /, all inside the safety rules (`evigraph.api.guard`).

With MCP mounted, the MCP server and the REST routes call one backend: one open knowledge base,
one set of evidence sessions, so each sees the other's writes at once.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from evigraph.api.bodies import ApiError, ApiProblem, JsonBody, problem_response
from evigraph.api.catalog import Catalog
from evigraph.api.config import STATIC, ServeConfig
from evigraph.api.guard import secure
from evigraph.api.routes import Routes
from evigraph.serving.backend import LocalBackend

log = logging.getLogger("evigraph.api")


def build_app(config: ServeConfig, catalog: Catalog, mcp_backend: LocalBackend | None = None) -> ASGIApp:
    """The whole app: the REST routes and the web UI unless `config.rest` is off, and with
    `config.with_mcp` MCP (streamable HTTP) at `config.mcp_path`, over `mcp_backend` when one
    knowledge base is served, else over the catalog's, chosen per request as REST chooses them."""
    routes: list[BaseRoute] = [Routes(catalog, token=bool(config.token)).mount()] if config.rest else []
    session_manager = None
    if config.with_mcp:
        from evigraph.mcp.server import build_routing_server, build_server
        from evigraph.mcp.transports import streamable_app

        if mcp_backend is not None:
            server = build_server(mcp_backend)
        else:
            server = build_routing_server(catalog.backend_for, catalog.tool_names())
        routes += streamable_app(server, config.host, config.port, config.mcp_path).routes
        session_manager = server.session_manager

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if session_manager is None:
            yield
            return
        async with session_manager.run():  # the MCP sessions' task group lives as long as the server
            yield

    if config.rest:
        routes.append(Mount("/", app=StaticFiles(directory=STATIC, html=True), name="ui"))
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={ApiProblem: _problem, HTTPException: _http_error, Exception: _crash},
    )
    return secure(app, config.host, config.port, config.token, config.cors_origins)


async def _problem(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiProblem)
    return problem_response(exc)


async def _http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own refusals (no such path, wrong method) as the API's error body."""
    assert isinstance(exc, HTTPException)
    hint = "GET /api/openapi.json lists the routes"
    body = ApiError(error=f"{exc.detail.lower()}: {request.method} {request.url.path}", hint=hint)
    return JsonBody(body.model_dump(exclude_none=True), status_code=exc.status_code, headers=exc.headers)


async def _crash(request: Request, exc: Exception) -> Response:
    """A bug: the client gets a line without internals, the log the traceback (uvicorn logs it too)."""
    log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    body = ApiError(error="internal error", hint="see the server log (stderr) for details", kind="internal")
    return JsonBody(body.model_dump(exclude_none=True), status_code=500)
