"""Decisions in the embedded graph: the `GraphStore` decisions section for `EmbeddedStore`.

Everything a decision's trust depends on is checked in the transaction that writes it: a passage
support's document must still be at the version it was read from, a decision it rests on must
still stand. A document changing flags the decisions resting on it in the same transaction as the
change (`flag_documents`, called by the document writes), so no path that changes a document (CLI,
Python, MCP, another process) can leave a decision trusting text that is gone. Flags then reach
the decisions resting on a flagged one through a queue, a bounded step at a time
(`continue_review`): a hub decision cited by thousands must not make one ingest unbounded.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from evigraph.errors import DecisionStateError, StaleEvidenceError
from evigraph.store.base import MAX_CAUSES
from evigraph.store.decision_reads import DECISION_FIELDS, SUPPORT_FIELDS, DecisionReads, missing_decision
from evigraph.store.embedded.executor import Tx
from evigraph.store.embedded.schema import TRACE_DECISION, TRACE_REVIEW, TRACE_SUPPORT
from evigraph.store.embedded.traces import TraceOps, as_utc, existing_task, utc_now
from evigraph.store.schema_names import trace_key
from evigraph.trace_records import (
    OPEN_STATES,
    DecisionRecord,
    DecisionState,
    DecisionText,
    NewDecision,
    NewSupport,
    ReviewCause,
    ReviewChange,
    ReviewProgress,
    SupportOrigin,
    SupportRecord,
    TraceRequest,
)


class DecisionOps(TraceOps):
    """The decisions section of `EmbeddedStore`."""

    async def record_decision(
        self, project: str, agent: str, decision: NewDecision, request: TraceRequest | None = None
    ) -> DecisionRecord:
        def work(tx: Tx) -> DecisionRecord:
            existing_task(tx, project, decision.task)
            old = None
            if decision.supersedes is not None:
                old = _reads(tx).standing(project, decision.supersedes, "supersede")
                if any(s.kind == "decision" and s.ref == old.id for s in decision.supports):
                    raise DecisionStateError(
                        "a decision cannot rest on the decision it supersedes",
                        hint="cite the evidence the old decision rested on instead",
                    )
            supports = _check_supports(tx, project, decision.supports)
            new_id = str(uuid.uuid4())
            now = utc_now()
            tx.execute(
                f"CREATE (:{TRACE_DECISION} {{id: $id, project: $project, task: $task, choice_key: $choice_key, "
                "conclusion: $conclusion, rationale: $rationale, assumptions: CAST($assumptions AS STRING[]), "
                "open_questions: CAST($open_questions AS STRING[]), state: 'active', agent: $agent, "
                "created_at: $now, updated_at: $now, supersedes: $supersedes, superseded_by: NULL, "
                "explanation: $explanation, review: '[]', supports: $count, "
                "embedding: CAST($vector AS FLOAT[])})",
                {
                    "id": new_id,
                    "project": project,
                    "task": decision.task,
                    "choice_key": decision.choice_key,
                    "conclusion": decision.conclusion,
                    "rationale": decision.rationale,
                    "assumptions": list(decision.assumptions),
                    "open_questions": list(decision.open_questions),
                    "agent": agent,
                    "now": now,
                    "supersedes": decision.supersedes,
                    "explanation": decision.explanation,
                    "count": len(decision.supports),
                    "vector": list(decision.vector) if decision.vector else None,
                },
            ).close()
            _add_supports(tx, project, agent, new_id, 0, supports, "recorded", now)
            if old is not None:
                tx.execute(
                    f"MATCH (d:{TRACE_DECISION} {{id: $id}}) SET d.state = 'superseded', d.superseded_by = $by, "
                    "d.updated_at = $now",
                    {"id": old.id, "by": new_id, "now": now},
                ).close()
                _enqueue(tx, project, old.id, now)
            return _reads(tx).fetch(project, [new_id])[0]

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
        def work(tx: Tx) -> DecisionRecord:
            found = _reads(tx).standing(project, decision_id, "reaffirm")
            fresh = _check_supports(tx, project, supports)
            resting = [s.ref for s in found.supports if s.kind == "decision"]
            for cited in _reads(tx).fetch(project, resting):
                if cited.state != "active":
                    raise DecisionStateError(
                        f"decision {decision_id} rests on decision {cited.id}, which is {cited.state}",
                        hint="reaffirm or supersede that decision first, or supersede this one",
                    )
            now = utc_now()
            tx.execute(
                f"MATCH (s:{TRACE_SUPPORT}) WHERE s.decision = $id AND s.kind = 'passage' SET s.current = false",
                {"id": decision_id},
            ).close()
            count = _support_count(tx, decision_id)
            _add_supports(tx, project, agent, decision_id, count, fresh, "reaffirmed", now)
            tx.execute(
                f"MATCH (d:{TRACE_DECISION} {{id: $id}}) SET d.state = 'active', d.review = '[]', "
                "d.explanation = $explanation, d.updated_at = $now, d.supports = $count",
                {"id": decision_id, "explanation": explanation, "now": now, "count": count + len(supports)},
            ).close()
            tx.execute(f"MATCH (q:{TRACE_REVIEW} {{id: $q}}) DELETE q", {"q": trace_key(project, decision_id)}).close()
            return _reads(tx).fetch(project, [decision_id])[0]

        return await self._requested(project, request, DecisionRecord, work)

    async def reject_decision(
        self, project: str, agent: str, decision_id: str, reason: str, request: TraceRequest | None = None
    ) -> DecisionRecord:
        def work(tx: Tx) -> DecisionRecord:
            _reads(tx).standing(project, decision_id, "reject")
            now = utc_now()
            tx.execute(
                f"MATCH (d:{TRACE_DECISION} {{id: $id}}) SET d.state = 'rejected', d.explanation = $reason, "
                "d.updated_at = $now",
                {"id": decision_id, "reason": reason, "now": now},
            ).close()
            _enqueue(tx, project, decision_id, now)
            return _reads(tx).fetch(project, [decision_id])[0]

        return await self._requested(project, request, DecisionRecord, work)

    async def get_decisions(self, project: str, ids: Sequence[str]) -> list[DecisionRecord]:
        return await self.executor.read(lambda tx: _reads(tx).fetch(project, ids) if self._traced(tx) else [])

    async def list_decisions(
        self,
        project: str,
        task: str | None = None,
        states: Sequence[DecisionState] | None = None,
        after_id: str | None = None,
        limit: int = 50,
    ) -> list[DecisionRecord]:
        return await self.executor.read(
            lambda tx: _reads(tx).page(project, task, states, after_id, limit) if self._traced(tx) else []
        )

    async def support_history(
        self, project: str, decision_id: str, after_ordinal: int = -1, limit: int = 20
    ) -> list[SupportRecord]:
        def work(tx: Tx) -> list[SupportRecord]:
            if not self._traced(tx):
                raise missing_decision(project, decision_id)
            return _reads(tx).history(project, decision_id, after_ordinal, limit)

        return await self.executor.read(work)

    async def decision_texts(self, project: str, states: Sequence[DecisionState]) -> list[DecisionText]:
        return await self.executor.read(lambda tx: _reads(tx).texts(project, states) if self._traced(tx) else [])

    async def decision_conflicts(self, project: str, limit: int = 20) -> list[list[DecisionRecord]]:
        return await self.executor.read(lambda tx: _reads(tx).conflicts(project, limit) if self._traced(tx) else [])

    async def continue_review(self, project: str | None = None, limit: int = 20) -> ReviewProgress:
        def work(tx: Tx) -> ReviewProgress:
            scope = "WHERE q.project = $project " if project is not None else ""
            queued = tx.rows(
                f"MATCH (q:{TRACE_REVIEW}) {scope}RETURN q.id AS id, q.project AS project, q.decision AS decision "
                "ORDER BY q.at, q.id LIMIT $limit",
                {"project": project, "limit": limit} if project is not None else {"limit": limit},
            )
            flagged: list[str] = []
            now = utc_now()
            for q in queued:
                cited = _reads(tx).fetch(q["project"], [q["decision"]])
                change: ReviewChange = "needs_review"
                if cited and cited[0].state in ("superseded", "rejected"):
                    change = "superseded" if cited[0].state == "superseded" else "rejected"
                dependents = tx.column(
                    f"MATCH (s:{TRACE_SUPPORT}) WHERE s.project = $project AND s.kind = 'decision' AND s.current "
                    "AND s.ref = $ref RETURN DISTINCT s.decision",
                    {"project": q["project"], "ref": q["decision"]},
                )
                cause = ReviewCause(change=change, decision=q["decision"], at=now.replace(tzinfo=UTC))
                flagged += _flag(tx, q["project"], {d: [cause] for d in dependents}, now)
                tx.execute(f"MATCH (q:{TRACE_REVIEW} {{id: $id}}) DELETE q", {"id": q["id"]}).close()
            left = tx.column(
                f"MATCH (q:{TRACE_REVIEW}) {scope}RETURN count(q)", {"project": project} if project is not None else {}
            )
            return ReviewProgress(processed=len(queued), flagged=flagged, remaining=int(left[0]))

        return await self.executor.write(work)


def flag_documents(tx: Tx, changes: Mapping[str, int | None]) -> None:
    """Flag the standing decisions resting on a passage of a document version that `changes`
    replaced (key -> new version) or deleted (key -> None); part of the change's transaction."""
    if not changes:
        return
    rows = tx.rows(
        f"MATCH (s:{TRACE_SUPPORT}) WHERE s.current AND s.kind = 'passage' AND s.document IN $keys "
        "RETURN s.project AS project, s.decision AS decision, s.document AS document, s.version AS version",
        {"keys": list(changes)},
    )
    now = utc_now()
    by_project: dict[str, dict[str, list[ReviewCause]]] = {}
    for r in rows:
        now_version = changes[r["document"]]
        if now_version is not None and now_version <= r["version"]:
            continue
        cause = ReviewCause(
            change="deleted" if now_version is None else "new_version",
            document=r["document"],
            read_version=r["version"],
            now_version=now_version,
            at=now.replace(tzinfo=UTC),
        )
        causes = by_project.setdefault(r["project"], {}).setdefault(r["decision"], [])
        if cause.document not in {c.document for c in causes}:
            causes.append(cause)
    for project, causes_of in by_project.items():
        _flag(tx, project, causes_of, now)


def _flag(tx: Tx, project: str, causes_of: Mapping[str, list[ReviewCause]], now: datetime) -> list[str]:
    """Mark standing decisions needs_review with their causes; queue the newly flagged ones so the
    flag reaches what rests on them. Returns the newly flagged ids."""
    flagged = []
    for found in _reads(tx).fetch(project, list(causes_of)):
        if found.state not in OPEN_STATES:
            continue
        review = [*found.review, *causes_of[found.id]][:MAX_CAUSES]
        tx.execute(
            f"MATCH (d:{TRACE_DECISION} {{id: $id}}) SET d.state = 'needs_review', d.review = $review, "
            "d.updated_at = $now",
            {"id": found.id, "review": json.dumps([c.model_dump(mode="json") for c in review]), "now": now},
        ).close()
        if found.state == "active":
            flagged.append(found.id)
            _enqueue(tx, project, found.id, now)
    return flagged


def _enqueue(tx: Tx, project: str, decision_id: str, now: datetime) -> None:
    tx.execute(
        f"MERGE (q:{TRACE_REVIEW} {{id: $id}}) SET q.project = $project, q.decision = $decision, q.at = $now",
        {"id": trace_key(project, decision_id), "project": project, "decision": decision_id, "now": now},
    ).close()


def _check_supports(tx: Tx, project: str, supports: Sequence[NewSupport]) -> list[NewSupport]:
    """The supports with their documents' content hashes, read in this transaction; a passage read
    from a version no longer current, or a decision that does not stand, is refused."""
    docs = [s.document for s in supports if s.kind == "passage" and s.document is not None]
    current = {
        r["key"]: (r["version"], r["hash"])
        for r in tx.rows(
            "MATCH (d:Document) WHERE d.key IN $keys RETURN d.key AS key, d.version AS version, d.content_hash AS hash",
            {"keys": docs},
        )
    }
    for s in supports:
        if s.kind == "passage":
            now = current.get(s.document or "")
            if now is None or now[0] != s.version:
                state = "was deleted" if now is None else f"is now at version {now[0]}"
                raise StaleEvidenceError(
                    f"{s.ref} was read from version {s.version} of {s.document!r}, which {state}",
                    hint="search again and read the current passage with read_passages, then cite it",
                )
    cited = [s.ref for s in supports if s.kind == "decision"]
    found = {d.id: d for d in _reads(tx).fetch(project, cited)}
    for ref in cited:
        if ref not in found:
            raise missing_decision(project, ref)
        if found[ref].state != "active":
            raise DecisionStateError(
                f"decision {ref} is {found[ref].state}; a decision can only rest on an active one",
                hint="cite an active decision (search_decisions), or the evidence itself",
            )
    return [
        s.model_copy(update={"content_hash": current[s.document][1]}) if s.kind == "passage" and s.document else s
        for s in supports
    ]


def _add_supports(
    tx: Tx,
    project: str,
    agent: str,
    decision_id: str,
    first: int,
    supports: Sequence[NewSupport],
    origin: SupportOrigin,
    now: datetime,
) -> None:
    rows = [
        {
            **s.model_dump(),
            "id": trace_key(decision_id, first + i),
            "ordinal": first + i,
            "decision": decision_id,
            "project": project,
            "origin": origin,
            "agent": agent,
            "now": now,
        }
        for i, s in enumerate(supports)
    ]
    tx.run_batched(
        f"""UNWIND $rows AS r
           CREATE (:{TRACE_SUPPORT} {{id: r.id, project: r.project, decision: r.decision, ordinal: r.ordinal,
               kind: r.kind, ref: r.ref, document: CAST(r.document AS STRING), version: CAST(r.version AS INT64),
               content_hash: CAST(r.content_hash AS STRING), note: CAST(r.note AS STRING), origin: r.origin,
               current: true, agent: r.agent, added_at: r.now}})""",
        rows,
    )


def _support_count(tx: Tx, decision_id: str) -> int:
    found = tx.column(f"MATCH (s:{TRACE_SUPPORT}) WHERE s.decision = $id RETURN count(s)", {"id": decision_id})
    return int(found[0])


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


def _reads(tx: Tx) -> DecisionReads:
    return DecisionReads(tx.rows, _DECISIONS, _SUPPORTS, as_utc)
