"""`ServerLock`: a lock the FalkorDB server holds, for writes that span several queries.

`SET key token NX PX ttl` takes it; only the holder's token releases or renews it (a Lua
compare-and-delete), so a lock that lapsed and was taken by another is never freed by the one
that lost it. A holder that dies frees it when the ttl runs out. Merges and repairs hold one per
graph; trace and decision writes one per project (`project_locks`), taken in sorted order so two
writers of several projects never wait on each other.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from evigraph.errors import StoreError
from evigraph.store.falkordb.connection import Connection

_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
_RENEW = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end"
)


class ServerLock:
    """One named lock of a graph; `what` says in errors what holds it ("the merge lock")."""

    def __init__(
        self, conn: Connection, name: str, *, what: str = "", ttl_ms: int = 120_000, wait_s: float = 60.0
    ) -> None:
        self.conn = conn
        self.key = f"evigraph:lock:{conn.graph_name}:{name}"
        self.what = what or f"the {name} lock"
        self.ttl_ms = ttl_ms
        self.wait_s = wait_s
        self.token = secrets.token_hex(16)

    def acquire(self) -> None:
        deadline = time.monotonic() + self.wait_s
        pause = 0.002
        while not self.conn.command("SET", self.key, self.token, "NX", "PX", self.ttl_ms):
            if time.monotonic() > deadline:
                raise StoreError(
                    f"{self.what} on {self.conn.graph_name} stayed taken by another process for {self.wait_s:.0f} s",
                    hint=f"retry; a process that died frees it after {self.ttl_ms // 1000} s (key {self.key})",
                )
            time.sleep(pause)
            pause = min(pause * 2, 0.1)

    def renew(self) -> None:
        if not int(self.conn.command("EVAL", _RENEW, 1, self.key, self.token, self.ttl_ms) or 0):
            raise StoreError(
                f"{self.what} on {self.conn.graph_name} lapsed while held",
                hint="run it again; what was written so far is safe to repeat",
            )

    def release(self) -> None:
        self.conn.command("EVAL", _RELEASE, 1, self.key, self.token)


@contextmanager
def server_lock(conn: Connection, name: str, **options: object) -> Iterator[ServerLock]:
    lock = ServerLock(conn, name, **options)  # type: ignore[arg-type]
    lock.acquire()
    try:
        yield lock
    finally:
        lock.release()


LOCK_TTL_MS = 30_000
"""How long a project lock outlives a holder that died without releasing it."""
LOCK_WAIT_S = 10.0
"""How long a trace or decision write waits for its project's lock before it gives up."""


@contextmanager
def project_locks(conn: Connection, projects: Iterable[str]) -> Iterator[None]:
    """Hold the lock of each project, taken in sorted order."""
    held: list[ServerLock] = []
    try:
        for project in sorted(set(projects)):
            lock = ServerLock(
                conn, f"project:{project}", what=f"project {project!r}", ttl_ms=LOCK_TTL_MS, wait_s=LOCK_WAIT_S
            )
            lock.acquire()
            held.append(lock)
        yield
    finally:
        for lock in reversed(held):
            # A lock not released lapses by itself; the write's own error matters more.
            with contextlib.suppress(Exception):
                lock.release()
