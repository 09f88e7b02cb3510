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


class NewStep(_Record):
    name: str
    state: StepState
    kind: StepKind = "other"
    result_basis: ResultBasis = "unknown"
    result_event_seq: int | None = None
    """An event of the task holding the result; `set_step` fills it when it records the result itself."""


class StepRecord(NewStep):
    agent: str
    """The agent that set the step last."""
    updated_at: datetime
