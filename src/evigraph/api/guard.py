"""The HTTP safety rules around the REST app: those of the MCP HTTP transport, plus opt-in CORS.

A loopback server answers only requests whose Host names it, so a web page cannot reach it
through DNS rebinding, and whose Origin, when a browser sends one, is one of its own pages or
an origin given with --cors-origin; browsers get CORS headers for those origins only, and none
when no origin was given. A server bound to another address is reached by names it cannot
know, so there the lists are off and the token, then required, guards it. A token guards every
path but the health check and the web UI's own files, which hold no data: guarding by default,
so MCP at a custom --mcp-path, or any route added later, cannot be left open by a forgotten list.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from evigraph.api.bodies import ApiError, ApiProblem, problem_response
from evigraph.api.catalog import DB_HEADER
from evigraph.api.config import STATIC
from evigraph.api.routes import API_PREFIX, HEALTH
from evigraph.mcp.transports import BearerAuth, is_loopback, loopback_allow_lists
from evigraph.serving.sessions import SESSION_HEADER

HEALTH_PATH = API_PREFIX + HEALTH
TOKEN_SOURCES = "--token or EVIGRAPH_MCP_TOKEN"
MCP_HEADERS = ("mcp-session-id", "mcp-protocol-version", "last-event-id")
"""What a browser MCP client sends to /mcp beside the JSON body."""


OPEN_PATHS = frozenset(
    {HEALTH_PATH, "/", *("/" + f.relative_to(STATIC).as_posix() for f in STATIC.rglob("*") if f.is_file())}
)
"""The paths served without the token: liveness, and the web UI's files, none of which holds data."""


def needs_token(path: str) -> bool:
    """Every path not known to be open, so that none is open by being forgotten."""
    return path not in OPEN_PATHS


class HostOriginGuard:
    """Refuses a request naming another host (421) or coming from a foreign page (403)."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str], origins: frozenset[str]) -> None:
        self.app = app
        self.hosts = hosts
        self.origins = origins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = Headers(scope=scope)
            refusal = self._refusal(headers.get("host"), headers.get("origin"))
            if refusal is not None:
                await problem_response(refusal)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _refusal(self, host: str | None, origin: str | None) -> ApiProblem | None:
        if host not in self.hosts:
            return ApiProblem(
                421,
                ApiError(
                    error="this server answers only requests addressed to it by a loopback name",
                    hint="use http://127.0.0.1:PORT or http://localhost:PORT",
                ),
            )
        if origin is not None and origin not in self.origins:
            return ApiProblem(
                403,
                ApiError(
                    error="requests from other web pages are refused",
                    hint="start the server with --cors-origin ORIGIN to let a page from ORIGIN call it",
                ),
            )
        return None


def secure(app: ASGIApp, host: str, port: int, token: str | None, cors_origins: tuple[str, ...]) -> ASGIApp:
    """`app` inside the token check, CORS (when origins were given) and the Host and Origin checks."""
    if token:
        hint = f"send Authorization: Bearer <token>, with the token given by {TOKEN_SOURCES}"
        app = BearerAuth(app, token, guards=needs_token, hint=hint)
    if cors_origins:
        app = CORSMiddleware(
            app,
            allow_origins=list(cors_origins),
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["authorization", "content-type", SESSION_HEADER, DB_HEADER, *MCP_HEADERS],
            expose_headers=["mcp-session-id"],
        )
    if not is_loopback(host):
        return app
    hosts, origins = loopback_allow_lists(host, port)
    return HostOriginGuard(app, frozenset(hosts), frozenset((*origins, *cors_origins)))
