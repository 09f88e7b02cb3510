"""Agent Cypher on FalkorDB (`FalkorStore.query`): vetted, then run read-only and bounded.

It runs through `GRAPH.RO_QUERY`, which the server itself refuses to let write, with the
server's own time limit; before that, the engine-independent part of the embedded guard
(`cypher_guard`: one statement, no write, file or schema keyword, no hidden name, a LIMIT on
every final RETURN) and a FalkorDB allow-list of functions and procedures vet it, and the
server's plan (`GRAPH.EXPLAIN`) is refused if it scans every node (a label-less pattern would
reach the agents' task records). Rows come back without vectors, index text, passage contexts
or the `live` flag, like the embedded store's.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any

from evigraph.errors import CypherRefused, QueryTimeout, ReadOnlyQueryError
from evigraph.store.embedded.cypher_guard import (
    Guarded,
    _check_keywords,
    _one_statement,
    _rewrite,
    _strings,
    _used_params,
)
from evigraph.store.embedded.cypher_lexer import Kind, Token, refuse, tokenize
from evigraph.store.embedded.cypher_rules import HIDDEN_PROPERTIES, HIDDEN_TABLES, HINT, NOT_FUNCTIONS, TRACE_HINT
from evigraph.store.embedded.cypher_run import TIMEOUT_HINT, QueryRows, Slots, _Budget

HIDDEN = HIDDEN_PROPERTIES | {"live"}
"""Properties free-form Cypher may not name and never gets back (`live` is FalkorDB's own)."""


# -- agent Cypher ------------------------------------------------------------------------------

FUNCTIONS = frozenset(
    {
        *("count", "sum", "avg", "min", "max", "collect", "stdev", "stdevp", "percentilecont", "percentiledisc"),
        *("abs", "ceil", "floor", "round", "sqrt", "sign", "log", "log10", "exp", "e", "pi", "rand", "pow"),
        *("sin", "cos", "tan", "asin", "acos", "atan", "atan2", "cot", "degrees", "radians", "haversin"),
        *("tolower", "toupper", "trim", "ltrim", "rtrim", "left", "right", "substring", "replace", "split"),
        *("reverse", "size", "length", "startswith", "endswith", "contains", "intern"),
        *("tointeger", "tointegerornull", "tofloat", "tofloatornull", "toboolean", "tobooleanornull"),
        *("coalesce", "head", "last", "tail", "range", "isempty", "reduce", "exists", "typeof"),
        *("id", "labels", "type", "hasLabels".lower(), "startnode", "endnode", "nodes", "relationships"),
        *("timestamp", "date", "localtime", "localdatetime", "duration"),
    }
)
"""FalkorDB functions free-form Cypher may call: read-only scalars and aggregates that cannot
print a whole node (`toString`, `toJSON`, `properties` and `keys` are left out: they would show
or name vectors and index text) and whose output does not grow with an argument."""

PROCEDURES = frozenset({"db.labels", "db.relationshiptypes"})
"""Procedures callable with CALL, by exact (dotted) name."""

TYPES_QUERY = "CALL db.relationshipTypes() YIELD relationshipType RETURN relationshipType AS t"
LABEL_HINT = "call get_ontology for the labels and relationship types this knowledge base has"


def guard(query: str, params: Mapping[str, Any] | None, row_cap: int) -> tuple[Guarded, set[str]]:
    """The rewritten query, its parameters and the labels and types it names, or CypherRefused.

    The keyword, statement and LIMIT rules are the embedded guard's; the function and procedure
    allow-lists are FalkorDB's.
    """
    params = params or {}
    lexed = tokenize(query)
    tokens = _one_statement(lexed.tokens)
    _check_keywords(tokens)
    _check_hidden(tokens, params)
    _check_calls(tokens)
    _check_functions(tokens)
    text = _rewrite(query, lexed.comments, tokens, params, row_cap)
    return Guarded(text, _used_params(tokenize(text).tokens, params)), _labels(tokens)


def _folded(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold().strip()


def _check_hidden(tokens: list[Token], params: Mapping[str, Any]) -> None:
    names = {_folded(t.value) for t in tokens if t.is_name or t.kind is Kind.STRING}
    names |= {_folded(v) for v in _strings(list(params.values()))}
    if names & HIDDEN_TABLES:
        raise refuse("free-form Cypher does not read task records (tasks, events, steps, decisions)", TRACE_HINT)
    hidden = sorted(names & HIDDEN)
    if hidden:
        raise refuse(
            f"queries do not return {' or '.join(hidden)}: vectors, index text and passage contexts are internal",
            "return text, name, description or other properties (get_ontology lists them); "
            "for similarity use search_passages",
        )


def _dotted(tokens: list[Token], i: int) -> tuple[str, int]:
    """The dotted name starting at token i (`db.idx.x`), lower-cased, and the index after it."""
    parts = [tokens[i].value]
    j = i + 1
    while j + 1 < len(tokens) and tokens[j].kind is Kind.PUNCT and tokens[j].value == "." and tokens[j + 1].is_name:
        parts.append(tokens[j + 1].value)
        j += 2
    return ".".join(parts).lower(), j


def _check_calls(tokens: list[Token]) -> None:
    for i, t in enumerate(tokens):
        if not t.is_word("CALL") or _after_dot(tokens, i):
            continue
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        name, after = _dotted(tokens, i + 1) if nxt is not None and nxt.is_name else ("", i + 1)
        opens = after < len(tokens) and tokens[after].kind is Kind.PUNCT and tokens[after].value == "("
        if name not in PROCEDURES or not opens:
            shown = nxt.text if nxt is not None else "(nothing)"
            raise refuse(
                f"CALL {shown} is refused: only catalogue procedures run here",
                f"allowed procedures: {', '.join(sorted(PROCEDURES))}",
            )


def _procedure_part(tokens: list[Token], i: int) -> bool:
    """Whether the name at i is part of a dotted procedure name right after CALL."""
    j = i
    while j >= 2 and tokens[j - 1].kind is Kind.PUNCT and tokens[j - 1].value == "." and tokens[j - 2].is_name:
        j -= 2
    return j >= 1 and tokens[j - 1].is_word("CALL")


def _check_functions(tokens: list[Token]) -> None:
    for i, t in enumerate(tokens):
        if not t.is_name or not _next_is(tokens, i, "("):
            continue
        if _procedure_part(tokens, i):
            continue  # checked by _check_calls
        if _after_dot(tokens, i):
            raise refuse(f"calling .{t.text}() is refused", _FUNCTION_HINT)
        if t.kind is Kind.WORD and t.value.upper() in NOT_FUNCTIONS:
            if t.value.upper() == "CAST":
                raise refuse("CAST is not FalkorDB Cypher", "use toInteger, toFloat or toBoolean")
            continue
        if t.value.lower() not in FUNCTIONS:
            raise refuse(f"function {t.text} is not allowed in free-form queries", _FUNCTION_HINT)


_FUNCTION_HINT = (
    "allowed functions include count, collect, sum, avg, min, max, toLower, toUpper, trim, size, substring, "
    "replace, split, coalesce, head, last, range, labels, type, nodes, relationships, toInteger, toFloat"
)


def _after_dot(tokens: list[Token], i: int) -> bool:
    return i > 0 and tokens[i - 1].kind is Kind.PUNCT and tokens[i - 1].value == "."


def _next_is(tokens: list[Token], i: int, punct: str) -> bool:
    return i + 1 < len(tokens) and tokens[i + 1].kind is Kind.PUNCT and tokens[i + 1].value == punct


def _labels(tokens: list[Token]) -> set[str]:
    """Labels and relationship types the query names: names after `:` directly inside `(...)` or
    `[...]` (not inside a `{...}` map), and after `|` between relationship types (`[:A|B]`)."""
    stack: list[str] = []
    out: set[str] = set()
    last = -1  # index of the last label or type collected
    for i, t in enumerate(tokens):
        if t.kind is Kind.PUNCT and t.value in "([{":
            stack.append(t.value)
        elif t.kind is Kind.PUNCT and t.value in ")]}":
            if stack:
                stack.pop()
        elif t.is_name and i > 0 and stack and stack[-1] in "([":
            before = tokens[i - 1]
            after_colon = before.kind is Kind.PUNCT and before.value == ":"
            after_bar = before.kind is Kind.PUNCT and before.value == "|" and last == i - 2 and stack[-1] == "["
            if after_colon or after_bar:
                out.add(t.value)
                last = i
    return out


def check_plan(plan: str) -> None:
    """Refuse a plan that scans every node: a label-less pattern, which would reach the agents'
    task records (the embedded store refuses scans reaching their tables the same way)."""
    for line in plan.splitlines():
        op = line.strip().split("|", 1)[0].strip().lower()
        if op == "all node scan":
            raise refuse(
                "a pattern without a label scans every node, task records included, so it is refused",
                "name the label you read, e.g. MATCH (e:Entity) or (c:Chunk); tasks and decisions are read "
                "with their tools",
            )
        if op in {"create", "merge", "delete", "update", "foreach", "load csv"}:
            raise refuse(f"the server plans {op} for this query, which is not a read", HINT)


MEMORY_HINT = (
    "return less: add or lower a LIMIT, count or aggregate instead of collecting lists, filter earlier, "
    "or walk fewer hops"
)


def query_failure(exc: Exception) -> ReadOnlyQueryError:
    message = str(exc)
    lowered = message.lower()
    if "mem consumption exceeded capacity" in lowered:  # FalkorDB's QUERY_MEM_CAPACITY
        return CypherRefused(f"the query needed more memory than the server allows: {message}", hint=MEMORY_HINT)
    if "timed out" in lowered or "timeout" in lowered:
        return QueryTimeout(message, hint=TIMEOUT_HINT)
    if "read-only" in lowered or "read only" in lowered:
        return CypherRefused(message, hint="only read queries run here: use MATCH ... RETURN")
    return ReadOnlyQueryError(message, hint="check the query against the schema (get_ontology)")


def plain(value: Any) -> Any:
    """A FalkorDB result value as JSON-safe Python, nodes and edges as their shown properties with
    their label as `table`, without hidden properties."""
    from falkordb.edge import Edge
    from falkordb.node import Node
    from falkordb.path import Path

    if isinstance(value, Node):
        labels = list(value.labels or [])
        return {"table": labels[0] if labels else "", **_shown(value.properties)}
    if isinstance(value, Edge):
        return {"table": value.relation, **_shown(value.properties)}
    if isinstance(value, Path):
        return {"nodes": [plain(n) for n in value.nodes()], "rels": [plain(e) for e in value.edges()]}
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return str(value)
    return value


def _shown(properties: Mapping[str, Any] | None) -> dict[str, Any]:
    """A whole node's or relationship's properties, without the internal ones and the `_`-prefixed
    provenance (`_source`, `_created_at`), which a query may still name to read it."""
    shown = (properties or {}).items()
    return {k: plain(v) for k, v in shown if str(k).lower() not in HIDDEN and not str(k).startswith("_")}


def bound_rows(rows: list[dict[str, Any]], limit: int) -> QueryRows:
    out = QueryRows()
    budget = _Budget()
    for row in rows[:limit]:
        out.append(budget.bound({k: plain(v) for k, v in row.items()}))
        if budget.used > 2_000_000:
            budget.cut = budget.cut or len(out) < len(rows)
            break
    out.truncated = budget.cut
    return out


SLOTS = Slots()
"""Free-form queries running at once in this process (the server's threads serve retrieval too)."""
