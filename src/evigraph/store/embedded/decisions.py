"""Decisions in the embedded graph: the `GraphStore` decisions section for `EmbeddedStore`.

Everything a decision's trust depends on is checked in the transaction that writes it: a passage
support's document must still be at the version it was read from, a decision it rests on must
still stand. A document changing flags the decisions resting on it in the same transaction as the
change (`flag_documents`, called by the document writes), so no path that changes a document (CLI,
Python, MCP, another process) can leave a decision trusting text that is gone. Flags then reach
the decisions resting on a flagged one through a queue, a bounded step at a time
(`continue_decision_review`): a hub decision cited by thousands must not make one ingest unbounded. The
checks and plans are `store/core/decision_writes.py`'s; this module runs them in a transaction.
"""

from __future__ import annotations

from collections.abc import Mapping

from evigraph.store.core.decision_writes import DOCUMENT_SUPPORTS, Review, review_queue
from evigraph.store.core.write_plan import utc_now
from evigraph.store.embedded.executor import Tx
from evigraph.store.embedded.traces import EmbeddedTraceOps, decision_reads, run_plan
from evigraph.trace_records import ReviewProgress


class DecisionOps(EmbeddedTraceOps):
    """The decisions section of `EmbeddedStore` that is its own: review (its reads are `TraceReadOps`',
    its writes `TraceWriteOps`')."""

    async def continue_decision_review(self, project: str | None = None, limit: int = 20) -> ReviewProgress:
        def work(tx: Tx) -> ReviewProgress:
            first, left = review_queue(project, limit)
            queued = tx.rows(*first)
            review = Review(decision_reads(tx), utc_now())
            review.carry(queued)
            run_plan(tx, review.plan())
            remaining = int(tx.rows(*left)[0]["n"])
            return ReviewProgress(processed=len(queued), flagged=review.flagged, remaining=remaining)

        return await self.executor.write(work)


def flag_documents(tx: Tx, changes: Mapping[str, int | None]) -> None:
    """Flag the standing decisions resting on a passage of a document version that `changes`
    replaced (key -> new version) or deleted (key -> None); part of the change's transaction."""
    if not changes:
        return
    review = Review(decision_reads(tx), utc_now())
    review.flag_documents(tx.rows(DOCUMENT_SUPPORTS, {"keys": list(changes)}), changes)
    run_plan(tx, review.plan())
