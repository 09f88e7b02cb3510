"""Trace records in the embedded graph: the `GraphStore` traces section for `EmbeddedStore`.

Rows are keyed by a JSON array of their project, task and own name, so two projects never share
a row and no separator inside a name can make two keys collide. Each write (`store/core/trace_writes.py`)
reads what it checks (the task, the saved request) and its plan runs in the one transaction the
executor gives it, so a crash or a refusal leaves nothing half written.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import cache
from itertools import groupby
from typing import Any, TypeVar

from pydantic import BaseModel

from evigraph.store.core.decision_reads import DECISION_FIELDS, SUPPORT_FIELDS, DecisionReads
from evigraph.store.core.schema_names import TRACE_DECISION, TRACE_SUPPORT, TRACE_TABLES, TRACE_TASK
from evigraph.store.core.trace_reads import TraceReadOps, TraceReads
from evigraph.store.core.trace_writes import TraceWrite, TraceWriteOps
from evigraph.store.core.write_plan import Step, WritePlan, stored
from evigraph.store.embedded.executor import Executor, Tx
from evigraph.store.embedded.schema import DDL
from evigraph.trace_records import TraceRequest

R = TypeVar("R", bound=BaseModel)
T = TypeVar("T")


def as_utc(row: Mapping[str, Any], field: str) -> dict[str, Any]:
    """The engine returns the naive UTC time it was given; results say it is UTC."""
    return {**row, field: row[field].replace(tzinfo=UTC)}


def naive_utc(at: datetime) -> datetime:
    """How a time is stored: the engine keeps a naive TIMESTAMP (`as_utc` reads it back)."""
    return at.astimezone(UTC).replace(tzinfo=None)


class EmbeddedTraceOps(TraceReadOps, TraceWriteOps):
    """The traces section of `EmbeddedStore`, kept apart so the store module stays a wiring."""

    read_only: bool
    _step_supports: bool

    @property
    def executor(self) -> Executor:
        raise NotImplementedError  # EmbeddedStore's

    async def _read_traces(self, work: Callable[[TraceReads, DecisionReads], T]) -> T:
        def read(tx: Tx) -> T:
            if not self._traced(tx):  # the file predates traces: no trace to read, as on a graph without one
                return work(TraceReads(_no_rows, as_utc), DecisionReads(_no_rows, _DECISIONS, _SUPPORTS, as_utc))
            return work(TraceReads(tx.rows, as_utc, self._step_supports), decision_reads(tx))

        return await self.executor.read(read)

    def _traced(self, tx: Tx) -> bool:
        """False on a read-only open of a file from before traces: it holds no task, and a writable
        open adds the tables."""
        return not self.read_only or TRACE_TASK in {r["name"] for r in tx.rows("CALL SHOW_TABLES() RETURN name")}

    async def _requested(
        self, project: str, request: TraceRequest | None, result: type[R], work: Callable[[TraceWrite], R]
    ) -> R:
        """Check, plan and write in one transaction: its reads are the checks, so the document
        versions a plan requires cannot change before it runs."""

        def run(tx: Tx) -> R:
            write = TraceWrite(trace_reads(tx), decision_reads(tx))
            done = write.requested(project, request, result, work)
            run_plan(tx, write.plan)
            return done

        return await self.executor.write(run)


def run_plan(tx: Tx, plan: WritePlan) -> None:
    """Each step as one statement (in batches), every value cast to its column's type: the engine
    cannot type a null or an empty list by itself."""
    for step in plan.steps:
        rows = [stored(r, naive_utc) for r in step.rows]
        for keys, same in groupby(rows, key=lambda r: sorted(r)):
            tx.run_batched(_statement(step, keys), list(same))


def _statement(step: Step, keys: list[str]) -> str:
    types = _column_types()[step.label]
    values = {k: f"CAST(r.{k} AS {types[k]})" for k in keys if k != "id"}
    if step.op == "create":
        fields = ", ".join(f"{k}: {v}" for k, v in {"id": "r.id", **values}.items())
        return f"UNWIND $rows AS r CREATE (:{step.label} {{{fields}}})"
    head = "MERGE" if step.op == "merge" else "MATCH"
    found = f"UNWIND $rows AS r {head} (n:{step.label} {{id: r.id}})"
    if step.op == "delete":
        return f"{found} DELETE n"
    return f"{found} SET " + ", ".join(f"n.{k} = {v}" for k, v in values.items())


@cache
def _column_types() -> dict[str, dict[str, str]]:
    """Trace table -> column -> type, read from the DDL."""
    out: dict[str, dict[str, str]] = {}
    for ddl in DDL:
        found = re.match(r"CREATE NODE TABLE IF NOT EXISTS (\w+)\((.*)\)$", ddl.strip(), re.DOTALL)
        if found and found[1] in TRACE_TABLES:
            out[found[1]] = dict(column.split()[:2] for column in found[2].split(","))
    return out


def _no_rows(query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    return []


def trace_reads(tx: Tx) -> TraceReads:
    return TraceReads(tx.rows, as_utc)


_DECISIONS = (  # UNWIND and `=` rather than IN: see `_SUPPORTS`
    f"UNWIND $ids AS i MATCH (d:{TRACE_DECISION}) WHERE d.id = i AND d.project = $project RETURN {DECISION_FIELDS}"
)
_SUPPORTS = (
    # UNWIND and `=`, not `s.decision IN $ids`: in a transaction that set `current` on a decision's
    # supports and then created new ones (reaffirm_decision), the engine's IN filter skipped the new
    # rows and returned another row in their place.
    f"UNWIND $ids AS i MATCH (s:{TRACE_SUPPORT}) WHERE s.decision = i AND s.current "
    f"RETURN {SUPPORT_FIELDS} ORDER BY s.ordinal"
)


def decision_reads(tx: Tx) -> DecisionReads:
    return DecisionReads(tx.rows, _DECISIONS, _SUPPORTS, as_utc)
