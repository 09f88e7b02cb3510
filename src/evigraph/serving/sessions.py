"""Evidence numbering per client: which toolkit session a request belongs to, and when it is forgotten.

Numbers must never leak between clients: a number one client received is invalid for every
other. Over stdio one process serves one client. Over HTTP the protocol may be stateless (no
session id), so a client is known by the most specific thing its requests carry: an MCP session
id, an SSE stream id, an `X-Evigraph-Session` header, or else its TCP connection (peer address
and port), which an HTTP client keeps alive across its calls.

A long-lived server must not grow with its number of clients, yet a client in the middle of its
work must keep its numbers however many other clients come and go. So sessions are forgotten by
idle time and by memory, never by count: a session idle for `idle_s` goes; and while the sessions
hold more than `max_bytes`, the least recently used go, the caller's own never. A client whose
session was forgotten gets a new one, numbered after the old one's last number (an old `[n]` can
never point at other evidence), and citing an old number says the session expired, after how long
idle, and to run the reads again (`evigraph.evidence.ledger.Forgotten`).
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from evigraph.errors import ConfigurationError
from evigraph.evidence.ledger import Forgotten
from evigraph.tools.toolkit import Toolkit

IDLE_MINUTES = 720.0
"""A session idle this long is forgotten (12 h): a conversation paused for a meeting or over lunch
keeps its numbers, one left overnight is over. Memory, not this, bounds a busy server."""
MEMORY_MB = 256.0
"""What the sessions of one knowledge base may hold before the least recently used are forgotten.
Measured by bench/serving_memory.py (tracemalloc, real `retrieve` results on 2wikimultihopqa): a
full ledger of 2,000 records takes 4.1 MB and an empty session 833 B, so this keeps about 60 full
sessions, hundreds of typical ones (a few hundred records each), or some 300,000 that never read
anything."""
SESSION_BYTES = 833
"""An empty session: its entry here, its toolkit and its ledger (measured as above)."""
FORGOTTEN_KEPT = 10_000
"""Forgotten sessions remembered, so their clients learn why their numbers stopped working; each
takes about 300 B (its key and a `Forgotten`), 3 MB in all."""
IDLE_ENV = "EVIGRAPH_SESSION_IDLE_MINUTES"
MEMORY_ENV = "EVIGRAPH_SESSION_MEMORY_MB"
SESSION_HEADER = "x-evigraph-session"


def client_key(request: Any) -> str:
    """The identity of the client behind an HTTP request (a Starlette Request), or "" on stdio."""
    if request is None:
        return ""
    headers = request.headers
    if sid := headers.get("mcp-session-id"):
        return f"mcp:{sid}"
    if sid := request.query_params.get("session_id"):
        return f"sse:{sid}"
    if sid := headers.get(SESSION_HEADER):
        return f"hdr:{headers.get('authorization', '')}:{sid}"
    client = request.client
    return f"peer:{client.host}:{client.port}" if client else "peer:unknown"


@dataclass
class _Entry:
    session: Toolkit
    used: float
    """When a call last took this session (`time.monotonic`)."""


class Sessions:
    """Toolkit sessions by client key, forgotten when idle past `idle_s` or, least recently used
    first, while all of them hold more than `max_bytes`. Unset, both come from the environment
    (`EVIGRAPH_SESSION_IDLE_MINUTES`, `EVIGRAPH_SESSION_MEMORY_MB`), else the defaults above."""

    def __init__(
        self,
        toolkit: Toolkit,
        *,
        idle_s: float | None = None,
        max_bytes: int | None = None,
    ) -> None:
        self.toolkit = toolkit
        env_idle_s, env_bytes = bounds_from_env() if idle_s is None or max_bytes is None else (0.0, 0)
        self.idle_s = idle_s if idle_s is not None else env_idle_s
        self.max_bytes = max_bytes if max_bytes is not None else env_bytes
        self._lock = threading.Lock()
        self._sessions: OrderedDict[str, _Entry] = OrderedDict()  # least recently used first
        self._forgotten: OrderedDict[str, Forgotten] = OrderedDict()
        self._held = 0  # bytes the ledgers report (`EvidenceLedger.meter`)
        self._held_lock = threading.Lock()  # taken last, under a ledger's lock or ours: never the reverse

    def get(self, key: str) -> Toolkit:
        """The session of `key`, made on its first call (or after it was forgotten); others that
        are idle too long, or the least recently used while memory is over the bound, go first."""
        now = time.monotonic()
        with self._lock:
            self._forget_idle(now)
            entry = self._sessions.get(key)
            if entry is None:
                entry = _Entry(self._new(self._forgotten.pop(key, None)), now)
                self._sessions[key] = entry
            entry.used = now
            self._sessions.move_to_end(key)
            # The caller's own session (most recent) is never forgotten, however full it is.
            while self._bytes() > self.max_bytes and len(self._sessions) > 1:
                old_key, old = next(iter(self._sessions.items()))
                self._forget(old_key, old, now, "memory")
            return entry.session

    def remember(self, forgotten: dict[str, Forgotten]) -> None:
        """Sessions an earlier backend of this knowledge base forgot (`forget_all`): their clients
        are told why their numbers stopped working, and numbered after them."""
        with self._lock:
            for key, note in forgotten.items():
                if key not in self._sessions:
                    self._forgotten[key] = note
            while len(self._forgotten) > FORGOTTEN_KEPT:
                self._forgotten.popitem(last=False)

    def forget_all(self) -> dict[str, Forgotten]:
        """Forget every session (their knowledge base is being closed); returns what a later backend
        of the same knowledge base needs to tell their clients why (`forgotten=`)."""
        now = time.monotonic()
        with self._lock:
            for key, entry in list(self._sessions.items()):
                self._forget(key, entry, now, "closed")
            return dict(self._forgotten)

    @property
    def held_bytes(self) -> int:
        """An estimate of the memory the sessions hold."""
        with self._lock:
            return self._bytes()

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    # -- with the lock held ------------------------------------------------------------------

    def _new(self, forgotten: Forgotten | None) -> Toolkit:
        session = self.toolkit.new_session(forgotten=forgotten)
        self._add(session.ledger.meter(self._add))
        return session

    def _add(self, change: int) -> None:
        """Also called by a ledger as it changes, with its own lock held."""
        with self._held_lock:
            self._held += change

    def _bytes(self) -> int:
        with self._held_lock:
            return self._held + SESSION_BYTES * len(self._sessions)

    def _forget_idle(self, now: float) -> None:
        """Idle sessions are at the front: the order is by last use."""
        while self._sessions:
            key, entry = next(iter(self._sessions.items()))
            if now - entry.used < self.idle_s:
                return
            self._forget(key, entry, now, "idle")

    def _forget(self, key: str, entry: _Entry, now: float, cause: str) -> None:
        del self._sessions[key]
        ledger = entry.session.ledger
        self._add(-ledger.meter(None))  # a call still running on it no longer counts here
        self._forgotten[key] = Forgotten(ledger.last, now - entry.used, cause, self.idle_s)
        self._forgotten.move_to_end(key)
        while len(self._forgotten) > FORGOTTEN_KEPT:
            self._forgotten.popitem(last=False)


def bounds_from_env() -> tuple[float, int]:
    """(idle seconds, bytes) from EVIGRAPH_SESSION_IDLE_MINUTES and EVIGRAPH_SESSION_MEMORY_MB, else
    the defaults; a value that is no number of 0 or more is refused, naming the variable."""
    return _env_number(IDLE_ENV, IDLE_MINUTES) * 60, int(_env_number(MEMORY_ENV, MEMORY_MB) * 1e6)


def _env_number(name: str, default: float) -> float:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise ConfigurationError(
            f"{name}={text!r} is not a number of {'minutes' if 'MINUTES' in name else 'megabytes'}",
            hint=f"set {name} to a number of 0 or more, e.g. {default:g} (the default)",
        )
    return value
