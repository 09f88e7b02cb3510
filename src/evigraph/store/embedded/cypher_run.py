"""Running guarded Cypher: plan check, one prepared statement, and bounded conversion.

The engine materialises a result before the first row is fetched, so the row cap lives in the
query (cypher_guard appends the LIMIT); here the conversion to Python is bounded as well: long
lists and strings are cut, and fetching stops once the rows add up to MAX_RESULT_CHARS, flagging
the result as truncated. Rows leave JSON-safe and in the store's vocabulary, not the engine's:
the engine's node and edge ids and the hidden properties are dropped, a node's `_label` is
shown as `table`, and dates and other engine values become text.
"""

from __future__ import annotations

import os
import threading
from datetime import date, datetime
from typing import Any

from evigraph.errors import CypherRefused, EngineError, QueryTimeout, ReadOnlyQueryError
from evigraph.store.embedded.cypher_guard import Guarded
from evigraph.store.embedded.cypher_plan import check_plan
from evigraph.store.embedded.cypher_rules import HIDDEN_PROPERTIES
from evigraph.store.embedded.executor import Tx

MAX_LIST_ITEMS = 1000
MAX_STRING_CHARS = 100_000
MAX_RESULT_CHARS = 2_000_000
CONCURRENT_QUERIES = max(1, min(2, (os.cpu_count() or 2) - 1))
"""Free-form queries running at once. Connections are not what runs out: every query of the
database shares the engine's worker threads (one per core), and a slow query holds one until it
ends. Measured on 2 cores with four 10 s queries started at once: retrieve took 9.5 s with two
admitted (both workers taken), 0.03 s with one. So at least one worker always stays free for
retrieval, and at most two of the read pool's four connections are ever taken by Cypher."""
ENGINE_KEYS = frozenset({"_id", "_src", "_dst"})
"""What the engine adds to every node and edge: internal offsets that mean nothing to a reader."""
RENAMED_KEYS = {"_label": "table"}

TIMEOUT_HINT = "the query ran out of time: add a LIMIT, filter earlier, or walk fewer hops"

QUEUE_SECONDS = 2.0
"""How long a query waits for a slot before it is refused as busy."""


class QueryRows(list[dict[str, Any]]):
    """Rows, plus whether a size bound cut any of them or stopped fetching early."""

    truncated: bool = False


class Slots:
    """A small concurrency limit for free-form queries, separate from the read pool."""

    def __init__(self, size: int = CONCURRENT_QUERIES) -> None:
        self._sem = threading.BoundedSemaphore(size)
        self.size = size

    def __enter__(self) -> None:
        if not self._sem.acquire(timeout=QUEUE_SECONDS):
            raise CypherRefused(
                f"{self.size} Cypher queries are already running, so this one was not started",
                hint="retry in a few seconds, or use retrieve / search tools meanwhile",
            )

    def __exit__(self, *exc: object) -> None:
        self._sem.release()


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
    "... read-only transaction" when it refused a write the guard let through).
    """
    message = exc.message
    lowered = message.lower()
    if "interrupt" in lowered:
        return QueryTimeout(message, hint=TIMEOUT_HINT)
    if "read-only" in lowered:
        return CypherRefused(message, hint="only read queries run here: use MATCH ... RETURN")
    return ReadOnlyQueryError(message, hint="check the query against the schema")


def _all(result: Any) -> list[list[Any]]:
    rows = []
    while result.has_next():
        rows.append(result.get_next())
    return rows


def _fetch(result: Any, limit: int) -> QueryRows:
    names = result.get_column_names()
    out = QueryRows()
    budget = _Budget()
    while len(out) < limit and result.has_next():
        raw = result.get_next()
        out.append(budget.bound(dict(zip(names, raw, strict=True))))
        if budget.used > MAX_RESULT_CHARS:
            budget.cut = budget.cut or result.has_next()
            break
    out.truncated = budget.cut
    return out


class _Budget:
    def __init__(self) -> None:
        self.used = 0
        self.cut = False

    def bound(self, value: Any) -> Any:
        if isinstance(value, dict):
            whole = "_label" in value  # a node or relationship, not a row or a map the query built
            return {RENAMED_KEYS.get(k, k): self.bound(v) for k, v in value.items() if not _hidden(k, whole)}
        if isinstance(value, list | tuple):
            if len(value) > MAX_LIST_ITEMS:
                self.cut = True
                value = value[:MAX_LIST_ITEMS]
            return [self.bound(v) for v in value]
        if value is None or isinstance(value, bool | int | float):
            self.used += 8
            return value
        if isinstance(value, datetime | date):
            value = value.isoformat()
        elif not isinstance(value, str):
            value = str(value)  # intervals, UUIDs, decimals, blobs: text is what JSON can carry
        if len(value) > MAX_STRING_CHARS:
            self.cut = True
            value = value[:MAX_STRING_CHARS]
        self.used += len(value) + 2
        return value


def _hidden(key: Any, whole: bool = False) -> bool:
    """Engine ids, internal columns, and on a whole node or relationship the `_`-prefixed
    provenance (`_source`, `_created_at`), which a query may still name to read it."""
    name = str(key)
    return (
        key in ENGINE_KEYS
        or name.lower() in HIDDEN_PROPERTIES
        or (whole and name.startswith("_") and name not in RENAMED_KEYS)
    )
