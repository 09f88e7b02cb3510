"""`connect`: the one place a store is built from a location and its options.

Callers (the knowledge base, the MCP server through it) say where and how (read-only, scope,
engine); which class that takes stays here, so a second backend is one more branch, not a change
in every caller.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

from evigraph.errors import ConfigurationError
from evigraph.store.base import GraphStore
from evigraph.store.location import StoreLocation

log = logging.getLogger(__name__)


def connect(
    location: StoreLocation | str | os.PathLike[str] | None = None,
    *,
    read_only: bool = False,
    scope: Sequence[str] | None = None,
    engine: str = "auto",
    vector_codec: str | None = None,
) -> GraphStore:
    """The store `location` names (see `StoreLocation.parse`), not yet opened.

    Open it with `async with connect(...) as store:` or `await store.open()`; nothing touches
    the disk before that. `scope` (document keys or globs) limits every read to those documents;
    None or empty means the whole knowledge base. `engine` picks the embedded engine for a plain
    path; a URL that names one (`kuzu:///...`) must not be contradicted. `vector_codec` is how an
    embedded store holds passage vectors for search (`caches.VECTOR_CODECS`; a server searches its own
    vector index).
    """
    where = StoreLocation.parse(location)
    store: GraphStore
    if where.server:
        server_vector_codec(where, vector_codec)
        if engine not in ("auto", where.scheme):
            raise ConfigurationError(
                f"{where.display} is a FalkorDB graph; engine={engine!r} names an embedded engine",
                hint="drop the engine option for a server location",
            )
        from evigraph.store.falkordb.store import FalkorStore

        store = FalkorStore(where, read_only=read_only)
    else:
        from evigraph.store.embedded.store import EmbeddedStore

        store = EmbeddedStore(
            where.embedded_path(), read_only=read_only, engine=where.engine_for(engine), vector_codec=vector_codec
        )
    if scope:
        from evigraph.store.scoped import ScopedStore

        # mypy cannot see the forwarders `ForwardingStore` makes from the contract at import
        store = ScopedStore(store, list(scope))  # type: ignore[abstract]
    return store


_told_of_codec = False


def server_vector_codec(where: StoreLocation, asked: str | None) -> str:
    """The codec of a server's knowledge base: float32, as the server searches its own vector
    index. One asked for is refused, naming the fix, where it used to be ignored without a word;
    one from EVIGRAPH_VECTOR_CODEC (a setting for every knowledge base) is logged once."""
    global _told_of_codec
    if asked not in (None, "float32"):
        raise ConfigurationError(
            f"vector_codec={asked!r} applies to a knowledge base in a file; {where.display} is a FalkorDB graph",
            hint="drop vector_codec for a server location: the server searches its own vector index",
        )
    chosen = os.environ.get("EVIGRAPH_VECTOR_CODEC", "").strip()
    if asked is None and chosen not in ("", "float32") and not _told_of_codec:
        _told_of_codec = True
        log.info("EVIGRAPH_VECTOR_CODEC=%s is not used for %s: a server searches its own index", chosen, where.display)
    return "float32"


def knowledge_bases(location: StoreLocation | str) -> list[str]:
    """The knowledge bases a server holds (one per graph), by name; other graphs are left out.

    A server location names a graph, but the graph is ignored here: the question is what the
    server holds (`evigraph list --db falkordb://host:port`).
    """
    where = StoreLocation.parse(location)
    if not where.server:
        raise ConfigurationError(
            f"{where.display} is a file: it holds one knowledge base",
            hint="list a server's knowledge bases with --db falkordb://host:port",
        )
    from evigraph.store.falkordb.connection import Connection

    conn = Connection(where, read_only=True)
    conn.open()
    try:
        return conn.knowledge_bases()
    finally:
        conn.close()


def embedded_files(path: Path) -> list[Path]:
    """The files opened for an embedded knowledge base at `path`: the database file, the ones the
    engine keeps beside it (write-ahead log, checkpoint shadow) and the folder of saved indexes
    (`index_files`). Whoever confines a knowledge base to a folder must check them all: a log
    linked elsewhere is read back into the database, and indexes are written where the folder leads."""
    from evigraph.store.embedded.creation import sidecars
    from evigraph.store.index_files import SUFFIX

    return [path, *sidecars(path), path.with_name(path.name + SUFFIX)]
