"""Running engine calls off the event loop, inside transactions.

The embedded engine is synchronous and allows one write transaction at a time. Writes go
through one connection under a lock; reads take a connection from a small pool so several
read calls (many agent clients) run at once. Every call runs in an explicit transaction:
writes commit or roll back as a whole, reads run `READ ONLY` so the engine refuses writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from evigraph.errors import StoreError

T = TypeVar("T")


class Tx:
    """A connection inside an open transaction, with row helpers."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def execute(self, query: str, params: dict[str, Any] | None = None) -> Any:
        return self._conn.execute(query, params or {})

    def rows(self, query: str, params: dict[str, Any] | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        result = self.execute(query, params)
        try:
            names = result.get_column_names()
            out: list[dict[str, Any]] = []
            while result.has_next() and (limit is None or len(out) < limit):
                out.append(dict(zip(names, result.get_next(), strict=True)))
            return out
        finally:
            result.close()

    def column(self, query: str, params: dict[str, Any] | None = None) -> list[Any]:
        return [next(iter(r.values())) for r in self.rows(query, params)]

    def run_batched(
        self, query: str, rows: Sequence[Any], batch: int = 5000, extra: dict[str, Any] | None = None
    ) -> None:
        """UNWIND `rows` in slices: the engine cannot type an empty list, and huge lists cost memory."""
        for i in range(0, len(rows), batch):
            self.execute(query, {**(extra or {}), "rows": rows[i : i + batch]}).close()


class Executor:
    def __init__(self, db: Any, module: Any, *, read_only: bool, pool_size: int = 4) -> None:
        self._db = db
        self._module = module
        self._write_conn: Any = None if read_only else module.Connection(db)
        self._write_lock = threading.Lock()
        self._pool: queue.LifoQueue[Any] = queue.LifoQueue()
        self._pool_size = pool_size
        self._created = 0
        self._pool_lock = threading.Lock()
        self._setup: list[Callable[[Any], None]] = []

    def on_connect(self, fn: Callable[[Any], None]) -> None:
        """Run `fn` on every connection (extensions must be loaded per connection)."""
        self._setup.append(fn)
        if self._write_conn is not None:
            fn(self._write_conn)

    def raw(self, fn: Callable[[Tx], T]) -> T:
        """Run without an explicit transaction (DDL and extension loading need auto-commit)."""
        conn = self._write_conn if self._write_conn is not None else self._take()
        try:
            return fn(Tx(conn))
        finally:
            if conn is not self._write_conn:
                self._pool.put(conn)

    def write_sync(self, fn: Callable[[Tx], T]) -> T:
        if self._write_conn is None:
            raise StoreError("the knowledge base is open read-only", hint="open it with read_only=False to write")
        with self._write_lock:
            return _in_transaction(self._write_conn, "BEGIN TRANSACTION", fn)

    def read_sync(self, fn: Callable[[Tx], T], timeout_ms: int | None = None) -> T:
        conn = self._take()
        try:
            if timeout_ms is not None:
                conn.set_query_timeout(timeout_ms)
            return _in_transaction(conn, "BEGIN TRANSACTION READ ONLY", fn)
        finally:
            if timeout_ms is not None:
                conn.set_query_timeout(0)
            self._pool.put(conn)

    async def write(self, fn: Callable[[Tx], T]) -> T:
        return await asyncio.to_thread(self.write_sync, fn)

    async def read(self, fn: Callable[[Tx], T], timeout_ms: int | None = None) -> T:
        return await asyncio.to_thread(self.read_sync, fn, timeout_ms)

    def _take(self) -> Any:
        try:
            return self._pool.get_nowait()
        except queue.Empty:
            pass
        with self._pool_lock:
            if self._created < self._pool_size:
                self._created += 1
                conn = self._module.Connection(self._db)
                for fn in self._setup:
                    fn(conn)
                return conn
        return self._pool.get()

    def close(self) -> None:
        conns = [self._write_conn] if self._write_conn is not None else []
        while True:
            try:
                conns.append(self._pool.get_nowait())
            except queue.Empty:
                break
        for conn in conns:
            conn.close()
        self._write_conn = None
        self._db.close()


def _in_transaction(conn: Any, begin: str, fn: Callable[[Tx], T]) -> T:
    """Run `fn` in one transaction: commit what it did, or roll all of it back."""
    conn.execute(begin)
    try:
        out = fn(Tx(conn))
    except BaseException:
        _rollback(conn)
        raise
    conn.execute("COMMIT")
    return out


def _rollback(conn: Any) -> None:
    """Roll back unless the engine already did (it ends a transaction on a failed statement)."""
    with contextlib.suppress(RuntimeError):
        conn.execute("ROLLBACK")
