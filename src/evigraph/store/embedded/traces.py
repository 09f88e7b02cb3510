"""Trace records in the embedded graph: the `GraphStore` traces section for `EmbeddedStore`.

Rows are keyed by a JSON array of their project, task and own name, so two projects never share
a row and no separator inside a name can make two keys collide. Each write reads what it checks
(the task, the saved request) and writes in the one transaction the executor gives it, so a
crash or a refusal leaves nothing half written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

from pydantic import BaseModel

from evigraph.errors import RequestConflictError, TaskExistsError, TaskNotFoundError
from evigraph.store.embedded.executor import Executor, Tx
from evigraph.store.schema_names import TRACE_EVENT, TRACE_REQUEST, TRACE_STEP, TRACE_TASK, trace_key
from evigraph.store.trace_reads import TraceReads, missing_task
from evigraph.trace_records import (
    EventRecord,
    EventSummary,
    NewEvent,
    NewStep,
    StepRecord,
    StepState,
    TaskRecord,
    TraceRequest,
)

R = TypeVar("R", bound=BaseModel)


def utc_now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def as_utc(row: Mapping[str, Any], field: str) -> dict[str, Any]:
    """The engine returns the naive UTC time it was given; results say it is UTC."""
    return {**row, field: row[field].replace(tzinfo=UTC)}


class TraceOps:
    """The traces section of `EmbeddedStore`, kept apart so the store module stays a wiring."""

    read_only: bool

    @property
    def executor(self) -> Executor:
        raise NotImplementedError  # EmbeddedStore's

    async def create_task(
        self, project: str, agent: str, name: str, goal: str, request: TraceRequest | None = None
    ) -> TaskRecord:
        def work(tx: Tx) -> TaskRecord:
            task = _trace_reads(tx).task(project, name)
            if task is not None:
                if task.goal != goal:
                    raise TaskExistsError(
                        f"task_exists: project {project!r} already has a task {name!r} with another goal",
                        hint="reuse the task with its own goal, or pick another task name",
                    )
                return task
            tx.execute(
                f"CREATE (:{TRACE_TASK} {{id: $id, project: $project, name: $name, goal: $goal, agent: $agent, "
                "created_at: $at, events: 0})",
                {
                    "id": trace_key(project, name),
                    "project": project,
                    "name": name,
                    "goal": goal,
                    "agent": agent,
                    "at": utc_now(),
                },
            ).close()
            found = _trace_reads(tx).task(project, name)
            assert found is not None
            return found

        return await self._requested(project, request, TaskRecord, work)

    async def get_task(self, project: str, name: str) -> TaskRecord | None:
        return await self.executor.read(lambda tx: _trace_reads(tx).task(project, name) if self._traced(tx) else None)

    async def list_tasks(self, project: str, after_name: str | None = None, limit: int = 50) -> list[TaskRecord]:
        return await self.executor.read(
            lambda tx: _trace_reads(tx).tasks(project, after_name, limit) if self._traced(tx) else []
        )

    async def record_event(
        self, project: str, agent: str, task: str, event: NewEvent, request: TraceRequest | None = None
    ) -> EventSummary:
        def work(tx: Tx) -> EventSummary:
            return _append(tx, project, agent, existing_task(tx, project, task), event)

        return await self._requested(project, request, EventSummary, work)

    async def list_events(self, project: str, task: str, after_seq: int = 0, limit: int = 50) -> list[EventSummary]:
        def work(tx: Tx) -> list[EventSummary]:
            existing_task(tx, project, task, self._traced(tx))
            return _trace_reads(tx).events(project, task, after_seq, limit)

        return await self.executor.read(work)

    async def fetch_event(self, project: str, task: str, seq: int) -> EventRecord | None:
        def work(tx: Tx) -> EventRecord | None:
            existing_task(tx, project, task, self._traced(tx))
            return _trace_reads(tx).event(project, task, seq)

        return await self.executor.read(work)

    async def set_step(
        self,
        project: str,
        agent: str,
        task: str,
        step: NewStep,
        result: NewEvent | None = None,
        request: TraceRequest | None = None,
    ) -> StepRecord:
        def work(tx: Tx) -> StepRecord:
            found = existing_task(tx, project, task)
            seq = step.result_event_seq
            if result is not None:
                seq = _append(tx, project, agent, found, result).seq
            elif seq is not None and seq > found.events:
                raise TaskNotFoundError(
                    f"task {task!r} has no event {seq} (its last is {found.events})",
                    hint="record the result with record_event first and pass its seq",
                )
            row = {**step.model_dump(), "result_event_seq": seq, "agent": agent, "updated_at": utc_now()}
            tx.execute(
                f"MERGE (s:{TRACE_STEP} {{id: $id}}) SET s.task = $task, s.name = $name, s.state = $state, "
                "s.kind = $kind, s.result_basis = $result_basis, s.result_event_seq = $result_event_seq, "
                "s.agent = $agent, s.updated_at = $updated_at",
                {**row, "id": trace_key(project, task, step.name), "task": trace_key(project, task)},
            ).close()
            return StepRecord.model_validate({**row, "updated_at": row["updated_at"].replace(tzinfo=UTC)})

        return await self._requested(project, request, StepRecord, work)

    async def list_steps(
        self, project: str, task: str, state: StepState, after_name: str | None = None, limit: int = 50
    ) -> list[StepRecord]:
        def work(tx: Tx) -> list[StepRecord]:
            existing_task(tx, project, task, self._traced(tx))
            return _trace_reads(tx).steps(project, task, state, after_name, limit)

        return await self.executor.read(work)

    def _traced(self, tx: Tx) -> bool:
        """False on a read-only open of a file from before traces: it holds no task, and a writable
        open adds the tables."""
        return not self.read_only or TRACE_TASK in {r["name"] for r in tx.rows("CALL SHOW_TABLES() RETURN name")}

    async def _requested(
        self, project: str, request: TraceRequest | None, result: type[R], write: Callable[[Tx], R]
    ) -> R:
        """Run `write` in one transaction, or answer a request already saved with its result."""

        def work(tx: Tx) -> R:
            if request is None:
                return write(tx)
            key = trace_key(project, request.id)
            rows = tx.rows(
                f"MATCH (r:{TRACE_REQUEST} {{id: $id}}) RETURN r.fingerprint AS f, r.result AS r", {"id": key}
            )
            if rows:
                if rows[0]["f"] != request.fingerprint:
                    raise RequestConflictError(
                        f"request_id {request.id!r} was already used for a different write in project {project!r}",
                        hint="retry with exactly the first request, or use a new request_id for a new write",
                    )
                return result.model_validate_json(rows[0]["r"])
            done = write(tx)
            tx.execute(
                f"CREATE (:{TRACE_REQUEST} {{id: $id, fingerprint: $f, result: $r, at: $at}})",
                {"id": key, "f": request.fingerprint, "r": done.model_dump_json(), "at": utc_now()},
            ).close()
            return done

        return await self.executor.write(work)


def _append(tx: Tx, project: str, agent: str, task: TaskRecord, event: NewEvent) -> EventSummary:
    seq = task.events + 1
    at = utc_now()
    tx.execute(
        f"MATCH (t:{TRACE_TASK} {{id: $task}}) SET t.events = $seq",
        {"task": trace_key(project, task.name), "seq": seq},
    ).close()
    row = {**event.model_dump(), "seq": seq, "agent": agent, "at": at}
    tx.execute(
        f"CREATE (:{TRACE_EVENT} {{id: $id, task: $task, seq: $seq, kind: $kind, role: $role, name: $name, "
        "agent: $agent, at: $at, payload: $payload, chars: $chars, sha256: $sha256, truncated: $truncated})",
        {**row, "id": trace_key(project, task.name, seq), "task": trace_key(project, task.name)},
    ).close()
    del row["payload"]
    return EventSummary.model_validate({**row, "at": at.replace(tzinfo=UTC)})


def existing_task(tx: Tx, project: str, name: str, traced: bool = True) -> TaskRecord:
    """The task, which must exist (`traced` False: the file predates traces, so it cannot)."""
    if not traced:
        raise missing_task(project, name)
    return _trace_reads(tx).existing_task(project, name)


def _trace_reads(tx: Tx) -> TraceReads:
    return TraceReads(tx.rows, as_utc)
