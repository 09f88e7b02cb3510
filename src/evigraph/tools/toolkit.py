"""`Toolkit`: bounded tools over a knowledge base, with numbered evidence per session.

evigraph runs no agent loop. The user's agent calls these tools; each call is validated against
its input model, runs bounded, and numbers the evidence it returns in this session's ledger, so
`check_citations` can verify the `[n]` in the agent's draft. One toolkit serves one
conversation; `new_session()` gives another conversation its own numbering over the same
knowledge base and the same write coordination.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import os
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from evigraph.errors import (
    ConfigurationError,
    DeadlineExceeded,
    EngineError,
    EvigraphError,
    KnowledgeBaseMissingError,
    ReadOnlyViolation,
    ToolError,
)
from evigraph.evidence.ids import EvidenceId, EvidenceKind, parse_reference
from evigraph.evidence.ledger import REREAD_HINT, EvidenceLedger, Forgotten
from evigraph.ingest.loaders.common import DEFAULT_MAX_BYTES
from evigraph.limits import Limits, bounded_input, limited_fields, spellings
from evigraph.strict import validation_errors
from evigraph.tools.definitions import Offer, Tool, ToolAnnotations, ToolSpec
from evigraph.tools.plans import PlanLimits, plan_limits_from
from evigraph.tools.registry import is_offered, load_tools, offered_tools
from evigraph.tools.results import ToolResult

if TYPE_CHECKING:
    from evigraph.ingest.files_root import FilesRoot
    from evigraph.kb import KnowledgeBase, StoreLocation
    from evigraph.kb.traces import Traces

FinalizePolicy = Literal["manual", "on_write", "never"]


@dataclass
class _Shared:
    """State every session of one toolkit shares: options, plan memory, files in flight."""

    kb: KnowledgeBase
    read_only: bool
    files_root: FilesRoot | None
    include: frozenset[str] | None
    finalize_policy: FinalizePolicy
    ledger_capacity: int
    max_file_bytes: int | None
    plan_limits: PlanLimits
    traces: Traces | None
    offer: Offer
    allow_reject: bool = False
    plans: dict[str, dict[str, str]] = field(default_factory=dict)  # document id -> last plan
    specs: dict[tuple[Limits, tuple[str, ...]], list[ToolSpec]] = field(default_factory=dict)
    """The specs listed for each set of offered tools (answer's comes with the LLM, known once the
    knowledge base is open): every MCP tools/list asks, and building the JSON Schemas costs ms."""
    finalize_owed: bool = False  # an on_write finalize failed; the next ingest retries it
    owns_kb: bool = False  # made by `for_tenant`: the toolkit closes its knowledge base


class Toolkit:
    """The agent tools over `kb`; see the README for the tool list.

    Example::

        toolkit = Toolkit(kb, read_only=True)
        for spec in toolkit.tool_specs():
            register(spec.name, spec.description, spec.input_schema)
        result = await toolkit.call("retrieve", {"question": "Who founded Acme?"})
        print(result.to_llm_text())
    """

    def __init__(
        self,
        kb: KnowledgeBase,
        read_only: bool = False,
        files_root: str | os.PathLike[str] | None = None,
        include: Iterable[str] | None = None,
        finalize_policy: FinalizePolicy = "manual",
        ledger_capacity: int = 2000,
        max_file_bytes: int | None = DEFAULT_MAX_BYTES,
        plan_limits: dict[str, Any] | None = None,
        project: str | None = None,
        agent: str | None = None,
        allow_reject: bool = False,
    ) -> None:
        """`project` and `agent` turn the task and decision tools on; tool arguments cannot change
        them. `allow_reject` offers reject_decision, a person's override an agent should not make."""
        tools = load_tools()
        if finalize_policy not in ("manual", "on_write", "never"):
            raise ToolError(f"unknown finalize_policy {finalize_policy!r}", hint="use 'manual', 'on_write' or 'never'")
        chosen = frozenset(include) if include is not None else None
        if chosen is not None and (unknown := sorted(chosen - set(tools))):
            raise ToolError(f"unknown tool(s) in include: {', '.join(unknown)}", hint=f"choose from {', '.join(tools)}")
        if max_file_bytes is not None and max_file_bytes <= 0:
            raise ToolError("max_file_bytes must be positive or None", hint="e.g. 50 * 2**20")
        root = None
        if files_root is not None:
            from evigraph.ingest.files_root import FilesRoot

            root = FilesRoot(files_root, extensions=kb.file_extensions, max_bytes=max_file_bytes)
        traces = _traces(kb, project, agent)
        offer = Offer(
            read_only=read_only,
            files_root=root is not None,
            traces=traces is not None,
            allow_reject=allow_reject,
            finalize_policy=finalize_policy,
            include=chosen,
        )
        self._shared = _Shared(
            kb=kb,
            read_only=read_only,
            files_root=root,
            include=chosen,
            finalize_policy=finalize_policy,
            ledger_capacity=ledger_capacity,
            max_file_bytes=max_file_bytes,
            plan_limits=plan_limits_from(plan_limits),
            traces=traces,
            offer=offer,
            allow_reject=allow_reject,
        )
        self.ledger = EvidenceLedger(ledger_capacity)

    @classmethod
    def for_tenant(cls, db: str | os.PathLike[str] | StoreLocation, tenant: str, **options: Any) -> Toolkit:
        """A toolkit on tenant `tenant`'s own knowledge base beside `db` (`StoreLocation.for_tenant`:
        the graph `<graph>__<tenant>` on a FalkorDB server, or the file `<stem>__<tenant>.db`), so a
        service serving many tenants never hands one tenant's call another's graph. `options` are
        the toolkit's (read_only, project, ...) and the knowledge base's (embedder, llm, ...). The
        toolkit owns that knowledge base: close it with `aclose()` or `async with`."""
        import inspect

        from evigraph.kb import KnowledgeBase, StoreLocation

        own = set(inspect.signature(cls.__init__).parameters) - {"self", "kb"}
        kb_options = {k: v for k, v in options.items() if k not in own}
        unknown = sorted(set(kb_options) - set(inspect.signature(KnowledgeBase.__init__).parameters))
        if unknown:
            raise ConfigurationError(
                f"unknown option(s) for for_tenant: {', '.join(unknown)}",
                hint="pass Toolkit options (read_only, project, agent, ...) or KnowledgeBase ones (embedder, llm, ...)",
            )
        kb = KnowledgeBase(StoreLocation.parse(db).for_tenant(tenant), **kb_options)
        toolkit = cls(kb, **{k: v for k, v in options.items() if k in own})
        toolkit._shared.owns_kb = True
        return toolkit

    async def aclose(self) -> None:
        """Close the knowledge base this toolkit owns (`for_tenant`); one it was given stays open."""
        if self._shared.owns_kb:
            await self._shared.kb.close()

    async def __aenter__(self) -> Toolkit:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- sessions and specs ------------------------------------------------------------------

    def new_session(self, forgotten: Forgotten | None = None) -> Toolkit:
        """A toolkit for another conversation: same knowledge base and options, its own numbering.

        `forgotten`: this conversation's earlier session, which a server forgot; the new one
        numbers after it and tells a client citing its numbers why they stopped working."""
        session = object.__new__(Toolkit)
        session._shared = self._shared
        session.ledger = EvidenceLedger(self._shared.ledger_capacity, forgotten=forgotten)
        return session

    @property
    def kb(self) -> KnowledgeBase:
        return self._shared.kb

    @property
    def read_only(self) -> bool:
        return self._shared.read_only

    @property
    def files_root(self) -> FilesRoot | None:
        return self._shared.files_root

    @property
    def limits(self) -> Limits:
        """The operator's limits, the knowledge base's (`KnowledgeBase(limits=...)`)."""
        return self._shared.kb.limits

    @property
    def traces(self) -> Traces | None:
        """The project's task records as this agent, or None when no project and agent were given."""
        return self._shared.traces

    @property
    def shared(self) -> _Shared:
        return self._shared

    def tools(self) -> list[Tool]:
        """The tools this toolkit offers, in registry order, their inputs bounded by its limits, so
        every surface listing or validating them (MCP, REST, OpenAPI) shows the operator's bounds."""
        limits = self.limits
        return [bounded_tool(t, limits) for t in offered_tools(self._shared.offer, self._available)]

    def _available(self, tool: Tool) -> bool:
        return tool.available is not None and tool.available(self)

    def tool_specs(self) -> list[ToolSpec]:
        tools = self.tools()
        key = (self.limits, tuple(t.name for t in tools))
        specs = self._shared.specs.get(key)
        if specs is None:
            specs = self._shared.specs[key] = self._specs(tools)
        return list(specs)

    def _specs(self, tools: list[Tool]) -> list[ToolSpec]:
        return [
            ToolSpec(
                name=t.name,
                description=t.describe(self),
                input_schema=t.input.model_json_schema(),
                annotations=ToolAnnotations(
                    read_only=not t.write, destructive=t.destructive, idempotent=t.idempotent, open_world=t.open_world
                ),
            )
            for t in tools
        ]

    # -- calling -----------------------------------------------------------------------------

    async def call(self, name: str, args: dict[str, Any] | None = None) -> ToolResult:
        """Validate `args` against the tool's input model, run it and return its typed result."""
        tool = self._tool(name)
        try:
            parsed = tool.input.model_validate(args or {})
        except ValidationError as exc:
            raise ToolError(f"invalid arguments for {name}: {validation_errors(exc)}", hint=schema_hint(tool)) from None
        try:
            result = await self._run(tool, parsed)
        except (ToolError, EngineError):  # an engine failure's text is for the operator's log, not the agent
            raise
        except KnowledgeBaseMissingError as exc:
            raise ToolError(
                f"knowledge base {self.kb.location} does not exist", hint=exc.hint or "ingest documents first"
            ) from exc
        except EvigraphError as exc:
            raise ToolError(exc.message, hint=exc.hint) from exc
        result.tool = name
        return result

    async def _run(self, tool: Tool, parsed: Any) -> ToolResult:
        """The handler, a read stopped at the read deadline. Writes run to the end (a write cut
        halfway helps nobody) and so does an LLM's answer, bounded by the LLM's own timeout; a
        stopped read's work already in the engine finishes in the background (Cypher's is stopped
        by the engine at the same deadline)."""
        if tool.write or tool.open_world:
            return await tool.handler(self, parsed)
        seconds = self.limits.read_deadline_seconds
        try:
            async with asyncio.timeout(seconds) as scope:
                return await tool.handler(self, parsed)
        except TimeoutError:
            if not scope.expired():
                raise
            raise DeadlineExceeded(
                f"{tool.name} ran past the read deadline of {seconds:g} s and was stopped",
                hint="ask for less (a smaller limit, top_k, depth or max_chars, or a narrower query), or have the "
                f"operator raise {spellings('read_deadline_seconds')}",
            ) from None

    def _tool(self, name: str) -> Tool:
        tool = load_tools().get(name)
        if tool is not None and is_offered(tool, self._shared.offer, self._available):
            return bounded_tool(tool, self.limits)
        offered = {t.name for t in self.tools()}
        if tool is not None and tool.write and self._shared.read_only:
            raise ReadOnlyViolation(f"{name} writes, and this toolkit is read-only", hint="use the read tools")
        if tool is not None:
            raise ToolError(f"tool {name!r} is not offered by this toolkit", hint=_offered_hint(offered))
        raise ToolError(f"unknown tool {name!r}", hint=_offered_hint(offered))

    def __getattr__(self, name: str) -> Callable[..., Awaitable[ToolResult]]:
        if name.startswith("_") or name not in load_tools():
            raise AttributeError(name)

        async def method(**kwargs: Any) -> ToolResult:
            return await self.call(name, kwargs)

        method.__name__ = name
        method.__doc__ = load_tools()[name].describe(self)
        return method

    # -- evidence ----------------------------------------------------------------------------

    def resolve(self, ref: int | str, kind: EvidenceKind) -> EvidenceId:
        """The evidence of `kind` behind `ref`: a number from this session, or an id given directly.

        Read as the citation checks read it (`parse_reference`): an id may be given bare (`3f2a…`)
        or as the evidence id tools hand out (`passage:3f2a…`); a number sent as a string (`"3"`,
        `"[3]"`) is still a number. Another kind's number or id is refused.
        """
        parsed_ref = parse_reference(ref, kind)
        if parsed_ref is None:
            raise ToolError(f"{ref!r} names no evidence", hint=f"pass a number [n] or an id starting with '{kind}:'")
        if isinstance(parsed_ref, int):
            ref = parsed_ref
            rec = self.ledger.get(ref)
            if rec is None:
                expired = self.ledger.forgotten_numbers([ref])
                if expired is not None:
                    raise ToolError(expired, hint=REREAD_HINT)
                raise ToolError(
                    f"[{ref}] is not evidence of this session", hint="use a number a tool returned in this session"
                )
            parsed = EvidenceId.parse(rec.evidence_id)
            if parsed is None or parsed.kind != kind:
                raise ToolError(f"[{ref}] is a {rec.kind}, not a {kind}", hint="pass the right number")
            return parsed
        if parsed_ref.kind != kind:
            raise ToolError(f"{ref!r} is not a {kind} id", hint=f"pass an id starting with '{kind}:'")
        return parsed_ref


@functools.cache
def bounded_tool(tool: Tool, limits: Limits) -> Tool:
    """`tool` with its input bounded by `limits` (`bounded_input`), made once per tool and limits
    (both frozen) rather than on every call and listing."""
    bounded = bounded_input(tool.input, limits)
    return tool if bounded is tool.input else dataclasses.replace(tool, input=bounded)


def _traces(kb: KnowledgeBase, project: str | None, agent: str | None) -> Traces | None:
    """Both or neither: a project without an agent (or the reverse) is a configuration mistake."""
    if project is None and agent is None:
        return None
    if project is None or agent is None:
        gone, kept = ("agent", "project") if agent is None else ("project", "agent")
        raise ToolError(
            f"the toolkit was given {kept}= but no {gone}=: the task and decision tools need both",
            hint=f"pass {gone}= too, or leave out {kept}= to offer no task tools",
        )
    try:
        return kb.traces(project, agent)
    except EvigraphError as exc:
        raise ToolError(exc.message, hint=exc.hint) from exc


def schema_hint(tool: Tool) -> str:
    """The tool's fields with their bounds: what a caller whose arguments were refused needs to retry,
    and which bounds the operator set (an agent cannot raise those by asking again)."""
    props = tool.input.model_json_schema().get("properties", {})
    operator = limited_fields(tool.input)
    fields = []
    for name, schema in props.items():
        bounds = [
            f"{k} {schema[k]}" for k in ("minimum", "maximum", "minLength", "maxLength", "maxItems") if k in schema
        ]
        if name in operator:
            bounds.append(f"the server's {operator[name].setting}")
        fields.append(f"{name} ({', '.join(bounds)})" if bounds else name)
    return f"{tool.name} takes: {', '.join(fields) or 'no arguments'}"


def _offered_hint(offered: set[str]) -> str:
    return f"tools offered: {', '.join(sorted(offered))}"
