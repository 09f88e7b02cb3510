"""`Traces`: one agent's record of its work in one project, kept in the knowledge base.

The caller fixes the project and the agent when it asks `kb.traces(project, agent)`; no argument
of a call can change them, so a tool built on this cannot read or write another project's tasks.
Every argument is checked against its input model before the store is touched, and a bound
broken is refused with the field and the bound named (`ConfigurationError`). Writes take an
optional `request_id`: the store saves the result under it, so a client retrying after a lost
answer gets the first result back instead of a second event or a second step update.

The input models are the ones the task tools will expose, bounds included (the reference's
parameter tables); the agent's looser limits are the tools' concern.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evigraph.errors import TaskNotFoundError
from evigraph.gate import Gate
from evigraph.kb.core import KnowledgeBaseCore
from evigraph.kb.decisions import MAX_SUPPORTS, DecisionMethods, DecisionSupport, PassageSupport, Support, support_dicts
from evigraph.providers.embedders import Embedder
from evigraph.retrieval.decision_search import WordCounts
from evigraph.store.base import GraphStore
from evigraph.strict import StrictInput, build
from evigraph.trace_records import (
    STORED_EVENT_CHARS,
    EventKind,
    EventRecord,
    EventSummary,
    NewEvent,
    NewStep,
    ResultBasis,
    StepKind,
    StepRecord,
    StepState,
    TaskRecord,
    TraceRequest,
)

MAX_PAYLOAD_CHARS = 1_000_000
"""The longest event payload accepted; the store keeps its first `STORED_EVENT_CHARS`."""

TaskName = Annotated[str, Field(min_length=1, max_length=200, description="the task's name in this project")]
RequestId = Annotated[
    str, Field(min_length=1, max_length=64, description="a retry with the same id returns the first result")
]
Limit = Annotated[int, Field(ge=1, le=200)]
MAX_SEQ = 1_000_000_000
"""The highest event number an argument may name; a bound the tools' JSON Schema can state."""


class CreateTaskInput(StrictInput):
    task_name: TaskName
    goal: str = Field(min_length=1, max_length=4000)
    request_id: RequestId | None = None


class GetTaskInput(StrictInput):
    task_name: TaskName


class RecordEventInput(StrictInput):
    task_name: TaskName
    kind: EventKind
    payload: str = Field(
        max_length=MAX_PAYLOAD_CHARS,
        description=f"stored cut to {STORED_EVENT_CHARS} characters, with the hash of the full text",
    )
    role: str | None = Field(None, max_length=100)
    name: str | None = Field(None, max_length=200)
    request_id: RequestId | None = None


class ListEventsInput(StrictInput):
    task_name: TaskName
    after_seq: int = Field(0, ge=0, le=MAX_SEQ, description="list the events numbered above this")
    limit: Limit = 50


class FetchEventInput(StrictInput):
    task_name: TaskName
    seq: int = Field(ge=1, le=MAX_SEQ)


class SetStepInput(StrictInput):
    task_name: TaskName
    name: str = Field(min_length=1, max_length=200)
    state: StepState
    kind: StepKind = "other"
    result: str | None = Field(
        None, max_length=STORED_EVENT_CHARS, description="result text, recorded as a note event; or result_event_seq"
    )
    result_event_seq: int | None = Field(
        None, ge=1, le=MAX_SEQ, description="an event of the task that holds the result"
    )
    result_basis: ResultBasis = "unknown"
    supports: list[Support] | None = Field(
        None,
        max_length=MAX_SUPPORTS,
        description="what the result rests on, typed as a decision's supports; replaced by each set_step",
    )
    request_id: RequestId | None = None

    @model_validator(mode="after")
    def _result_rules(self) -> Self:
        if self.result is not None and self.result_event_seq is not None:
            raise ValueError("pass the result as text (result) or as an event (result_event_seq), not both")
        if self.state == "completed" and self.result is None and self.result_event_seq is None:
            raise ValueError("a completed step needs its result: pass result or result_event_seq")
        return self


class ListStepsInput(StrictInput):
    task_name: TaskName
    state: StepState
    after_name: str | None = Field(None, max_length=200, description="continue after this step name")
    limit: Limit = 50


class ListTasksInput(StrictInput):
    after_name: str | None = Field(None, max_length=200, description="continue after this task name")
    limit: Limit = 50


class CallerInput(StrictInput):
    project: str = Field(min_length=1, max_length=200)
    agent: str = Field(min_length=1, max_length=200)


class _Page(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class EventPage(_Page):
    events: list[EventSummary]
    next_after_seq: int | None
    """Pass as `after_seq` for the next page; None when this page is the last."""


class TaskPage(_Page):
    tasks: list[TaskRecord]
    next_after_name: str | None
    """Pass as `after_name` for the next page; None when this page is the last."""


class StepPage(_Page):
    steps: list[StepRecord]
    next_after_name: str | None
    """Pass as `after_name` for the next page; None when this page is the last."""


_HINT = "see the bounds in the input model's JSON Schema (evigraph.kb.traces)"


class Traces(DecisionMethods):
    """Tasks, events, steps and decisions of `agent` in `project`, read and written through the
    knowledge base (the decision methods are `evigraph.kb.decisions`).

    Example::

        traces = kb.traces("harbor-report", "analyst")
        await traces.create_task("funding", "Find who funds ReefWatch")
        await traces.record_event("funding", "message", "Who funds ReefWatch?", role="user")
        await traces.set_step("funding", "read sources", "completed", result="Two grants found.")
    """

    def __init__(
        self,
        project: str,
        agent: str,
        store: Callable[[bool], Awaitable[GraphStore]],
        gate: Gate,
        embedder: Callable[[], Embedder | None] = lambda: None,
    ) -> None:
        caller = build(
            CallerInput, {"project": project, "agent": agent}, "pass a project and an agent of 1 to 200 characters"
        )
        self.project = caller.project
        self.agent = caller.agent
        self._store = store
        self._gate = gate
        self._embedder = embedder
        self._word_counts = WordCounts()

    async def create_task(self, task_name: str, goal: str, *, request_id: str | None = None) -> TaskRecord:
        """The task, created when new; the same name with another goal raises `TaskExistsError`."""
        args = build(CreateTaskInput, {"task_name": task_name, "goal": goal, "request_id": request_id}, _HINT)
        store = await self._store(True)
        async with self._gate.shared():
            return await store.create_task(
                self.project, self.agent, args.task_name, args.goal, self._request("create_task", args)
            )

    async def get_task(self, task_name: str) -> TaskRecord:
        args = build(GetTaskInput, {"task_name": task_name}, _HINT)
        found = await (await self._store(False)).get_task(self.project, args.task_name)
        if found is None:
            raise TaskNotFoundError(
                f"project {self.project!r} has no task {task_name!r}", hint="create it with create_task first"
            )
        return found

    async def list_tasks(self, *, after_name: str | None = None, limit: int = 50) -> TaskPage:
        """The project's tasks by name, whichever agent created them."""
        args = build(ListTasksInput, {"after_name": after_name, "limit": limit}, _HINT)
        found = await (await self._store(False)).list_tasks(self.project, args.after_name, args.limit + 1)
        more = len(found) > args.limit
        tasks = found[: args.limit]
        return TaskPage(tasks=tasks, next_after_name=tasks[-1].name if more else None)

    async def record_event(
        self,
        task_name: str,
        kind: EventKind,
        payload: str,
        *,
        role: str | None = None,
        name: str | None = None,
        request_id: str | None = None,
    ) -> EventSummary:
        """Append an event; a payload over `STORED_EVENT_CHARS` is kept cut, with the full text's hash."""
        values = {"task_name": task_name, "kind": kind, "payload": payload, "role": role, "name": name}
        args = build(RecordEventInput, {**values, "request_id": request_id}, _HINT)
        event = _event(args.kind, args.payload, role=args.role, name=args.name)
        store = await self._store(True)
        async with self._gate.shared():
            return await store.record_event(
                self.project, self.agent, args.task_name, event, self._request("record_event", args)
            )

    async def list_events(self, task_name: str, *, after_seq: int = 0, limit: int = 50) -> EventPage:
        args = build(ListEventsInput, {"task_name": task_name, "after_seq": after_seq, "limit": limit}, _HINT)
        store = await self._store(False)
        found = await store.list_events(self.project, args.task_name, args.after_seq, args.limit + 1)
        more = len(found) > args.limit
        events = found[: args.limit]
        return EventPage(events=events, next_after_seq=events[-1].seq if more else None)

    async def fetch_event(self, task_name: str, seq: int) -> EventRecord:
        args = build(FetchEventInput, {"task_name": task_name, "seq": seq}, _HINT)
        found = await (await self._store(False)).fetch_event(self.project, args.task_name, args.seq)
        if found is None:
            raise TaskNotFoundError(
                f"task {task_name!r} has no event {seq}", hint="list_events gives the numbers the task holds"
            )
        return found

    async def set_step(
        self,
        task_name: str,
        name: str,
        state: StepState,
        *,
        kind: StepKind = "other",
        result: str | None = None,
        result_event_seq: int | None = None,
        result_basis: ResultBasis = "unknown",
        supports: Sequence[dict[str, object] | PassageSupport | DecisionSupport] | None = None,
        request_id: str | None = None,
        read_digests: Mapping[str, str] | None = None,
    ) -> StepRecord:
        """Create or update a step; a result given as text is recorded as a note event in the same write.

        `supports` and `read_digests` are a decision's (`record_decision`), checked the same way;
        each call replaces the step's supports, as it does its other fields."""
        values: dict[str, Any] = {"task_name": task_name, "name": name, "state": state, "kind": kind}
        values |= {"result": result, "result_event_seq": result_event_seq, "result_basis": result_basis}
        values["supports"] = None if supports is None else support_dicts(supports)
        args = build(SetStepInput, {**values, "request_id": request_id}, _HINT)
        store = await self._store(True)
        resolved = await self._resolve(store, args.supports, read_digests) if args.supports else []
        fields = args.model_dump(include=set(NewStep.model_fields) - {"supports"})
        step = NewStep.model_validate({**fields, "supports": resolved})
        note = None if args.result is None else _event("note", args.result, name=args.name)
        async with self._gate.shared():
            return await store.set_step(
                self.project, self.agent, args.task_name, step, note, self._request("set_step", args)
            )

    async def list_steps(
        self, task_name: str, state: StepState, *, after_name: str | None = None, limit: int = 50
    ) -> StepPage:
        values = {"task_name": task_name, "state": state, "after_name": after_name, "limit": limit}
        args = build(ListStepsInput, values, _HINT)
        store = await self._store(False)
        found = await store.list_steps(self.project, args.task_name, args.state, args.after_name, args.limit + 1)
        more = len(found) > args.limit
        steps = found[: args.limit]
        return StepPage(steps=steps, next_after_name=steps[-1].name if more else None)

    def _request(self, operation: str, args: StrictInput) -> TraceRequest | None:
        """The request the store saves, fingerprinted by everything the write depends on but its id."""
        request_id = getattr(args, "request_id", None)
        if request_id is None:
            return None
        asked = {"operation": operation, "agent": self.agent, **args.model_dump(exclude={"request_id"})}
        digest = hashlib.sha256(json.dumps(asked, sort_keys=True).encode()).hexdigest()
        return TraceRequest(id=request_id, fingerprint=digest)


def _event(kind: EventKind, payload: str, *, role: str | None = None, name: str | None = None) -> NewEvent:
    return NewEvent(
        kind=kind,
        payload=payload[:STORED_EVENT_CHARS],
        chars=len(payload),
        sha256=hashlib.sha256(payload.encode()).hexdigest(),
        truncated=len(payload) > STORED_EVENT_CHARS,
        role=role,
        name=name,
    )


class TraceOps(KnowledgeBaseCore):
    """The `traces` entry point of `KnowledgeBase`."""

    def traces(self, project: str, agent: str) -> Traces:
        """The task, event, step and decision records of `agent` in `project`; other projects stay
        out of reach."""
        return Traces(project, agent, lambda write: self._open(for_write=write), self._gate, lambda: self.embedder)
