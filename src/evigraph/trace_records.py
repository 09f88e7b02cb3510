"""What the store keeps of an agent's work: tasks, their events and their steps (`GraphStore` traces).

Shared by every layer, as `models.py` is: the store writes these records, the knowledge base
validates what goes in, and the tools and the CLI show what comes out.

Trace records live in the knowledge base beside the documents they were read from, so a later run
(another process, another client) resumes a task where the last one stopped. Every record belongs
to one project, and no call reads across projects: the project is part of every key. The store
checks nothing a caller could check before the write (bounds, required fields); it does what only
one transaction can do: give out the next event number, refuse a task name already taken by
another goal, and answer a retried request with the result it saved the first time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

EventKind = Literal["message", "tool_call", "tool_result", "note"]
StepState = Literal["not_started", "in_progress", "completed", "failed", "unknown"]
StepKind = Literal["read", "analysis", "other"]
ResultBasis = Literal["independent", "supported", "unknown"]

STORED_EVENT_CHARS = 32_000
"""The most characters of an event's payload the store keeps; the rest is represented by its hash."""


@dataclass(frozen=True)
class TraceRequest:
    """A caller's request id and a fingerprint of what it asked.

    The store saves the write's result under (project, id): the same id again with the same
    fingerprint gets that result back and writes nothing, another fingerprint is refused
    (`RequestConflictError`). The fingerprint is opaque to the store.
    """

    id: str
    fingerprint: str


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TaskRecord(_Record):
    name: str
    goal: str
    agent: str
    """The agent that created the task."""
    created_at: datetime
    events: int
    """The sequence number of the task's last event; 0 before the first."""


class NewEvent(_Record):
    """An event as the store writes it: the payload already cut to `STORED_EVENT_CHARS`."""

    kind: EventKind
    payload: str
    chars: int
    """Characters of the full payload."""
    sha256: str
    """Hash of the full payload's UTF-8 bytes."""
    truncated: bool
    role: str | None = None
    name: str | None = None


class EventSummary(_Record):
    """An event without its body, as a page of `list_events` lists it."""

    seq: int
    kind: EventKind
    role: str | None
    name: str | None
    agent: str
    at: datetime
    chars: int
    sha256: str
    truncated: bool


class EventRecord(EventSummary):
    payload: str
    """The stored text: the whole payload, or its first `STORED_EVENT_CHARS` when `truncated`."""


# -- decisions ---------------------------------------------------------------------------------

DecisionState = Literal["active", "needs_review", "superseded", "rejected"]
SupportKind = Literal["passage", "decision"]
SupportOrigin = Literal["recorded", "reaffirmed"]
ReviewChange = Literal["new_version", "deleted", "needs_review", "superseded", "rejected"]
"""Why a decision was flagged: a passage's document changed (`new_version`, `deleted`), or a
decision it rests on was itself flagged, superseded or rejected."""

OPEN_STATES: tuple[DecisionState, ...] = ("active", "needs_review")
"""The states of a decision that still stands: one that needs review has not been overturned."""


class NewSupport(_Record):
    """One support as the store writes it, already resolved by the knowledge base.

    A passage support carries the document version it was read from, which the store checks is
    still current in the write's transaction: evidence read from a version replaced meanwhile is
    refused (`StaleEvidenceError`) instead of pinning a decision to text nobody can read again.
    """

    kind: SupportKind
    ref: str
    """A passage's evidence id (`passage:<id>`), or a decision id."""
    document: str | None = None
    version: int | None = None
    content_hash: str | None = None
    note: str | None = None
    """What the support shows, in the recording agent's words."""


class NewStep(_Record):
    name: str
    state: StepState
    kind: StepKind = "other"
    result_basis: ResultBasis = "unknown"
    result_event_seq: int | None = None
    """An event of the task holding the result; `set_step` fills it when it records the result itself."""
    supports: tuple[NewSupport, ...] = ()
    """What the step's result rests on, resolved and checked as a decision's supports are (a passage
    pinned to the document version it was read from, with its content hash), so a later run can
    tell which text a step's work was done on. Each `set_step` replaces them, as it does every field."""


class StepRecord(NewStep):
    agent: str
    """The agent that set the step last."""
    updated_at: datetime


class SupportRecord(NewSupport):
    ordinal: int
    """0 for the first support of a decision; reaffirmed supports continue the count."""
    origin: SupportOrigin
    current: bool
    """False once a reaffirmation replaced it; `list_support_history` keeps it."""
    agent: str
    added_at: datetime


class NewDecision(_Record):
    task: str
    choice_key: str
    conclusion: str
    rationale: str
    assumptions: tuple[str, ...] = ()
    open_questions: tuple[str, ...] = ()
    supports: tuple[NewSupport, ...]
    supersedes: str | None = None
    """The decision this one replaces (`supersede_decision`); it must still stand."""
    explanation: str | None = None
    """Why it replaces the one it supersedes."""
    vector: tuple[float, ...] | None = None
    """The decision's text embedded, when the knowledge base has an embedder (`search_decisions`)."""


class ReviewCause(_Record):
    """One reason a decision needs review."""

    change: ReviewChange
    document: str | None = None
    read_version: int | None = None
    """The version the support was read from."""
    now_version: int | None = None
    """The document's version after the change; None when it was deleted."""
    decision: str | None = None
    """The decision the flagged one rests on, for a flag that propagated."""
    at: datetime


class DecisionRecord(_Record):
    id: str
    task: str
    choice_key: str
    conclusion: str
    rationale: str
    assumptions: list[str]
    open_questions: list[str]
    state: DecisionState
    agent: str
    """The agent that recorded it."""
    created_at: datetime
    updated_at: datetime
    supersedes: str | None = None
    superseded_by: str | None = None
    explanation: str | None = None
    """The latest supersede, reaffirm or reject explanation."""
    review: list[ReviewCause] = []
    """Why it needs review; empty unless `state` is needs_review."""
    supports: list[SupportRecord] = []
    """Its current supports."""


class DecisionText(_Record):
    """What `search_decisions` ranks a decision by."""

    id: str
    state: DecisionState
    text: str
    vector: tuple[float, ...] | None = None


class ReviewProgress(_Record):
    """What one bounded step of review propagation did (`continue_decision_review`)."""

    processed: int
    """Queued flagged decisions whose dependents were examined."""
    flagged: list[str]
    """Decisions newly flagged needs_review in this step."""
    remaining: int
    """Queued decisions still to examine; 0 when the flags have reached every dependent."""
