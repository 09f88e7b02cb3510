"""Reading tasks, events and steps back, written once for both backends against a `Rows` reader
(the transaction on the file; the connection, or its primary, on a server); a backend gives how
it stores times. `TraceReadOps` is every trace and decision read of `GraphStore` on top of these
readers; a backend gives where a read runs (`_read_traces`). How each writes traces (one
transaction; one query under a project lock) stays with it."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from evigraph.errors import TaskNotFoundError
from evigraph.store.core.decision_reads import DecisionReads, Times
from evigraph.store.core.reader import Rows
from evigraph.store.core.schema_names import STEP_SUPPORTS, TRACE_EVENT, TRACE_STEP, TRACE_TASK, trace_key
from evigraph.trace_records import (
    DecisionRecord,
    DecisionState,
    DecisionText,
    EventRecord,
    EventSummary,
    NewStep,
    StepRecord,
    StepState,
    SupportRecord,
    TaskRecord,
)

T = TypeVar("T")

TASK_FIELDS = "t.name AS name, t.goal AS goal, t.agent AS agent, t.created_at AS created_at, t.events AS events"
EVENT_FIELDS = (
    "e.seq AS seq, e.kind AS kind, e.role AS role, e.name AS name, e.agent AS agent, e.at AS at, "
    "e.chars AS chars, e.sha256 AS sha256, e.truncated AS truncated"
)
STEP_FIELDS = (
    "s.name AS name, s.state AS state, s.kind AS kind, s.result_basis AS result_basis, "
    "s.result_event_seq AS result_event_seq, s.agent AS agent, s.updated_at AS updated_at"
)


def step_supports_json(step: NewStep) -> str:
    """How a step's supports are stored; "[]" rather than null, which a server's merge would skip,
    keeping the supports an earlier `set_step` gave."""
    return json.dumps([s.model_dump(mode="json") for s in step.supports])


def missing_task(project: str, name: str) -> TaskNotFoundError:
    return TaskNotFoundError(
        f"project {project!r} has no task {name!r}", hint="create it with create_task first, or check the name"
    )


@dataclass(frozen=True)
class TraceReads:
    """One backend's reads of tasks, events and steps; made per transaction or connection."""

    read: Rows
    times: Times
    step_supports: bool = True
    """False on a read-only open of a file written before steps had supports: none to read."""

    def task(self, project: str, name: str) -> TaskRecord | None:
        rows = self.read(f"MATCH (t:{TRACE_TASK} {{id: $id}}) RETURN {TASK_FIELDS}", {"id": trace_key(project, name)})
        return TaskRecord.model_validate(self.times(rows[0], "created_at")) if rows else None

    def existing_task(self, project: str, name: str) -> TaskRecord:
        found = self.task(project, name)
        if found is None:
            raise missing_task(project, name)
        return found

    def tasks(self, project: str, after_name: str | None, limit: int) -> list[TaskRecord]:
        rows = self.read(
            f"MATCH (t:{TRACE_TASK}) WHERE t.project = $project AND t.name > $after "
            f"RETURN {TASK_FIELDS} ORDER BY t.name LIMIT $limit",
            {"project": project, "after": after_name or "", "limit": limit},
        )
        return [TaskRecord.model_validate(self.times(r, "created_at")) for r in rows]

    def events(self, project: str, task: str, after_seq: int, limit: int) -> list[EventSummary]:
        found = self.existing_task(project, task)
        rows = self.read(
            f"MATCH (e:{TRACE_EVENT}) WHERE e.task = $task AND e.seq > $after "
            f"RETURN {EVENT_FIELDS} ORDER BY e.seq LIMIT $limit",
            {"task": trace_key(project, found.name), "after": after_seq, "limit": limit},
        )
        return [EventSummary.model_validate(self.times(r, "at")) for r in rows]

    def event(self, project: str, task: str, seq: int) -> EventRecord | None:
        found = self.existing_task(project, task)
        rows = self.read(
            f"MATCH (e:{TRACE_EVENT} {{id: $id}}) RETURN {EVENT_FIELDS}, e.payload AS payload",
            {"id": trace_key(project, found.name, seq)},
        )
        return EventRecord.model_validate(self.times(rows[0], "at")) if rows else None

    def steps(self, project: str, task: str, state: StepState, after_name: str | None, limit: int) -> list[StepRecord]:
        found = self.existing_task(project, task)
        fields = f"{STEP_FIELDS}, s.{STEP_SUPPORTS} AS supports" if self.step_supports else STEP_FIELDS
        rows = self.read(
            f"MATCH (s:{TRACE_STEP}) WHERE s.task = $task AND s.state = $state AND s.name > $after "
            f"RETURN {fields} ORDER BY s.name LIMIT $limit",
            {"task": trace_key(project, found.name), "state": state, "after": after_name or "", "limit": limit},
        )
        return [
            StepRecord.model_validate(
                {**self.times(r, "updated_at"), "supports": json.loads(r.get("supports") or "[]")}
            )
            for r in rows
        ]


class TraceReadOps(ABC):
    """The trace and decision reads of a store; a backend gives where they run (`_read_traces`)."""

    @abstractmethod
    async def _read_traces(self, work: Callable[[TraceReads, DecisionReads], T]) -> T:
        """`work` with the backend's readers, off the event loop."""

    async def get_task(self, project: str, name: str) -> TaskRecord | None:
        return await self._read_traces(lambda traces, _: traces.task(project, name))

    async def list_tasks(self, project: str, after_name: str | None = None, limit: int = 50) -> list[TaskRecord]:
        return await self._read_traces(lambda traces, _: traces.tasks(project, after_name, limit))

    async def list_events(self, project: str, task: str, after_seq: int = 0, limit: int = 50) -> list[EventSummary]:
        return await self._read_traces(lambda traces, _: traces.events(project, task, after_seq, limit))

    async def fetch_event(self, project: str, task: str, seq: int) -> EventRecord | None:
        return await self._read_traces(lambda traces, _: traces.event(project, task, seq))

    async def list_steps(
        self, project: str, task: str, state: StepState, after_name: str | None = None, limit: int = 50
    ) -> list[StepRecord]:
        return await self._read_traces(lambda traces, _: traces.steps(project, task, state, after_name, limit))

    async def get_decisions(self, project: str, ids: Sequence[str]) -> list[DecisionRecord]:
        return await self._read_traces(lambda _, decisions: decisions.fetch(project, ids))

    async def list_decisions(
        self,
        project: str,
        task: str | None = None,
        states: Sequence[DecisionState] | None = None,
        after_id: str | None = None,
        limit: int = 50,
    ) -> list[DecisionRecord]:
        return await self._read_traces(lambda _, decisions: decisions.page(project, task, states, after_id, limit))

    async def list_support_history(
        self, project: str, decision_id: str, after_ordinal: int = -1, limit: int = 20
    ) -> list[SupportRecord]:
        return await self._read_traces(lambda _, d: d.history(project, decision_id, after_ordinal, limit))

    async def decision_texts(self, project: str, states: Sequence[DecisionState]) -> list[DecisionText]:
        return await self._read_traces(lambda _, decisions: decisions.texts(project, states))

    async def list_conflicts(self, project: str, limit: int = 20) -> list[list[DecisionRecord]]:
        return await self._read_traces(lambda _, decisions: decisions.conflicts(project, limit))
