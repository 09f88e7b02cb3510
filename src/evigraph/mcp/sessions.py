"""Evidence numbering per client: which toolkit session a request belongs to.

Numbers must never leak between clients: a number one client received is invalid for every
other. Over stdio one process serves one client. Over HTTP the protocol may be stateless (no
session id), so a client is known by the most specific thing its requests carry: an MCP session
id, an SSE stream id, an `X-Evigraph-Session` header, or else its TCP connection (peer address
and port), which an HTTP client keeps alive across its calls.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from evigraph.tools.toolkit import Toolkit

MAX_SESSIONS = 1000
MAX_EVIDENCE = 200_000
"""Evidence records held across all sessions. A full ledger (2,000 records) holds about 3 MB, so
1,000 busy sessions would hold about 3 GB; past this budget (about 300 MB) the least recently
used sessions are forgotten, as a long-lived server must not grow with its number of clients."""
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


class Sessions:
    """Toolkit sessions by client key; the least recently used are forgotten first beyond `capacity`
    sessions or `max_evidence` evidence records in all."""

    def __init__(self, toolkit: Toolkit, capacity: int = MAX_SESSIONS, max_evidence: int = MAX_EVIDENCE) -> None:
        self.toolkit = toolkit
        self.capacity = capacity
        self.max_evidence = max_evidence
        self._lock = threading.Lock()
        self._sessions: OrderedDict[str, Toolkit] = OrderedDict()

    def get(self, key: str) -> Toolkit:
        with self._lock:
            session = self._sessions.get(key)
            if session is None:
                session = self.toolkit.new_session()
                self._sessions[key] = session
            self._sessions.move_to_end(key)
            while len(self._sessions) > self.capacity:
                self._sessions.popitem(last=False)
            # The caller's own session (most recent) is never forgotten, however full it is.
            held = sum(len(s.ledger) for s in self._sessions.values())
            while held > self.max_evidence and len(self._sessions) > 1:
                _, old = self._sessions.popitem(last=False)
                held -= len(old.ledger)
            return session

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)
