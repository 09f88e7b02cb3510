"""The task tools: create_task, get_task, record_event, list_events, fetch_event, set_step, list_steps
(the decision tools, `decision_tools.py`, register through `traced_tool` too).

They act on the project and the agent the toolkit was built with (`Toolkit(project=, agent=)`,
`evigraph mcp --project P --agent A`); no argument names either, so a call cannot reach another
project's tasks. Without both the tools are not offered at all, and the write tools follow the
toolkit's read-only switch like every other write. Trace records are the agent's own notes, not
evidence: their results carry no `[n]` and never enter the session's ledger.

The input models are the knowledge base's (`evigraph.kb.traces`), bounds included, so the tools
and `kb.traces()` refuse the same arguments; get_task adds the resume view's own bounds.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, get_args

from pydantic import BaseModel, ConfigDict, Field

from evigraph.errors import ToolError
from evigraph.evidence.pack import Section
from evigraph.kb.decisions import MAX_SUPPORTS, DecisionSupport, PassageSupport
from evigraph.kb.traces import (
    CreateTaskInput,
    FetchEventInput,
    ListEventsInput,
    ListStepsInput,
    RecordEventInput,
    SetStepInput,
    TaskName,
    Traces,
)
from evigraph.strict import StrictInput
from evigraph.tools.definitions import Handler, Offer, ToolGroup
from evigraph.tools.results import ToolResult, next_page
from evigraph.trace_records import (
    DecisionRecord,
    EventRecord,
    EventSummary,
    NewSupport,
    StepRecord,
    StepState,
    TaskRecord,
)

if TYPE_CHECKING:
    from evigraph.tools.toolkit import Toolkit


TOOLS = ToolGroup()
STEP_STATES: tuple[StepState, ...] = get_args(StepState)


def traced_tool(
    group: ToolGroup,
    name: str,
    input: type[StrictInput],
    description: str,
    *,
    write: bool = False,
    destructive: bool = False,
    idempotent: bool = True,
    offered: Callable[[Offer], bool] | None = None,
) -> Callable[[Handler], Handler]:
    """`group.tool`, offered only with a project and an agent (`Offer.traces`; `offered` may ask more)."""
    return group.tool(
        name,
        input,
        description,
        write=write,
        destructive=destructive,
        idempotent=idempotent,
        traced=True,
        offered=offered,
    )


def decision_line(d: DecisionRecord) -> str:
    """A decision on one line, as lists show it: state, id, choice and conclusion."""
    conclusion = d.conclusion if len(d.conclusion) <= 300 else d.conclusion[:297] + "..."
    return f"[{d.state}] {d.id} {d.choice_key}: {conclusion}"


class TaskViewInput(StrictInput):
    task_name: TaskName
    events: int = Field(10, ge=1, le=50, description="how many of the latest events to list, without their bodies")
    steps: int = Field(20, ge=1, le=50, description="the most step names listed for each state")
    decisions: int = Field(20, ge=1, le=50, description="the most standing decisions listed")


def traces_of(tk: Toolkit) -> Traces:
    traces = tk.traces
    assert traces is not None  # the tools are offered only with a project and an agent (Offer.traces)
    return traces


def read_supports(
    tk: Toolkit, supports: list[PassageSupport | DecisionSupport]
) -> tuple[list[dict[str, object]], dict[str, str]]:
    """The supports (a decision's or a step's) with each passage named by its evidence id, read in
    full in this session, and the digest of each passage as it was read, which the knowledge base
    checks the stored text against (the id alone could name other text in a file whose version
    numbers were reused)."""
    out: list[dict[str, object]] = []
    digests: dict[str, str] = {}
    for s in supports:
        if isinstance(s, DecisionSupport):
            out.append(s.model_dump())
            continue
        ref = tk.resolve(s.evidence, "passage")
        digest = tk.ledger.read_digest(ref)
        if digest is None:
            shown = f"[{s.evidence}]" if isinstance(s.evidence, int) else str(ref)
            raise ToolError(
                f"{shown} was not read in full in this session; a decision or a step rests only on passages read whole",
                hint=f"call read_passages on {shown} first (its whole text, not cut by max_chars), then cite it",
            )
        out.append({**s.model_dump(), "evidence": str(ref)})
        digests[str(ref)] = digest
    return out, digests


def support_line(s: NewSupport, extra: str = "") -> str:
    """A support on one line: what it names, the version read, `extra` (a decision's history), its note."""
    where = f" ({s.document!r} v{s.version})" if s.kind == "passage" else ""
    note = f": {s.note}" if s.note else ""
    return f"{s.kind} {s.ref}{where}{extra}{note}"


def _event_line(e: EventSummary) -> str:
    who = " ".join(x for x in (e.role, e.name) if x)
    cut = ", cut" if e.truncated else ""
    return f"#{e.seq} {e.kind}{f' ({who})' if who else ''} by {e.agent}, {e.chars} chars{cut}, {e.at:%Y-%m-%d %H:%M}"


def _step_line(s: StepRecord) -> str:
    result = f", result in event #{s.result_event_seq}" if s.result_event_seq else ""
    supports = f", {len(s.supports)} support(s)" if s.supports else ""
    return f"{s.name} [{s.state}, {s.kind}, basis {s.result_basis}]{result}{supports} by {s.agent}"


class TaskResult(ToolResult):
    task: TaskRecord

    def header(self) -> str:
        t = self.task
        return f"task {t.name!r} (project task, created by {t.agent}): {t.goal}\nevents: {t.events}"


class StepsInState(BaseModel):
    """The steps of one state the resume view lists, at most `TaskViewInput.steps` of them."""

    model_config = ConfigDict(frozen=True)

    state: StepState
    names: list[str]
    more: bool = Field(description="more steps are in this state than listed: page them with list_steps")


class TaskView(ToolResult):
    """get_task: what a run needs to resume a task, bounded; event bodies are left to fetch_event,
    decisions in full to get_decision."""

    name: str
    goal: str
    agent: str
    created_at: datetime
    events: int = Field(description="the number of the task's last event")
    steps: list[StepsInState] = Field(description="the states that have steps, in state order")
    latest_events: list[EventSummary] = Field(description="the latest events, oldest first, without bodies")
    decisions: list[DecisionRecord] = Field(
        default_factory=list, description="the task's standing decisions (active or needs_review), oldest first"
    )
    more_decisions: bool = Field(
        False, description="more standing decisions than listed: page them with list_decisions"
    )

    def header(self) -> str:
        counts = ", ".join(f"{g.state} {len(g.names)}{'+' if g.more else ''}" for g in self.steps) or "none"
        return (
            f"task {self.name!r}: {self.goal}\ncreated {self.created_at:%Y-%m-%d %H:%M} by {self.agent}; "
            f"{self.events} event(s); steps: {counts}"
        )

    def sections(self) -> list[Section]:
        out = []
        for group in self.steps:
            lines = list(group.names) + (["... more: list_steps pages them"] if group.more else [])
            out.append(Section(f"Steps {group.state}", lines))
        if self.decisions:
            lines = [decision_line(d) for d in self.decisions]
            lines += ["... more: list_decisions pages them"] if self.more_decisions else []
            out.append(Section("Decisions (get_decision gives one in full)", lines))
        if self.latest_events:
            lines = [_event_line(e) for e in self.latest_events]
            out.append(Section("Latest events (fetch_event gives a body)", lines))
        return out


class EventResult(ToolResult):
    event: EventSummary

    def header(self) -> str:
        return f"recorded event {_event_line(self.event)}"


class EventPageResult(ToolResult):
    task_name: str
    events: list[EventSummary]
    next_after_seq: int | None = Field(description="pass as after_seq for the next page; null on the last page")

    def header(self) -> str:
        more = next_page("after_seq", self.next_after_seq)
        return f"{len(self.events)} event(s) of task {self.task_name!r}{more}"

    def sections(self) -> list[Section]:
        return [Section("Events", [_event_line(e) for e in self.events])]


class EventBodyResult(ToolResult):
    event: EventRecord

    def header(self) -> str:
        cut = " (stored cut; sha256 is the full text's)" if self.event.truncated else ""
        return f"event {_event_line(self.event)}{cut}"

    def to_llm_text(self, max_chars: int = 8000) -> str:
        """The header, then as much of the body as fits: the body is the point of fetching an event."""
        head = super().to_llm_text(max_chars)
        room = max_chars - len(head) - 1
        body = self.event.payload
        if room <= 0:
            return head
        if len(body) > room:
            note = f"\n[body cut to fit: {room} of {len(body)} characters shown]"
            body = body[: max(0, room - len(note))] + note
        return f"{head}\n{body}"


class StepResult(ToolResult):
    step: StepRecord

    def header(self) -> str:
        return f"step {_step_line(self.step)}"

    def sections(self) -> list[Section]:
        return [Section("Supports", [support_line(s) for s in self.step.supports])]


class StepPageResult(ToolResult):
    task_name: str
    state: StepState
    steps: list[StepRecord]
    next_after_name: str | None = Field(description="pass as after_name for the next page; null on the last page")

    def header(self) -> str:
        more = next_page("after_name", self.next_after_name, quote=True)
        return f"{len(self.steps)} {self.state} step(s) of task {self.task_name!r}{more}"

    def sections(self) -> list[Section]:
        return [Section("Steps", [_step_line(s) for s in self.steps])]


async def task_view(traces: Traces, task_name: str, events: int = 10, steps: int = 20, decisions: int = 20) -> TaskView:
    """The resume view get_task returns; the CLI's `task` verb prints the same one."""
    args = TaskViewInput(task_name=task_name, events=events, steps=steps, decisions=decisions)
    task = await traces.get_task(args.task_name)
    groups = []
    for state in STEP_STATES:
        page = await traces.list_steps(task.name, state, limit=args.steps)
        if page.steps:
            groups.append(
                StepsInState(state=state, names=[s.name for s in page.steps], more=bool(page.next_after_name))
            )
    after = max(0, task.events - args.events)
    latest = (await traces.list_events(task.name, after_seq=after, limit=args.events)).events if task.events else []
    standing = await traces.list_decisions(task.name, include_history=False, limit=args.decisions)
    return TaskView(
        decisions=standing.decisions,
        more_decisions=standing.next_after_id is not None,
        name=task.name,
        goal=task.goal,
        agent=task.agent,
        created_at=task.created_at,
        events=task.events,
        steps=groups,
        latest_events=latest,
    )


_WHERE = " The project and the agent are fixed by the server's configuration."
_RETRY = " Pass a request_id (1-64 chars): a retry with it returns the first result and writes nothing twice."


@traced_tool(
    TOOLS,
    "create_task",
    CreateTaskInput,
    "Create a task (a named piece of work with a goal) to resume later, or get the existing one back; "
    "the same name with another goal is refused." + _RETRY + _WHERE,
    write=True,
)
async def create_task(tk: Toolkit, args: CreateTaskInput) -> TaskResult:
    task = await traces_of(tk).create_task(args.task_name, args.goal, request_id=args.request_id)
    return TaskResult(task=task)


@traced_tool(
    TOOLS,
    "get_task",
    TaskViewInput,
    "Resume a task: its goal, its steps by state (names, bounded), its standing decisions and its latest "
    "events without their bodies (fetch_event reads one)." + _WHERE,
)
async def get_task(tk: Toolkit, args: TaskViewInput) -> TaskView:
    return await task_view(traces_of(tk), args.task_name, args.events, args.steps, args.decisions)


@traced_tool(
    TOOLS,
    "record_event",
    RecordEventInput,
    "Append an event (message, tool_call, tool_result or note) to a task's log; a payload over 32000 "
    "characters is stored cut, with the full text's hash." + _RETRY + _WHERE,
    write=True,
    idempotent=False,
)
async def record_event(tk: Toolkit, args: RecordEventInput) -> EventResult:
    event = await traces_of(tk).record_event(
        args.task_name, args.kind, args.payload, role=args.role, name=args.name, request_id=args.request_id
    )
    return EventResult(event=event)


@traced_tool(
    TOOLS,
    "list_events",
    ListEventsInput,
    "One page of a task's events after a number, without their bodies, oldest first." + _WHERE,
)
async def list_events(tk: Toolkit, args: ListEventsInput) -> EventPageResult:
    page = await traces_of(tk).list_events(args.task_name, after_seq=args.after_seq, limit=args.limit)
    return EventPageResult(task_name=args.task_name, events=page.events, next_after_seq=page.next_after_seq)


@traced_tool(
    TOOLS,
    "fetch_event",
    FetchEventInput,
    "One event of a task with its stored body, by its number." + _WHERE,
)
async def fetch_event(tk: Toolkit, args: FetchEventInput) -> EventBodyResult:
    return EventBodyResult(event=await traces_of(tk).fetch_event(args.task_name, args.seq))


@traced_tool(
    TOOLS,
    "set_step",
    SetStepInput,
    "Create or update a named step of a task; a completed step needs its result, as text (result, recorded "
    "as a note event) or as the number of an event that holds it (result_event_seq). supports: up to "
    f"{MAX_SUPPORTS} of "
    "{kind: 'passage', evidence: [n] or evidence_id} (passages read in full with read_passages in this "
    "session, pinned to the version read) or {kind: 'decision', decision_id} (an active decision), each with "
    "an optional note; each set_step replaces the step's supports." + _RETRY + _WHERE,
    write=True,
)
async def set_step(tk: Toolkit, args: SetStepInput) -> StepResult:
    supports, digests = read_supports(tk, args.supports) if args.supports is not None else (None, None)
    step = await traces_of(tk).set_step(
        args.task_name,
        args.name,
        args.state,
        kind=args.kind,
        result=args.result,
        result_event_seq=args.result_event_seq,
        result_basis=args.result_basis,
        supports=supports,
        request_id=args.request_id,
        read_digests=digests,
    )
    return StepResult(step=step)


@traced_tool(
    TOOLS,
    "list_steps",
    ListStepsInput,
    "One page of a task's steps in one state, by name; continue with after_name." + _WHERE,
)
async def list_steps(tk: Toolkit, args: ListStepsInput) -> StepPageResult:
    page = await traces_of(tk).list_steps(args.task_name, args.state, after_name=args.after_name, limit=args.limit)
    return StepPageResult(
        task_name=args.task_name, state=args.state, steps=page.steps, next_after_name=page.next_after_name
    )
