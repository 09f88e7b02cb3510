"""Decisions on a FalkorDB graph: the `GraphStore` decisions section for `FalkorStore`.

The behaviour is the embedded store's (`store/embedded/decisions.py`), its checks and plans
written once (`store/core/decision_writes.py`, `store/core/trace_writes.py`); how it stays whole is
`traces.py`'s: each write holds its project's lock (`project_locks`), reads what it checks, and
writes as one query. Two checks cannot rely on the lock alone:

- A passage support's document must still be at the version it was read from. Document writes
  take no project lock, so the query creating the supports requires the versions
  (`WritePlan.require_versions`): a version switched in before it refuses the decision
  (`StaleEvidenceError`); one switched in after is flagged by `flag_documents`.
- `flag_documents` takes the lock of every project with supports on the changed documents, in
  sorted order, and flags their decisions in one query. A decision's state changes only under
  its project's lock, so a cited decision checked active stays so until the write is done.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from evigraph.store.core.decision_writes import DOCUMENT_SUPPORTS, Review, review_queue
from evigraph.store.core.schema_names import TRACE_DECISION, TRACE_SUPPORT
from evigraph.store.core.write_plan import utc_now
from evigraph.store.falkordb.connection import read_only_error
from evigraph.store.falkordb.locks import project_locks
from evigraph.store.falkordb.traces import FalkorTraceOps, Primary, decision_reads
from evigraph.trace_records import ReviewProgress


class FalkorDecisionOps(FalkorTraceOps):
    """The decisions section of `FalkorStore` that is its own: review (its reads are `TraceReadOps`',
    its writes `TraceWriteOps`')."""

    async def continue_decision_review(self, project: str | None = None, limit: int = 20) -> ReviewProgress:
        if self.read_only:
            raise read_only_error()
        return await asyncio.to_thread(self._continue_review, project, limit)

    def _continue_review(self, project: str | None, limit: int) -> ReviewProgress:
        self.catch_up_flags()
        conn = Primary(self.conn)
        first, left = review_queue(project, limit)
        projects = {q["project"] for q in conn.read_sync(*first)}
        with project_locks(self.conn, projects):
            # Read again under the locks: another process may have taken part of the queue meanwhile.
            queued = [q for q in conn.read_sync(*first) if q["project"] in projects]
            review = Review(decision_reads(conn), utc_now())
            review.carry(queued)
            self._commit(review.plan())
        remaining = int(conn.read_sync(*left)[0]["n"])
        return ReviewProgress(processed=len(queued), flagged=review.flagged, remaining=remaining)

    def catch_up_flags(self) -> None:
        """Flag what a document change left unflagged because its writer stopped between the
        change and the flags: a version past the document's `flagged_through`, or a document
        gone while active decisions still rest on it."""
        conn = Primary(self.conn)
        behind = {
            r["key"]: int(r["version"])
            for r in conn.read_sync(
                "MATCH (d:Document) WHERE d.flagged_through IS NOT NULL AND d.flagged_through < d.version "
                "RETURN d.key AS key, d.version AS version"
            )
        }
        gone = conn.read_sync(
            f"MATCH (s:{TRACE_SUPPORT}) WHERE s.current AND s.kind = 'passage' "
            f"WITH s MATCH (x:{TRACE_DECISION} {{id: s.decision}}) WHERE x.state = 'active' "
            "WITH DISTINCT s.document AS key OPTIONAL MATCH (d:Document {key: key}) "
            "WITH key, d WHERE d IS NULL RETURN key"
        )
        changes: dict[str, int | None] = {**behind, **{r["key"]: None for r in gone}}
        if changes:
            self.flag_documents(changes)

    def flag_documents(self, changes: Mapping[str, int | None]) -> None:
        """Flag the standing decisions resting on a passage of a document version that `changes`
        replaced (key -> new version) or deleted (key -> None). Called by the document writes
        after their switch, so every support it must flag is already visible (see the module)."""
        if not changes:
            return
        self._flag_documents(changes)
        flagged = [{"key": k, "version": v} for k, v in changes.items() if v is not None]
        if flagged:  # only now: a writer stopped before this line leaves the document behind (catch_up_flags)
            self.conn.write_sync(
                "UNWIND $rows AS r MATCH (d:Document {key: r.key}) WHERE coalesce(d.flagged_through, 0) < r.version "
                "SET d.flagged_through = r.version",
                {"rows": flagged},
            )

    def _flag_documents(self, changes: Mapping[str, int | None]) -> None:
        conn = Primary(self.conn)
        first = conn.read_sync(DOCUMENT_SUPPORTS, {"keys": list(changes)})
        if not first:
            return
        with project_locks(self.conn, {r["project"] for r in first}):
            review = Review(decision_reads(conn), utc_now())
            review.flag_documents(conn.read_sync(DOCUMENT_SUPPORTS, {"keys": list(changes)}), changes)
            self._commit(review.plan())
