"""What a tool is: a name, a description written for an LLM, an input model and an async
handler, and the group each tool module defines its tools in.

A module defines its tools into a `ToolGroup` of its own and imports nothing back from the
registry (`registry` joins the groups in a declared order), so the tool modules and the registry
form no import cycle.
"""

from __future__ import annotations

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
class Offer:
    """What a toolkit is served with that decides which tools it offers, all known before a knowledge
    base is open: one test for a toolkit and for a folder server's MCP guide, sent at the handshake
    before a client has named a knowledge base (`registry.offered_tools`)."""

    read_only: bool = False
    files_root: bool = False
    traces: bool = False
    """A project and an agent were given: the task and decision tools."""
    allow_reject: bool = False
    finalize_policy: str = "manual"
    include: frozenset[str] | None = None


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
    """Whether the knowledge base lets this toolkit offer the tool (answer needs its LLM): asked of an
    open toolkit only, so a guide written before a knowledge base is chosen leaves the tool out."""
    traced: bool = False
    """A task or decision tool: offered only by a toolkit given a project and an agent."""
    offered: Callable[[Offer], bool] | None = None
    """Whether the toolkit's options offer the tool (preview_files needs a files root)."""

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


class ToolGroup:
    """The tools one module defines, in the order it defines them."""

    def __init__(self) -> None:
        self.tools: dict[str, Tool] = {}

    def tool(
        self,
        name: str,
        input: type[StrictInput],
        description: str | Describe,
        *,
        write: bool = False,
        destructive: bool = False,
        idempotent: bool = True,
        open_world: bool = False,
        available: Callable[[Toolkit], bool] | None = None,
        traced: bool = False,
        offered: Callable[[Offer], bool] | None = None,
    ) -> Callable[[Handler], Handler]:
        """Define the decorated handler as tool `name`."""

        def define(handler: Handler) -> Handler:
            if name in self.tools:
                raise ValueError(f"tool {name!r} is defined twice")
            self.tools[name] = Tool(
                name,
                description,
                input,
                handler,
                write,
                destructive,
                idempotent,
                open_world,
                available,
                traced,
                offered,
            )
            return handler

        return define
