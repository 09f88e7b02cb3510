"""Agent Cypher on FalkorDB (`FalkorStore.query`): vetted, then run read-only and bounded.

It runs through `GRAPH.RO_QUERY`, which the server itself refuses to let write, with the server's
own time limit (and, on a server `evigraph server` started, its query memory cap). Before that, the
shared guard (`store/cypher`: tokens, bounds, one read-only statement, only the knowledge graph's
labels, no hidden name, a LIMIT on every final RETURN) and FalkorDB's dialect here vet it: allowed
functions and procedures, and every subscript made numeric, since `c['embed' + 'ding']` reads a
property by a computed name. Then the server's plan (`GRAPH.EXPLAIN`) must hold read operations only,
each scan starting at a label free-form Cypher reads: agents' records and bookkeeping share the graph
but carry no relationship, so a walk from the knowledge graph's nodes never reaches them, and a
label-less scan or a seek by id (`id(n) < 100000`) is refused. Rows come back without vectors,
index text, passage contexts or the `live` flag.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from evigraph.errors import CypherRefused, QueryAborted, QueryTimeout, ReadOnlyQueryError
from evigraph.store.cypher.lexer import Kind, Token, refuse
from evigraph.store.cypher.rows import TIMEOUT_HINT, Budget, QueryRows, Slots
from evigraph.store.cypher.rules import HIDDEN_PROPERTIES, HINT, LABEL_HINT, NOT_FUNCTIONS
from evigraph.store.cypher.shared import check_statement
from evigraph.store.cypher.statement import (
    Edit,
    Guarded,
    after_dot,
    after_operand,
    check_range,
    finish,
    next_is,
    readable_table,
)

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

READ_OPERATIONS = frozenset(
    {
        *("Results", "Argument", "Argument List", "Optional", "ProcedureCall", "Unwind", "Filter", "Project"),
        *("Conditional Traverse", "Optional Conditional Traverse", "Conditional Variable Length Traverse"),
        *("Conditional Variable Length Traverse (Expand Into)", "All Shortest Paths", "Expand Into"),
        *("PathBuilder", "Cartesian Product", "Value Hash Join", "Apply", "Semi Apply", "Anti Semi Apply"),
        *("Or Apply Multiplexer", "And Apply Multiplexer", "Sort", "Skip", "Limit", "Aggregate", "Union"),
        *("Join", "Nested Plans", "Distinct", "CallSubquery", "Call Subquery"),
    }
)
"""Plan operations that only read and reach no node a scan did not start from (FalkorDB's
operation names, src/execution_plan/ops). Refused, among others: All Node Scan, NodeByIdSeek
(`MATCH (n) WHERE id(n) >= 0` read every project's decisions), the full-text and vector index
scans, Create, Merge, Delete, Update, Load CSV, ForEach, Commit and the index operations."""

SCANS = frozenset({"Node By Label Scan", "Node By Index Scan", "Node By Label and ID Scan", "Edge By Index Scan"})
"""Where a plan may start: each names its labels or relationship type, which must be readable."""

_SCANNED = re.compile(r"[(\[]\s*[^:\s)\]]*((?::\s*[^:\s)\]]+)*)\s*[)\]]")


def guard(query: str, params: Mapping[str, Any] | None, row_cap: int) -> tuple[Guarded, set[str]]:
    """The rewritten query, its parameters and the labels and types it names, or CypherRefused."""
    checked = check_statement(query, params)
    _check_calls(checked.tokens)
    _check_functions(checked.tokens)
    edits = _numeric_subscripts(checked.tokens)
    return finish(query, checked.comments, checked.tokens, checked.params, row_cap, edits), checked.named


def _numeric_subscripts(tokens: list[Token]) -> list[Edit]:
    """`x[...]` reads a property of a node or map by a computed name, which no name check can see
    (`c['embed' + 'ding']`): every subscript but a string literal is made a number, as a list index
    is; a literal name is checked like any other (`check_hidden`)."""
    edits: list[Edit] = []
    stack: list[tuple[int, bool]] = []
    for i, t in enumerate(tokens):
        if t.kind is Kind.PUNCT and t.value in "([{":
            stack.append((i, t.value == "[" and after_operand(tokens, i)))
        elif t.kind is Kind.PUNCT and t.value in ")]}" and stack:
            opened, subscript = stack.pop()
            if subscript:
                edits.extend(_wrapped(tokens, opened + 1, i))
    return edits


def _wrapped(tokens: list[Token], a: int, b: int) -> list[Edit]:
    """Edits putting each side of the subscript t[a:b] (an index, or a slice's bounds) in toInteger()."""
    if b - a == 1 and tokens[a].kind is Kind.STRING:
        return []
    parts: list[tuple[int, int]] = []
    start, depth = a, 0
    for j in range(a, b):
        t = tokens[j]
        if t.kind is Kind.PUNCT and t.value in "([{":
            depth += 1
        elif t.kind is Kind.PUNCT and t.value in ")]}":
            depth -= 1
        elif depth == 0 and t.kind is Kind.PUNCT and t.value == "..":
            parts.append((start, j))
            start = j + 1
    parts.append((start, b))
    edits: list[Edit] = []
    for x, y in parts:
        if x >= y or (y - x == 1 and tokens[x].kind is Kind.NUMBER):
            continue
        edits.append((tokens[x].start, tokens[x].start, "toInteger("))
        edits.append((tokens[y - 1].end, tokens[y - 1].end, ")"))
    return edits


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
        if not t.is_word("CALL") or after_dot(tokens, i):
            continue
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if nxt is not None and nxt.kind is Kind.PUNCT and nxt.value == "{":
            continue  # a subquery, whose clauses are checked like the rest
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
        if not t.is_name or not next_is(tokens, i, "("):
            continue
        if _procedure_part(tokens, i):
            continue  # checked by _check_calls
        if after_dot(tokens, i):
            raise refuse(f"calling .{t.text}() is refused", _FUNCTION_HINT)
        if t.kind is Kind.WORD and t.value.upper() in NOT_FUNCTIONS:
            if t.value.upper() == "CAST":
                raise refuse("CAST is not FalkorDB Cypher", "use toInteger, toFloat or toBoolean")
            continue
        if t.value.lower() not in FUNCTIONS:
            raise refuse(f"function {t.text} is not allowed in free-form queries", _FUNCTION_HINT)
        if t.value.lower() == "range":
            check_range(tokens, i)


_FUNCTION_HINT = (
    "allowed functions include count, collect, sum, avg, min, max, toLower, toUpper, trim, size, substring, "
    "replace, split, coalesce, head, last, range, labels, type, nodes, relationships, toInteger, toFloat"
)


def check_plan(plan: str) -> None:
    """Refuse a plan holding an operation outside `READ_OPERATIONS` and `SCANS`, or a scan of a
    label free-form Cypher does not read."""
    for line in plan.splitlines():
        if not line.strip():
            continue
        op, _, detail = line.strip().partition("|")
        op, detail = op.strip(), detail.strip()
        if op in SCANS:
            match = _SCANNED.search(detail)
            names = [n.strip() for n in match.group(1).split(":") if n.strip()] if match else []
            if not names or not all(readable_table(n) for n in names):
                shown = detail or "every node"
                raise refuse(f"the server plans a scan of {shown}, outside the knowledge graph", LABEL_HINT)
        elif op in ("All Node Scan", "NodeByIdSeek"):
            raise refuse(
                "a node matched without a label (or by its id alone) could be any node, agents' records included",
                LABEL_HINT,
            )
        elif op not in READ_OPERATIONS:
            raise refuse(f"the server plans {op} for this query, which free-form Cypher does not run", HINT)


MEMORY_HINT = (
    "return less: add or lower a LIMIT, count or aggregate instead of collecting lists, filter earlier, "
    "or walk fewer hops"
)


def query_failure(exc: Exception) -> ReadOnlyQueryError:
    message = str(exc)
    lowered = message.lower()
    if "mem consumption exceeded capacity" in lowered:  # FalkorDB's QUERY_MEM_CAPACITY
        return QueryAborted(f"the query needed more memory than the server allows: {message}", hint=MEMORY_HINT)
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
    return {k: plain(v) for k, v in shown if str(k).lower() not in HIDDEN_PROPERTIES and not str(k).startswith("_")}


def bound_rows(rows: list[dict[str, Any]], limit: int) -> QueryRows:
    out = QueryRows()
    budget = Budget()
    for row in rows[:limit]:
        out.append(budget.bound({k: plain(v) for k, v in row.items()}))
        if budget.full:
            budget.cut = budget.cut or len(out) < len(rows)
            break
    out.truncated = budget.cut
    return out


SLOTS = Slots()
"""Free-form queries running at once in this process (the server's threads serve retrieval too)."""
