"""The FalkorDB store's derived indexes kept in this user's cache between processes.

The server holds the graph; what retrieval derives from it (BM25 postings, names, terms, the
graph's adjacency) is saved under the graph's write generation (`caches.Generation`), so a new
process on this machine reads them instead of pulling the whole graph.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from evigraph.store.falkordb import reads
from evigraph.store.falkordb.code import code_texts

if TYPE_CHECKING:
    from evigraph.store.base import IndexProgress
    from evigraph.store.caches import FactVectors
    from evigraph.store.falkordb.caches import Generation
    from evigraph.store.falkordb.connection import Connection
    from evigraph.store.index_files import IndexFiles
    from evigraph.store.location import StoreLocation
    from evigraph.store.saved_indexes import Codec, SavedIndexes

Index = TypeVar("Index")
log = logging.getLogger(__name__)


class FalkorIndexOps:
    """Saving and reading the derived indexes; mixed into `FalkorStore`."""

    _conn: Any
    _saved: SavedIndexes
    _opened_at: str | None
    read_only: bool
    location: StoreLocation

    @property
    def cache(self) -> Generation:
        raise NotImplementedError  # FalkorStore's

    @property
    def conn(self) -> Connection:
        raise NotImplementedError  # FalkorStore's

    async def _text_index(self, texts: Callable[..., Any]) -> Any:
        raise NotImplementedError  # FalkorStore's

    async def entities_named(self, phrases: Any) -> Any:
        raise NotImplementedError  # FalkorStore's

    async def term_counts(self, terms: Any) -> Any:
        raise NotImplementedError  # FalkorStore's

    async def _graph(self) -> Any:
        raise NotImplementedError  # FalkorStore's

    async def save_indexes(self, progress: IndexProgress | None = None, *, facts: bool = False) -> None:
        """After writes through this process, have the derived indexes saved at the graph's new
        generation, so the next process on this machine reads them instead of pulling the graph."""
        if self._conn is None or self.read_only:
            return
        from evigraph.store.saved_indexes import run_steps

        try:
            if await asyncio.to_thread(self.cache.saved) in (None, self._opened_at):
                return
            steps: list[tuple[str, Callable[[], Awaitable[object]]]] = [
                ("passages_bm25", lambda: self._text_index(reads.passage_texts)),
                ("entities_bm25", lambda: self._text_index(reads.entity_texts)),
                ("code_bm25", lambda: self._text_index(code_texts)),
                ("names", lambda: self.entities_named([])),
                ("terms", lambda: self.term_counts([])),
                ("graph", self._graph),
            ]
            if facts:
                steps += [("fact_vectors", self._fact_vectors)]
            await run_steps(steps, progress)
        except Exception as exc:  # the next process builds what is missing; a close must not fail for it
            # One line, no traceback: a close after a lost server already ends with its error.
            log.warning(
                "could not save the retrieval indexes of %s (%s): the next open builds them", self.location.display, exc
            )

    async def _fact_vectors(self) -> FactVectors:
        """Relations' fact vectors (`GraphIndexReads.search_facts`), saved with the other indexes."""
        from evigraph.store.caches import build_fact_vectors
        from evigraph.store.core.ranking_reads import read_fact_vectors
        from evigraph.store.saved_indexes import FACTS

        def build() -> FactVectors:
            return build_fact_vectors(read_fact_vectors(self.conn.read_sync, _ids))

        facts: FactVectors = await self.cache.fetch("fact_vectors", lambda: self._derived("fact_vectors", FACTS, build))
        return facts

    def saved_index_files(self) -> IndexFiles | None:
        return self._saved.files

    async def write_generation(self) -> str | None:
        return await asyncio.to_thread(self.cache.saved)

    def _derived(self, name: str, codec: Codec[Index], build: Callable[[], Index]) -> Index:
        """An index read from this user's cache at the graph's generation, or built from the graph
        and saved there when no write moved the generation while it was read."""

        def built() -> tuple[str | None, Index]:
            before = self.cache.saved()
            value = build()
            return (before if before is not None and self.cache.saved() == before else None), value

        return self._saved.get(name, codec, self.cache.saved, built)

    def _derived_arrays(
        self,
        name: str,
        codec: Codec[Index],
        build: Callable[[], Index],
        arrays: Callable[[], Iterable[tuple[str, Any]]],
    ) -> Index:
        """As `_derived`, for an index whose arrays are made from the graph's rows directly
        (`SavedIndexes.get_arrays`); `build` is for a process that saves nothing."""

        def built() -> tuple[str | None, Index]:
            before = self.cache.saved()
            value = build()
            return (before if before is not None and self.cache.saved() == before else None), value

        def made() -> tuple[str | None, Iterable[tuple[str, Any]], dict[str, Any]]:
            before = self.cache.saved()
            value = arrays()
            return (before if before is not None and self.cache.saved() == before else None), value, {}

        return self._saved.get_arrays(name, codec, self.cache.saved, built, made)


def _ids(values: Any) -> list[str]:
    return list(values or ())
