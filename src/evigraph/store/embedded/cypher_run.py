"""Running guarded Cypher on an engine connection: plan check, one prepared statement, bounded rows.

Called in the serving process when it holds the file for writing (under a `MemoryWatch`), and in
the Cypher worker (`cypher_worker`) otherwise; both convert rows the same way (`store/cypher/rows.py`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from evigraph.errors import CypherRefused, EngineError, QueryAborted, QueryTimeout, ReadOnlyQueryError
from evigraph.memory import resident_bytes
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


class MemoryBudget:
    """What free-form Cypher may grow a process holding the file for writing by, over its life: no
    worker process can read such a file (`cypher_worker`), so queries run in the serving process.

    Per process, not per query, because the engine does not give back what an interrupted query
    took: four queries collecting a 4-million-row product, each interrupted, took a writable store
    from 415 MB to 760, 1,300, 1,840 and 2,370 MB (`malloc_trim` gave nothing back), where the same
    query run to its end four times reused its memory (2,292, 2,308, 2,325, 2,325 MB). A bound per
    query would let a client ratchet the process up to the page cache (a quarter of the machine);
    once this budget is spent, free-form Cypher is refused until the process restarts. Queries that
    reuse what the engine holds grow nothing and cost nothing.
    """

    def __init__(self, allowance: int) -> None:
        self.allowance = allowance
        self.spent = 0
        self._lock = threading.Lock()

    def watch(self) -> MemoryWatch:
        if self.spent >= self.allowance:
            raise QueryAborted(
                f"free-form Cypher has taken the {self.allowance >> 20} MB it may add to this server, which holds "
                "the knowledge base for writing (the engine does not give back what a stopped query took), so "
                "it is refused until the server restarts",
                hint="serve the knowledge base read-only (no --allow-writes) to run each query in a worker "
                "process of its own, or restart this server",
            )
        return MemoryWatch(self)

    def charge(self, grown: int) -> None:
        with self._lock:
            self.spent += max(0, grown)

    @property
    def room(self) -> int:
        return max(0, self.allowance - self.spent)


class MemoryWatch:
    """Interrupts one query once the process grew past what its budget has left.

    The engine checks for an interrupt between batches of rows, so what grows by rows (collecting,
    sorting, joining) stops within a batch (a collect of a 4-million-row product stopped 40 MB past
    a 512 MB budget, polled every 20 ms); what grows inside one row is refused before it runs
    (`store/cypher/bounds.py`). Resident memory is read from /proc every POLL_S, so it watches on
    Linux only; elsewhere the time limit and the page cache still bound the query.
    """

    POLL_S = 0.02

    def __init__(self, budget: MemoryBudget) -> None:
        self.budget = budget
        self.fired = False

    @contextlib.contextmanager
    def __call__(self, conn: Any) -> Iterator[None]:
        start = resident_bytes()
        if start is None:
            yield
            return
        room = self.budget.room
        done = threading.Event()

        def poll() -> None:
            while not done.wait(self.POLL_S):
                now = resident_bytes()
                if now is not None and now - start > room:
                    self.fired = True
                    conn.interrupt()
                    return

        watcher = threading.Thread(target=poll, name="evigraph-cypher-memory", daemon=True)
        watcher.start()
        try:
            yield
        finally:
            done.set()
            watcher.join()
            end = resident_bytes()
            self.budget.charge((end or start) - start)

    def failure(self) -> ReadOnlyQueryError:
        return QueryAborted(
            f"the query needed more than the {self.budget.allowance >> 20} MB free-form Cypher may use, so it "
            "was stopped",
            hint=MEMORY_HINT,
        )


MEMORY_HINT = "aggregate or filter earlier, return fewer or smaller values, or walk fewer hops"


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
        return QueryAborted(f"the query needed more memory than free-form Cypher may use ({message})", hint=MEMORY_HINT)
    if "parser exception" in lowered and ".index>" in lowered:
        return ReadOnlyQueryError(message, hint=INDEX_HINT)
    return ReadOnlyQueryError(message, hint="check the query against the schema")


INDEX_HINT = "`index` is a keyword of LadybugDB's Cypher: quote the property, c.`index`"
"""A passage's `index` property must be quoted on LadybugDB (`c.index` fails to parse there)."""


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
