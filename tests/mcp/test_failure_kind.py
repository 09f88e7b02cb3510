"""Failures the MCP server masks are told apart by type, not by words in their messages."""

from __future__ import annotations

from evigraph.errors import ConfigurationError, EngineError, QueryTimeout, StoreError
from evigraph.serving.shaping import failure_kind


class OpenAIError(Exception):
    """Stands for a provider client's exception, which evigraph cannot type."""


def test_typed_failures_map_to_their_kind() -> None:
    assert failure_kind(QueryTimeout("Interrupted."))[0] == "timeout"
    assert failure_kind(TimeoutError())[0] == "timeout"
    assert failure_kind(EngineError("Buffer manager exception: out of memory"))[0] == "database"
    assert failure_kind(StoreError("cannot open"))[0] == "database"
    assert failure_kind(ConfigurationError("bad option"))[0] == "configuration"
    assert failure_kind(OpenAIError("rate limited"))[0] == "model provider"


def test_words_in_a_message_do_not_decide_the_kind() -> None:
    # Before typed engine errors, "interrupt" or "database" anywhere in a message chose the kind.
    assert failure_kind(RuntimeError("the database was interrupted"))[0] == "internal"
    assert failure_kind(ConfigurationError("timeout must be positive"))[0] == "configuration"
