"""Whole-graph maintenance on FalkorDB (`FalkorMaintenanceOps`, mixed into `FalkorStore`):
integrity checks and repair (`integrity.py`), compaction, agent Cypher (`cypher.py`), the schema
as a Cypher author sees it, and entity merges (`merging.py`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any

from evigraph.errors import ReadOnlyQueryError, StoreError
from evigraph.integrity_records import IntegrityReport
from evigraph.models import TableInfo
from evigraph.store.compaction import CompactProgress, CompactReport
from evigraph.store.core.merge_plan import read_entity_records, read_redirects
from evigraph.store.cypher.params import check_params
from evigraph.store.cypher.rows import QueryRows
from evigraph.store.cypher.rules import HIDDEN_PROPERTIES
from evigraph.store.falkordb import graph_rewrite, merging
from evigraph.store.falkordb.connection import Connection
from evigraph.store.falkordb.cypher import (
    SLOTS,
    TYPES_QUERY,
    bound_rows,
    check_plan,
    guard,
    query_failure,
)
from evigraph.store.falkordb.integrity import PENDING_GRACE_S, Findings, inspect, problems, repair
from evigraph.store.falkordb.locks import server_lock
from evigraph.store.falkordb.schema import INTERNAL_LABELS, NODE_LABELS, RELATIONSHIP_TYPES
from evigraph.store.falkordb.section import FalkorSection
from evigraph.store.graph_rewrite import DocumentGraph, FoundPage
from evigraph.store.location import StoreLocation
from evigraph.store.merging import EntityMerge, EntityRecord, MergeOutcome

MERGE_LOCK = "merge"
_SAMPLE_KEYS = 3
_SCHEMA_SAMPLE = 1000
"""Nodes (or edges) per label read to list its properties and the labels it connects."""
_KEY_PROPERTIES = ("id", "key", "name")


# -- schema ------------------------------------------------------------------------------------


def schema_tables(conn: Connection) -> list[TableInfo]:
    """Labels and relationship types as a Cypher author needs them: properties (from a sample of
    each), counts, sample keys; internal labels left out."""
    labels = sorted({r["label"] for r in conn.read_sync("CALL db.labels() YIELD label RETURN label")} | NODE_LABELS)
    types = sorted(
        {
            r["t"]
            for r in conn.read_sync("CALL db.relationshipTypes() YIELD relationshipType RETURN relationshipType AS t")
        }
        | RELATIONSHIP_TYPES
    )
    out = []
    for name in labels:
        if name in INTERNAL_LABELS:
            continue
        props = _properties(conn, f"MATCH (n:`{name}`) WITH n LIMIT {_SCHEMA_SAMPLE}")
        info = TableInfo(name=name, kind="node", properties=props)
        info.rows = int(conn.read_sync(f"MATCH (n:`{name}`) RETURN count(n) AS n")[0]["n"])
        key = next((k for k in _KEY_PROPERTIES if k in props), next(iter(props), None))
        if key:
            info.sample_keys = [
                str(r["v"])
                for r in conn.read_sync(
                    f"MATCH (n:`{name}`) WHERE n.`{key}` IS NOT NULL RETURN n.`{key}` AS v LIMIT {_SAMPLE_KEYS}"
                )
            ]
        out.append(info)
    for name in types:
        props = _properties(conn, f"MATCH ()-[n:`{name}`]->() WITH n LIMIT {_SCHEMA_SAMPLE}")
        info = TableInfo(name=name, kind="relationship", properties=props)
        info.rows = int(conn.read_sync(f"MATCH ()-[r:`{name}`]->() RETURN count(r) AS n")[0]["n"])
        info.connects = sorted(
            {
                (r["a"], r["b"])
                for r in conn.read_sync(
                    f"""MATCH (a)-[r:`{name}`]->(b) WITH a, b LIMIT {_SCHEMA_SAMPLE}
                        RETURN DISTINCT labels(a)[0] AS a, labels(b)[0] AS b"""
                )
                if r["a"] and r["b"]
            }
        )
        out.append(info)
    return out


def _properties(conn: Connection, sample: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for r in conn.read_sync(f"{sample} UNWIND keys(n) AS k RETURN k, typeOf(n[k]) AS t, count(*) AS c ORDER BY c DESC"):
        if str(r["k"]).lower() not in HIDDEN_PROPERTIES and r["k"] not in found:
            found[r["k"]] = str(r["t"])
    return found


# -- the mixin ---------------------------------------------------------------------------------


class FalkorMaintenanceOps(FalkorSection):
    """The GraphStore maintenance, Cypher, schema and merge sections for `FalkorStore`."""

    location: StoreLocation

    async def check(self, repair: bool = False) -> IntegrityReport:
        note = not self.read_only
        found = await self._read(lambda: inspect(self.conn, note_pending=note))
        report = IntegrityReport(found=problems(found))
        if not repair or not report.found:
            report.remaining = report.found
            return report
        if self.read_only:
            raise StoreError("cannot repair a knowledge base opened read-only", hint="open it writable to repair")

        def work() -> dict[str, int]:
            with server_lock(self.conn, MERGE_LOCK) as lock:
                again = inspect(self.conn, note_pending=True)  # under the lock: what is wrong now
                return repair_found(self.conn, again, lock.renew)

        try:
            report.repaired = await self._write(work)
        finally:
            self._journal.reset()
        report.remaining = problems(await self._read(lambda: inspect(self.conn, note_pending=True)))
        return report

    async def compact(self, progress: CompactProgress | None = None) -> CompactReport:
        """FalkorDB keeps a graph in memory and reuses the slots deleted nodes and edges free, so
        there is no file to rebuild: nothing is replaced, and the size (`graph_bytes`) is read
        once and reported as both before and after."""
        if self.read_only:
            raise StoreError(
                f"cannot compact {self.location.display}: it is open read-only", hint="open it writable to compact it"
            )
        started = time.monotonic()
        size = await asyncio.to_thread(graph_bytes, self.conn)
        if progress is not None:
            progress("verify", 1, 1)
        return CompactReport(
            db=self.location.display,
            bytes_before=size,
            bytes_after=size,
            rows=0,
            seconds=time.monotonic() - started,
            replaced=False,
        )

    async def cypher_query(
        self, cypher: str, params: dict[str, Any] | None = None, limit: int = 100, timeout_ms: int = 10_000
    ) -> list[dict[str, Any]]:
        """Agent-written Cypher: guarded, plan-checked, run by `GRAPH.RO_QUERY` within `timeout_ms`."""
        guarded, named = guard(cypher, check_params(params), row_cap=limit)
        conn = self.conn

        def work() -> QueryRows:
            with SLOTS:
                try:
                    if named:
                        known = {r["l"] for r in conn.read_sync("CALL db.labels() YIELD label RETURN label AS l")}
                        known |= {r["t"] for r in conn.read_sync(TYPES_QUERY)}
                        unknown = sorted(named - known)
                        if unknown:
                            raise ReadOnlyQueryError(
                                f"this knowledge base has no label or relationship type {', '.join(unknown)}",
                                hint="call get_ontology for the labels and relationship types this knowledge base has",
                            )
                    check_plan(str(conn.primary.explain(guarded.text, guarded.params)))
                    rows = conn.read_sync(guarded.text, guarded.params, timeout_ms=timeout_ms)
                except StoreError:  # refusals, timeouts, a lost connection: already typed
                    raise
                except Exception as exc:
                    raise query_failure(exc) from exc
                return bound_rows(rows, limit)

        return await asyncio.to_thread(work)

    async def schema_tables(self) -> list[TableInfo]:
        found: list[TableInfo] = await self.cache.fetch("schema", lambda: schema_tables(self.conn))
        return [t.model_copy(deep=True) for t in found]

    # -- resolution at finalize -------------------------------------------------------------

    async def entity_records(self) -> list[EntityRecord]:
        return await self._read(lambda: read_entity_records(self.conn.read_sync))

    async def merge_entities(self, merges: Sequence[EntityMerge]) -> MergeOutcome:
        if not merges:
            return MergeOutcome()

        def work() -> MergeOutcome:
            with server_lock(self.conn, MERGE_LOCK) as lock:
                return merging.merge_entities(self.conn, merges, renew=lock.renew)

        try:
            return await self._write(work)
        finally:
            self._journal.reset()  # mentions moved in documents anywhere: graph ranking reloads

    async def found_documents(self, after: str | None, limit: int) -> FoundPage:
        return await self._read(lambda: graph_rewrite.found_documents(self.conn, after, limit))

    async def replace_graphs(self, graphs: Sequence[DocumentGraph]) -> list[str]:
        if not graphs:
            return []
        changed = await self._read(lambda: graph_rewrite.changes(self.conn, graphs))
        if not changed.keys:
            return []  # nothing written: the generation stays, and saved indexes with it
        try:
            return await self._write(lambda: graph_rewrite.replace_graphs(self.conn, changed))
        finally:
            self._journal.reset()  # mentions moved: graph ranking reloads, as after a merge

    async def entity_redirects(self) -> dict[str, str]:
        found = await self._read(lambda: read_redirects(merging.primary_reader(self.conn)))
        return {old: new for old, (new, _) in found.items()}


def repair_found(conn: Connection, found: Findings, renew: Callable[[], None]) -> dict[str, int]:
    return repair(conn, found, renew=renew, grace_s=PENDING_GRACE_S)


_DUMP_LENGTH = "return string.len(redis.call('DUMP', KEYS[1]))"


def graph_bytes(conn: Connection) -> int:
    """What the graph takes on the server, in bytes: the server's account of its memory
    (`GRAPH.MEMORY USAGE`, in whole MiB); a graph under 1 MiB, which that reports as 0, by the
    length of its serialization (`DUMP`, what a snapshot writes to disk), which is quick to
    make at that size but blocks the server for seconds on a large graph, so is not used there.
    0 when the server offers neither."""
    try:
        reply = conn.command("GRAPH.MEMORY", "USAGE", conn.graph_name)
        pairs = dict(zip(reply[::2], reply[1::2], strict=False)) if isinstance(reply, list) else dict(reply)
        mib = float(pairs.get("total_graph_sz_mb", pairs.get(b"total_graph_sz_mb", 0)) or 0)
    except Exception:  # a server before GRAPH.MEMORY
        mib = 0.0
    if mib > 0:
        return int(mib * 2**20)
    try:
        return int(conn.command("EVAL", _DUMP_LENGTH, 1, conn.graph_name) or 0)
    except Exception:  # scripting refused to this user: no measure
        return 0
