"""The tool registry: every tool defined once, from which specs, validation and dispatch come.

A tool is a name, a description written for an LLM, an input model and an async handler. The
toolkit, the MCP server and the REST API all read this table, so a tool cannot drift between
surfaces.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from evigraph.strict import StrictInput
from evigraph.tools.results import ToolResult

if TYPE_CHECKING:
    from evigraph.tools.toolkit import Toolkit

Handler = Callable[["Toolkit", Any], Awaitable[ToolResult]]
Describe = Callable[["Toolkit"], str]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str | Describe
    input: type[StrictInput]
    handler: Handler
    write: bool = False
    destructive: bool = False
    idempotent: bool = True
    open_world: bool = False
    available: Callable[[Toolkit], bool] | None = None
    """Whether this toolkit offers the tool (e.g. preview_files needs a files root)."""

    def describe(self, toolkit: Toolkit) -> str:
        return self.description(toolkit) if callable(self.description) else self.description


class ToolAnnotations(BaseModel):
    """Hints for clients (MCP annotations): whether a call writes, destroys or repeats safely."""

    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool


class ToolSpec(BaseModel):
    """A tool as an agent framework registers it."""

    name: str
    description: str
    input_schema: dict[str, Any] = Field(description="JSON Schema of the arguments")
    annotations: ToolAnnotations


TOOLS: dict[str, Tool] = {}


def tool(
    name: str,
    input: type[StrictInput],
    description: str | Describe,
    *,
    write: bool = False,
    destructive: bool = False,
    idempotent: bool = True,
    open_world: bool = False,
    available: Callable[[Toolkit], bool] | None = None,
) -> Callable[[Handler], Handler]:
    """Register the decorated handler as tool `name`."""

    def register(handler: Handler) -> Handler:
        if name in TOOLS:
            raise ValueError(f"tool {name!r} is defined twice")
        TOOLS[name] = Tool(name, description, input, handler, write, destructive, idempotent, open_world, available)
        return handler

    return register


def load_tools() -> dict[str, Tool]:
    """Import the modules that define tools (once) and return the registry."""
    from evigraph.tools import graph_tools, passage_tools, session_tools, write_tools  # noqa: F401

    # after the others, so they keep their order (an import block would be sorted): the task and decision tools,
    # offered only with a project and an agent, then answer, offered only with an LLM
    importlib.import_module("evigraph.tools.code_tools")
    importlib.import_module("evigraph.tools.trace_tools")
    importlib.import_module("evigraph.tools.decision_tools")
    importlib.import_module("evigraph.tools.answer_tools")

    return TOOLS
