"""Decisions on `Traces`: conclusions an agent reached, each resting on passages it read or on
other decisions, kept per project so a later run finds them, and flagged when their sources change.

The knowledge base turns each support into what the store pins: a passage's evidence id becomes
the document key and version the passage belongs to (the store adds the content hash and checks
the version is still current, in the write's transaction). Whether the passage was read in full
in this session is the session's rule, checked by the tools, which hold the session; a Python
caller names evidence ids it got from its own reads.

What was read is checked too: given the `passage_digest` of a passage as the caller read it
(`read_digests`; the tools always pass the digests their session's ledger took at
`read_passages`), the passage's stored text, read just before the write, must still hash to it.
The store then requires the same version in the write's transaction, and a key's version numbers
are never given twice, so no other text can slip in between. The id alone settles the text for
versions numbered since that rule; the digest also covers a number given again before it (a
file written by an earlier release), and proves what the caller saw, not only what it named.

`search_decisions` ranks the project's standing decisions as `retrieval.decision_search` says:
by their words and, when the knowledge base has an embedder, by meaning.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evigraph.errors import ConfigurationError, DecisionNotFoundError, StaleEvidenceError
from evigraph.evidence.ids import EvidenceId, EvidenceRef
from evigraph.evidence.ledger import passage_digest
from evigraph.gate import Gate
from evigraph.providers.embedders import Embedder
from evigraph.retrieval.decision_search import WordCounts, rank_decisions
from evigraph.retrieval.hits import passage_item
from evigraph.store.base import GraphStore
from evigraph.strict import StrictInput, build
from evigraph.trace_records import (
    OPEN_STATES,
    DecisionRecord,
    DecisionState,
    NewDecision,
    NewSupport,
    ReviewProgress,
    SupportRecord,
    TraceRequest,
)

DecisionId = Annotated[
    str,
    Field(
        min_length=36,
        max_length=36,
        pattern=r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
        description="a decision's id (UUID), as record_decision or list_decisions gave it",
    ),
]
Note = Annotated[str | None, Field(None, max_length=1000, description="what this support shows")]
Line = Annotated[str, Field(min_length=1, max_length=1000)]
Lines = Annotated[list[Line], Field(max_length=20)]
TaskName = Annotated[str, Field(min_length=1, max_length=200, description="the task's name in this project")]
RequestId = Annotated[
    str, Field(min_length=1, max_length=64, description="a retry with the same id returns the first result")
]
DEFAULT_REAFFIRM = "Reaffirmed after reading the current evidence."


class PassageSupport(StrictInput):
    """A passage the decision rests on; it must have been read in full (read_passages)."""

    kind: Literal["passage"]
    evidence: EvidenceRef
    note: Note = None


class DecisionSupport(StrictInput):
    """An active decision of this project the new one rests on."""

    kind: Literal["decision"]
    decision_id: DecisionId
    note: Note = None


Support = Annotated[PassageSupport | DecisionSupport, Field(discriminator="kind")]
MAX_SUPPORTS = 20
"""The most supports a decision or a step rests on; tool descriptions say this number."""
Supports = Annotated[list[Support], Field(min_length=1, max_length=MAX_SUPPORTS)]


class RecordDecisionInput(StrictInput):
    task_name: TaskName
    choice_key: str = Field(min_length=1, max_length=200, description="what was decided, the same key across tasks")
    conclusion: str = Field(min_length=1, max_length=4000)
    rationale: str = Field(min_length=1, max_length=8000)
    supports: Supports
    assumptions: Lines = Field(default_factory=list)
    open_questions: Lines = Field(default_factory=list)
    request_id: RequestId | None = None


class SupersedeDecisionInput(StrictInput):
    decision_id: DecisionId
    conclusion: str = Field(min_length=1, max_length=4000)
    rationale: str = Field(min_length=1, max_length=8000)
    explanation: str = Field(min_length=1, max_length=4000, description="why the old conclusion no longer holds")
    supports: Supports
    assumptions: Lines = Field(default_factory=list)
    open_questions: Lines = Field(default_factory=list)
    request_id: RequestId | None = None


class ReaffirmDecisionInput(StrictInput):
    decision_id: DecisionId
    evidence_ids: list[EvidenceRef] = Field(
        min_length=1, max_length=20, description="passages read in full in this session, at their current versions"
    )
    explanation: str = Field(DEFAULT_REAFFIRM, min_length=1, max_length=4000)
    request_id: RequestId | None = None


class RejectDecisionInput(StrictInput):
    decision_id: DecisionId
    reason: str = Field(min_length=1, max_length=4000)
    request_id: RequestId | None = None


class GetDecisionInput(StrictInput):
    decision_id: DecisionId


class ListDecisionsInput(StrictInput):
    task_name: TaskName
    include_history: bool = Field(True, description="include superseded and rejected decisions")
    after_id: DecisionId | None = Field(None, description="continue after this decision")
    limit: int = Field(50, ge=1, le=100)


class ListSupportHistoryInput(StrictInput):
    decision_id: DecisionId
    after_ordinal: int = Field(-1, ge=-1, le=1_000_000, description="list the supports numbered above this")
    limit: int = Field(20, ge=1, le=100)


class SearchDecisionsInput(StrictInput):
    query: str = Field(min_length=1, max_length=1000)
    limit: int = Field(20, ge=1, le=100)
    include_review: bool = Field(False, description="also return decisions that need review")


class ListConflictsInput(StrictInput):
    limit: int = Field(20, ge=1, le=100, description="the most choice keys listed")


class ListDecisionsForReviewInput(StrictInput):
    task_name: TaskName | None = Field(None, description="only this task's decisions")
    after_id: DecisionId | None = Field(None, description="continue after this decision")
    limit: int = Field(20, ge=1, le=100)


class ContinueReviewInput(StrictInput):
    limit: int = Field(20, ge=1, le=100, description="the most flagged decisions whose dependents are examined")


class _Page(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DecisionPage(_Page):
    decisions: list[DecisionRecord]
    next_after_id: str | None
    """Pass as `after_id` for the next page; None when this page is the last."""


class SupportPage(_Page):
    supports: list[SupportRecord]
    next_after_ordinal: int | None


class DecisionHit(_Page):
    decision: DecisionRecord
    score: float
    scores: dict[str, float]
    """Rank score per leg: `words`, `meaning`."""


class Conflict(_Page):
    choice_key: str
    decisions: list[DecisionRecord]


_HINT = "see the bounds in the input model's JSON Schema (evigraph.kb.decisions)"


class DecisionMethods:
    """The decision half of `Traces` (`kb.traces(project, agent)`)."""

    project: str
    agent: str
    _store: Callable[[bool], Awaitable[GraphStore]]
    _gate: Gate
    _embedder: Callable[[], Embedder | None]
    _word_counts: WordCounts

    def _request(self, operation: str, args: StrictInput) -> TraceRequest | None:
        raise NotImplementedError  # Traces'

    async def record_decision(
        self,
        task_name: str,
        choice_key: str,
        conclusion: str,
        rationale: str,
        supports: Sequence[dict[str, object] | PassageSupport | DecisionSupport],
        *,
        assumptions: Sequence[str] = (),
        open_questions: Sequence[str] = (),
        request_id: str | None = None,
        read_digests: Mapping[str, str] | None = None,
    ) -> DecisionRecord:
        """Record a decision resting on `supports` (`{"kind": "passage", "evidence": "passage:..."}`
        or `{"kind": "decision", "decision_id": ...}`).

        `read_digests` maps a passage support's evidence id to `evigraph.evidence.passage_digest`
        of the passage as you read it whole (`kb.read_passages`): the decision is then refused
        (`StaleEvidenceError`) unless the stored passage still reads exactly so. A passage given
        none is pinned by its id and version alone."""
        values = _decision(conclusion, rationale, supports, assumptions, open_questions, request_id)
        args = build(RecordDecisionInput, {"task_name": task_name, "choice_key": choice_key, **values}, _HINT)
        return await self._write_decision(args, args.task_name, None, None, read_digests)

    async def supersede_decision(
        self,
        decision_id: str,
        conclusion: str,
        rationale: str,
        explanation: str,
        supports: Sequence[dict[str, object] | PassageSupport | DecisionSupport],
        *,
        assumptions: Sequence[str] = (),
        open_questions: Sequence[str] = (),
        request_id: str | None = None,
        read_digests: Mapping[str, str] | None = None,
    ) -> DecisionRecord:
        """A new decision replacing `decision_id` (which becomes superseded, kept in history);
        `read_digests` as for `record_decision`."""
        values = _decision(conclusion, rationale, supports, assumptions, open_questions, request_id)
        args = build(SupersedeDecisionInput, {"decision_id": decision_id, "explanation": explanation, **values}, _HINT)
        old = await self.get_decision(args.decision_id)
        return await self._write_decision(args, old.task, old, args.explanation, read_digests)

    async def reaffirm_decision(
        self,
        decision_id: str,
        evidence_ids: Sequence[str],
        *,
        explanation: str = DEFAULT_REAFFIRM,
        request_id: str | None = None,
        read_digests: Mapping[str, str] | None = None,
    ) -> DecisionRecord:
        """Active again, on passages read at their current versions; clears needs_review.
        `read_digests` as for `record_decision`."""
        values = {"decision_id": decision_id, "evidence_ids": list(evidence_ids), "explanation": explanation}
        args = build(ReaffirmDecisionInput, {**values, "request_id": request_id}, _HINT)
        store = await self._store(True)
        refs = [PassageSupport(kind="passage", evidence=e) for e in args.evidence_ids]
        supports = await self._resolve(store, refs, read_digests)
        async with self._gate.shared():
            return await store.reaffirm_decision(
                self.project,
                self.agent,
                args.decision_id,
                supports,
                args.explanation,
                self._request("reaffirm_decision", args),
            )

    async def reject_decision(self, decision_id: str, reason: str, *, request_id: str | None = None) -> DecisionRecord:
        """A person overturns a decision: rejected, history kept, what rests on it flagged in turn."""
        args = build(
            RejectDecisionInput, {"decision_id": decision_id, "reason": reason, "request_id": request_id}, _HINT
        )
        store = await self._store(True)
        async with self._gate.shared():
            return await store.reject_decision(
                self.project, self.agent, args.decision_id, args.reason, self._request("reject_decision", args)
            )

    async def get_decision(self, decision_id: str) -> DecisionRecord:
        args = build(GetDecisionInput, {"decision_id": decision_id}, _HINT)
        found = await (await self._store(False)).get_decisions(self.project, [args.decision_id])
        if not found:
            raise DecisionNotFoundError(
                f"project {self.project!r} has no decision {decision_id}",
                hint="list_decisions or search_decisions give the ids of this project's decisions",
            )
        return found[0]

    async def list_decisions(
        self, task_name: str, *, include_history: bool = True, after_id: str | None = None, limit: int = 50
    ) -> DecisionPage:
        """A task's decisions by creation time; without history, only those that still stand."""
        values = {"task_name": task_name, "include_history": include_history, "after_id": after_id, "limit": limit}
        args = build(ListDecisionsInput, values, _HINT)
        states = None if args.include_history else OPEN_STATES
        store = await self._store(False)
        found = await store.list_decisions(self.project, args.task_name, states, args.after_id, args.limit + 1)
        return _page(found, args.limit)

    async def list_decisions_for_review(
        self, *, task_name: str | None = None, after_id: str | None = None, limit: int = 20
    ) -> DecisionPage:
        """Decisions flagged needs_review, each with the changes that flagged it."""
        args = build(ListDecisionsForReviewInput, {"task_name": task_name, "after_id": after_id, "limit": limit}, _HINT)
        store = await self._store(False)
        found = await store.list_decisions(
            self.project, args.task_name, ["needs_review"], args.after_id, args.limit + 1
        )
        return _page(found, args.limit)

    async def list_support_history(self, decision_id: str, *, after_ordinal: int = -1, limit: int = 20) -> SupportPage:
        """Every support the decision was given, the replaced ones too (`current` False)."""
        values = {"decision_id": decision_id, "after_ordinal": after_ordinal, "limit": limit}
        args = build(ListSupportHistoryInput, values, _HINT)
        store = await self._store(False)
        found = await store.list_support_history(self.project, args.decision_id, args.after_ordinal, args.limit + 1)
        more = len(found) > args.limit
        supports = found[: args.limit]
        return SupportPage(supports=supports, next_after_ordinal=supports[-1].ordinal if more else None)

    async def search_decisions(self, query: str, *, limit: int = 20, include_review: bool = False) -> list[DecisionHit]:
        """Precedents: the project's standing decisions (any task) closest to `query`, by words and
        by meaning; decisions that need review only when asked."""
        args = build(SearchDecisionsInput, {"query": query, "limit": limit, "include_review": include_review}, _HINT)
        states: list[DecisionState] = list(OPEN_STATES) if args.include_review else ["active"]
        store = await self._store(False)
        texts = await store.decision_texts(self.project, states)
        vector = await self._vector(args.query) if any(t.vector for t in texts) else None
        fused = rank_decisions(args.query, texts, self._word_counts, vector)[: args.limit]
        records = {d.id: d for d in await store.get_decisions(self.project, [f.key for f in fused])}
        return [DecisionHit(decision=records[f.key], score=f.score, scores=f.scores) for f in fused if f.key in records]

    async def list_conflicts(self, *, limit: int = 20) -> list[Conflict]:
        """Choice keys on which active decisions reached different conclusions."""
        args = build(ListConflictsInput, {"limit": limit}, _HINT)
        groups = await (await self._store(False)).list_conflicts(self.project, args.limit)
        return [Conflict(choice_key=g[0].choice_key, decisions=g) for g in groups if g]

    async def continue_decision_review(self, *, limit: int = 20) -> ReviewProgress:
        """Carry review flags one bounded step further, to decisions resting on flagged ones."""
        args = build(ContinueReviewInput, {"limit": limit}, _HINT)
        store = await self._store(True)
        async with self._gate.shared():
            return await store.continue_decision_review(self.project, args.limit)

    async def _write_decision(
        self,
        args: RecordDecisionInput | SupersedeDecisionInput,
        task: str,
        old: DecisionRecord | None,
        explanation: str | None,
        read_digests: Mapping[str, str] | None,
    ) -> DecisionRecord:
        store = await self._store(True)
        supports = await self._resolve(store, args.supports, read_digests)
        choice_key = old.choice_key if old is not None else getattr(args, "choice_key", "")
        decision = NewDecision(
            task=task,
            choice_key=choice_key,
            conclusion=args.conclusion,
            rationale=args.rationale,
            assumptions=tuple(args.assumptions),
            open_questions=tuple(args.open_questions),
            supports=tuple(supports),
            supersedes=old.id if old is not None else None,
            explanation=explanation,
            vector=await self._vector(f"{choice_key}\n{args.conclusion}\n{args.rationale}"),
        )
        operation = "record_decision" if old is None else "supersede_decision"
        async with self._gate.shared():
            return await store.record_decision(self.project, self.agent, decision, self._request(operation, args))

    async def _resolve(
        self,
        store: GraphStore,
        supports: Sequence[PassageSupport | DecisionSupport],
        read_digests: Mapping[str, str] | None = None,
    ) -> list[NewSupport]:
        """Each passage support pinned to its document and the version the passage belongs to,
        its stored text checked against the digest of what was read, when one is given."""
        wanted: dict[str, str] = {}
        for s in supports:
            if isinstance(s, PassageSupport):
                wanted[str(s.evidence)] = _passage_id(s.evidence)
        expected = _digests(read_digests or {}, set(wanted.values()))
        hits = {h.id: h for h in await store.passages_by_ids(list(dict.fromkeys(wanted.values())))}
        out = []
        for s in supports:
            if isinstance(s, DecisionSupport):
                out.append(NewSupport(kind="decision", ref=s.decision_id, note=s.note))
                continue
            chunk = wanted[str(s.evidence)]
            hit = hits.get(chunk)
            if hit is None:
                raise StaleEvidenceError(
                    f"{EvidenceId('passage', chunk)} names no current passage (its document was replaced or "
                    "deleted, or it lies outside this knowledge base's scope)",
                    hint="search again and read the current passage with read_passages, then cite it",
                )
            ref = str(EvidenceId("passage", chunk))
            if chunk in expected and passage_digest(passage_item(hit)) != expected[chunk]:
                raise StaleEvidenceError(
                    f"{ref} does not read as it did when it was read: version {hit.version} of "
                    f"{hit.document!r} now holds other text there",
                    hint="read the passage again with read_passages and cite what it says now",
                )
            out.append(NewSupport(kind="passage", ref=ref, document=hit.document, version=hit.version, note=s.note))
        return out

    async def _vector(self, text: str) -> tuple[float, ...] | None:
        embedder = self._embedder()
        if embedder is None:
            return None
        vectors = await asyncio.to_thread(embedder.embed, [text])
        return tuple(float(x) for x in vectors[0])


def _passage_id(ref: int | str) -> str:
    if isinstance(ref, int):
        raise ConfigurationError(
            f"[{ref}] is a number of a tool session; outside one, name the passage by its evidence_id",
            hint="pass the evidence_id ('passage:...') a search or read_passages returned",
        )
    parsed = EvidenceId.parse(ref)
    if parsed is None:
        return ref  # a bare passage id
    if parsed.kind != "passage":
        raise ConfigurationError(
            f"{ref} is {parsed.kind} evidence; a decision rests on passages (or on other decisions)",
            hint="read the passage the item came from with read_passages and cite that passage",
        )
    return parsed.id


_DIGEST = re.compile(r"^[0-9a-f]{64}$")


def _digests(given: Mapping[str, str], passages: set[str]) -> dict[str, str]:
    """`read_digests` by passage id, each naming a passage the decision rests on and a sha256."""
    out: dict[str, str] = {}
    for ref, digest in given.items():
        chunk = _passage_id(ref)
        if chunk not in passages:
            raise ConfigurationError(
                f"read_digests names {ref}, which is not a passage this decision rests on",
                hint="give digests only for the passages among the supports, keyed by their evidence ids",
            )
        if not isinstance(digest, str) or not _DIGEST.match(digest):
            raise ConfigurationError(
                f"the read digest of {ref} is not a sha256 in hex ({digest!r})",
                hint="pass evigraph.evidence.passage_digest(passage) of the passage as read_passages returned it",
            )
        out[chunk] = digest
    return out


def _decision(
    conclusion: str,
    rationale: str,
    supports: Sequence[dict[str, object] | PassageSupport | DecisionSupport],
    assumptions: Sequence[str],
    open_questions: Sequence[str],
    request_id: str | None,
) -> dict[str, Any]:
    """The fields a recorded and a superseding decision share, as their input models take them."""
    return {
        "conclusion": conclusion,
        "rationale": rationale,
        "supports": support_dicts(supports),
        "assumptions": list(assumptions),
        "open_questions": list(open_questions),
        "request_id": request_id,
    }


def support_dicts(supports: Sequence[dict[str, object] | PassageSupport | DecisionSupport]) -> list[dict[str, object]]:
    """Supports as their input models take them, given as dicts or as the models themselves."""
    return [s.model_dump() if isinstance(s, BaseModel) else s for s in supports]


def _page(found: list[DecisionRecord], limit: int) -> DecisionPage:
    decisions = found[:limit]
    return DecisionPage(decisions=decisions, next_after_id=decisions[-1].id if len(found) > limit else None)
