"""Changing decisions, written once for both backends: the checks a decision's supports must pass,
the rows its supports and queue entries are written as, and review (flagging the standing
decisions that rest on changed text or on a flagged decision).

Everything here reads through `DecisionReads` and plans its writes (`WritePlan`); the backend
decides how the reads and the plan stay one change (`store/embedded/decisions.py`: the
transaction that writes; `store/falkordb/decisions.py`: project locks and one guarded query).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from evigraph.errors import DecisionStateError, StaleEvidenceError
from evigraph.store.base import MAX_CAUSES
from evigraph.store.core.decision_reads import DecisionReads, missing_decision
from evigraph.store.core.schema_names import TRACE_DECISION, TRACE_REVIEW, TRACE_SUPPORT, trace_key
from evigraph.store.core.write_plan import WritePlan, utc_now
from evigraph.trace_records import (
    OPEN_STATES,
    DecisionRecord,
    NewDecision,
    NewSupport,
    ReviewCause,
    ReviewChange,
    SupportOrigin,
    SupportRecord,
)

DOCUMENT_SUPPORTS = (
    f"MATCH (s:{TRACE_SUPPORT}) WHERE s.document IN $keys AND s.current AND s.kind = 'passage' "
    "RETURN s.project AS project, s.decision AS decision, s.document AS document, s.version AS version"
)
"""`$keys` -> the current passage supports on those documents (what a document change flags)."""

_VERSIONS = "MATCH (d:Document) WHERE d.key IN $keys RETURN d.key AS key, d.version AS version, d.content_hash AS hash"


Query = tuple[str, dict[str, Any]]


def review_queue(project: str | None, limit: int) -> tuple[Query, Query]:
    """The queries of the first `limit` queue entries and of how many are queued, in one project or all."""
    scope, params = ("WHERE q.project = $project ", {"project": project}) if project is not None else ("", {})
    return (
        (
            f"MATCH (q:{TRACE_REVIEW}) {scope}RETURN q.id AS id, q.project AS project, q.decision AS decision "
            "ORDER BY q.at, q.id LIMIT $limit",
            {**params, "limit": limit},
        ),
        (f"MATCH (q:{TRACE_REVIEW}) {scope}RETURN count(q) AS n", params),
    )


def check_supports(
    reads: DecisionReads, plan: WritePlan, project: str, supports: Sequence[NewSupport], subject: str = "decision"
) -> list[NewSupport]:
    """The supports with their documents' content hashes; a passage read from a version no longer
    current, or a decision that does not stand, is refused. The versions are required again by
    `plan`, for a backend whose checks and writes are not one transaction. `subject` names what
    rests on them (a decision, a step) in the errors."""
    docs = [s.document for s in supports if s.kind == "passage" and s.document is not None]

    def versions() -> dict[str, tuple[int, str]]:
        return {r["key"]: (r["version"], r["hash"]) for r in reads.read(_VERSIONS, {"keys": docs})}

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
        check(versions())
        raise StaleEvidenceError(
            f"a document a passage support was read from changed while the {subject} was written",
            hint="search again and read the current passage with read_passages, then cite it",
        )

    current = versions()
    check(current)
    if docs:
        plan.require_versions({d: current[d][0] for d in docs}, refused)
    cited = [s.ref for s in supports if s.kind == "decision"]
    found = {d.id: d for d in reads.fetch(project, cited)}
    for ref in cited:
        if ref not in found:
            raise missing_decision(project, ref)
        if found[ref].state != "active":
            raise DecisionStateError(
                f"decision {ref} is {found[ref].state}; a {subject} can only rest on an active one",
                hint="cite an active decision (search_decisions), or the evidence itself",
            )
    return [
        s.model_copy(update={"content_hash": current[s.document][1]}) if s.kind == "passage" and s.document else s
        for s in supports
    ]


def record(reads: DecisionReads, plan: WritePlan, project: str, agent: str, decision: NewDecision) -> DecisionRecord:
    """A new active decision (its task checked by the caller), superseding `decision.supersedes`."""
    old = None
    if decision.supersedes is not None:
        old = reads.standing(project, decision.supersedes, "supersede")
        if any(s.kind == "decision" and s.ref == old.id for s in decision.supports):
            raise DecisionStateError(
                "a decision cannot rest on the decision it supersedes",
                hint="cite the evidence the old decision rested on instead",
            )
    supports = check_supports(reads, plan, project, decision.supports)
    new_id = str(uuid.uuid4())
    now = utc_now()
    added = new_supports(agent, 0, supports, "recorded", now)
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
        "project": project,
        "review": "[]",
        "supports": len(decision.supports),
        "embedding": [float(x) for x in decision.vector] if decision.vector else None,
    }
    plan.create(TRACE_DECISION, [row])
    plan.create(TRACE_SUPPORT, support_rows(project, new_id, added))
    if old is not None:
        plan.update(TRACE_DECISION, [{"id": old.id, "state": "superseded", "superseded_by": new_id, "updated_at": now}])
        plan.merge(TRACE_REVIEW, [queued(project, old.id, now)])
    return made


def reaffirm(
    reads: DecisionReads,
    plan: WritePlan,
    project: str,
    agent: str,
    decision_id: str,
    supports: Sequence[NewSupport],
    explanation: str,
) -> DecisionRecord:
    """The decision active again on `supports`, which replace its passage supports."""
    found = reads.standing(project, decision_id, "reaffirm")
    fresh = check_supports(reads, plan, project, supports)
    resting = [s.ref for s in found.supports if s.kind == "decision"]
    for cited in reads.fetch(project, resting):
        if cited.state != "active":
            raise DecisionStateError(
                f"decision {decision_id} rests on decision {cited.id}, which is {cited.state}",
                hint="reaffirm or supersede that decision first, or supersede this one",
            )
    now = utc_now()
    count = support_count(reads, decision_id)
    replaced = [s for s in found.supports if s.kind == "passage"]
    plan.update(TRACE_SUPPORT, [{"id": trace_key(decision_id, s.ordinal), "current": False} for s in replaced])
    added = new_supports(agent, count, fresh, "reaffirmed", now)
    plan.create(TRACE_SUPPORT, support_rows(project, decision_id, added))
    changed = {"state": "active", "review": [], "explanation": explanation, "updated_at": now}
    plan.update(TRACE_DECISION, [{**changed, "id": decision_id, "review": "[]", "supports": count + len(supports)}])
    plan.delete(TRACE_REVIEW, [trace_key(project, decision_id)])
    kept = [s for s in found.supports if s.kind != "passage"]
    return found.model_copy(update={**changed, "supports": [*kept, *added]})


def reject(reads: DecisionReads, plan: WritePlan, project: str, decision_id: str, reason: str) -> DecisionRecord:
    found = reads.standing(project, decision_id, "reject")
    now = utc_now()
    changed = {"state": "rejected", "explanation": reason, "updated_at": now}
    plan.update(TRACE_DECISION, [{**changed, "id": decision_id}])
    plan.merge(TRACE_REVIEW, [queued(project, decision_id, now)])
    return found.model_copy(update=changed)


def new_supports(
    agent: str, first: int, supports: Sequence[NewSupport], origin: SupportOrigin, now: datetime
) -> list[SupportRecord]:
    """The records of `supports` numbered from `first`; `support_rows` are what is written."""
    return [
        SupportRecord.model_validate(
            {**s.model_dump(), "ordinal": first + i, "origin": origin, "current": True, "agent": agent, "added_at": now}
        )
        for i, s in enumerate(supports)
    ]


def support_rows(project: str, decision_id: str, supports: Sequence[SupportRecord]) -> list[dict[str, Any]]:
    return [
        {**s.model_dump(), "id": trace_key(decision_id, s.ordinal), "decision": decision_id, "project": project}
        for s in supports
    ]


def support_count(reads: DecisionReads, decision_id: str) -> int:
    found = reads.read(f"MATCH (s:{TRACE_SUPPORT}) WHERE s.decision = $id RETURN count(s) AS n", {"id": decision_id})
    return int(found[0]["n"])


def queued(project: str, decision_id: str, now: datetime) -> dict[str, Any]:
    """The review queue entry that carries a decision's flag to what rests on it."""
    return {"id": trace_key(project, decision_id), "project": project, "decision": decision_id, "at": now}


class Review:
    """Flags gathered in memory in the order they apply, each seeing the ones before it, then
    planned as writes (`plan`): the backend runs them in its transaction, or as one query."""

    def __init__(self, reads: DecisionReads, now: datetime) -> None:
        self.reads = reads
        self.now = now
        self.flagged: list[str] = []
        self._seen: dict[tuple[str, str], DecisionRecord] = {}
        self._updates: dict[str, dict[str, Any]] = {}
        self._queue: dict[str, dict[str, Any]] = {}
        self._dequeued: list[str] = []

    def decisions(self, project: str, ids: Sequence[str]) -> list[DecisionRecord]:
        """`DecisionReads.fetch`, seeing the flags this review already gathered."""
        missing = [i for i in ids if (project, i) not in self._seen]
        for found in self.reads.fetch(project, missing):
            self._seen[project, found.id] = found
        return [self._seen[project, i] for i in ids if (project, i) in self._seen]

    def flag(self, project: str, causes_of: Mapping[str, list[ReviewCause]]) -> None:
        """Mark standing decisions needs_review with their causes; queue the newly flagged ones so
        the flag reaches what rests on them."""
        for found in self.decisions(project, list(causes_of)):
            if found.state not in OPEN_STATES:
                continue
            review = [*found.review, *causes_of[found.id]][:MAX_CAUSES]
            self._seen[project, found.id] = found.model_copy(update={"state": "needs_review", "review": review})
            self._updates[found.id] = {
                "id": found.id,
                "state": "needs_review",
                "review": json.dumps([c.model_dump(mode="json") for c in review]),
                "updated_at": self.now,
            }
            if found.state == "active":
                self.flagged.append(found.id)
                entry = queued(project, found.id, self.now)
                self._queue[entry["id"]] = entry
                if entry["id"] in self._dequeued:
                    self._dequeued.remove(entry["id"])

    def flag_documents(self, rows: Sequence[Mapping[str, Any]], changes: Mapping[str, int | None]) -> None:
        """Flag the decisions of `rows` (read by `DOCUMENT_SUPPORTS`) resting on a document version
        that `changes` replaced (key -> new version) or deleted (key -> None)."""
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
                at=self.now,
            )
            causes = by_project.setdefault(r["project"], {}).setdefault(r["decision"], [])
            if cause.document not in {c.document for c in causes}:
                causes.append(cause)
        for project, causes_of in sorted(by_project.items()):
            self.flag(project, causes_of)

    def carry(self, queue: Sequence[Mapping[str, Any]]) -> None:
        """Take the `queue` entries (read by `review_queue`): flag what rests on each queued decision."""
        for q in queue:
            cited = self.decisions(q["project"], [q["decision"]])
            change: ReviewChange = "needs_review"
            if cited and cited[0].state in ("superseded", "rejected"):
                change = "superseded" if cited[0].state == "superseded" else "rejected"
            dependents = [
                r["d"]
                for r in self.reads.read(
                    f"MATCH (s:{TRACE_SUPPORT}) WHERE s.ref = $ref AND s.project = $project "
                    "AND s.kind = 'decision' AND s.current RETURN DISTINCT s.decision AS d",
                    {"project": q["project"], "ref": q["decision"]},
                )
            ]
            cause = ReviewCause(change=change, decision=q["decision"], at=self.now)
            self.flag(q["project"], {d: [cause] for d in dependents})
            self._queue.pop(q["id"], None)
            self._dequeued.append(q["id"])

    def plan(self) -> WritePlan:
        plan = WritePlan()
        plan.delete(TRACE_REVIEW, self._dequeued)
        plan.update(TRACE_DECISION, list(self._updates.values()))
        plan.merge(TRACE_REVIEW, list(self._queue.values()))
        return plan
