"""Decisions on a FalkorDB graph: the `GraphStore` decisions section for `FalkorStore`.

The behaviour is the embedded store's (`store/embedded/decisions.py`); how it stays whole is
`traces.py`'s: each write holds its project's lock (`project_locks`), reads what it checks, and
writes as one query. Two checks cannot rely on the lock alone:

- A passage support's document must still be at the version it was read from. Document writes
  take no project lock, so the query creating the supports requires the versions
  (`Writes.require_versions`): a version switched in before it refuses the decision
  (`StaleEvidenceError`); one switched in after is flagged by `flag_documents`.
- `flag_documents` takes the lock of every project with supports on the changed documents, in
  sorted order, and flags their decisions in one query. A decision's state changes only under
  its project's lock, so a cited decision checked active stays so until the write is done.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from evigraph.errors import DecisionStateError, StaleEvidenceError
from evigraph.store.base import MAX_CAUSES
from evigraph.store.decision_reads import DECISION_FIELDS, SUPPORT_FIELDS, DecisionReads, missing_decision
from evigraph.store.falkordb.locks import project_locks
from evigraph.store.falkordb.traces import (
    FalkorTraceOps,
    Primary,
    Reader,
    Writes,
    existing_task,
    parsed,
    read_only_error,
    stamp,
    utc_now,
)
from evigraph.store.schema_names import TRACE_DECISION, TRACE_REVIEW, TRACE_SUPPORT, trace_key
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


class FalkorDecisionOps(FalkorTraceOps):
    """The decisions section of `FalkorStore`."""

    async def record_decision(
        self, project: str, agent: str, decision: NewDecision, request: TraceRequest | None = None
    ) -> DecisionRecord:
        def work(writes: Writes) -> DecisionRecord:
            conn = Primary(self.conn)
            existing_task(conn, project, decision.task)
            old = None
            if decision.supersedes is not None:
                old = _reads(conn).standing(project, decision.supersedes, "supersede")
                if any(s.kind == "decision" and s.ref == old.id for s in decision.supports):
                    raise DecisionStateError(
                        "a decision cannot rest on the decision it supersedes",
                        hint="cite the evidence the old decision rested on instead",
                    )
            supports = _check_supports(conn, project, decision.supports, writes)
            new_id = str(uuid.uuid4())
            now = utc_now()
            added = _new_supports(agent, 0, supports, "recorded", now)
            made = DecisionRecord(
                id=new_id,
                task=decision.task,
                choice_key=decision.choice_key,
                conclusion=decision.conclusion,
                rationale=decision.rationale,
                assumptions=list(decision.assumptions),
                open_questions=list(decision.open_questions),
                state="active",
                agent=agent,
                created_at=now,
                updated_at=now,
                supersedes=decision.supersedes,
                explanation=decision.explanation,
                supports=added,
            )
            row = {
                **made.model_dump(exclude={"supports", "review"}),
                "created_at": stamp(now),
                "updated_at": stamp(now),
                "project": project,
                "review": "[]",
                "supports": len(decision.supports),
                "embedding": [float(x) for x in decision.vector] if decision.vector else None,
            }
            writes.create(TRACE_DECISION, [row])
            writes.create(TRACE_SUPPORT, _support_rows(project, new_id, added))
            if old is not None:
                writes.update(
                    TRACE_DECISION,
                    [{"id": old.id, "state": "superseded", "superseded_by": new_id, "updated_at": stamp(now)}],
                )
                writes.merge(TRACE_REVIEW, [_queued(project, old.id, now)])
            return made

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
        def work(writes: Writes) -> DecisionRecord:
            conn = Primary(self.conn)
            found = _reads(conn).standing(project, decision_id, "reaffirm")
            fresh = _check_supports(conn, project, supports, writes)
            resting = [s.ref for s in found.supports if s.kind == "decision"]
            for cited in _reads(conn).fetch(project, resting):
                if cited.state != "active":
                    raise DecisionStateError(
                        f"decision {decision_id} rests on decision {cited.id}, which is {cited.state}",
                        hint="reaffirm or supersede that decision first, or supersede this one",
                    )
            now = utc_now()
            count = _support_count(conn, decision_id)
            writes.update(
                TRACE_SUPPORT,
                [
                    {"id": trace_key(decision_id, s.ordinal), "current": False}
                    for s in found.supports
                    if s.kind == "passage"
                ],
            )
            added = _new_supports(agent, count, fresh, "reaffirmed", now)
            writes.create(TRACE_SUPPORT, _support_rows(project, decision_id, added))
            writes.update(
                TRACE_DECISION,
                [
                    {
                        "id": decision_id,
                        "state": "active",
                        "review": "[]",
                        "explanation": explanation,
                        "updated_at": stamp(now),
                        "supports": count + len(supports),
                    }
                ],
            )
            writes.delete(TRACE_REVIEW, [trace_key(project, decision_id)])
            kept = [s for s in found.supports if s.kind != "passage"]
            return found.model_copy(
                update={
                    "state": "active",
                    "review": [],
                    "explanation": explanation,
                    "updated_at": now,
                    "supports": [*kept, *added],
                }
            )

        return await self._requested(project, request, DecisionRecord, work)

    async def reject_decision(
        self, project: str, agent: str, decision_id: str, reason: str, request: TraceRequest | None = None
    ) -> DecisionRecord:
        def work(writes: Writes) -> DecisionRecord:
            found = _reads(Primary(self.conn)).standing(project, decision_id, "reject")
            now = utc_now()
            writes.update(
                TRACE_DECISION,
                [{"id": decision_id, "state": "rejected", "explanation": reason, "updated_at": stamp(now)}],
            )
            writes.merge(TRACE_REVIEW, [_queued(project, decision_id, now)])
            return found.model_copy(update={"state": "rejected", "explanation": reason, "updated_at": now})

        return await self._requested(project, request, DecisionRecord, work)

    async def get_decisions(self, project: str, ids: Sequence[str]) -> list[DecisionRecord]:
        return await asyncio.to_thread(_reads(self.conn).fetch, project, ids)

    async def list_decisions(
        self,
        project: str,
        task: str | None = None,
        states: Sequence[DecisionState] | None = None,
        after_id: str | None = None,
        limit: int = 50,
    ) -> list[DecisionRecord]:
        return await asyncio.to_thread(_reads(self.conn).page, project, task, states, after_id, limit)

    async def support_history(
        self, project: str, decision_id: str, after_ordinal: int = -1, limit: int = 20
    ) -> list[SupportRecord]:
        return await asyncio.to_thread(_reads(self.conn).history, project, decision_id, after_ordinal, limit)

    async def decision_texts(self, project: str, states: Sequence[DecisionState]) -> list[DecisionText]:
        return await asyncio.to_thread(_reads(self.conn).texts, project, states)

    async def decision_conflicts(self, project: str, limit: int = 20) -> list[list[DecisionRecord]]:
        return await asyncio.to_thread(_reads(self.conn).conflicts, project, limit)

    async def continue_review(self, project: str | None = None, limit: int = 20) -> ReviewProgress:
        if self.read_only:
            raise read_only_error()
        return await asyncio.to_thread(self._continue_review, project, limit)

    def _continue_review(self, project: str | None, limit: int) -> ReviewProgress:
        self.catch_up_flags()
        conn = Primary(self.conn)
        scope = "WHERE q.project = $project " if project is not None else ""
        params: dict[str, Any] = {"project": project, "limit": limit} if project is not None else {"limit": limit}
        queue = f"MATCH (q:{TRACE_REVIEW}) {scope}RETURN q.id AS id, q.project AS project, q.decision AS decision "
        first = conn.read_sync(queue + "ORDER BY q.at, q.id LIMIT $limit", params)
        projects = {q["project"] for q in first}
        with project_locks(self.conn, projects):
            # Read again under the locks: another process may have taken part of the queue meanwhile.
            queued = [
                q
                for q in conn.read_sync(queue + "ORDER BY q.at, q.id LIMIT $limit", params)
                if q["project"] in projects
            ]
            now = utc_now()
            review = _Review(conn, now)
            for q in queued:
                cited = review.decisions(q["project"], [q["decision"]])
                change: ReviewChange = "needs_review"
                if cited and cited[0].state in ("superseded", "rejected"):
                    change = "superseded" if cited[0].state == "superseded" else "rejected"
                dependents = [
                    r["d"]
                    for r in conn.read_sync(
                        f"MATCH (s:{TRACE_SUPPORT}) WHERE s.ref = $ref AND s.project = $project "
                        "AND s.kind = 'decision' AND s.current RETURN DISTINCT s.decision AS d",
                        {"project": q["project"], "ref": q["decision"]},
                    )
                ]
                cause = ReviewCause(change=change, decision=q["decision"], at=now)
                review.flag(q["project"], {d: [cause] for d in dependents})
                review.dequeue(q["id"])
            review.commit(self)
        left = conn.read_sync(f"MATCH (q:{TRACE_REVIEW}) {scope}RETURN count(q) AS n", params)
        return ReviewProgress(processed=len(queued), flagged=review.flagged, remaining=int(left[0]["n"]))

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
        query = (
            f"MATCH (s:{TRACE_SUPPORT}) WHERE s.document IN $keys AND s.current AND s.kind = 'passage' "
            "RETURN s.project AS project, s.decision AS decision, s.document AS document, s.version AS version"
        )
        first = conn.read_sync(query, {"keys": list(changes)})
        if not first:
            return
        with project_locks(self.conn, {r["project"] for r in first}):
            rows = conn.read_sync(query, {"keys": list(changes)})
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
                    at=now,
                )
                causes = by_project.setdefault(r["project"], {}).setdefault(r["decision"], [])
                if cause.document not in {c.document for c in causes}:
                    causes.append(cause)
            review = _Review(conn, now)
            for project, causes_of in sorted(by_project.items()):
                review.flag(project, causes_of)
            review.commit(self)


class _Review:
    """Flags gathered in memory in the order the embedded store applies them one by one, then
    written as one query (`commit`)."""

    def __init__(self, conn: Reader, now: datetime) -> None:
        self.conn = conn
        self.now = now
        self.flagged: list[str] = []
        self._seen: dict[tuple[str, str], DecisionRecord] = {}
        self._updates: dict[str, dict[str, Any]] = {}
        self._queue: dict[str, dict[str, Any]] = {}
        self._dequeued: list[str] = []

    def decisions(self, project: str, ids: Sequence[str]) -> list[DecisionRecord]:
        """`DecisionReads.fetch`, seeing the flags this review already gathered."""
        missing = [i for i in ids if (project, i) not in self._seen]
        for found in _reads(self.conn).fetch(project, missing):
            self._seen[project, found.id] = found
        return [self._seen[project, i] for i in ids if (project, i) in self._seen]

    def flag(self, project: str, causes_of: Mapping[str, list[ReviewCause]]) -> None:
        for found in self.decisions(project, list(causes_of)):
            if found.state not in OPEN_STATES:
                continue
            review = [*found.review, *causes_of[found.id]][:MAX_CAUSES]
            self._seen[project, found.id] = found.model_copy(update={"state": "needs_review", "review": review})
            self._updates[found.id] = {
                "id": found.id,
                "state": "needs_review",
                "review": json.dumps([c.model_dump(mode="json") for c in review]),
                "updated_at": stamp(self.now),
            }
            if found.state == "active":
                self.flagged.append(found.id)
                queued = _queued(project, found.id, self.now)
                self._queue[queued["id"]] = queued
                if queued["id"] in self._dequeued:
                    self._dequeued.remove(queued["id"])

    def dequeue(self, queue_id: str) -> None:
        self._queue.pop(queue_id, None)
        self._dequeued.append(queue_id)

    def commit(self, ops: FalkorTraceOps) -> None:
        writes = Writes()
        writes.delete(TRACE_REVIEW, self._dequeued)
        writes.update(TRACE_DECISION, list(self._updates.values()))
        writes.merge(TRACE_REVIEW, list(self._queue.values()))
        ops._commit(writes)


def _queued(project: str, decision_id: str, now: datetime) -> dict[str, Any]:
    return {"id": trace_key(project, decision_id), "project": project, "decision": decision_id, "at": stamp(now)}


def _check_supports(conn: Reader, project: str, supports: Sequence[NewSupport], writes: Writes) -> list[NewSupport]:
    """The supports with their documents' content hashes; a passage read from a version no longer
    current, or a decision that does not stand, is refused. The versions are required again by
    the write query itself (`writes`), which the server checks with the write."""
    docs = [s.document for s in supports if s.kind == "passage" and s.document is not None]
    current = {
        r["key"]: (r["version"], r["hash"])
        for r in conn.read_sync(
            "MATCH (d:Document) WHERE d.key IN $keys RETURN d.key AS key, d.version AS version, d.content_hash AS hash",
            {"keys": docs},
        )
    }

    def check(current: Mapping[str, tuple[int, str]]) -> None:
        for s in supports:
            if s.kind == "passage":
                now = current.get(s.document or "")
                if now is None or now[0] != s.version:
                    state = "was deleted" if now is None else f"is now at version {now[0]}"
                    raise StaleEvidenceError(
                        f"{s.ref} was read from version {s.version} of {s.document!r}, which {state}",
                        hint="search again and read the current passage with read_passages, then cite it",
                    )

    def refused() -> None:
        check(
            {
                r["key"]: (r["version"], r["hash"])
                for r in conn.read_sync(
                    "MATCH (d:Document) WHERE d.key IN $keys RETURN d.key AS key, d.version AS version, "
                    "d.content_hash AS hash",
                    {"keys": docs},
                )
            }
        )
        raise StaleEvidenceError(
            "a document a passage support was read from changed while the decision was written",
            hint="search again and read the current passage with read_passages, then cite it",
        )

    check(current)
    if docs:
        writes.require_versions({d: current[d][0] for d in docs}, refused)
    cited = [s.ref for s in supports if s.kind == "decision"]
    found = {d.id: d for d in _reads(conn).fetch(project, cited)}
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


def _new_supports(
    agent: str, first: int, supports: Sequence[NewSupport], origin: SupportOrigin, now: datetime
) -> list[SupportRecord]:
    """The records of `supports` numbered from `first`; `_support_rows` are what is written."""
    return [
        SupportRecord.model_validate(
            {**s.model_dump(), "ordinal": first + i, "origin": origin, "current": True, "agent": agent, "added_at": now}
        )
        for i, s in enumerate(supports)
    ]


def _support_rows(project: str, decision_id: str, supports: Sequence[SupportRecord]) -> list[dict[str, Any]]:
    return [
        {
            **s.model_dump(),
            "id": trace_key(decision_id, s.ordinal),
            "decision": decision_id,
            "project": project,
            "added_at": stamp(s.added_at),
        }
        for s in supports
    ]


def _support_count(conn: Reader, decision_id: str) -> int:
    found = conn.read_sync(
        f"MATCH (s:{TRACE_SUPPORT}) WHERE s.decision = $id RETURN count(s) AS n", {"id": decision_id}
    )
    return int(found[0]["n"])


_DECISIONS = (
    f"UNWIND $ids AS i MATCH (d:{TRACE_DECISION} {{id: i}}) WHERE d.project = $project RETURN {DECISION_FIELDS}"
)
_SUPPORTS = (
    f"UNWIND $ids AS i MATCH (s:{TRACE_SUPPORT} {{decision: i}}) WHERE s.current "
    f"RETURN {SUPPORT_FIELDS} ORDER BY s.ordinal"
)


def _reads(conn: Reader) -> DecisionReads:
    return DecisionReads(conn.read_sync, _DECISIONS, _SUPPORTS, parsed, lower="toLower")  # FalkorDB has no lower()
