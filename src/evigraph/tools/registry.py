"""The tool registry: every tool module's group joined, in a declared order, into the one table
the toolkit, the MCP server and the REST API read, so a tool cannot drift between surfaces.

The order is the order tools are listed in (to an agent, in the OpenAPI document): the reading
tools, then the writing ones, then the task and decision tools (offered only with a project and
an agent), then answer (offered only with an LLM).
"""

from __future__ import annotations

from collections.abc import Callable

from evigraph.tools.definitions import Offer, Tool


def load_tools() -> dict[str, Tool]:
    """Every tool by name, in the declared order; the tool modules are imported on first use."""
    global _JOINED
    if _JOINED is None:
        from evigraph.tools import (
            answer_tools,
            citation_tools,
            code_tools,
            decision_tools,
            graph_tools,
            passage_tools,
            session_tools,
            trace_tools,
            write_tools,
        )

        groups = (
            graph_tools.TOOLS,
            passage_tools.TOOLS,
            session_tools.TOOLS,
            citation_tools.TOOLS,
            write_tools.TOOLS,
            code_tools.TOOLS,
            trace_tools.TOOLS,
            decision_tools.TOOLS,
            answer_tools.TOOLS,
        )
        joined: dict[str, Tool] = {}
        for group in groups:
            for name, defined in group.tools.items():
                if name in joined:
                    raise ValueError(f"tool {name!r} is defined in two modules")
                joined[name] = defined
        _JOINED = joined
    return _JOINED


_JOINED: dict[str, Tool] | None = None


def trace_tool_names() -> frozenset[str]:
    """The task and decision tools: offered only by a toolkit given a project and an agent."""
    return frozenset(name for name, defined in load_tools().items() if defined.traced)


def offered_tools(offer: Offer, available: Callable[[Tool], bool] | None = None) -> list[Tool]:
    """The tools served with `offer`, in registry order: the one filter of a toolkit and of a folder
    server's guide. `available` asks an open toolkit's knowledge base about a tool that depends on
    it (answer: an LLM); without it such a tool is left out, as no knowledge base is known yet."""
    return [t for t in load_tools().values() if is_offered(t, offer, available)]


def is_offered(tool: Tool, offer: Offer, available: Callable[[Tool], bool] | None = None) -> bool:
    """`offered_tools`' test of one tool, for a call that names it (no need to list them all)."""
    return (
        (offer.include is None or tool.name in offer.include)
        and not (tool.write and offer.read_only)
        and (offer.traces or not tool.traced)
        and (tool.offered is None or tool.offered(offer))
        and (tool.available is None or (available is not None and available(tool)))
    )
