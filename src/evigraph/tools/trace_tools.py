"""The task tools: create_task, get_task, record_event, list_events, fetch_event, set_step, list_steps.

They act on the project and the agent the toolkit was built with (`Toolkit(project=, agent=)`,
`evigraph mcp --project P --agent A`); no argument names either, so a call cannot reach another
project's tasks. Without both the tools are not offered at all, and the write tools follow the
toolkit's read-only switch like every other write. Trace records are the agent's own notes, not
evidence: their results carry no `[n]` and never enter the session's ledger.

The input models are the knowledge base's (`evigraph.kb.traces`), bounds included, so the tools
and `kb.traces()` refuse the same arguments; get_task adds the resume view's own bounds.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, get_args

from pydantic import BaseModel, ConfigDict, Field

from evigraph.evidence.pack import Section
from evigraph.kb.traces import (
    CreateTask,
    FetchEvent,
    ListEvents,
    ListSteps,
    RecordEvent,
    SetStep,
    TaskName,
    Traces,
)
from evigraph.strict import StrictInput
from evigraph.tools.registry import tool
from evigraph.tools.results import ToolResult
from evigraph.trace_records import EventRecord, EventSummary, StepRecord, StepState, TaskRecord

if TYPE_CHECKING:
    from evigraph.tools.toolkit import Toolkit

STEP_STATES: tuple[StepState, ...] = get_args(StepState)
TRACE_TOOLS = frozenset(
    {"create_task", "get_task", "record_event", "list_events", "fetch_event", "set_step", "list_steps"}
)
"""The tools this module registers; offered only by a toolkit given a project and an agent."""


class GetTaskInput(StrictInput):
    task_name: TaskName
    events: int = Field(10, ge=1, le=50, description="how many of the latest events to list, without their bodies")
    steps: int = Field(20, ge=1, le=50, description="the most step names listed for each state")


def has_traces(tk: Toolkit) -> bool:
    """Whether the toolkit was given a project and an agent; without them no task tool is offered."""
    return tk.traces is not None


def _traces(tk: Toolkit) -> Traces:
    traces = tk.traces
    assert traces is not None  # the tools are offered only with a project and an agent (has_traces)
    return traces


def _event_line(e: EventSummary) -> str:
    who = " ".join(x for x in (e.role, e.name) if x)
    cut = ", cut" if e.truncated else ""
    return f"#{e.seq} {e.kind}{f' ({who})' if who else ''} by {e.agent}, {e.chars} chars{cut}, {e.at:%Y-%m-%d %H:%M}"


def _step_line(s: StepRecord) -> str:
    result = f", result in event #{s.result_event_seq}" if s.result_event_seq else ""
    return f"{s.name} [{s.state}, {s.kind}, basis {s.result_basis}]{result} by {s.agent}"


class TaskResult(ToolResult):
    task: TaskRecord

    def header(self) -> str:
        t = self.task
        return f"task {t.name!r} (project task, created by {t.agent}): {t.goal}\nevents: {t.events}"


class StepsInState(BaseModel):
    """The steps of one state the resume view lists, at most `GetTaskInput.steps` of them."""

    model_config = ConfigDict(frozen=True)

    state: StepState
    names: list[str]
    more: bool = Field(description="more steps are in this state than listed: page them with list_steps")


class TaskView(ToolResult):
    """get_task: what a run needs to resume a task, bounded; event bodies are left to fetch_event.

    Decisions are not part of the view yet; a `decisions` field joins it when they are recorded.
    """

    name: str
    goal: str
    agent: str
    created_at: datetime
    events: int = Field(description="the number of the task's last event")
    steps: list[StepsInState] = Field(description="the states that have steps, in state order")
    latest_events: list[EventSummary] = Field(description="the latest events, oldest first, without bodies")

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
        more = f"; next page: after_seq={self.next_after_seq}" if self.next_after_seq is not None else ""
        return f"{len(self.events)} event(s) of task {self.task_name!r}{more}"

    def sections(self) -> list[Section]:
        return [Section("Events", [_event_line(e) for e in self.events])] if self.events else []


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


class StepPageResult(ToolResult):
    task_name: str
    state: StepState
    steps: list[StepRecord]
    next_after_name: str | None = Field(description="pass as after_name for the next page; null on the last page")

    def header(self) -> str:
        more = f"; next page: after_name={self.next_after_name!r}" if self.next_after_name is not None else ""
        return f"{len(self.steps)} {self.state} step(s) of task {self.task_name!r}{more}"

    def sections(self) -> list[Section]:
        return [Section("Steps", [_step_line(s) for s in self.steps])] if self.steps else []


async def task_view(traces: Traces, task_name: str, events: int = 10, steps: int = 20) -> TaskView:
    """The resume view get_task returns; the CLI's `task` verb prints the same one."""
    args = GetTaskInput(task_name=task_name, events=events, steps=steps)
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
    return TaskView(
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


@tool(
    "create_task",
    CreateTask,
    "Create a task (a named piece of work with a goal) to resume later, or get the existing one back; "
    "the same name with another goal is refused." + _RETRY + _WHERE,
    write=True,
    available=has_traces,
)
async def create_task(tk: Toolkit, args: CreateTask) -> TaskResult:
    task = await _traces(tk).create_task(args.task_name, args.goal, request_id=args.request_id)
    return TaskResult(task=task)


@tool(
    "get_task",
    GetTaskInput,
    "Resume a task: its goal, its steps by state (names, bounded) and its latest events without their "
    "bodies (fetch_event reads one)." + _WHERE,
    available=has_traces,
)
async def get_task(tk: Toolkit, args: GetTaskInput) -> TaskView:
    return await task_view(_traces(tk), args.task_name, args.events, args.steps)


@tool(
    "record_event",
    RecordEvent,
    "Append an event (message, tool_call, tool_result or note) to a task's log; a payload over 32000 "
    "characters is stored cut, with the full text's hash." + _RETRY + _WHERE,
    write=True,
    idempotent=False,
    available=has_traces,
)
async def record_event(tk: Toolkit, args: RecordEvent) -> EventResult:
    event = await _traces(tk).record_event(
        args.task_name, args.kind, args.payload, role=args.role, name=args.name, request_id=args.request_id
    )
    return EventResult(event=event)


@tool(
    "list_events",
    ListEvents,
    "One page of a task's events after a number, without their bodies, oldest first." + _WHERE,
    available=has_traces,
)
async def list_events(tk: Toolkit, args: ListEvents) -> EventPageResult:
    page = await _traces(tk).list_events(args.task_name, after_seq=args.after_seq, limit=args.limit)
    return EventPageResult(task_name=args.task_name, events=page.events, next_after_seq=page.next_after_seq)


@tool(
    "fetch_event",
    FetchEvent,
    "One event of a task with its stored body, by its number." + _WHERE,
    available=has_traces,
)
async def fetch_event(tk: Toolkit, args: FetchEvent) -> EventBodyResult:
    return EventBodyResult(event=await _traces(tk).fetch_event(args.task_name, args.seq))


@tool(
    "set_step",
    SetStep,
    "Create or update a named step of a task; a completed step needs its result, as text (result, recorded "
    "as a note event) or as the number of an event that holds it (result_event_seq)." + _RETRY + _WHERE,
    write=True,
    available=has_traces,
)
async def set_step(tk: Toolkit, args: SetStep) -> StepResult:
    step = await _traces(tk).set_step(
        args.task_name,
        args.name,
        args.state,
        kind=args.kind,
        result=args.result,
        result_event_seq=args.result_event_seq,
        result_basis=args.result_basis,
        request_id=args.request_id,
    )
    return StepResult(step=step)


@tool(
    "list_steps",
    ListSteps,
    "One page of a task's steps in one state, by name; continue with after_name." + _WHERE,
    available=has_traces,
)
async def list_steps(tk: Toolkit, args: ListSteps) -> StepPageResult:
    page = await _traces(tk).list_steps(args.task_name, args.state, after_name=args.after_name, limit=args.limit)
    return StepPageResult(
        task_name=args.task_name, state=args.state, steps=page.steps, next_after_name=page.next_after_name
    )
