"""What free-form Cypher hands back, bounded: rows, their sizes, and how many queries run at once.

Engines materialise a result before the first row is fetched, so the row cap lives in the query
(`statement` appends the LIMIT); here the conversion to Python is bounded as well: long lists and
strings are cut, and fetching stops once the rows add up to MAX_RESULT_CHARS, flagging the result
as truncated. Rows leave JSON-safe and in the store's vocabulary: engine ids and hidden properties
are dropped, a node's `_label` is shown as `table`, and dates and other engine values become text.
"""

from __future__ import annotations

import os
import threading
from datetime import date, datetime
from typing import Any

from evigraph.errors import CypherRefused
from evigraph.store.cypher.rules import HIDDEN_PROPERTIES

MAX_LIST_ITEMS = 1000
MAX_STRING_CHARS = 100_000
MAX_RESULT_CHARS = 2_000_000
CONCURRENT_QUERIES = max(1, min(2, (os.cpu_count() or 2) - 1))
"""Free-form queries running at once. Connections are not what runs out: every query of the
embedded database shares the engine's worker threads (one per core), and a slow query holds one
until it ends. Measured on 2 cores with four 10 s queries started at once: retrieve took 9.5 s with
two admitted (both workers taken), 0.03 s with one. So at least one core always stays free for
retrieval."""
ENGINE_KEYS = frozenset({"_id", "_src", "_dst", "_ID", "_SRC", "_DST"})
"""What the embedded engine adds to every node and edge: internal offsets that mean nothing to a
reader (Kuzu names them in lower case, LadybugDB in capitals)."""
LABEL_KEYS = ("_label", "_LABEL")
RENAMED_KEYS = dict.fromkeys(LABEL_KEYS, "table")

TIMEOUT_HINT = "the query ran out of time: add a LIMIT, filter earlier, or walk fewer hops"

QUEUE_SECONDS = 2.0
"""How long a query waits for a slot before it is refused as busy."""


class QueryRows(list[dict[str, Any]]):
    """Rows, plus whether a size bound cut any of them or stopped fetching early."""

    truncated: bool = False


class Slots:
    """A small concurrency limit for free-form queries, separate from the store's reads."""

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


class Budget:
    """Bounds values as they are converted, counting what the rows add up to."""

    def __init__(self) -> None:
        self.used = 0
        self.cut = False

    def bound(self, value: Any) -> Any:
        if isinstance(value, dict):
            whole = any(k in value for k in LABEL_KEYS)  # a node or relationship, not a map a query built
            return {RENAMED_KEYS.get(k, k): self.bound(v) for k, v in value.items() if not hidden_key(k, whole)}
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

    @property
    def full(self) -> bool:
        return self.used > MAX_RESULT_CHARS


def hidden_key(key: Any, whole: bool = False) -> bool:
    """Engine ids, internal columns, and on a whole node or relationship the `_`-prefixed
    provenance (`_source`, `_created_at`), which a query may still name to read it."""
    name = str(key)
    return (
        key in ENGINE_KEYS
        or name.lower() in HIDDEN_PROPERTIES
        or (whole and name.startswith("_") and name not in RENAMED_KEYS)
    )
