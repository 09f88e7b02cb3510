"""The checks every engine's guard runs first, in this order (`cypher/__init__.py`, layers 1 to 3);
a backend's guard then adds its dialect's (functions, procedures, casts) and `finish`es."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evigraph.store.cypher.bounds import check_bounds
from evigraph.store.cypher.lexer import Token, tokenize
from evigraph.store.cypher.statement import check_hidden, check_keywords, check_labels, one_statement


@dataclass(frozen=True)
class Checked:
    """A query that passed the shared checks: its tokens, comments, parameters and the labels it names."""

    tokens: list[Token]
    comments: list[tuple[int, int]]
    params: Mapping[str, Any]
    named: set[str]


def check_statement(query: str, params: Mapping[str, Any] | None) -> Checked:
    """One bounded, read-only statement naming no hidden property and only the knowledge graph's
    labels, or CypherRefused saying why not."""
    params = params or {}
    lexed = tokenize(query)
    tokens = one_statement(lexed.tokens)
    check_bounds(tokens)
    check_keywords(tokens)
    check_hidden(tokens, params)
    return Checked(tokens, lexed.comments, params, check_labels(tokens))
