"""Running engine calls off the event loop, inside transactions.

The embedded engine is synchronous and allows one write transaction at a time. Writes go
through one connection under a lock; reads take a connection from a small pool so several
read calls (many agent clients) run at once. Every call runs in an explicit transaction:
writes commit or roll back as a whole, reads run `READ ONLY` so the engine refuses writes.

Statements with parameters run prepared once per connection (`Statements`), and a connection
that has prepared many is replaced: the engine keeps memory for every statement a connection
prepares until that connection closes (measurements on `Statements`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import queue
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from evigraph.errors import StoreError
from evigraph.store.embedded.checkpoint_gate import CheckpointGate
from evigraph.store.embedded.engine import engine_failure, engine_name
from evigraph.surrogates import surrogate_path

T = TypeVar("T")

STATEMENT_CACHE_ENV = "EVIGRAPH_STATEMENT_CACHE"
"""Internal switch: `0` turns statement caching and connection renewal off, restoring the
leaking shape (a fresh prepare per call), so bench/soak.py can measure it as a baseline."""

CACHED_STATEMENTS = 128
"""Prepared statements kept per connection: the store issues a few dozen distinct texts, so this
only ever evicts user Cypher (`cypher_query`), whose texts vary."""

RENEW_AFTER_PREPARES = 256
"""A connection is replaced after this many prepares: at most ~12 MB (256 x ~49 KB for the
largest full-text query) is ever held by the engine per connection."""

RENEW_AFTER_TRANSACTIONS = 20_000
"""And after this many transactions: a cheap bound (0.4 ms to reconnect) on any other state the
engine keeps per connection; none was measured in 0.11.3 beyond prepares."""


def statement_cache_enabled() -> bool:
    return os.environ.get(STATEMENT_CACHE_ENV, "1") != "0"


class _Prepared:
    __slots__ = ("names", "statement")

    def __init__(self, statement: Any) -> None:
        self.statement = statement
        self.names: frozenset[str] = frozenset()  # every parameter name it has run with


class Statements:
    """One connection's prepared statements, keyed by query text (least recently used evicted).

    Why: Kuzu 0.11.3's `Connection.execute(text, params)` prepares the text anew on every call
    (its `query` path, taken without parameters, does not prepare), and the engine keeps memory
    for each prepare until the connection closes. RSS growth per call after warm-up, one
    connection, 3,000 calls, 500-passage HotpotQA database, each variant in its own process:
      full-text query (`search_passages`), `execute(text, params)`   +49 KB
      the same, values inlined into the text, no parameters           0
      the same, prepare only (never executed)                       +49 KB
      the same, one PreparedStatement executed every time             0
      the same, inside BEGIN READ ONLY / COMMIT, prepared each call  +49 KB
      the same, connection closed and reopened every 100 calls        0
      the same, QueryResult never closed (left to the collector)    +49 KB (no different)
      a one-line MATCH by id, `execute(text, params)`              +5.6 KB
    tracemalloc saw no Python-side growth: the memory is native and belongs to the connection.
    Hence one prepare per distinct text per connection, plus connection renewal (`Executor`)
    as the bound for texts that keep changing.
    """

    def __init__(self, conn: Any, capacity: int = CACHED_STATEMENTS) -> None:
        self._conn = conn
        self._capacity = capacity
        self._cache: OrderedDict[str, _Prepared] = OrderedDict()
        self.prepares = 0

    def execute(self, query: str, params: dict[str, Any]) -> Any:
        entry = self._cache.get(query)
        if entry is None:
            entry = self._prepare(query)
        else:
            self._cache.move_to_end(query)
        # A prepared statement keeps the values of its last run: a parameter left out now would
        # silently take the previous caller's value, where a fresh statement reads NULL.
        missing = entry.names - params.keys()
        values = {**dict.fromkeys(missing), **params} if missing else params
        try:
            result = self._conn.execute(entry.statement, values)
        except BaseException:
            self._cache.pop(query, None)  # it may hold values of this failed run; start afresh
            raise
        entry.names |= params.keys()
        return result

    def clear(self) -> None:
        """Drop every prepared statement, as a connection must before it closes: LadybugDB 0.22
        does not checkpoint at close while one is alive (its log stayed beside the file)."""
        self._cache.clear()

    def _prepare(self, query: str) -> _Prepared:
        statement = self._conn._prepare(query)  # prepare() is the same plus a DeprecationWarning
        self.prepares += 1
        if not statement.is_success():
            raise RuntimeError(statement.get_error_message())  # what execute(text, params) raises
        entry = _Prepared(statement)
        self._cache[query] = entry
        if len(self._cache) > self._capacity:
            self._cache.popitem(last=False)
        return entry


def _refuse_invalid_text(exc: RuntimeError, params: dict[str, Any] | None) -> None:
    """Name the cause when the binding fails on a lone surrogate with its opaque "Unable to cast".

    Checked only after a failure, so the common path pays nothing.
    """
    where = surrogate_path(params) if params else None
    if where is not None:
        raise StoreError(
            f"parameter {where} holds text that is not valid Unicode (a lone surrogate such as \\ud800)",
            hint="pass valid UTF-8 text: a complete surrogate pair or the character itself",
        ) from exc


class Tx:
    """A connection inside an open transaction, with row helpers."""

    def __init__(self, conn: Any, statements: Statements | None = None) -> None:
        self._conn = conn
        self._statements = statements

    @property
    def engine(self) -> str:
        """ "kuzu" or "ladybug", for the few statements one of them cannot run as the other does."""
        return engine_name(self._conn)

    def execute(self, query: str, params: dict[str, Any] | None = None) -> Any:
        try:
            if params and self._statements is not None:
                return self._statements.execute(query, params)
            return self._conn.execute(query, params or {})
        except RuntimeError as exc:
            _refuse_invalid_text(exc, params)
            raise

    def prepared(self, query: str, params: dict[str, Any]) -> Any:
        """Run exactly one statement: the engine refuses to prepare several, while `execute`
        without parameters runs every `;`-separated statement (how `RETURN 1; COMMIT; ...`
        once escaped a read-only transaction)."""
        try:
            if self._statements is not None:
                return self._statements.execute(query, params)
            return self._conn.execute(self._conn._prepare(query), params)
        except RuntimeError as exc:
            _refuse_invalid_text(exc, params)
            raise

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
        """UNWIND `rows` in slices of at most `batch` rows and `BATCH_VALUES` values: the engine
        cannot type an empty list, and a parameter costs memory per value (`BATCH_VALUES`)."""
        for part in value_batches(rows, batch):
            self.execute(query, {**(extra or {}), "rows": part}).close()


BATCH_VALUES = 100_000
"""Values (a list's elements each one) per UNWIND parameter. The engine holds a parameter as an
object per value while the statement runs. Compaction, hotpotqa, batches of 2,000 rows of passages
with their sentence vectors: 2.4 GB of memory; batches of 100,000 values: 0.6 GB (300,000: 0.73 GB)
in about the same time, 22-25 s (a statement costs milliseconds, a value microseconds). Ingest
wrote passages 5,000 rows a statement, with their sentence vectors: the hotpotqa ingest with MiniLM
peaked at 2,270 MB; bounded by values, 1,832 MB (0.81x) in the same time (121 against 119 s), the
same session."""


def value_batches(rows: Sequence[Any], most_rows: int = 5000, most_values: int = BATCH_VALUES) -> Iterator[list[Any]]:
    """`rows` in slices of at most `most_rows` rows and `most_values` values (`BATCH_VALUES`)."""
    batch: list[Any] = []
    weight = 0
    for row in rows:
        size = _values(row)
        if batch and (len(batch) >= most_rows or weight + size > most_values):
            yield batch
            batch, weight = [], 0
        batch.append(row)
        weight += size
    if batch:
        yield batch


def vector_texts(vectors: Sequence[Sequence[float] | None]) -> list[Any]:
    """Vectors as the text of their lists, for `CAST(... AS FLOAT[])`, where that is safe.

    Kuzu 0.11.3's Python binding turns a list parameter into engine values one float at a time,
    holding the interpreter lock: 5,000 rows with a 384-float vector each took 4.5 s to create,
    0.09 s without the vector; the same vectors as text, cast by the engine, 0.76 s (plus 0.85 s
    to print the text as `str(list(v))`, now a quarter of that: `_vector_format`). The text is
    exact: nine significant digits read back as the float32 they were printed from.
    But the engine gives every row of an UNWIND the length of the first row's list
    (`table_copy` found it: '[9, 36]' then '[1]' came back [9, 36] and [1, 36]), so text is
    used only when every vector has one length; otherwise, and for a NaN or an infinity (no
    text the engine reads), the lists go as they are.
    """
    lengths = {len(v) for v in vectors if v is not None}
    if len(lengths) <= 1:
        fmt = _vector_format(next(iter(lengths), 0))
        texts = [fmt % (v if isinstance(v, tuple) else tuple(v)) if v is not None else None for v in vectors]
        if not any(t is not None and "n" in t for t in texts):  # "nan", "inf": the only n a float prints
            return texts
    return [list(v) if v is not None else None for v in vectors]  # one type for the whole UNWIND


@functools.lru_cache(maxsize=8)
def _vector_format(dimension: int) -> str:
    """One format for a whole vector: nine significant digits give back every float32 exactly
    (FLT_DECIMAL_DIG), in 5.2k characters for 384 floats where a double's shortest text takes
    8.4k; one `%` a vector printed 2,000 MiniLM vectors in 0.12 s against 0.42 s for `str(list(v))`."""
    return "[" + ",".join(["%.9g"] * dimension) + "]"


def _values(value: Any) -> int:
    """How many values the engine holds for `value`: a list counts its elements (and itself), a
    text one per 16 characters (a vector as text is about 20 characters a float)."""
    if isinstance(value, str):
        return 1 + len(value) // 16
    if isinstance(value, dict):
        return sum(_values(v) for v in value.values())
    if isinstance(value, list | tuple):
        if value and isinstance(value[0], list | tuple | dict):
            return 1 + sum(_values(v) for v in value)
        return 1 + len(value)
    return 1


class _Conn:
    """An engine connection with its prepared statements and a count of what it has run."""

    def __init__(self, conn: Any, cached: bool) -> None:
        self.conn = conn
        self.statements = Statements(conn) if cached else None
        self.transactions = 0

    def tx(self) -> Tx:
        return Tx(self.conn, self.statements)

    def close(self) -> None:
        if self.statements is not None:
            self.statements.clear()
        self.conn.close()

    @property
    def worn(self) -> bool:
        if self.statements is None:
            return False
        return self.statements.prepares >= RENEW_AFTER_PREPARES or self.transactions >= RENEW_AFTER_TRANSACTIONS


class Executor:
    def __init__(self, db: Any, module: Any, *, read_only: bool, pool_size: int = 4) -> None:
        self._db = db
        self._module = module
        self._cached = statement_cache_enabled()
        self._write: _Conn | None = None if read_only else _Conn(module.Connection(db), self._cached)
        self._write_lock = threading.RLock()  # re-entered when a worn write connection is renewed
        """Held through every write transaction, and while a new connection loads its extensions:
        the engine runs that load as a write transaction of its own and refuses it beside another,
        so parallel reads opening connections at once, or a read opening one during an ingest's
        batch write, failed with "Only one write transaction at a time" (20 rounds of 4 parallel
        opens on a writable file: 45 of 80 failed), and an ingest whose own read did so died."""
        self.refusal: StoreError | None = None
        """Why no write may run yet (a file `upgrades` must convert first); compaction still reads."""
        self._pool: queue.LifoQueue[_Conn] = queue.LifoQueue()
        self._pool_size = pool_size
        self._created = 0
        self._pool_lock = threading.Lock()
        self._setup: list[Callable[[Any], None]] = []
        self._gate = CheckpointGate()
        self.lost: StoreError | None = None
        """Why this executor has no engine any more: a `reopen` that could not open the file again."""

    def on_connect(self, fn: Callable[[Any], None]) -> None:
        """Run `fn` on every connection (extensions must be loaded per connection)."""
        self._setup.append(fn)
        if self._write is not None:
            fn(self._write.conn)

    @contextlib.contextmanager
    def writes_paused(self) -> Iterator[None]:
        """Inside, no write transaction runs: one running now ends first, the next waits (and
        fails if the database is closed meanwhile). For a copy of the whole file that a write
        between its read and its swap would silently miss (`compaction`)."""
        with self._write_lock:
            yield

    def checkpoint(self) -> None:
        """Fold the write-ahead log into the file now, as closing would: the file's size is then
        what it will be, which `compaction` compares its rewrite with (after a 1,417-passage ingest
        the file and log took 41.6 MB, the file 63.3 MB once closed, 45.3 MB compacted)."""
        if self.lost is not None:
            raise self.lost
        if self._write is None:
            return
        with self._write_lock, self._gate.committing():
            try:
                self._write.conn.execute("CHECKPOINT").close()
            except RuntimeError as exc:
                raise engine_failure(exc) from exc

    def raw(self, fn: Callable[[Tx], T]) -> T:
        """Run without an explicit transaction (DDL and extension loading need auto-commit)."""
        if self.lost is not None:
            raise self.lost
        try:
            conn = self._write if self._write is not None else self._take()
            try:
                return fn(conn.tx())
            finally:
                if conn is not self._write:
                    self._give_back(conn)
        except RuntimeError as exc:
            raise engine_failure(exc) from exc

    def write_sync(self, fn: Callable[[Tx], T]) -> T:
        if self.lost is not None:
            raise self.lost
        if self._write is None:
            raise StoreError("the knowledge base is open read-only", hint="open it with read_only=False to write")
        if self.refusal is not None:
            raise self.refusal
        with self._write_lock:
            conn = self._write
            try:
                return _in_transaction(conn, "BEGIN TRANSACTION", fn, self._gate.committing)
            except RuntimeError as exc:
                raise engine_failure(exc) from exc
            finally:
                if conn.worn:
                    self._write = self._renew(conn)

    def read_sync(
        self,
        fn: Callable[[Tx], T],
        timeout_ms: int | None = None,
        watch: Callable[[Any], contextlib.AbstractContextManager[None]] | None = None,
    ) -> T:
        """Run `fn` in a read-only transaction; `watch(connection)` is entered around it, for a
        caller that may interrupt the connection (`cypher_run.MemoryWatch`)."""
        try:
            conn = self._take()
            try:
                if timeout_ms is not None:
                    conn.conn.set_query_timeout(timeout_ms)
                with self._gate.reading(), watch(conn.conn) if watch else contextlib.nullcontext():
                    return _in_transaction(conn, "BEGIN TRANSACTION READ ONLY", fn)
            finally:
                if timeout_ms is not None:
                    conn.conn.set_query_timeout(0)
                self._give_back(conn)
        except RuntimeError as exc:
            raise engine_failure(exc) from exc

    async def write(self, fn: Callable[[Tx], T]) -> T:
        return await asyncio.to_thread(self.write_sync, fn)

    async def read(self, fn: Callable[[Tx], T], timeout_ms: int | None = None) -> T:
        return await asyncio.to_thread(self.read_sync, fn, timeout_ms)

    def _connect(self) -> _Conn:
        conn = self._module.Connection(self._db)
        with self._write_lock:
            for fn in self._setup:
                fn(conn)
        return _Conn(conn, self._cached)

    def _renew(self, old: _Conn) -> _Conn:
        """A fresh connection in place of `old`, closing `old` to free what the engine kept for it.

        Should opening one fail, `old` stays in service: it works, it only holds memory.
        """
        try:
            new = self._connect()
        except Exception:
            old.transactions = 0  # try again after another round, not on every call
            if old.statements is not None:
                old.statements.prepares = 0
            return old
        with contextlib.suppress(Exception):
            old.close()
        return new

    def _take(self) -> _Conn:
        if self.lost is not None:
            raise self.lost
        try:
            return self._pool.get_nowait()
        except queue.Empty:
            pass
        with self._pool_lock:
            if self._created < self._pool_size:
                self._created += 1
                try:
                    return self._connect()
                except BaseException:
                    self._created -= 1
                    raise
        return self._pool.get()

    def _give_back(self, conn: _Conn) -> None:
        # Renewed here rather than dropped, so a caller blocked in `_take` on a full pool still
        # gets a connection.
        self._pool.put(self._renew(conn) if conn.worn else conn)

    def reopen(self, open_db: Callable[[], Any]) -> bool:
        """Close the engine and open it again with `open_db`, dropping the pages its pool holds
        (the engine evicts nothing until the pool is full: 375 MB after 100,000 passages), when no
        transaction is running. False, with nothing done, while one is.

        Writes wait meanwhile, and a read that asks for a connection gets one of the new engine's.
        Should `open_db` fail (another process opened the file in the moment it was free), every
        later call raises that error, saying so: what was written is checkpointed in the file."""
        with self._pool_lock, self._write_lock:  # `_take` takes them in this order too
            idle: list[_Conn] = []
            with contextlib.suppress(queue.Empty):
                while True:
                    idle.append(self._pool.get_nowait())
            if len(idle) != self._created:  # a read holds a connection of this engine
                for conn in idle:
                    self._pool.put(conn)
                return False
            writer = self._write
            for conn in [*idle, *([writer] if writer is not None else [])]:
                conn.close()
            self._db.close()
            try:
                self._db = open_db()
                if writer is not None:
                    self._write = self._connect()  # the write lock is held: an RLock
                fresh = [self._connect() for _ in idle]  # for a read already waiting on the pool
            except BaseException as exc:
                self._write, self._created = None, 0
                self.lost = StoreError(
                    f"the knowledge base was closed to free memory and could not be opened again: {exc}",
                    hint="open it again once no other process has it open; what was written is in the file",
                )
                raise self.lost from exc
            for conn in fresh:
                self._pool.put(conn)
            return True

    def close(self) -> None:
        conns = [self._write] if self._write is not None else []
        while True:
            try:
                conns.append(self._pool.get_nowait())
            except queue.Empty:
                break
        for conn in conns:
            conn.close()
        self._write = None
        if self.lost is None:
            self._db.close()


def _in_transaction(
    conn: _Conn,
    begin: str,
    fn: Callable[[Tx], T],
    committing: Callable[[], contextlib.AbstractContextManager[None]] = contextlib.nullcontext,
) -> T:
    """Run `fn` in one transaction: commit what it did (inside `committing`), or roll all of it back."""
    conn.transactions += 1
    conn.conn.execute(begin).close()
    try:
        out = fn(conn.tx())
    except BaseException:
        _rollback(conn.conn)
        raise
    with committing():
        conn.conn.execute("COMMIT").close()
    return out


def _rollback(conn: Any) -> None:
    """Roll back unless the engine already did (it ends a transaction on a failed statement)."""
    with contextlib.suppress(RuntimeError):
        conn.execute("ROLLBACK").close()
