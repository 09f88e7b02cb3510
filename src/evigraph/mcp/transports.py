"""Serving the MCP server over streamable HTTP and SSE, with the network safety rules (stdio is
`evigraph.mcp.stdio`).

A server reachable from other machines must not answer strangers: on a non-loopback host it
refuses to start without a token, and with one every request needs `Authorization: Bearer`.
A loopback server answers only requests whose Host and Origin name it, so a web page cannot
reach it through DNS rebinding.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import logging
import re
import signal
import threading
from collections.abc import Callable, Collection, Iterator
from typing import Any

from evigraph.errors import ConfigurationError

log = logging.getLogger("evigraph.mcp")

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
MCP_PATH = "/mcp"


def is_loopback(host: str) -> bool:
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


TOKEN_ENV = "EVIGRAPH_MCP_TOKEN"


def check_network(host: str, token: str | None, *, served: str = "MCP", token_from: str = TOKEN_ENV) -> None:
    """Refuse to serve a non-loopback address without a token; `token_from` names where one is given."""
    if not is_loopback(host) and not token:
        raise ConfigurationError(
            f"refusing to serve {served} on {host} without a token: anyone who can reach the port could use it",
            hint=f"set {token_from} (clients send 'Authorization: Bearer <token>'), or bind 127.0.0.1",
        )


class BearerAuth:
    """ASGI middleware: HTTP requests need `Authorization: Bearer <token>` (scheme case-insensitive).

    `guards` picks the paths that need it (default: every path), so a server can leave a health
    check and static pages, which hold no data, open.
    """

    def __init__(
        self,
        app: Any,
        token: str,
        *,
        guards: Callable[[str], bool] | None = None,
        hint: str = f"send Authorization: Bearer <{TOKEN_ENV}>",
    ) -> None:
        self.app = app
        self.token = token.encode()
        self.guards = guards
        self.hint = hint

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        guarded = scope["type"] == "http" and (self.guards is None or self.guards(scope["path"]))
        if guarded and not self._authorized(scope):
            from starlette.responses import JSONResponse

            response = JSONResponse(
                {"error": "unauthorized", "hint": self.hint},
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _authorized(self, scope: Any) -> bool:
        raw = dict(scope.get("headers") or ()).get(b"authorization", b"")
        scheme, _, credentials = raw.strip().partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), self.token)


def security_settings(host: str, port: int) -> Any:
    """Host/Origin allow-lists for a loopback server: loopback names on this port (and the bind host).

    A server bound to another address is meant for other machines, which name it by addresses
    and DNS names it cannot know; there the required token guards it, so the lists are off.
    """
    from mcp.server.transport_security import TransportSecuritySettings

    if not is_loopback(host):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts, origins = loopback_allow_lists(host, port)
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


def loopback_allow_lists(host: str, port: int) -> tuple[list[str], list[str]]:
    """The Host values and Origins that name a loopback server bound to `host`:`port`."""
    hosts: list[str] = []
    origins: list[str] = []
    for name in sorted({*LOOPBACK_NAMES, host}):
        shown = f"[{name}]" if ":" in name else name
        hosts += [f"{shown}:{port}", shown]
        origins += [f"http://{shown}:{port}", f"https://{shown}:{port}"]
    return hosts, origins


async def _no_discover(ctx: Any, params: Any) -> Any:
    from mcp.shared.exceptions import MCPError
    from mcp_types import METHOD_NOT_FOUND

    raise MCPError(code=METHOD_NOT_FOUND, message="Method not found")


def http_app(server: Any, host: str, port: int, token: str | None, path: str = MCP_PATH) -> Any:
    """Streamable HTTP at `path`, behind the token when there is one."""
    app = streamable_app(server, host, port, path)
    return BearerAuth(app, token) if token else app


def streamable_app(server: Any, host: str, port: int, path: str = MCP_PATH) -> Any:
    """The Starlette app serving streamable HTTP at `path`, with the Host and Origin checks; no token.

    `server/discover` is refused, so clients that can fall back (the SDK's `mode="auto"`) use the
    session handshake and send an `mcp-session-id`: on the stateless protocol a client is only
    known by its TCP connection, which HTTP clients drop after a few idle seconds, and with it
    the evidence numbers it was given.
    """
    from mcp_types import RequestParams

    server.add_request_handler("server/discover", RequestParams, _no_discover)
    return server.streamable_http_app(
        streamable_http_path=path, transport_security=security_settings(host, port), host=host
    )


def sse_app(server: Any, host: str, port: int, token: str | None) -> Any:
    """SSE at /sse, messages posted to /messages/."""
    from mcp.server.sse import SseServerTransport
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Mount, Route

    sse = SseServerTransport("/messages/", security_settings=security_settings(host, port))

    async def handle_sse(request: Request) -> Response:
        async with sse.connect_sse(request.scope, request.receive, request._send) as (read, write):
            await server.run(read, write, server.create_initialization_options())
        return Response()

    app = Starlette(
        routes=[Route(SSE_PATH, handle_sse, methods=["GET"]), Mount("/messages/", app=sse.handle_post_message)]
    )
    return BearerAuth(app, token) if token else app


SSE_PATH = "/sse"


def served_url(transport: str, host: str, port: int, mcp_path: str = MCP_PATH) -> str:
    """Where a client connects: what `evigraph mcp` prints at start, as the README's configs use it."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{mcp_path if transport == 'http' else SSE_PATH}"


_SEGMENT = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*")


def mcp_path_of(text: str | None, taken: Collection[str] = ()) -> str:
    """--mcp-path as served: an absolute path of plain segments (a client config names it as is),
    whose first segment is none of `taken` (the paths a server serves beside MCP)."""
    if text is None:
        return MCP_PATH
    path = "/" + text.strip().strip("/")
    segments = path[1:].split("/")
    if path == "/" or segments[0] in taken or not all(_SEGMENT.fullmatch(s) for s in segments):
        clear = f", clear of {', '.join('/' + t for t in sorted(taken))}" if taken else ""
        raise ConfigurationError(
            f"--mcp-path {text!r} cannot be where MCP is served",
            hint=f"give a path such as {MCP_PATH} or /agents/mcp (letters, digits, '-', '_', '.'){clear}",
        )
    return path


def check_port_free(host: str, port: int) -> None:
    """Refuse a busy port in one line before anything starts: uvicorn logs a traceback-like
    error and exits after the database was already opened and the forwarding socket made."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise ConfigurationError(
                f"cannot listen on {host}:{port}: {exc.strerror or exc}",
                hint="another process uses the port; pick another with --port",
            ) from exc


async def serve_http(app: Any, host: str, port: int) -> None:
    """Until SIGINT or SIGTERM; then uvicorn shuts down gracefully and this returns."""
    import uvicorn

    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    await _returning_server_class()(config).serve()


def _returning_server_class() -> Any:
    import uvicorn
    from uvicorn.server import HANDLED_SIGNALS

    class ReturningServer(uvicorn.Server):
        """uvicorn re-raises the signal after its graceful shutdown, which kills the process before
        the caller can close the database and remove its forwarding socket; this one only returns."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            original = {sig: signal.signal(sig, self.handle_exit) for sig in HANDLED_SIGNALS}
            try:
                yield
            finally:
                for sig, handler in original.items():
                    signal.signal(sig, handler)

    return ReturningServer
