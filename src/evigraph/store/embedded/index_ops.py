"""The embedded store's reads over its derived indexes, and how they are kept beside the file.

BM25 over passages and entities, the name index, the graph's adjacency, term counts, titles,
passage vectors and relations' fact vectors are each read from the folder beside the database
file (`store/saved_indexes.py`) when they were saved at the file's current write generation, else
built from the graph once and saved (a read-only open saves too when it can, and only builds when
it cannot). A writable store that wrote saves every index as it closes (fact vectors only for a
strategy that searches them), so the next open reads them all: at 100,000 passages the rebuild
they replace took tens of seconds on the first question and gigabytes of memory.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from evigraph.models import EntityHit, PassageHit
from evigraph.store import bm25
from evigraph.store.base import IndexProgress, TermCounts, VectorSearch
from evigraph.store.bm25 import TextIndex, build_text_index
from evigraph.store.caches import (
    Cached,
    FactRows,
    FactVectors,
    NameIndex,
    TermIndex,
    VectorMatrix,
    build_fact_vectors,
    build_matrix,
    build_name_index,
    build_term_index,
)
from evigraph.store.core import ranking_reads
from evigraph.store.core.graph_arrays import GraphArrays
from evigraph.store.core.graph_index import GraphIndex
from evigraph.store.core.graph_index_reads import GraphIndexReads
from evigraph.store.embedded import generation, reads
from evigraph.store.embedded.code import code_texts
from evigraph.store.embedded.compaction import disk_bytes
from evigraph.store.embedded.engine import import_engine, open_database
from evigraph.store.embedded.executor import Executor, Tx
from evigraph.store.embedded.graph_reads import build_graph_index, read_graph
from evigraph.store.embedded.packed import unpack_ids
from evigraph.store.index_files import IndexFiles
from evigraph.store.saved_indexes import (
    FACTS,
    GRAPH,
    NAMES,
    TERMS,
    TEXT,
    TEXT_INDEXES,
    TITLES,
    VECTORS,
    Codec,
    SavedIndexes,
    codec_names,
    run_steps,
)

log = logging.getLogger(__name__)

DROP_PAGE_CACHE_MB = 64
"""A save reopens the engine first when the file and its log take this much (`_drop_page_cache`).
The reopen costs about a tenth of a second whatever the size, about 1% of the save it precedes
from here up: bench/scale.py's corpus on LadybugDB, 20,000 records (a 162 MB file), 0.06 s for
161 MB given back before a 9.7 s save; 100,000 records (552 MB), 0.11 s for 434 MB before 46 s."""

R = TypeVar("R")
Index = TypeVar("Index")


class IndexOps(GraphIndexReads):
    """The derived-index section of `EmbeddedStore`, kept apart so the store module stays a wiring."""

    path: Path
    read_only: bool
    engine: str
    buffer_pool_mb: int
    _cache: Cached
    _saved: SavedIndexes
    _opened_at: str | None
    _exec: Executor | None
    _context_column: bool
    vector_codec: str
    _fact_column: bool

    @property
    def executor(self) -> Executor:
        raise NotImplementedError  # EmbeddedStore's

    async def passages_by_ids(self, ids: Sequence[str]) -> list[PassageHit]:
        raise NotImplementedError  # EmbeddedStore's

    def _drop_page_cache(self) -> bool:
        """Reopen the engine before a large save, so its pool holds only the pages the save reads.

        The pool keeps every page an ingest touched until it is full, and the save reads the
        whole graph on top of them. Only for a file of `DROP_PAGE_CACHE_MB` or more: a smaller one
        cannot have filled the pool with enough to be worth a reopen's extension loads."""
        if disk_bytes(self.path) < DROP_PAGE_CACHE_MB << 20:
            return False
        module = import_engine(self.engine, self.path)
        return self.executor.reopen(
            lambda: open_database(module, self.path, read_only=False, buffer_pool_mb=self.buffer_pool_mb)
        )

    async def entities_by_ids(self, ids: Sequence[str]) -> list[EntityHit]:
        raise NotImplementedError  # EmbeddedStore's

    async def embedding_model(self) -> tuple[str, int] | None:
        raise NotImplementedError  # EmbeddedStore's

    async def save_indexes(self, progress: IndexProgress | None = None, *, facts: bool = False) -> None:
        """After writes, have every derived index saved at the new generation, so the next open
        reads them instead of rebuilding (what one already built and saved is not built again)."""
        if self._exec is None or self.read_only:
            return
        try:
            if await self._exec.read(generation.current) in (None, self._opened_at):
                return
            await asyncio.to_thread(self._drop_page_cache)
            # The graph first: its build is the save's largest, and every step leaves the pages
            # it read in the engine's pool (the relations' about 300 MB at 100,000 passages). On
            # that finished file, in a fresh process, the save peaked at 958 MB with the graph
            # built first against 1,119 MB with it fifth (its arrays then still held whole).
            steps: list[tuple[str, Callable[[], Awaitable[object]]]] = [
                ("graph", self._graph),
                ("passages_bm25", lambda: self._text_index(reads.passage_texts)),
                ("entities_bm25", lambda: self._text_index(reads.entity_texts)),
                ("code_bm25", lambda: self._text_index(code_texts)),
                ("names", self._names),
                ("terms", lambda: self.term_counts([])),
                ("titles", self._titles),
            ]
            if await self.embedding_model() is not None:
                steps += [("vectors", self._vectors)]
                if facts:
                    steps += [("fact_vectors", self._fact_vectors)]
            await run_steps(steps, progress)
        except Exception as exc:  # the next open rebuilds what is missing; a close must not fail for it
            # One line, no traceback: a close after a lost engine already ends with its error.
            log.warning("could not save the retrieval indexes of %s (%s): the next open builds them", self.path, exc)

    def _derived(
        self,
        name: str,
        codec: Codec[Index],
        read: Callable[[Tx], R],
        build: Callable[[R], Index],
        replaces: Sequence[str] = (),
    ) -> Index:
        """An index read from the folder beside the file at the current generation, or built
        from `read`'s rows (read with the generation, in one transaction) and saved there."""

        def built() -> tuple[str | None, Index]:
            at, rows = self.executor.read_sync(lambda tx: (generation.current(tx), read(tx)))
            return at, build(rows)

        return self._saved.get(name, codec, lambda: self.executor.read_sync(generation.current), built, replaces)

    def saved_index_files(self) -> IndexFiles | None:
        return self._saved.files

    async def write_generation(self) -> str | None:
        return await self.executor.read(generation.current)

    async def search_passages(self, query: str, limit: int = 10) -> list[PassageHit]:
        return await bm25.search(await self._text_index(reads.passage_texts), query, limit, self.passages_by_ids)

    async def _text_index(self, texts: Callable[[Tx], list[tuple[str, str]]]) -> TextIndex:
        """The full-text index of passages, entities or code symbols (`bm25`), built at the first
        search after a write."""
        name = TEXT_INDEXES[texts.__name__]
        index: TextIndex = await self._cache.fetch(
            texts.__name__, lambda: self._derived(name, TEXT, texts, build_text_index)
        )
        return index

    async def _titles(self) -> reads.Titles:
        docs: reads.Titles = await self._cache.fetch(
            "titles", lambda: self._derived("titles", TITLES, reads.titles, lambda rows: rows)
        )
        return docs

    async def search_entities(self, query: str, limit: int = 10) -> list[EntityHit]:
        return await bm25.search(await self._text_index(reads.entity_texts), query, limit, self.entities_by_ids)

    async def _graph(self) -> GraphIndex:
        def built() -> tuple[str | None, GraphIndex]:
            return self.executor.read_sync(lambda tx: (generation.current(tx), build_graph_index(tx)))

        def arrays() -> tuple[str | None, Iterator[tuple[str, Any]], dict[str, Any]]:
            at, rows = self.executor.read_sync(lambda tx: (generation.current(tx), read_graph(tx, GraphArrays())))
            return at, rows.parts(), {}

        def current() -> str | None:
            return self.executor.read_sync(generation.current)

        index: GraphIndex = await self._cache.fetch(
            "graph", lambda: self._saved.get_arrays("graph", GRAPH, current, built, arrays)
        )
        return index

    async def _names(self) -> NameIndex:
        index: NameIndex = await self._cache.fetch(
            "names", lambda: self._derived("names", NAMES, reads.name_rows, build_name_index)
        )
        return index

    async def entities_named(self, phrases: Sequence[str]) -> dict[str, list[str]]:
        return (await self._names()).lookup(phrases)

    async def vector_search(self, vector: Sequence[float], limit: int = 10) -> list[tuple[str, float]]:
        return (await self._vectors()).search(vector, limit)

    async def vector_search_stats(self, vector: Sequence[float], limit: int = 10) -> VectorSearch:
        return (await self._vectors()).search_stats(vector, limit)

    async def _vectors(self) -> VectorMatrix:
        codec = self.vector_codec
        name, others = codec_names("vectors", codec)
        matrix: VectorMatrix = await self._cache.fetch(
            "vectors",
            lambda: self._derived(name, VECTORS, reads.vector_rows, lambda rows: build_matrix(rows, codec), others),
        )
        return matrix

    async def _fact_vectors(self) -> FactVectors:
        def rows(tx: Tx) -> FactRows:
            return ranking_reads.read_fact_vectors(tx.rows, unpack_ids) if self._fact_column else ([], [], [], None)

        codec = self.vector_codec
        name, others = codec_names("fact_vectors", codec)
        facts: FactVectors = await self._cache.fetch(
            "fact_vectors",
            lambda: self._derived(name, FACTS, rows, lambda found: build_fact_vectors(found, codec), others),
        )
        return facts

    async def term_counts(self, terms: Sequence[str]) -> TermCounts:
        # A read-only open of a file from before contextual chunks reads passages without context.
        name = "terms" if self._context_column else "terms_without_context"
        index: TermIndex = await self._cache.fetch(
            "terms",
            lambda: self._derived(name, TERMS, lambda tx: reads.term_texts(tx, self._context_column), build_term_index),
        )
        return index.counts(terms)
