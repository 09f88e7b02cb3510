"""Errors that tell the user what to do next.

Every error evigraph raises on purpose is an `EvigraphError` with a one-line message and a hint
naming the fix, so the CLI, the toolkit and the MCP server can show both without guessing.
"""

from __future__ import annotations


class EvigraphError(Exception):
    """Base of every error raised on purpose; `hint` names the fix."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class InputError(EvigraphError):
    """A source cannot be ingested: missing, unreadable, binary, empty, too large, malformed."""


class ConfigurationError(EvigraphError):
    """An option or strategy is invalid or an optional dependency is missing."""


class StoreError(EvigraphError):
    """The database cannot be opened or a store operation failed."""


class StoreUnavailableError(StoreError):
    """The database server cannot be reached (down, restarting, the network cut): every further
    write would fail the same way, so an ingest stops instead of failing each document."""


class DatabaseLockedError(StoreError):
    """Another process holds the database for writing."""


class NotAKnowledgeBaseError(StoreError):
    """The path exists but is not an evigraph knowledge base."""


class KnowledgeBaseMissingError(StoreError):
    """A read was asked of a knowledge base that was never written."""


class EngineUnavailableError(StoreError):
    """The chosen embedded engine is not installed or cannot load its extensions."""


class EngineError(StoreError):
    """The database engine failed during a store operation.

    Raised by the store in place of the engine's own exception type, so callers (the MCP server,
    the CLI) tell engine failures apart by type, whatever engine a store runs on.
    """


class ReadOnlyQueryError(StoreError):
    """A read-only query tried to write, or failed in the engine."""


class CypherRefused(ReadOnlyQueryError):
    """Free-form Cypher refused: not a single read statement (by the store's guard or the engine's
    read-only transaction), too costly, or busy."""


class UnknownLabel(CypherRefused):
    """Free-form Cypher named a label or relationship type outside the knowledge graph: one that
    does not exist (often an entity's label, `(p:Person)`, which is a property value) or one of the
    bookkeeping and agents' tables free-form Cypher does not read."""


class QueryAborted(ReadOnlyQueryError):
    """Free-form Cypher stopped for what it did rather than what it says: it needed more memory than
    a query may use, or it ended the process running it. Its hint says what to change."""


class QueryTimeout(ReadOnlyQueryError):
    """Free-form Cypher stopped by the engine because it ran out of its time limit."""


class DeadlineExceeded(EvigraphError):
    """A read ran past the operator's per-read deadline (`read_deadline_seconds`) and was stopped,
    so one costly call cannot hold a server's client waiting for ever."""


class NotFoundError(EvigraphError):
    """A reference names nothing current: a passage, entity or theme that is not (or no longer) stored."""


class ToolError(EvigraphError):
    """A toolkit call that cannot run; the hint tells the agent what to do instead."""


class ReadOnlyViolation(ToolError):
    """A write tool called on a read-only toolkit."""


class LLMError(EvigraphError):
    """A language model call failed: the server refused it, kept failing, or answered unusably.

    `status` is the HTTP status when the server answered one. Retries have already been spent
    when this is raised; callers fail the one document (or answer) and carry on.
    """

    def __init__(self, message: str, hint: str = "", *, status: int | None = None) -> None:
        super().__init__(message, hint)
        self.status = status
        self.input_tokens: int | None = None
        """What the server reported the failed call cost, when it answered (a malformed reply)."""
        self.output_tokens: int | None = None


class LLMConfigurationError(LLMError, ConfigurationError):
    """The LLM cannot work as configured: no model, a malformed URL, an unreachable server, a
    rejected key, an unknown model. Every later call would fail alike, so callers stop the batch."""


class LLMTimeoutError(LLMError):
    """The model did not answer within the client's timeout."""


class LLMResponseError(LLMError):
    """The model answered, but not with what was asked: malformed JSON, JSON of the wrong shape,
    no choices, or a stream that ended before the model finished."""


class TaskExistsError(EvigraphError):
    """A task name already taken in the project by a task with another goal (`task_exists`)."""

    code = "task_exists"


class TaskNotFoundError(NotFoundError):
    """A trace call named a task, event or step the project does not hold."""


class RequestConflictError(EvigraphError):
    """A request id reused for a different write: a retry must repeat the first request exactly."""

    code = "request_conflict"


class DecisionNotFoundError(NotFoundError):
    """A decision id the project does not hold."""


class DecisionStateError(EvigraphError):
    """A decision write its target's state does not allow: superseding a rejected decision,
    resting a new one on a decision that needs review."""

    code = "decision_state"


class StaleEvidenceError(EvigraphError):
    """A support read from a document version that has since been replaced or deleted."""

    code = "stale_evidence"
