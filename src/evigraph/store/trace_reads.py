"""Reading tasks, events and steps back, written once for both backends against a `Rows` reader
(the transaction on the file; the connection, or its primary, on a server); a backend gives how
it stores times. How each writes traces (one transaction; one query under a project lock) stays
with it."""

from __future__ import annotations

from dataclasses import dataclass

from evigraph.errors import TaskNotFoundError
from evigraph.store.decision_reads import Times
from evigraph.store.reader import Rows
from evigraph.store.schema_names import TRACE_EVENT, TRACE_STEP, TRACE_TASK, trace_key
from evigraph.trace_records import EventRecord, EventSummary, StepRecord, StepState, TaskRecord

TASK_FIELDS = "t.name AS name, t.goal AS goal, t.agent AS agent, t.created_at AS created_at, t.events AS events"
EVENT_FIELDS = (
    "e.seq AS seq, e.kind AS kind, e.role AS role, e.name AS name, e.agent AS agent, e.at AS at, "
    "e.chars AS chars, e.sha256 AS sha256, e.truncated AS truncated"
)
STEP_FIELDS = (
    "s.name AS name, s.state AS state, s.kind AS kind, s.result_basis AS result_basis, "
    "s.result_event_seq AS result_event_seq, s.agent AS agent, s.updated_at AS updated_at"
)


def missing_task(project: str, name: str) -> TaskNotFoundError:
    return TaskNotFoundError(
        f"project {project!r} has no task {name!r}", hint="create it with create_task first, or check the name"
    )


@dataclass(frozen=True)
class TraceReads:
    """One backend's reads of tasks, events and steps; made per transaction or connection."""

    read: Rows
    times: Times

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
        rows = self.read(
            f"MATCH (s:{TRACE_STEP}) WHERE s.task = $task AND s.state = $state AND s.name > $after "
            f"RETURN {STEP_FIELDS} ORDER BY s.name LIMIT $limit",
            {"task": trace_key(project, found.name), "state": state, "after": after_name or "", "limit": limit},
        )
        return [StepRecord.model_validate(self.times(r, "updated_at")) for r in rows]
