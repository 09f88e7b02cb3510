"""Writer leases: how `check` tells a dead writer's leftovers from a live writer's work.

A document write puts its passages aside before one query switches them in (`documents.py`).
While it runs, the write holds a lease: a server key, `evigraph:writer:<graph>:<token>`, that
lapses unless renewed, which a thread of the writer renews on a connection of its own; the key's
value is that connection's server id, and the passages put aside carry the token (`writer`).

A writer is live while its key exists and, where the server lists its clients (`CLIENT LIST ID`),
its connection is still open. The kernel closes a SIGKILLed process's sockets as it dies, so its
leftovers are reported at once; a writer that hangs with its socket open stops renewing, and is
dead once its key lapses (`LEASE_TTL_MS`). A writer taken for dead that was only slow loses
nothing: its switch finds its passages gone and refuses, and the write fails, to be run again.
"""

from __future__ import annotations

import contextlib
import re
import secrets
import threading
from collections.abc import Iterable
from types import TracebackType
from typing import Any

from evigraph.store.falkordb.connection import Connection

LEASE_TTL_MS = 15_000
"""How long a writer's lease outlives its last renewal. It is renewed every `LEASE_RENEW_S`; a
renewing thread woke at most 0.21 s late (p99 0.13 s, 302 wake-ups 0.05 s apart) during a
10,000-passage ingest on a two-core machine at load average 6, so a live writer's lease never
comes near lapsing, while a hung one is taken for dead within 15 s."""
LEASE_RENEW_S = 3.0
"""How often a writer renews its lease."""


def lease_key(graph: str, token: str) -> str:
    return f"evigraph:writer:{graph}:{token}"


class WriterLease:
    """Held for one write (`with WriterLease(conn) as lease:`); `lease.token` marks what it puts aside."""

    def __init__(self, conn: Connection, *, ttl_ms: int | None = None, renew_s: float | None = None) -> None:
        self.token = secrets.token_hex(8)
        self.key = lease_key(conn.graph_name, self.token)
        self.ttl_ms = LEASE_TTL_MS if ttl_ms is None else ttl_ms
        self.renew_s = LEASE_RENEW_S if renew_s is None else renew_s
        self._conn = conn
        self._client: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> WriterLease:
        self._client = self._conn.dedicated_client()
        try:
            ident = str(self._client.execute_command("CLIENT", "ID"))
        except Exception:  # a server or proxy that will not say: the lease lapses by time alone
            ident = ""
        self._client.execute_command("SET", self.key, ident, "PX", self.ttl_ms)
        self._thread = threading.Thread(target=self._renew, name=f"evigraph-lease-{self.token}", daemon=True)
        self._thread.start()
        return self

    def _renew(self) -> None:
        while not self._stop.wait(self.renew_s):
            # A renewal that fails is tried again at the next turn; a key that lapsed meanwhile is
            # not taken back (XX), since `check` may already have removed what it guarded.
            with contextlib.suppress(Exception):
                self._client.execute_command("PEXPIRE", self.key, self.ttl_ms, "XX")

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with contextlib.suppress(Exception):  # a lease not released lapses by itself
            self._client.execute_command("DEL", self.key)
        with contextlib.suppress(Exception):
            self._client.close()


def live_writers(conn: Connection, tokens: Iterable[str] | None = None) -> set[str]:
    """The tokens, of `tokens` (or of every lease on the graph when None), whose writer is live."""
    prefix = lease_key(conn.graph_name, "")
    if tokens is None:
        keys = [_text(k) for k in _scan(conn, re.sub(r"([*?\[\]\\])", r"\\\1", prefix) + "*")]
    else:
        keys = [prefix + t for t in sorted(set(tokens))]
    if not keys:
        return set()
    held = {k[len(prefix) :]: _text(v) for k, v in zip(keys, conn.command("MGET", *keys), strict=True) if v is not None}
    idents = sorted({v for v in held.values() if v})
    connected: set[str] | None = None
    if idents:
        try:
            listed = _text(conn.command("CLIENT", "LIST", "ID", *idents))
            connected = set(re.findall(r"(?:^|\s)id=(\d+)", listed))
        except Exception:  # CLIENT refused to this user: the keys' expiry alone decides
            connected = None
    return {t for t, ident in held.items() if not ident or connected is None or ident in connected}


def _scan(conn: Connection, pattern: str) -> list[Any]:
    found: list[Any] = []
    cursor: Any = 0
    while True:
        cursor, keys = conn.command("SCAN", cursor, "MATCH", pattern, "COUNT", 1000)
        found += keys
        if int(cursor) == 0:
            return found


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
