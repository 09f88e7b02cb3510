"""`connect`: the one place a store is built from a location and its options.

Callers (the knowledge base, the MCP server through it) say where and how (read-only, scope,
engine); which class that takes stays here, so a second backend is one more branch, not a change
in every caller.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from evigraph.store.base import GraphStore
from evigraph.store.location import StoreLocation


def connect(
    location: StoreLocation | str | os.PathLike[str] | None = None,
    *,
    read_only: bool = False,
    scope: Sequence[str] | None = None,
    engine: str = "auto",
) -> GraphStore:
    """The store `location` names (see `StoreLocation.parse`), not yet opened.

    Open it with `async with connect(...) as store:` or `await store.open()`; nothing touches
    the disk before that. `scope` (document keys or globs) limits every read to those documents;
    None or empty means the whole knowledge base. `engine` picks the embedded engine for a plain
    path; a URL that names one (`kuzu:///...`) must not be contradicted.
    """
    where = StoreLocation.parse(location)
    path = where.embedded_path()  # a server location raises here: nothing is created
    chosen = where.engine_for(engine)
    from evigraph.store.embedded.store import EmbeddedStore

    store: GraphStore = EmbeddedStore(path, read_only=read_only, engine=chosen)
    if scope:
        from evigraph.store.scoped import ScopedStore

        store = ScopedStore(store, list(scope))
    return store
