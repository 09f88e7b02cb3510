"""`KnowledgeBase`: the one object users hold.

It wires strategies to a store and delegates; the algorithms live in `ingest/` and
`retrieval/`, the engine behind `store/`. Reads and writes live in their own modules; this
class joins them.
"""

from __future__ import annotations

import asyncio

from evigraph.kb.code import CodeOps
from evigraph.kb.core import FinalizeReport, Status
from evigraph.kb.maintenance import MaintenanceOps
from evigraph.kb.reads import ReadOps
from evigraph.kb.traces import TraceOps, Traces
from evigraph.kb.writes import WriteOps
from evigraph.store.location import DEFAULT_DB, StoreLocation, resolve_db_path
from evigraph.store.opening import embedded_files

__all__ = [
    "DEFAULT_DB",
    "FinalizeReport",
    "KnowledgeBase",
    "Status",
    "StoreLocation",
    "Traces",
    "embedded_files",
    "list_knowledge_bases",
    "resolve_db_path",
]


async def list_knowledge_bases(location: StoreLocation | str) -> list[str]:
    """The knowledge bases a FalkorDB server holds, by name (`evigraph list --db falkordb://host:port`);
    a file location is refused, with the fix: a file holds one knowledge base."""
    from evigraph.store.opening import knowledge_bases

    return await asyncio.to_thread(knowledge_bases, location)


class KnowledgeBase(ReadOps, WriteOps, CodeOps, MaintenanceOps, TraceOps):
    """A knowledge graph of documents, passages, entities and relations in one local database.

    Example::

        async with KnowledgeBase("notes.db") as kb:
            report = await kb.ingest(["docs/"])
            print(await kb.status())
    """
