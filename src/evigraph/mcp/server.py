"""The MCP server: the toolkit's tools over streamable HTTP or SSE, through the SDK.

Tools, input schemas and descriptions come from the toolkit registry, so nothing is written
twice. The low-level SDK server is used because tools here carry explicit JSON Schemas from
their pydantic input models; arguments are validated again by the toolkit on every call.
The wire forms of a tool and of a call's result are built here once, for this server and for
the stdio one (`evigraph.mcp.stdio`), which speaks the protocol without the SDK.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Collection
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from evigraph.errors import EvigraphError
from evigraph.mcp.instructions import build_instructions
from evigraph.serving.backend import Reply
from evigraph.serving.sessions import client_key
from evigraph.tools.definitions import ToolSpec
from evigraph.version import __version__

SERVER_NAME = "evigraph"


class Backend(Protocol):
    def specs(self) -> list[ToolSpec]: ...

    async def call(self, client: str, name: str, args: dict[str, Any] | None) -> Reply: ...


def tool_listing(spec: ToolSpec) -> dict[str, Any]:
    """A tool as `tools/list` sends it."""
    a = spec.annotations
    hints = {
        "readOnlyHint": a.read_only,
        "destructiveHint": a.destructive,
        "idempotentHint": a.idempotent,
        "openWorldHint": a.open_world,
    }
    return {"name": spec.name, "description": spec.description, "inputSchema": spec.input_schema, "annotations": hints}


def call_result(reply: Reply) -> dict[str, Any]:
    """A tool call's reply as `tools/call` sends it: the text always, the data unless it failed."""
    result: dict[str, Any] = {"content": [{"type": "text", "text": reply.text}]}
    if reply.error:
        result["isError"] = True
    elif reply.data is not None:
        result["structuredContent"] = reply.data
    return result


def server_instructions(specs: list[ToolSpec]) -> str:
    return build_instructions([s.name for s in specs])


Pick = Callable[[Any], AbstractAsyncContextManager[Backend]]
"""The backend one HTTP request is served by (the Starlette request, None on a transport without
one): a served folder's knowledge base, chosen by the request's `X-Evigraph-Db` header or `?db=`.
Choosing none it can serve raises an `EvigraphError` whose message and hint go to the client."""


def build_server(backend: Backend) -> Any:
    """A low-level `mcp.server.Server` serving `backend`'s tools."""

    @contextlib.asynccontextmanager
    async def fixed(request: Any) -> AsyncIterator[Backend]:
        yield backend

    return build_routing_server(fixed, [s.name for s in backend.specs()])


def build_routing_server(pick: Pick, guide_tools: Collection[str]) -> Any:
    """A low-level `mcp.server.Server` whose every request is served by the backend `pick` chooses
    for it, so one server serves a folder of knowledge bases, each client the one it names; the
    instructions, sent once at the handshake, guide through `guide_tools`."""
    from mcp.server import Server
    from mcp.shared.exceptions import MCPError
    from mcp_types import INVALID_PARAMS, CallToolResult, ListToolsResult, Tool

    async def on_list_tools(ctx: Any, params: Any) -> Any:
        try:
            async with pick(ctx.request) as backend:
                specs = backend.specs()
        except EvigraphError as exc:
            raise MCPError(code=INVALID_PARAMS, message=_said(exc)) from None
        return ListToolsResult(tools=[Tool.model_validate(tool_listing(s)) for s in specs])

    async def on_call_tool(ctx: Any, params: Any) -> Any:
        try:
            async with pick(ctx.request) as backend:
                reply = await backend.call(client_key(ctx.request), params.name, params.arguments)
        except EvigraphError as exc:
            return CallToolResult.model_validate({"content": [{"type": "text", "text": _said(exc)}], "isError": True})
        return CallToolResult.model_validate(call_result(reply))

    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=build_instructions(guide_tools),
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )


def _said(exc: EvigraphError) -> str:
    return f"{exc.message} (hint: {exc.hint})" if exc.hint else exc.message
