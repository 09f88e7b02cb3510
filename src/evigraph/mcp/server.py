"""The MCP server: the toolkit's tools over stdio, streamable HTTP or SSE.

Tools, input schemas and descriptions come from the toolkit registry, so nothing is written
twice. The low-level SDK server is used because tools here carry explicit JSON Schemas from
their pydantic input models; arguments are validated again by the toolkit on every call.
"""

from __future__ import annotations

from typing import Any, Protocol

from evigraph import __version__
from evigraph.mcp.backend import Reply
from evigraph.mcp.instructions import build_instructions
from evigraph.mcp.sessions import client_key
from evigraph.tools.registry import ToolSpec


class Backend(Protocol):
    def specs(self) -> list[ToolSpec]: ...

    async def call(self, client: str, name: str, args: dict[str, Any] | None) -> Reply: ...


def build_server(backend: Backend) -> Any:
    """A low-level `mcp.server.Server` serving `backend`'s tools."""
    from mcp.server import Server
    from mcp_types import CallToolResult, ListToolsResult, TextContent, Tool, ToolAnnotations

    specs = backend.specs()

    def tool_of(spec: ToolSpec) -> Any:
        a = spec.annotations
        return Tool(
            name=spec.name,
            description=spec.description,
            input_schema=spec.input_schema,
            annotations=ToolAnnotations(
                read_only_hint=a.read_only,
                destructive_hint=a.destructive,
                idempotent_hint=a.idempotent,
                open_world_hint=a.open_world,
            ),
        )

    tools = [tool_of(s) for s in specs]

    async def on_list_tools(ctx: Any, params: Any) -> Any:
        return ListToolsResult(tools=tools)

    async def on_call_tool(ctx: Any, params: Any) -> Any:
        reply = await backend.call(client_key(ctx.request), params.name, params.arguments)
        content = [TextContent(type="text", text=reply.text)]
        if reply.error:
            return CallToolResult(content=content, is_error=True)
        return CallToolResult(content=content, structured_content=reply.data)

    return Server(
        "evigraph",
        version=__version__,
        instructions=build_instructions([s.name for s in specs]),
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )
