"""In-process caches over a shared server graph, kept honest by a generation counter.

Retrieval reads the same structures on every question (term counts, entity names, the graph's
adjacency, the passages' vector moments); rebuilding them per question would cost a scan each.
Other processes write the same graph, so a cache is valid only while the graph's generation,
a counter every write through any evigraph process increments (a plain Redis key beside the
graph), is the one it was built at. Checking it is one `GET`.
"""

from __future__ import annotations

import asyncio
import bisect
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from evigraph.store.core.graph_index import GraphIndex, GraphLists, GraphSink, Rel
from evigraph.store.falkordb.connection import Connection

S = TypeVar("S", bound=GraphSink)

OWN_KEPT = 100_000
"""Own generation values remembered; a question about older ones answers "cannot tell"."""


class Generation:
    """Values built at a generation of the graph, dropped when it moves on.

    It also remembers the values this process's own writes were handed (`INCR` gives each write
    its own), so `foreign` can tell whether anyone else wrote between two generations: graph
    ranking's change feed (`ranking_changes`) is incremental only for changes it made itself.
    """

    def __init__(self, conn: Connection, keep: int = OWN_KEPT) -> None:
        self._conn = conn
        self._key = f"evigraph:generation:{conn.graph_name}"
        self._identity_key = f"evigraph:identity:{conn.graph_name}"
        self._identity_set = False
        self._lock = threading.Lock()
        self._values: dict[str, tuple[int, Any]] = {}
        self._building: dict[str, threading.Lock] = {}  # one builder per key at a time
        self._own: list[int] = []  # sorted
        self._keep = keep
        self._floor = 0  # values at or below this may have been forgotten

    def current(self) -> int:
        return int(self._conn.command("GET", self._key) or 0)

    def bump(self) -> int:
        value = int(self._conn.command("INCR", self._key))
        if not self._identity_set:
            self._conn.command("SET", self._identity_key, uuid.uuid4().hex, "NX")
            self._identity_set = True
        with self._lock:
            bisect.insort(self._own, value)
            if len(self._own) > self._keep:
                dropped = self._own[: len(self._own) - self._keep]
                del self._own[: len(dropped)]
                self._floor = max(self._floor, dropped[-1])
        return value

    def saved(self) -> str | None:
        """The generation as indexes saved on disk name it (`store/index_files.py`): the counter
        with the graph's identity, a random id its first write through this release set, so a
        graph dropped and made again, whose counter starts over, never matches the old indexes.
        None before that first write: indexes are then built, not saved."""
        counter, identity = self._conn.command("MGET", self._key, self._identity_key)
        if not counter or not identity:
            return None
        as_text = [v.decode() if isinstance(v, bytes) else str(v) for v in (identity, counter)]
        return ":".join(as_text)

    def foreign(self, since: int, now: int) -> bool:
        """Whether a generation in (since, now] came from another process (or cannot be told)."""
        if now < since or since < self._floor:
            return True
        with self._lock:
            own = bisect.bisect_right(self._own, now) - bisect.bisect_right(self._own, since)
        return own != now - since

    def get(self, key: str, build: Callable[[], Any]) -> Any:
        """The value of `key` at the current generation, built if it is not held yet. Callers
        asking for one key at once wait for a single build (the first retrieve asks for the graph
        from three paths at once) and take its value if the generation has not moved on since."""
        now = self.current()
        held = self._held(key, now)
        if held is not None:
            return held[0]
        with self._lock:
            building = self._building.setdefault(key, threading.Lock())
        with building:
            now = self.current()
            held = self._held(key, now)
            if held is not None:
                return held[0]
            value = build()
            if self.current() == now:  # nothing was written while it was built
                with self._lock:
                    self._values[key] = (now, value)
            return value

    def _held(self, key: str, now: int) -> tuple[Any] | None:
        """The value held for `key` at generation `now`, in a tuple (a value may be None)."""
        with self._lock:
            held = self._values.get(key)
        return (held[1],) if held is not None and held[0] == now else None

    async def fetch(self, key: str, build: Callable[[], Any]) -> Any:
        return await asyncio.to_thread(self.get, key, build)


@dataclass(frozen=True)
class VectorMoments:
    """The first and second moments of the passage vectors: the mean and spread of a query's
    cosine with every passage follow exactly from them (mean = q·m, E[(q·v)²] = qᵀSq), without
    comparing the query with each passage, which the HNSW index does not do."""

    count: int
    mean: Any  # numpy vector
    second: Any  # numpy matrix, the mean of v vᵀ

    def stats(self, vector: Sequence[float]) -> tuple[float, float]:
        import numpy as np

        q = np.asarray(list(vector), dtype=np.float64)
        mean = float(q @ self.mean)
        variance = float(q @ self.second @ q) - mean * mean
        return mean, max(variance, 0.0) ** 0.5


def build_moments(rows: list[tuple[str, list[float]]]) -> VectorMoments:
    import numpy as np

    if not rows:
        return VectorMoments(0, None, None)
    matrix = np.asarray([v for _, v in rows], dtype=np.float64)
    return VectorMoments(len(rows), matrix.mean(axis=0), matrix.T @ matrix / len(rows))


def build_graph_index(conn: Connection) -> GraphIndex:
    """The adjacency retrieval walks (the embedded store's `GraphIndex`)."""
    return read_graph(conn, GraphLists()).done()


PAGE_NODES = 5_000
"""Entities (by node id) whose relations or mentions one read returns. The graph used to come in
two replies, a row per relation and a row per mention, each held whole as Python dicts while the
index was built from them; at 100,000 generated passages the save at close now adds 786 MB to a
410 MB ingest (1,196 MB peak, `bench/scale.py`); an earlier session measured 2,067 MB before."""


def read_graph(conn: Connection, into: S) -> S:
    """Every relation, then every mention, into `into`, a page of entities at a time, by node id."""
    found = conn.read_sync("MATCH (e:Entity) RETURN max(id(e)) AS top")
    top = found[0]["top"] if found else None
    if top is None:
        return into
    pages = range(0, int(top) + 1, PAGE_NODES)
    for lo in pages:
        for r in conn.read_sync(
            """MATCH (a:Entity) WHERE id(a) >= $lo AND id(a) < $hi
               MATCH (a)-[r:RELATES]->(b:Entity)
               RETURN r.id AS id, a.id AS a, b.id AS b, a.name AS an, b.name AS bn, r.type AS type,
                      r.fact AS fact, r.confidence AS conf, r.source_chunks AS chunks""",
            {"lo": lo, "hi": lo + PAGE_NODES},
        ):
            rel = Rel(
                r["id"],
                r["a"],
                r["b"],
                r["an"],
                r["bn"],
                r["type"],
                r["fact"],
                float(r["conf"] or 0.0),
                tuple(r["chunks"] or ()),
            )
            into.relation(rel)
    for lo in pages:
        for r in conn.read_sync(
            """MATCH (e:Entity) WHERE id(e) >= $lo AND id(e) < $hi
               MATCH (e)-[:MENTIONED_IN]->(c:Chunk) WHERE c.live RETURN e.id AS e, c.id AS c""",
            {"lo": lo, "hi": lo + PAGE_NODES},
        ):
            into.mention(r["e"], r["c"])
    return into
