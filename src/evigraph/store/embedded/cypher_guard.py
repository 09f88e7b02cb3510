"""Deciding whether agent-written Cypher may run on the embedded engine, and the text it runs.

A query reaches the engine only if it passes the shared guard (`store/cypher`: tokens, bounds, one
read-only statement over the knowledge graph's tables, no hidden name) and Kuzu's dialect checks
here: only allow-listed functions and procedures, casts to plain types, `range()` with small literal
bounds, property keys and table names as literals. The engine's own plan is checked afterwards as a
second, independent layer (cypher_plan).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evigraph.store.cypher.lexer import Kind, Token, refuse
from evigraph.store.cypher.rules import LABEL_HINT, NOT_FUNCTIONS
from evigraph.store.cypher.shared import check_statement
from evigraph.store.cypher.statement import (
    Guarded,
    after_dot,
    check_range,
    closing,
    finish,
    next_is,
    readable_table,
)
from evigraph.store.embedded.cypher_rules import (
    CAST_TARGETS,
    FUNCTION_HINT,
    FUNCTIONS,
    KEY_FUNCTIONS,
    PROCEDURE_TABLE_ARGUMENT,
    PROCEDURES,
)

__all__ = ["Guarded", "guard"]


def guard(query: str, params: Mapping[str, Any] | None, row_cap: int) -> Guarded:
    """The rewritten query and its parameters, or CypherRefused saying what may not run."""
    checked = check_statement(query, params)
    _check_calls(checked.tokens)
    _check_functions(checked.tokens)
    return finish(query, checked.comments, checked.tokens, checked.params, row_cap)


def _check_calls(tokens: list[Token]) -> None:
    for i, t in enumerate(tokens):
        if not t.is_word("CALL") or after_dot(tokens, i):
            continue
        name = tokens[i + 1] if i + 1 < len(tokens) else None
        if name is None or not name.is_name or name.value.lower() not in PROCEDURES or not next_is(tokens, i + 1, "("):
            shown = name.text if name is not None else "(nothing)"
            raise refuse(
                f"CALL {shown} is refused: only catalogue and search procedures run here",
                f"allowed procedures: {', '.join(sorted(PROCEDURES))}",
            )
        if name.value.lower() in PROCEDURE_TABLE_ARGUMENT:
            first = tokens[i + 3] if i + 3 < len(tokens) else None
            ends = i + 4 < len(tokens) and tokens[i + 4].kind is Kind.PUNCT and tokens[i + 4].value in ",)"
            if first is None or first.kind is not Kind.STRING or not ends or not readable_table(first.value):
                raise refuse(
                    f"{name.text}() takes the name of a knowledge-graph table as one string literal here",
                    LABEL_HINT,
                )


def _check_functions(tokens: list[Token]) -> None:
    for i, t in enumerate(tokens):
        if not t.is_name or not next_is(tokens, i, "("):
            continue
        if after_dot(tokens, i):
            raise refuse(f"calling .{t.text}() is refused", FUNCTION_HINT)
        if i > 0 and tokens[i - 1].is_word("CALL"):
            continue  # a procedure, checked by _check_calls
        word = t.value.upper()
        if t.kind is Kind.WORD and word in NOT_FUNCTIONS:
            if word == "CAST":
                _check_cast(tokens, i)
            continue
        name = t.value.lower()
        if name not in FUNCTIONS:
            raise refuse(f"function {t.text} is not allowed in free-form queries", FUNCTION_HINT)
        if name == "range":
            check_range(tokens, i)
        if name in KEY_FUNCTIONS:
            _check_key_argument(tokens, i)


def _check_cast(tokens: list[Token], i: int) -> None:
    close = closing(tokens, i + 1)
    inner = tokens[i + 2 : close]
    depth, split = 0, -1
    for j, t in enumerate(inner):  # the target follows the last top-level AS or comma
        if t.kind is Kind.PUNCT and t.value in "([{":
            depth += 1
        elif t.kind is Kind.PUNCT and t.value in ")]}":
            depth -= 1
        elif depth == 0 and (t.is_word("AS") or (t.kind is Kind.PUNCT and t.value == ",")):
            split = j
    target = inner[split + 1 :] if split >= 0 else []
    words = [t.value.upper() for t in target if t.kind in (Kind.WORD, Kind.STRING)]
    shape_ok = all(t.kind in (Kind.WORD, Kind.STRING, Kind.NUMBER) or t.value in "()[]," for t in target)
    if not words or not shape_ok or words[0].split("(")[0].split("[")[0] not in CAST_TARGETS:
        raise refuse(
            "CAST may only produce numbers, booleans, dates and timestamps here",
            "casting a node or list to STRING would print internal properties; return the properties instead",
        )


def _check_key_argument(tokens: list[Token], i: int) -> None:
    close = closing(tokens, i + 1)
    if not (
        close - 2 > i + 1
        and tokens[close - 1].kind is Kind.STRING
        and tokens[close - 2].kind is Kind.PUNCT
        and tokens[close - 2].value == ","
    ):
        raise refuse(
            f"{tokens[i].text}() takes its property name as one string literal here",
            "write the name as a literal, e.g. struct_extract(n, 'name')",
        )
