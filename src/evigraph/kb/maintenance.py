"""Operator maintenance of a knowledge base's file: `compact`.

Not an agent tool: compacting takes the file for itself and swaps it, which only the person who
runs the knowledge base should decide (`evigraph compact`, `KnowledgeBase.compact()`).
"""

from __future__ import annotations

from evigraph.errors import DatabaseLockedError
from evigraph.kb.core import KnowledgeBaseCore
from evigraph.store.compaction import CompactProgress, CompactReport


class MaintenanceOps(KnowledgeBaseCore):
    """File maintenance, joined into `KnowledgeBase`."""

    async def compact(self, *, progress: CompactProgress | None = None) -> CompactReport:
        """Rewrite the knowledge base without the space deletes and updates left in its file.

        The embedded engine never shrinks its file (a three-file knowledge base went from 37 to
        59 MB by deleting one document); this copies every row into a new file beside it and swaps
        the two once the counts match. It needs the file to itself: while another process (a
        running `evigraph mcp` or an ingest) has it open it raises `DatabaseLockedError`, and on
        any failure the old file is left as it was. `progress(stage, done, total)` is called from
        a worker thread as it goes. A path that holds no knowledge base raises and creates nothing.
        When another process opens the compacted file before this one can open it again, the
        compaction is still done: the report's `reopen_error` says so, and the next call here
        opens the file again (or says which process holds it).
        """
        try:
            store = await self._open(for_write=True, create=False)
        except DatabaseLockedError as exc:
            raise DatabaseLockedError(
                f"cannot compact {self.location}: another process is using it",
                hint="stop the process that has it open (a running `evigraph mcp` or ingest), then compact again",
            ) from exc
        async with self._gate.exclusive():  # no write of this process runs during the copy
            report = await store.compact(progress)
        if report.reopen_error:
            self._opened = False  # the store let go of the file: the next call opens it afresh
        return report
