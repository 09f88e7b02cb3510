"""Reads of a knowledge base another evigraph process holds, for the command line.

While `evigraph ingest` writes, every other process is refused the file, even a read-only open
(Kuzu 0.11.3 locks the file: "Could not set lock on file"; on LadybugDB, whose readers do not,
evigraph's own reader lock does: `store/embedded/reader_lock.py`), so `status` and `search` used to
fail until the ingest ended. A read-only open beside the writer being impossible, the
ingest answers them itself: it serves the database over the socket protocol `evigraph mcp`
processes already use to share one database (`evigraph.serving.forwarding`), read tools only. So
`status` and `search` ask it and print what they print when they open the file themselves, and
an `evigraph mcp` started meanwhile forwards to it, then takes the database over when the ingest
ends. A writable `evigraph mcp` holding the database answers these commands the same way.

A running `evigraph mcp` is asked first even when the file could be opened beside it (a
read-only server leaves it open to other readers): it has its embedding model loaded, so a
search it answers costs milliseconds where opening the file here would load the model again
(27 s on a loaded machine). A command that names its own `--embedder` opens the file itself
whenever it can, as the holder would search with its own model.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from evigraph.errors import DatabaseLockedError

if TYPE_CHECKING:
    from evigraph.kb import KnowledgeBase
    from evigraph.kb.core import Status
    from evigraph.models import StoredDocument
    from evigraph.providers.embedders import Embedder
    from evigraph.retrieval.query import RetrieveInput
    from evigraph.retrieval.result import RetrievalResult
    from evigraph.retrieval.schema import CypherRows
    from evigraph.serving.forwarding import ForwardingListener, HeldReads

log = logging.getLogger(__name__)

HOLDER_WAIT_S = 10.0
"""How long a read waits for the process holding the database to start serving it: an ingest
serves once its sources are listed, which a large folder takes a moment to do."""


class Reads(Protocol):
    """What `evigraph status`, `search` and `cypher` read: a `KnowledgeBase`, or the process holding it."""

    async def status(self) -> Status: ...

    async def documents(self, limit: int = 100, offset: int = 0) -> list[StoredDocument]: ...

    async def retrieve(self, query: RetrieveInput) -> RetrievalResult: ...

    async def cypher_query(
        self, query: str, params: dict[str, Any] | None = None, *, limit: int = 100
    ) -> CypherRows: ...


@contextlib.asynccontextmanager
async def open_for_reads(
    db: str | os.PathLike[str] | None,
    *,
    engine: str = "auto",
    embedder: Embedder | str | None = None,
    retrieval: str | None = None,
    reranker: str | None = None,
) -> AsyncIterator[Reads]:
    """The evigraph process serving the knowledge base, answering with its warm embedder; else
    the knowledge base opened read-only here; else, while another process holds it for writing
    without serving it yet, that process once it serves. An embedder, recipe or reranker asked
    for runs here: the serving process answers with its own."""
    from evigraph.kb import KnowledgeBase
    from evigraph.serving.forwarding import HeldReads

    deadline = asyncio.get_running_loop().time() + HOLDER_WAIT_S
    kb = KnowledgeBase(db, engine=engine, read_only=True, embedder=embedder, retrieval=retrieval, reranker=reranker)
    own = embedder is not None or retrieval is not None or reranker is not None
    held = await _serving_holder(kb.path) if not own and kb.path is not None else None
    while held is None:
        try:
            await kb.open()  # a failed open leaves nothing open: it can be tried again
            break
        except DatabaseLockedError:
            held = await HeldReads.connect(kb.path.resolve()) if kb.path is not None and not own else None
            if held is not None:
                break
            if asyncio.get_running_loop().time() >= deadline:
                raise
        await asyncio.sleep(0.2)
    if held is None:
        async with kb:
            yield kb
        return
    try:
        yield held
    finally:
        await held.close()


def holder_note(reads: Reads) -> str | None:
    """The line a command says on stderr when another process answered it, so a user knows whose
    embedder and whose view of the database the results come from."""
    from evigraph.serving.forwarding import HeldReads

    if not isinstance(reads, HeldReads):
        return None
    return f"answered by evigraph process {reads.pid}, which holds the database"


async def _serving_holder(db: Path) -> HeldReads | None:
    """The evigraph process serving `db`, if one does and serves all of it (else this one opens it)."""
    from evigraph.errors import ConfigurationError
    from evigraph.serving.forwarding import HeldReads

    try:
        return await HeldReads.connect(db.resolve())
    except ConfigurationError:  # a server scoped to some documents: read the whole file here
        return None


class IngestServing:
    """Serves the database an ingest holds to other evigraph processes, read tools only.

    Started once the ingest has opened the store (`start`, from the ingest's progress), never
    before: a read arriving earlier would open the store a second time beside the ingest. Each
    read waits for a write transaction in progress and holds off the next
    (`KnowledgeBase.apart_from_writes`, for the engine's reason on `InFlight`), which costs it
    at most one batch write of waiting. Serving is a convenience: when the socket cannot be
    made, the ingest runs on without it.
    """

    def __init__(self, kb: KnowledgeBase) -> None:
        self._kb = kb
        self._starting: asyncio.Task[ForwardingListener | None] | None = None

    def start(self) -> None:
        if self._starting is None and self._kb.path is not None:
            self._starting = asyncio.get_running_loop().create_task(self._listen(self._kb.path.resolve()))

    async def _listen(self, db: Path) -> ForwardingListener | None:
        from evigraph.serving.backend import LocalBackend
        from evigraph.serving.forwarding import ForwardingListener
        from evigraph.tools.toolkit import Toolkit

        backend = LocalBackend(Toolkit(self._kb, read_only=True))
        listener = ForwardingListener(db, backend, role="ingest", turn=self._kb.apart_from_writes)
        try:
            await listener.start()
        except OSError as exc:
            log.warning("cannot serve %s to other evigraph processes during the ingest: %s", db, exc)
            return None
        return listener

    async def close(self) -> None:
        """Stop serving; reads in flight end first, as the store closes after this."""
        if self._starting is None:
            return
        listener = await self._starting
        if listener is not None:
            await listener.close()
