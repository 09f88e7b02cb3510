"""Free-form Cypher in a process of its own, so a query that crashes, stalls or swells the engine
takes only that process down.

Why a process: the engine parses and plans outside its time limit while holding the interpreter
lock, some expressions build values its page cache does not bound (`list_concat` chains reached
6 GB beside a 512 MB cache, past its 10 s limit), and a crash in it (a stack overflow near 800
nested calls, `show_functions`) is a crash of whatever process holds it. The guard (`store/cypher`)
refuses everything known; this bounds what nobody knows yet. The worker opens the file read-only
with a small page cache, caps its own address space (`MEMORY_ENV`), and is killed at the query's
deadline; the serving process, its other clients and their retrieves go on, and the next query
starts a new worker.

Only where the file can be shared: the engine lets several processes read a file, or one process
write it. A knowledge base opened read-only (`evigraph mcp` and `evigraph serve` without
`--allow-writes`) runs Cypher here; one opened for writing runs it in its own process behind the
guard's bounds (`EmbeddedStore.query`), as no other process may open the file meanwhile.

The worker is `python -m evigraph.store.embedded.cypher_worker PATH ENGINE`, length-prefixed
pickles over its stdin and stdout (the extraction worker's reasons for not using multiprocessing
hold here too), and exits after `IDLE_S` without a query, so an idle server holds no second copy
of the engine.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evigraph.errors import (
    ConfigurationError,
    CypherRefused,
    EngineError,
    QueryAborted,
    QueryTimeout,
    ReadOnlyQueryError,
    StoreError,
    UnknownLabel,
)
from evigraph.processes import end_worker, kill_worker
from evigraph.store.cypher.rows import QueryRows
from evigraph.store.cypher.statement import Guarded

if TYPE_CHECKING:
    from evigraph.store.embedded.executor import Tx

MEMORY_ENV = "EVIGRAPH_CYPHER_MEMORY_MB"
MEMORY_MB = 512
"""Memory a query may take: in a worker, beyond what its engine reserved at open, the address space
it may map (`RLIMIT_AS`), so an allocation past it fails inside the engine (`std::bad_alloc`,
reported as a query needing too much memory) instead of growing the machine's use; in a process
holding the file for writing, its growth while the query runs (`cypher_run.MemoryWatch`). A list
doubled 20 times stopped at 1.7 GB resident under a 1.5 GB allowance and the worker answered the
next query; collecting a 3.8-million-row product stopped a writable server of 546 MB at 1.6 GB under
1,024 MB, so 512 MB keeps such a server near 1 GB."""
PAGE_CACHE_MB = 256
"""The worker's page cache: Kuzu keeps query state there too (variable-length walks filled 256 MB
and stopped with "buffer pool is full" rather than growing); the operating system's file cache
serves the pages read again."""
IDLE_S = 300.0
"""A worker with no query for this long exits; the next query starts another (about 0.5 s)."""
GRACE_S = 2.0
"""Beyond the query's own time limit, what the worker gets for planning and sending its rows
before it is killed: planning is outside the engine's limit, and the guard keeps it to
milliseconds (`store/cypher/bounds.py`)."""

_HEADER = struct.Struct("!Q")
_ERRORS: dict[str, type[StoreError]] = {
    cls.__name__: cls
    for cls in (CypherRefused, UnknownLabel, QueryAborted, QueryTimeout, ReadOnlyQueryError, EngineError, StoreError)
}
_SPENT = frozenset({"QueryAborted", "QueryTimeout"})
"""Replies after which a worker is not used again: the engine does not give back what a query it
interrupted took (`cypher_run.MemoryBudget`), so a worker kept after one would fail ever sooner."""
CRASH_HINT = "the server is unaffected; simplify the query (fewer rows, smaller values) and retry"


class WorkerLost(Exception):
    """The worker ended, or its pipes broke, before answering."""


class CypherWorkers:
    """The serving process's side: idle workers for one database file, started on first need."""

    def __init__(self, path: Path, engine: str) -> None:
        memory_allowance_mb()  # a bad setting is refused here, not in every worker
        self.path = path
        self.engine = engine
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._closed = False

    def run(self, guarded: Guarded, limit: int, timeout_ms: int) -> QueryRows:
        """Rows of `guarded` from a worker, or the error it met; a query the worker did not survive
        is reported as such, and one past its deadline as a timeout."""
        request = {"text": guarded.text, "params": guarded.params, "limit": limit, "timeout_ms": timeout_ms}
        for attempt in range(2):
            try:
                worker = self._take()
            except OSError as exc:  # no process could be started (limits, a frozen program)
                raise QueryAborted(f"the Cypher worker process could not be started: {exc}", hint=CRASH_HINT) from exc
            started = time.monotonic()
            try:
                reply = worker.ask(request, deadline=started + timeout_ms / 1000 + GRACE_S)
            except _Deadline:
                worker.kill()
                raise QueryTimeout(
                    f"the query ran past its {timeout_ms / 1000:g} s limit and was stopped",
                    hint="add a LIMIT, filter earlier, or walk fewer hops",
                ) from None
            except WorkerLost as exc:
                worker.kill()
                if exc.args and exc.args[0] == "idle" and attempt == 0:
                    continue  # it had exited while idle: nothing ran, so ask a fresh one
                raise QueryAborted(
                    f"the query stopped the process running it ({worker.ending()})", hint=CRASH_HINT
                ) from None
            if reply.get("error") in _SPENT:
                worker.kill()  # the engine keeps what an interrupted query took: start the next afresh
            else:
                self._give_back(worker)
            return _rows_or_raise(reply)
        raise ReadOnlyQueryError("the Cypher worker could not be started", hint=CRASH_HINT)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.close()

    def _take(self) -> _Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.alive():
                    return worker
                worker.kill()
        return _Worker(self.path, self.engine)

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            if not self._closed:
                self._idle.append(worker)
                return
        worker.close()


def _rows_or_raise(reply: dict[str, Any]) -> QueryRows:
    if "error" in reply:
        cls = _ERRORS.get(reply["error"], ReadOnlyQueryError)
        raise cls(str(reply["message"]), hint=str(reply.get("hint") or ""))
    rows = QueryRows(reply["rows"])
    rows.truncated = bool(reply["truncated"])
    return rows


class _Deadline(Exception):
    """The worker did not answer by the query's deadline."""


class _Worker:
    def __init__(self, path: Path, engine: str) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self._proc = subprocess.Popen(
            [sys.executable, "-m", __name__, str(path), engine],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            start_new_session=True,  # Ctrl-C in a terminal stops the server, which ends its workers
        )

    def alive(self) -> bool:
        return self._proc.poll() is None

    def ask(self, request: dict[str, Any], deadline: float) -> dict[str, Any]:
        stdin, stdout = self._proc.stdin, self._proc.stdout
        assert stdin is not None and stdout is not None
        try:
            _write_frame(stdin, request)
        except (BrokenPipeError, ValueError, OSError):
            raise WorkerLost("idle") from None
        reply = _read_frame(stdout.fileno(), deadline)
        if reply is None:
            raise WorkerLost("ended")
        return reply  # type: ignore[no-any-return]

    def ending(self) -> str:
        """How the process ended, in words: a signal by name, else its exit status."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=2)
        code = self._proc.returncode
        if code is None:
            return "it stopped answering"
        if code < 0:
            with contextlib.suppress(ValueError):
                return f"it ended by {signal.Signals(-code).name}"
            return f"it ended by signal {-code}"
        return f"it exited with status {code}"

    def kill(self) -> None:
        kill_worker(self._proc)

    def close(self) -> None:
        end_worker(self._proc)


def _write_frame(stream: Any, value: Any) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _read_frame(fd: int, deadline: float | None) -> Any:
    """One length-prefixed pickle from `fd`, None at the end of the stream; `_Deadline` when the
    deadline passes first (None: wait for ever)."""
    header = _read_exactly(fd, _HEADER.size, deadline)
    if header is None:
        return None
    (size,) = _HEADER.unpack(header)
    body = _read_exactly(fd, size, deadline)
    return None if body is None else pickle.loads(body)


def _read_exactly(fd: int, size: int, deadline: float | None) -> bytes | None:
    parts: list[bytes] = []
    got = 0
    while got < size:
        wait = None if deadline is None else deadline - time.monotonic()
        if wait is not None and wait <= 0:
            raise _Deadline
        ready, _, _ = select.select([fd], [], [], wait)
        if not ready:
            raise _Deadline
        chunk = os.read(fd, min(size - got, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


# -- inside the worker --------------------------------------------------------------------------


def serve(path: Path, engine: str) -> None:
    """The worker's loop: open the file read-only, cap memory, answer queries until the input ends
    or stays idle for `IDLE_S`."""
    from evigraph.store.embedded import cypher_run
    from evigraph.store.embedded.engine import engine_name, import_engine, load_extensions, open_database
    from evigraph.store.embedded.executor import Executor

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the serving process decides when this one ends
    requests, replies = sys.stdin.buffer.fileno(), sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must not land in the replies
    executor: Executor | None = None
    failed: StoreError | None = None
    try:
        module = import_engine(engine, path)
        db = open_database(module, path, read_only=True, buffer_pool_mb=PAGE_CACHE_MB, max_db_mb=_address_mb(path))
        executor = Executor(db, module, read_only=True, pool_size=1)
        executor.on_connect(lambda conn: load_extensions(conn, engine_name(module)))
    except StoreError as exc:  # answered to every query, so the caller reads why
        failed = exc
    except RuntimeError as exc:
        failed = EngineError(f"the Cypher worker could not open {path}: {exc}", hint=CRASH_HINT)
    _cap_memory()
    while True:
        try:
            request = _read_frame(requests, time.monotonic() + IDLE_S)
        except _Deadline:
            return
        if request is None:
            return
        reply: dict[str, Any]
        if executor is None:
            assert failed is not None
            _write_frame(replies, _error(failed))
            continue
        try:
            rows = executor.read_sync(_query(request), int(request["timeout_ms"]))
            reply = {"rows": list(rows), "truncated": rows.truncated}
        except EngineError as exc:
            reply = _error(cypher_run.query_failure(exc))
        except StoreError as exc:
            reply = _error(exc)
        except MemoryError:
            reply = _error(cypher_run.query_failure(EngineError("std::bad_alloc")))
        _write_frame(replies, reply)


def _query(request: dict[str, Any]) -> Callable[[Tx], QueryRows]:
    from evigraph.store.embedded import cypher_run

    guarded, limit = Guarded(request["text"], request["params"]), int(request["limit"])
    return lambda tx: cypher_run.run(tx, guarded, limit)


def _error(exc: StoreError) -> dict[str, Any]:
    return {"error": type(exc).__name__, "message": exc.message, "hint": exc.hint}


def _address_mb(path: Path) -> int:
    """The engine's address-space reservation for the file (a power of two it must be): room for
    twice the file, at least 1 GiB, so the memory cap counts queries, not the file's size."""
    size = sum(p.stat().st_size for p in (path, path.with_name(path.name + ".wal")) if p.exists())
    mb = 1024
    while mb * (1 << 20) < 2 * size:
        mb *= 2
    return mb


def memory_allowance_mb() -> int:
    """`MEMORY_ENV`, else `MEMORY_MB`; a value that is not a number of megabytes is refused by name."""
    configured = os.environ.get(MEMORY_ENV, "").strip()
    if not configured:
        return MEMORY_MB
    try:
        value = int(configured)
    except ValueError:
        value = 0
    if value < 64:
        raise ConfigurationError(
            f"{MEMORY_ENV}={configured!r} is not a number of megabytes of at least 64",
            hint=f"set {MEMORY_ENV}={MEMORY_MB}, or unset it",
        )
    return value


def _cap_memory() -> None:
    try:
        import resource
    except ImportError:  # no resource limits here (Windows): the deadline still applies
        return
    allowance = memory_allowance_mb() << 20
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            reserved = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # not Linux: the limit is not enforced on every system; the deadline still applies
        return
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (reserved + allowance, reserved + allowance))


if __name__ == "__main__":
    serve(Path(sys.argv[1]), sys.argv[2])
