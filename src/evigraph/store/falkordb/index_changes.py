"""Creating and dropping the server's indexes, and waiting until a change has been built.

FalkorDB builds an index in the background: the statement returns at once and the label's index
reads "[Indexing] i/n: UNDER CONSTRUCTION" until every node is in it. Writes that run meanwhile
can be lost: `MATCH (c:Chunk {id: r.id}) SET c.embedding = ...` right after the vector index was
created on a graph holding passages left one or both of two vectors unset in 8 of 4,400 runs under
load (4 writers on 2 cores), each time with the Chunk index under construction; in none of 3,200
once the change waited for the build (`settle`). Nothing else is changed by the write, so it fails
silently; waiting for the build is the only safe order.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

from evigraph.errors import StoreError
from evigraph.store.falkordb.connection import Connection
from evigraph.store.falkordb.schema import RETIRED_FULLTEXT, index_statements

SETTLE_LIMIT_S = 600.0
"""How long a change may take to build before the writer gives up: a vector index over a million
passages builds in minutes, a stuck build should not hang a writer for ever."""

_POLL_S = 0.02

log = logging.getLogger(__name__)


def change_indexes(conn: Connection, statements: Iterable[str]) -> None:
    """Run index creations or drops, then wait until every index is built. An index another process
    created or dropped meanwhile is not an error."""
    changed = False
    for statement in statements:
        try:
            conn.write_sync(statement)
        except Exception as exc:
            if not any(said in str(exc).lower() for said in ("already", "no such index")):
                raise
        changed = True
    if changed:
        settle(conn)


def settle(conn: Connection, limit_s: float = SETTLE_LIMIT_S) -> None:
    """Return once no index of the graph is under construction."""
    deadline = time.monotonic() + limit_s
    first = True
    while True:
        try:
            rows = conn.read_sync("CALL db.indexes() YIELD label, status RETURN label, status")
        except Exception as exc:
            if not first or "status" not in str(exc).lower():
                raise
            log.warning("the FalkorDB server does not report index builds (%s); writes do not wait for them", exc)
            return
        first = False
        building = [f"{r['label']} ({r['status']})" for r in rows if r["status"] != "OPERATIONAL"]
        if not building:
            return
        if time.monotonic() > deadline:
            raise StoreError(
                f"the FalkorDB server is still building indexes after {limit_s:.0f} s: {', '.join(building)}",
                hint="check the server's load and log (`GRAPH.INFO`), then run the write again",
            )
        time.sleep(_POLL_S)


def missing_indexes(conn: Connection) -> list[str]:
    """The statements creating the range and edge indexes the graph lacks."""
    return _index_changes(conn)[0]


def create_indexes(conn: Connection) -> None:
    """The indexes a knowledge base needs that the graph lacks; full-text indexes an older evigraph
    made and this one no longer reads are dropped."""
    creations, drops = _index_changes(conn)
    change_indexes(conn, creations + drops)


def _index_changes(conn: Connection) -> tuple[list[str], list[str]]:
    rows = conn.read_sync("CALL db.indexes() YIELD label, properties, types RETURN label, properties, types")
    have: set[tuple[str, str]] = set()
    fulltext: set[tuple[str, str]] = set()
    for r in rows:
        for prop in r["properties"]:
            kinds = r["types"].get(prop, [])
            if "RANGE" in kinds:
                have.add((r["label"], prop))
            if "FULLTEXT" in kinds:
                fulltext.add((r["label"], prop))
    creations = index_statements(have)
    retired = {label for label, _ in fulltext} & set(RETIRED_FULLTEXT)
    return creations, [f"CALL db.idx.fulltext.drop('{label}')" for label in sorted(retired)]
