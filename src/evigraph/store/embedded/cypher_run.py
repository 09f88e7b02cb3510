"""Running guarded Cypher on an engine connection: plan check, one prepared statement, bounded rows.

Called in the serving process when it holds the file for writing, and in the Cypher worker
(`cypher_worker`) otherwise; both convert rows the same way (`store/cypher/rows.py`).
"""

from __future__ import annotations

from typing import Any

from evigraph.errors import CypherRefused, EngineError, QueryTimeout, ReadOnlyQueryError
from evigraph.store.cypher.rows import TIMEOUT_HINT, Budget, QueryRows
from evigraph.store.cypher.statement import Guarded
from evigraph.store.embedded.cypher_plan import check_plan
from evigraph.store.embedded.executor import Tx


def run(tx: Tx, guarded: Guarded, limit: int) -> QueryRows:
    """Check the engine's plan, then run the query and convert at most `limit` bounded rows."""
    result = tx.prepared("EXPLAIN " + guarded.text, guarded.params)
    try:
        plan = "\n".join(str(v) for row in _all(result) for v in row)
    finally:
        result.close()
    check_plan(plan)
    result = tx.prepared(guarded.text, guarded.params)
    try:
        return _fetch(result, limit)
    finally:
        result.close()


def query_failure(exc: EngineError) -> ReadOnlyQueryError:
    """The engine's failure of a guarded query, typed by what the caller can do about it.

    The engine says only in words why it stopped ("Interrupted." when the time limit ran out,
    "... read-only transaction" when it refused a write the guard let through, "buffer pool is
    full" or bad_alloc when the query needed more memory than it may have).
    """
    message = exc.message
    lowered = message.lower()
    if "interrupt" in lowered:
        return QueryTimeout(message, hint=TIMEOUT_HINT)
    if "read-only" in lowered:
        return CypherRefused(message, hint="only read queries run here: use MATCH ... RETURN")
    if "buffer pool is full" in lowered or "bad_alloc" in lowered:
        return ReadOnlyQueryError(
            f"the query needed more memory than free-form Cypher may use ({message})",
            hint="aggregate or filter earlier, return fewer or smaller values, or walk fewer hops",
        )
    return ReadOnlyQueryError(message, hint="check the query against the schema")


def _all(result: Any) -> list[list[Any]]:
    rows = []
    while result.has_next():
        rows.append(result.get_next())
    return rows


def _fetch(result: Any, limit: int) -> QueryRows:
    names = result.get_column_names()
    out = QueryRows()
    budget = Budget()
    while len(out) < limit and result.has_next():
        raw = result.get_next()
        out.append(budget.bound(dict(zip(names, raw, strict=True))))
        if budget.full:
            budget.cut = budget.cut or result.has_next()
            break
    out.truncated = budget.cut
    return out
