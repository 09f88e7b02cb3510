"""Reading decisions back, written once for both backends: the fields a decision and a support
are read with, records built from their rows, and the checks every change of a decision starts
with (it exists in the project, it still stands).

A backend gives its reader (the transaction on the file; the connection, or its primary, on a
server), its two queries (the same reads in its own dialect: the embedded engine must not be
asked with `IN`, see `store/embedded/traces.py`) and how it stores times.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evigraph.errors import DecisionNotFoundError, DecisionStateError
from evigraph.store.core.reader import Rows
from evigraph.store.core.schema_names import TRACE_DECISION, TRACE_SUPPORT
from evigraph.trace_records import OPEN_STATES, DecisionRecord, DecisionState, DecisionText, SupportRecord

DECISION_FIELDS = (
    "d.id AS id, d.task AS task, d.choice_key AS choice_key, d.conclusion AS conclusion, "
    "d.rationale AS rationale, d.assumptions AS assumptions, d.open_questions AS open_questions, "
    "d.state AS state, d.agent AS agent, d.created_at AS created_at, d.updated_at AS updated_at, "
    "d.supersedes AS supersedes, d.superseded_by AS superseded_by, d.explanation AS explanation, "
    "d.review AS review"
)
SUPPORT_FIELDS = (
    "s.decision AS decision, s.ordinal AS ordinal, s.kind AS kind, s.ref AS ref, s.document AS document, "
    "s.version AS version, s.content_hash AS content_hash, s.note AS note, s.origin AS origin, "
    "s.current AS current, s.agent AS agent, s.added_at AS added_at"
)

Times = Callable[[Mapping[str, Any], str], dict[str, Any]]
"""The row with the named stored time read back as an aware UTC datetime."""


def missing_decision(project: str, decision_id: str) -> DecisionNotFoundError:
    return DecisionNotFoundError(
        f"project {project!r} has no decision {decision_id}",
        hint="list_decisions or search_decisions give the ids of this project's decisions",
    )


@dataclass(frozen=True)
class DecisionReads:
    """One backend's reads of decisions; made per transaction or connection, as cheap as a tuple."""

    read: Rows
    decisions_query: str
    """`$ids`, `$project` -> the project's decisions among the ids, as `DECISION_FIELDS`."""
    supports_query: str
    """`$ids` -> the current supports of those decisions, as `SUPPORT_FIELDS`, by ordinal."""
    times: Times
    lower: str = "lower"
    """The dialect's lower-case function (FalkorDB has no `lower`)."""

    def fetch(self, project: str, ids: Sequence[str]) -> list[DecisionRecord]:
        """The decisions of `project` among `ids`, in the order asked, with their current supports."""
        if not ids:
            return []
        rows = self.read(self.decisions_query, {"ids": list(dict.fromkeys(ids)), "project": project})
        order = {i: n for n, i in enumerate(ids)}
        return sorted(self.records(rows), key=lambda d: order[d.id])

    def records(self, rows: list[dict[str, Any]]) -> list[DecisionRecord]:
        """Decisions from rows read as `DECISION_FIELDS`, each with its current supports."""
        if not rows:
            return []
        supports: dict[str, list[SupportRecord]] = {}
        for r in self.read(self.supports_query, {"ids": [r["id"] for r in rows]}):
            supports.setdefault(r["decision"], []).append(self.support(r))
        out = []
        for r in rows:
            row = self.times(self.times(r, "created_at"), "updated_at")
            row["review"] = json.loads(row["review"] or "[]")
            row["assumptions"] = row["assumptions"] or []
            row["open_questions"] = row["open_questions"] or []
            out.append(DecisionRecord.model_validate({**row, "supports": supports.get(r["id"], [])}))
        return out

    def support(self, row: Mapping[str, Any]) -> SupportRecord:
        """A support from a row read as `SUPPORT_FIELDS`."""
        return SupportRecord.model_validate({k: v for k, v in self.times(row, "added_at").items() if k != "decision"})

    def standing(self, project: str, decision_id: str, verb: str) -> DecisionRecord:
        """The decision, which must exist and still stand (active, or needing review) to `verb` it."""
        found = self.fetch(project, [decision_id])
        if not found:
            raise missing_decision(project, decision_id)
        if found[0].state not in OPEN_STATES:
            raise DecisionStateError(
                f"cannot {verb} decision {decision_id}: it is {found[0].state}",
                hint=f"only an active decision or one that needs review can be {verb}ed"
                + (f"; its successor is {found[0].superseded_by}" if found[0].superseded_by else ""),
            )
        return found[0]

    def page(
        self,
        project: str,
        task: str | None,
        states: Sequence[DecisionState] | None,
        after_id: str | None,
        limit: int,
    ) -> list[DecisionRecord]:
        """A page of the project's decisions, oldest first, after `after_id`."""
        where = ["d.project = $project"]
        params: dict[str, Any] = {"project": project, "limit": limit}
        if task is not None:
            where.append("d.task = $task")
            params["task"] = task
        if states is not None:
            where.append("d.state IN $states")
            params["states"] = list(states)
        if after_id is not None:
            after = self.read(
                f"MATCH (d:{TRACE_DECISION} {{id: $id}}) WHERE d.project = $project RETURN d.created_at AS at",
                {"id": after_id, "project": project},
            )
            if not after:
                raise DecisionNotFoundError(
                    f"project {project!r} has no decision {after_id}", hint="pass the last id of a page as after_id"
                )
            where.append("(d.created_at > $at OR (d.created_at = $at AND d.id > $after))")
            params |= {"at": after[0]["at"], "after": after_id}
        rows = self.read(
            f"MATCH (d:{TRACE_DECISION}) WHERE {' AND '.join(where)} RETURN {DECISION_FIELDS} "
            "ORDER BY d.created_at, d.id LIMIT $limit",
            params,
        )
        return self.records(rows)

    def history(self, project: str, decision_id: str, after_ordinal: int, limit: int) -> list[SupportRecord]:
        """Every support the decision was given, current or not, in the order given."""
        if not self.fetch(project, [decision_id]):
            raise missing_decision(project, decision_id)
        rows = self.read(
            f"MATCH (s:{TRACE_SUPPORT}) WHERE s.decision = $id AND s.ordinal > $after "
            f"RETURN {SUPPORT_FIELDS} ORDER BY s.ordinal LIMIT $limit",
            {"id": decision_id, "after": after_ordinal, "limit": limit},
        )
        return [self.support(r) for r in rows]

    def texts(self, project: str, states: Sequence[DecisionState]) -> list[DecisionText]:
        """What decision search ranks: each decision's choice, conclusion and rationale, and its vector."""
        rows = self.read(
            f"MATCH (d:{TRACE_DECISION}) WHERE d.project = $project AND d.state IN $states "
            "RETURN d.id AS id, d.state AS state, d.choice_key AS k, d.conclusion AS c, d.rationale AS r, "
            "d.embedding AS v",
            {"project": project, "states": list(states)},
        )
        return [
            DecisionText(id=r["id"], state=r["state"], text=f"{r['k']}\n{r['c']}\n{r['r']}", vector=r["v"])
            for r in rows
        ]

    def conflicts(self, project: str, limit: int) -> list[list[DecisionRecord]]:
        """Active decisions sharing a choice key with different conclusions, by key."""
        rows = self.read(
            f"MATCH (d:{TRACE_DECISION}) WHERE d.project = $project AND d.state = 'active' "
            f"WITH d.choice_key AS k, collect(d.id) AS ids, count(DISTINCT {self.lower}(trim(d.conclusion))) AS n "
            "WHERE n > 1 RETURN k, ids ORDER BY k LIMIT $limit",
            {"project": project, "limit": limit},
        )
        found = {d.id: d for d in self.fetch(project, [i for r in rows for i in r["ids"]])}
        return [[found[i] for i in r["ids"] if i in found] for r in rows]
