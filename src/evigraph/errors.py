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


class DatabaseLockedError(StoreError):
    """Another process holds the database for writing."""


class NotAKnowledgeBaseError(StoreError):
    """The path exists but is not an evigraph knowledge base."""


class KnowledgeBaseMissingError(StoreError):
    """A read was asked of a knowledge base that was never written."""


class EngineUnavailableError(StoreError):
    """The chosen embedded engine is not installed or cannot load its extensions."""


class ReadOnlyQueryError(StoreError):
    """A read-only query tried to write, or failed in the engine."""


class CypherRefused(ReadOnlyQueryError):
    """Free-form Cypher refused before it ran: not a single read statement, too costly, or busy."""


class ToolError(EvigraphError):
    """A toolkit call that cannot run; the hint tells the agent what to do instead."""


class ReadOnlyViolation(ToolError):
    """A write tool called on a read-only toolkit."""
