"""Trace and decision writes, written once for both backends: what each write checks, the result it
returns and the nodes it plans (`WritePlan`).

A backend gives `_requested`: it runs a write with reads that see the latest writes, saves the
request with the result, and applies the plan as one change in its own way (the embedded store:
one transaction on the file; the FalkorDB store: one query under the project's lock). Results are
worked out here rather than read back, so both return the same records.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from pydantic import BaseModel

from evigraph.errors import RequestConflictError, TaskExistsError, TaskNotFoundError
from evigraph.store.core.decision_reads import DecisionReads
from evigraph.store.core.decision_writes import check_supports, reaffirm, record, reject
from evigraph.store.core.schema_names import (
    STEP_SUPPORTS,
    TRACE_EVENT,
    TRACE_REQUEST,
    TRACE_STEP,
    TRACE_TASK,
    trace_key,
)
from evigraph.store.core.trace_reads import TraceReads, step_supports_json
from evigraph.store.core.write_plan import WritePlan, utc_now
from evigraph.trace_records import (
    DecisionRecord,
    EventSummary,
    NewDecision,
    NewEvent,
    NewStep,
    NewSupport,
    StepRecord,
    TaskRecord,
    TraceRequest,
)

R = TypeVar("R", bound=BaseModel)


@dataclass(frozen=True)
class TraceWrite:
    """What one write reads (seeing the latest writes) and the plan it adds to."""

    traces: TraceReads
    decisions: DecisionReads
    plan: WritePlan = field(default_factory=WritePlan)

    def requested(
        self, project: str, request: TraceRequest | None, result: type[R], work: Callable[[TraceWrite], R]
    ) -> R:
        """`work`, planning the request saved with its result; or the result of the request
        already saved under its id (nothing planned)."""
        if request is None:
            return work(self)
        key = trace_key(project, request.id)
        rows = self.traces.read(
            f"MATCH (r:{TRACE_REQUEST} {{id: $id}}) RETURN r.fingerprint AS f, r.result AS r", {"id": key}
        )
        if rows:
            if rows[0]["f"] != request.fingerprint:
                raise RequestConflictError(
                    f"request_id {request.id!r} was already used for a different write in project {project!r}",
                    hint="retry with exactly the first request, or use a new request_id for a new write",
                )
            return result.model_validate_json(rows[0]["r"])
        done = work(self)
        self.plan.create(
            TRACE_REQUEST,
            [{"id": key, "fingerprint": request.fingerprint, "result": done.model_dump_json(), "at": utc_now()}],
        )
        return done

    def append(self, project: str, agent: str, task: TaskRecord, event: NewEvent) -> EventSummary:
        """Plan `event` as the task's next."""
        seq = task.events + 1
        row = {**event.model_dump(), "seq": seq, "agent": agent, "at": utc_now()}
        self.plan.update(TRACE_TASK, [{"id": trace_key(project, task.name), "events": seq}])
        self.plan.create(
            TRACE_EVENT, [{**row, "id": trace_key(project, task.name, seq), "task": trace_key(project, task.name)}]
        )
        del row["payload"]
        return EventSummary.model_validate(row)


class TraceWriteOps(ABC):
    """The trace and decision writes of a store; a backend gives how a write runs (`_requested`)."""

    @abstractmethod
    async def _requested(
        self, project: str, request: TraceRequest | None, result: type[R], work: Callable[[TraceWrite], R]
    ) -> R:
        """`TraceWrite.requested` for `work`, its reads and its plan made one change."""

    async def create_task(
        self, project: str, agent: str, name: str, goal: str, request: TraceRequest | None = None
    ) -> TaskRecord:
        def work(write: TraceWrite) -> TaskRecord:
            task = write.traces.task(project, name)
            if task is not None:
                if task.goal != goal:
                    raise TaskExistsError(
                        f"task_exists: project {project!r} already has a task {name!r} with another goal",
                        hint="reuse the task with its own goal, or pick another task name",
                    )
                return task
            made = TaskRecord(name=name, goal=goal, agent=agent, created_at=utc_now(), events=0)
            write.plan.create(TRACE_TASK, [{"id": trace_key(project, name), "project": project, **made.model_dump()}])
            return made

        return await self._requested(project, request, TaskRecord, work)

    async def record_event(
        self, project: str, agent: str, task: str, event: NewEvent, request: TraceRequest | None = None
    ) -> EventSummary:
        def work(write: TraceWrite) -> EventSummary:
            return write.append(project, agent, write.traces.existing_task(project, task), event)

        return await self._requested(project, request, EventSummary, work)

    async def set_step(
        self,
        project: str,
        agent: str,
        task: str,
        step: NewStep,
        result: NewEvent | None = None,
        request: TraceRequest | None = None,
    ) -> StepRecord:
        def work(write: TraceWrite) -> StepRecord:
            found = write.traces.existing_task(project, task)
            seq = step.result_event_seq
            if result is not None:
                seq = write.append(project, agent, found, result).seq
            elif seq is not None and seq > found.events:
                raise TaskNotFoundError(
                    f"task {task!r} has no event {seq} (its last is {found.events})",
                    hint="record the result with record_event first and pass its seq",
                )
            supports = (
                check_supports(write.decisions, write.plan, project, step.supports, "step") if step.supports else []
            )
            done = StepRecord.model_validate(
                {**step.model_dump(), "result_event_seq": seq, "agent": agent, "updated_at": utc_now()}
                | {"supports": supports}
            )
            ids = {"id": trace_key(project, task, step.name), "task": trace_key(project, task)}
            row = {**done.model_dump(exclude={"supports"}), **ids, STEP_SUPPORTS: step_supports_json(done)}
            write.plan.merge(TRACE_STEP, [row])
            return done

        return await self._requested(project, request, StepRecord, work)

    async def record_decision(
        self, project: str, agent: str, decision: NewDecision, request: TraceRequest | None = None
    ) -> DecisionRecord:
        def work(write: TraceWrite) -> DecisionRecord:
            write.traces.existing_task(project, decision.task)
            return record(write.decisions, write.plan, project, agent, decision)

        return await self._requested(project, request, DecisionRecord, work)

    async def reaffirm_decision(
        self,
        project: str,
        agent: str,
        decision_id: str,
        supports: Sequence[NewSupport],
        explanation: str,
        request: TraceRequest | None = None,
    ) -> DecisionRecord:
        def work(write: TraceWrite) -> DecisionRecord:
            return reaffirm(write.decisions, write.plan, project, agent, decision_id, supports, explanation)

        return await self._requested(project, request, DecisionRecord, work)

    async def reject_decision(
        self, project: str, agent: str, decision_id: str, reason: str, request: TraceRequest | None = None
    ) -> DecisionRecord:
        return await self._requested(
            project,
            request,
            DecisionRecord,
            lambda write: reject(write.decisions, write.plan, project, decision_id, reason),
        )
