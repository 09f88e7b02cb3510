"""The decision tools: record, supersede, reaffirm and reject decisions, read and search them, and
carry review flags to what rests on a changed source.

A decision may rest only on passages this session read in full (a `read_passages` reply that
showed the whole passage, not a snippet of a search): the session's ledger knows which, the
knowledge base does not, so the rule lives here. `[n]` and evidence ids are turned into evidence
ids before the knowledge base sees them, each with the digest of the text the reply showed; it
pins each to the document version it belongs to and refuses one whose stored text is not what
was read.

Like the task tools they act on the toolkit's project and agent, and are offered only with both;
`reject_decision` is a person's override, offered only when the toolkit allows it
(`Toolkit(allow_reject=True)`, `EVIGRAPH_MCP_ALLOW_REJECT=yes`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from pydantic import Field

from evigraph.evidence.pack import Section
from evigraph.kb.decisions import (
    ContinueReviewInput,
    GetDecisionInput,
    ListConflictsInput,
    ListDecisionsForReviewInput,
    ListDecisionsInput,
    ListSupportHistoryInput,
    PassageSupport,
    ReaffirmDecisionInput,
    RecordDecisionInput,
    RejectDecisionInput,
    SearchDecisionsInput,
    SupersedeDecisionInput,
)
from evigraph.tools.definitions import ToolGroup
from evigraph.tools.results import ToolResult, next_page
from evigraph.tools.trace_tools import decision_line, read_supports, support_line, traced_tool, traces_of
from evigraph.trace_records import DecisionRecord, ReviewCause, ReviewProgress, SupportRecord

if TYPE_CHECKING:
    from evigraph.tools.toolkit import Toolkit


TOOLS = ToolGroup()


def _cause_line(c: ReviewCause) -> str:
    if c.document is not None:
        now = "deleted" if c.now_version is None else f"now version {c.now_version}"
        return f"document {c.document!r} changed: read at version {c.read_version}, {now}"
    return f"rests on decision {c.decision}, which was {c.change.replace('_', ' ')}"


def _support_line(s: SupportRecord) -> str:
    state = "" if s.current else " [replaced]"
    return f"#{s.ordinal} " + support_line(s, f", {s.origin} by {s.agent}{state}")


def _full(d: DecisionRecord) -> list[Section]:
    out = [Section("Rationale", [d.rationale])]
    if d.review:
        out.append(Section("Needs review because", [_cause_line(c) for c in d.review]))
    out.append(Section("Supports", [_support_line(s) for s in d.supports]))
    if d.assumptions:
        out.append(Section("Assumptions", list(d.assumptions)))
    if d.open_questions:
        out.append(Section("Open questions", list(d.open_questions)))
    if d.explanation:
        out.append(Section("Latest explanation", [d.explanation]))
    return out


class DecisionResult(ToolResult):
    decision: DecisionRecord

    def header(self) -> str:
        d = self.decision
        lines = [decision_line(d), f"task {d.task!r}, recorded by {d.agent} at {d.created_at:%Y-%m-%d %H:%M}"]
        if d.supersedes:
            lines.append(f"supersedes {d.supersedes}")
        if d.superseded_by:
            lines.append(f"superseded by {d.superseded_by}")
        return "\n".join(lines)

    def sections(self) -> list[Section]:
        return _full(self.decision)


class DecisionListResult(ToolResult):
    decisions: list[DecisionRecord]
    next_after_id: str | None = Field(None, description="pass as after_id for the next page; null on the last page")
    title: str = Field(exclude=True)

    def header(self) -> str:
        return f"{len(self.decisions)} {self.title}{next_page('after_id', self.next_after_id)}"

    def sections(self) -> list[Section]:
        lines = []
        for d in self.decisions:
            why = f" - {_cause_line(d.review[0])}" if d.review else ""
            lines.append(f"{decision_line(d)} [task {d.task!r}]{why}")
        return [Section("Decisions", lines)]


class SupportHistoryResult(ToolResult):
    decision_id: str
    supports: list[SupportRecord]
    next_after_ordinal: int | None = Field(description="pass as after_ordinal for the next page; null on the last")

    def header(self) -> str:
        more = next_page("after_ordinal", self.next_after_ordinal)
        return f"{len(self.supports)} support(s) of decision {self.decision_id}{more}"

    def sections(self) -> list[Section]:
        return [Section("Supports", [_support_line(s) for s in self.supports])]


class DecisionSearchResult(ToolResult):
    query: str
    decisions: list[DecisionRecord]
    scores: list[float] = Field(description="fused rank score of each decision, in order")

    def header(self) -> str:
        return f"{len(self.decisions)} precedent(s) for {self.query!r}"

    def sections(self) -> list[Section]:
        return [Section("Decisions", [f"{decision_line(d)} [task {d.task!r}]: {d.rationale}" for d in self.decisions])]


class ConflictsResult(ToolResult):
    conflicts: dict[str, list[DecisionRecord]] = Field(description="choice_key -> its active decisions")

    def header(self) -> str:
        return f"{len(self.conflicts)} choice key(s) with conflicting active decisions"

    def sections(self) -> list[Section]:
        return [
            Section(f"choice_key {key!r}", [f"{decision_line(d)} [task {d.task!r}]" for d in found])
            for key, found in self.conflicts.items()
        ]


class ReviewResult(ToolResult):
    progress: ReviewProgress

    def header(self) -> str:
        p = self.progress
        left = f"{p.remaining} still queued: call again" if p.remaining else "every dependent is flagged"
        return f"examined {p.processed} flagged decision(s); newly flagged: {len(p.flagged)}; {left}"

    def sections(self) -> list[Section]:
        return [Section("Newly flagged", list(self.progress.flagged))]


class _Grounds(TypedDict):
    """What a decision rests on besides its supports, passed alike by record and supersede."""

    assumptions: list[str]
    open_questions: list[str]
    request_id: str | None
    read_digests: dict[str, str]


def _grounds(
    tk: Toolkit, args: RecordDecisionInput | SupersedeDecisionInput
) -> tuple[list[dict[str, object]], _Grounds]:
    """The supports as this session read them, and the rest of the decision's grounds."""
    supports, digests = read_supports(tk, args.supports)
    grounds = _Grounds(
        assumptions=args.assumptions,
        open_questions=args.open_questions,
        request_id=args.request_id,
        read_digests=digests,
    )
    return supports, grounds


_WHERE = " The project and the agent are fixed by the server's configuration."
_RETRY = " Pass a request_id (1-64 chars): a retry with it returns the first result and writes nothing twice."
_SUPPORTS = (
    " supports: 1-20 of {kind: 'passage', evidence: [n] or evidence_id} (passages read in full with "
    "read_passages in this session) or {kind: 'decision', decision_id} (an active decision), each with an "
    "optional note."
)


@traced_tool(
    TOOLS,
    "record_decision",
    RecordDecisionInput,
    "Record a decision of a task: what was decided (choice_key, the same key across tasks), the conclusion, "
    "the rationale, and what it rests on." + _SUPPORTS + " Each passage is pinned to the document version "
    "read; when the document changes the decision is flagged needs_review." + _RETRY + _WHERE,
    write=True,
)
async def record_decision(tk: Toolkit, args: RecordDecisionInput) -> DecisionResult:
    supports, grounds = _grounds(tk, args)
    traces = traces_of(tk)
    found = await traces.record_decision(
        args.task_name, args.choice_key, args.conclusion, args.rationale, supports, **grounds
    )
    return DecisionResult(decision=found)


@traced_tool(
    TOOLS,
    "supersede_decision",
    SupersedeDecisionInput,
    "Replace an active (or needs_review) decision with a new conclusion; the old one is kept as superseded "
    "and decisions resting on it are flagged for review." + _SUPPORTS + _RETRY + _WHERE,
    write=True,
)
async def supersede_decision(tk: Toolkit, args: SupersedeDecisionInput) -> DecisionResult:
    supports, grounds = _grounds(tk, args)
    traces = traces_of(tk)
    found = await traces.supersede_decision(
        args.decision_id, args.conclusion, args.rationale, args.explanation, supports, **grounds
    )
    return DecisionResult(decision=found)


@traced_tool(
    TOOLS,
    "reaffirm_decision",
    ReaffirmDecisionInput,
    "Confirm a decision still holds after reading the current text: evidence_ids are [n] or evidence ids "
    "of passages read in full in this session, which replace its passage supports; clears needs_review."
    + _RETRY
    + _WHERE,
    write=True,
)
async def reaffirm_decision(tk: Toolkit, args: ReaffirmDecisionInput) -> DecisionResult:
    passages = [PassageSupport(kind="passage", evidence=e) for e in args.evidence_ids]
    supports, digests = read_supports(tk, list(passages))
    found = await traces_of(tk).reaffirm_decision(
        args.decision_id,
        [str(s["evidence"]) for s in supports],
        explanation=args.explanation,
        request_id=args.request_id,
        read_digests=digests,
    )
    return DecisionResult(decision=found)


@traced_tool(
    TOOLS,
    "reject_decision",
    RejectDecisionInput,
    "A person overturns a decision: it becomes rejected (history kept) and decisions resting on it are "
    "flagged for review." + _RETRY + _WHERE,
    write=True,
    destructive=True,
    offered=lambda offer: offer.allow_reject,
)
async def reject_decision(tk: Toolkit, args: RejectDecisionInput) -> DecisionResult:
    found = await traces_of(tk).reject_decision(args.decision_id, args.reason, request_id=args.request_id)
    return DecisionResult(decision=found)


@traced_tool(
    TOOLS,
    "get_decision",
    GetDecisionInput,
    "One decision in full: conclusion, rationale, state, why it needs review, and its current supports." + _WHERE,
)
async def get_decision(tk: Toolkit, args: GetDecisionInput) -> DecisionResult:
    return DecisionResult(decision=await traces_of(tk).get_decision(args.decision_id))


@traced_tool(
    TOOLS,
    "list_decisions",
    ListDecisionsInput,
    "A task's decisions, oldest first, with superseded and rejected history unless include_history is false; "
    "page with after_id." + _WHERE,
)
async def list_decisions(tk: Toolkit, args: ListDecisionsInput) -> DecisionListResult:
    page = await traces_of(tk).list_decisions(
        args.task_name, include_history=args.include_history, after_id=args.after_id, limit=args.limit
    )
    title = f"decision(s) of task {args.task_name!r}"
    return DecisionListResult(decisions=page.decisions, next_after_id=page.next_after_id, title=title)


@traced_tool(
    TOOLS,
    "list_support_history",
    ListSupportHistoryInput,
    "Every support a decision was given, the ones a reaffirmation replaced too, by ordinal; shows what it "
    "was read from when it was flagged." + _WHERE,
)
async def list_support_history(tk: Toolkit, args: ListSupportHistoryInput) -> SupportHistoryResult:
    page = await traces_of(tk).list_support_history(
        args.decision_id, after_ordinal=args.after_ordinal, limit=args.limit
    )
    return SupportHistoryResult(
        decision_id=args.decision_id, supports=page.supports, next_after_ordinal=page.next_after_ordinal
    )


@traced_tool(
    TOOLS,
    "search_decisions",
    SearchDecisionsInput,
    "Find precedents: active decisions of any task in this project closest to the query, by words and, with "
    "an embedder, by meaning. Decisions that need review are left out unless include_review." + _WHERE,
)
async def search_decisions(tk: Toolkit, args: SearchDecisionsInput) -> DecisionSearchResult:
    hits = await traces_of(tk).search_decisions(args.query, limit=args.limit, include_review=args.include_review)
    return DecisionSearchResult(
        query=args.query, decisions=[h.decision for h in hits], scores=[round(h.score, 5) for h in hits]
    )


@traced_tool(
    TOOLS,
    "list_conflicts",
    ListConflictsInput,
    "Choice keys on which active decisions (of any task) reached different conclusions." + _WHERE,
)
async def list_conflicts(tk: Toolkit, args: ListConflictsInput) -> ConflictsResult:
    found = await traces_of(tk).list_conflicts(limit=args.limit)
    return ConflictsResult(conflicts={c.choice_key: c.decisions for c in found})


@traced_tool(
    TOOLS,
    "list_decisions_for_review",
    ListDecisionsForReviewInput,
    "Decisions flagged needs_review (of one task, or all), each with the source change that flagged it; "
    "reaffirm_decision or supersede_decision settles one." + _WHERE,
)
async def list_decisions_for_review(tk: Toolkit, args: ListDecisionsForReviewInput) -> DecisionListResult:
    page = await traces_of(tk).list_decisions_for_review(
        task_name=args.task_name, after_id=args.after_id, limit=args.limit
    )
    return DecisionListResult(
        decisions=page.decisions, next_after_id=page.next_after_id, title="decision(s) need review"
    )


@traced_tool(
    TOOLS,
    "continue_decision_review",
    ContinueReviewInput,
    "Carry review flags one bounded step further: decisions resting on a flagged, superseded or rejected "
    "decision become needs_review. Call again while it says some are still queued." + _WHERE,
    write=True,
)
async def continue_decision_review(tk: Toolkit, args: ContinueReviewInput) -> ReviewResult:
    return ReviewResult(progress=await traces_of(tk).continue_decision_review(limit=args.limit))
