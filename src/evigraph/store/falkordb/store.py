"""`FalkorStore`: the GraphStore on a FalkorDB server graph, shared by many processes.

Unlike the embedded file, several processes may write one graph at once, so nothing here may
assume its own writes are the only ones: atomicity comes from the server (one query runs whole,
see `documents.py`), and the in-process caches (term counts, names, graph adjacency, vector
moments) are checked against a generation counter the server keeps (`Generation`), which every
write through any process increments.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from evigraph.errors import KnowledgeBaseMissingError, NotAKnowledgeBaseError, StoreError
from evigraph.models import (
    DocumentVersion,
    EntityHit,
    ExtractedEntity,
    ExtractedRelation,
    PassageHit,
    SourceRecord,
    SourceState,
    StoreCounts,
    StoredDocument,
    ThemeRecord,
    embedding_text,
)
from evigraph.store import bm25
from evigraph.store.base import EXTRACTION_KIND, GraphStore, TermCounts, VectorSearch, opened
from evigraph.store.bm25 import TextIndex, build_text_index
from evigraph.store.caches import (
    NameIndex,
    TermIndex,
    VectorMatrix,
    build_matrix,
    build_name_index,
    build_term_index,
)
from evigraph.store.core.graph_arrays import GraphArrays
from evigraph.store.core.graph_index import GraphIndex
from evigraph.store.core.graph_index_reads import GraphIndexReads
from evigraph.store.core.rekey import LEGACY_PREFIXES, checked_renames, legacy_key_query
from evigraph.store.core.source_rows import SOURCE_FIELDS, source_record
from evigraph.store.falkordb import documents, reads, rekey
from evigraph.store.falkordb.caches import Generation, VectorMoments, build_graph_index, build_moments, read_graph
from evigraph.store.falkordb.code import FalkorCodeOps
from evigraph.store.falkordb.connection import Connection, read_only_error
from evigraph.store.falkordb.decisions import FalkorDecisionOps
from evigraph.store.falkordb.index_changes import change_indexes, create_indexes
from evigraph.store.falkordb.index_ops import FalkorIndexOps
from evigraph.store.falkordb.leases import WriterLease
from evigraph.store.falkordb.maintenance import FalkorMaintenanceOps
from evigraph.store.falkordb.properties import FalkorPropertyOps
from evigraph.store.falkordb.ranking import FalkorRankingOps
from evigraph.store.falkordb.schema import (
    CYPHER_GUIDE,
    SCHEMA_VERSION,
    vector_index,
)
from evigraph.store.index_files import IndexFiles, prefetch_numpy, user_cache_folder
from evigraph.store.location import StoreLocation
from evigraph.store.ranking import ChangeJournal
from evigraph.store.saved_indexes import GRAPH, NAMES, TERMS, TEXT, TEXT_INDEXES, SavedIndexes

T = TypeVar("T")
Index = TypeVar("Index")
log = logging.getLogger(__name__)


class FalkorStore(
    FalkorCodeOps,
    FalkorPropertyOps,
    FalkorDecisionOps,
    FalkorRankingOps,
    FalkorMaintenanceOps,
    FalkorIndexOps,
    GraphIndexReads,
    GraphStore,
):
    writes_on_this_machine = False
    """The server writes: the ingesting process is bound by its own interpreter lock, so extraction
    in a worker process pays (10k one-passage records, interleaved runs: 23.8 s against 29.3 s)."""
    writes_at_once = 2
    """Two groups written at once, on two connections: the server runs each query alone, and one
    write's client work (spelling parameters, reading replies) overlaps the other's queries.
    101,940 one-passage records, rules extractor: 250.1 s against 269.3 s one at a time."""

    def __init__(self, location: StoreLocation, *, read_only: bool = False) -> None:
        self.location = location
        self.read_only = read_only
        self._conn: Connection | None = None
        self._generation: Generation | None = None
        self._journal = ChangeJournal()
        self._saved = SavedIndexes(None)  # this user's cache folder for the graph, once open
        self._opened_at: str | None = None

    @property
    def conn(self) -> Connection:
        return opened(self._conn)

    @property
    def cache(self) -> Generation:
        assert self._generation is not None, "open() first"
        return self._generation

    async def open(self) -> None:
        if self._conn is None:
            prefetch_numpy()
            await asyncio.to_thread(self._open_sync)

    def _open_sync(self) -> None:
        conn = Connection(self.location, read_only=self.read_only)
        conn.open()
        try:
            self._check_or_create(conn)
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        self._generation = Generation(conn)
        where = self.location
        self._saved = SavedIndexes(
            IndexFiles(user_cache_folder("falkordb", f"{where.host}:{where.port}", conn.graph_name))
        )
        self._opened_at = self._generation.saved()

    def _check_or_create(self, conn: Connection) -> None:
        """Accept an evigraph graph, refuse a foreign one, and mark a new one as ours.

        A graph with no mark is not necessarily foreign: the server lists a graph as soon as the
        first write query to it starts, so another process's creating query may be under way.
        An empty graph is therefore claimed by one conditional query, which the server runs
        alone; concurrent claims all end with the one mark (a CI run lost an ingest to this)."""
        exists = conn.graph_name in set(conn.graphs())
        marks = _marks(conn) if exists else {}
        if not marks:
            if self.read_only:
                if exists and conn.read_primary_sync("MATCH (n) RETURN 1 AS one LIMIT 1"):
                    raise self._foreign()
                raise KnowledgeBaseMissingError(
                    f"{self.location.display} holds no knowledge base yet",
                    hint=f"ingest something first: `evigraph ingest PATH --db {self.location.display}`",
                )
            claimed = conn.write_sync(_CLAIM, {"v": SCHEMA_VERSION})
            if not claimed:
                raise self._foreign()
            marks = {"app": claimed[0]["app"], "schema_version": claimed[0]["version"]}
        if marks.get("app") != "evigraph":
            raise self._foreign()
        if marks.get("schema_version") != SCHEMA_VERSION:
            raise StoreError(
                f"{self.location.display} has evigraph schema version {marks.get('schema_version')}, "
                f"this evigraph reads {SCHEMA_VERSION}",
                hint="upgrade evigraph, or ingest into another graph",
            )
        if not self.read_only:
            create_indexes(conn)

    def _foreign(self) -> NotAKnowledgeBaseError:
        return NotAKnowledgeBaseError(
            f"{self.location.display} is a FalkorDB graph, but not an evigraph knowledge base",
            hint="name another graph in the URL; evigraph does not modify foreign graphs",
        )

    async def close(self) -> None:
        try:
            await self.save_indexes()
        finally:
            await self._release()

    async def _release(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await asyncio.to_thread(conn.close)

    # -- documents ---------------------------------------------------------------------------

    async def get_documents(self, keys: Sequence[str]) -> dict[str, StoredDocument]:
        return await self._read(lambda: reads.get_documents(self.conn, keys)) if keys else {}

    async def list_documents(self, limit: int = 100, offset: int = 0) -> list[StoredDocument]:
        return await self._read(lambda: reads.list_documents(self.conn, limit, offset))

    async def write_versions(self, versions: Sequence[DocumentVersion]) -> list[StoredDocument]:
        if not versions:
            return []
        from evigraph.store.core.merge_plan import redirect_versions
        from evigraph.store.falkordb.merging import primary_reader

        def work() -> list[StoredDocument]:
            stored, switched = documents.write_versions(
                self.conn, redirect_versions(primary_reader(self.conn), versions)
            )
            self.flag_documents(switched)
            return stored

        try:
            return await self._write(work)
        finally:
            self._journal.documents([v.key for v in versions])

    async def delete_document(self, key: str) -> bool:
        def work() -> bool:
            with WriterLease(self.conn):  # while it runs, `check` leaves the entities it unmentions to it
                mentioned = documents.mentioned_by(self.conn, key)
                candidates = documents.delete_document(self.conn, key)
                if candidates is None:
                    return False
                self.flag_documents({key: None})
                documents.delete_orphans(self.conn, {*candidates, *mentioned})
                return True

        try:
            return await self._write(work)
        finally:
            self._journal.documents([key])

    async def rename_documents(self, renames: Mapping[str, str]) -> list[str]:
        pairs = checked_renames(renames)
        if not pairs:
            return []

        def work() -> list[str]:
            with WriterLease(self.conn):
                return rekey.rename_documents(self.conn, pairs)

        try:
            return await self._write(work)
        finally:
            self._journal.documents([*pairs, *pairs.values()])

    async def counts(self) -> StoreCounts:
        found: StoreCounts = await self.cache.fetch("counts", lambda: reads.counts(self.conn))
        return found.model_copy(deep=True)

    # -- retrieval ---------------------------------------------------------------------------

    async def search_passages(self, query: str, limit: int = 10) -> list[PassageHit]:
        return await bm25.search(await self._text_index(reads.passage_texts), query, limit, self.passages_by_ids)

    async def _text_index(self, texts: Callable[[Connection], list[tuple[str, str]]]) -> TextIndex:
        """The full-text index of passages, entities or code symbols (`bm25`), built at the first search
        after a write."""
        name = TEXT_INDEXES[texts.__name__]
        index: TextIndex = await self.cache.fetch(
            texts.__name__, lambda: self._derived(name, TEXT, lambda: build_text_index(texts(self.conn)))
        )
        return index

    async def passages_by_ids(self, ids: Sequence[str]) -> list[PassageHit]:
        return await self._read(lambda: reads.passages_by_ids(self.conn, ids)) if ids else []

    async def document_passages(self, key: str, limit: int = 5000) -> list[PassageHit]:
        return await self._read(lambda: reads.document_passages(self.conn, key, limit))

    async def search_entities(self, query: str, limit: int = 10) -> list[EntityHit]:
        return await bm25.search(await self._text_index(reads.entity_texts), query, limit, self.entities_by_ids)

    async def entities_by_ids(self, ids: Sequence[str]) -> list[EntityHit]:
        return await self._read(lambda: reads.entities_by_ids(self.conn, ids)) if ids else []

    async def entities_named(self, phrases: Sequence[str]) -> dict[str, list[str]]:
        index: NameIndex = await self.cache.fetch(
            "names", lambda: self._derived("names", NAMES, lambda: build_name_index(reads.name_rows(self.conn)))
        )
        return index.lookup(phrases)

    async def term_counts(self, terms: Sequence[str]) -> TermCounts:
        index: TermIndex = await self.cache.fetch(
            "terms", lambda: self._derived("terms", TERMS, lambda: build_term_index(reads.term_texts(self.conn)))
        )
        return index.counts(terms)

    async def _graph(self) -> GraphIndex:
        index: GraphIndex = await self.cache.fetch(
            "graph",
            lambda: self._derived_arrays(
                "graph",
                GRAPH,
                lambda: build_graph_index(self.conn),
                lambda: read_graph(self.conn, GraphArrays()).parts(),
            ),
        )
        return index

    # -- embeddings --------------------------------------------------------------------------

    async def embedding_model(self) -> tuple[str, int] | None:
        def work() -> tuple[str, int] | None:
            name = reads.get_meta(self.conn, "embedding_model")
            dim = reads.get_meta(self.conn, "embedding_dimension")
            return (name, int(dim or 0)) if name else None

        found: tuple[str, int] | None = await self.cache.fetch("embedding_model", work)
        return found

    async def set_embedding_model(self, name: str | None, dimension: int = 0) -> None:
        def work() -> None:
            if name is None:
                self.conn.write_sync("MATCH (c:Chunk) WHERE c.embedding IS NOT NULL SET c.embedding = NULL")
                self.clear_ranking_vectors()
            for key, value in (("embedding_model", name), ("embedding_dimension", str(dimension) if name else None)):
                self.conn.write_sync("MERGE (m:EvigraphMeta {key: $k}) SET m.value = $v", {"k": key, "v": value})
            if name is not None and dimension > 0:
                change_indexes(self.conn, [vector_index(dimension)])

        try:
            await self._write(work)
        finally:
            self._journal.reset()

    async def pending_embeddings(self, limit: int = 256) -> list[tuple[str, str]]:
        rows = await self._read(
            lambda: self.conn.read_sync(
                """MATCH (c:Chunk) WHERE c.live AND c.embedding IS NULL MATCH (c)-[:PART_OF]->(d:Document)
                   RETURN c.id AS id, d.title AS title, c.text AS text, c.passage_context AS cx LIMIT $k""",
                {"k": limit},
            )
        )
        return [(r["id"], embedding_text(r["title"] or "", r["text"], r["cx"] or "")) for r in rows]

    async def count_pending_embeddings(self) -> int:
        rows = await self._read(
            lambda: self.conn.read_sync("MATCH (c:Chunk) WHERE c.live AND c.embedding IS NULL RETURN count(c) AS n")
        )
        return int(rows[0]["n"])

    async def write_embeddings(self, rows: Sequence[tuple[str, Sequence[float]]]) -> None:
        payload = [{"id": cid, "v": [float(x) for x in vec]} for cid, vec in rows]
        await self._write(
            lambda: self.conn.write_many(
                "UNWIND $rows AS r MATCH (c:Chunk {id: r.id}) SET c.embedding = vecf32(r.v)", payload, batch=500
            )
        )

    async def vector_search(self, vector: Sequence[float], limit: int = 10) -> list[tuple[str, float]]:
        if not await self._has_vectors():
            return []
        return await self._nearest(vector, limit)

    async def vector_search_stats(self, vector: Sequence[float], limit: int = 10) -> VectorSearch:
        moments: VectorMoments = await self.cache.fetch("moments", lambda: build_moments(reads.vector_rows(self.conn)))
        if moments.count == 0:
            return VectorSearch()
        mean, std = moments.stats(vector)
        return VectorSearch(await self._nearest(vector, limit), moments.count, mean, std)

    async def _nearest(self, vector: Sequence[float], limit: int) -> list[tuple[str, float]]:
        """The server's HNSW index answers; while it cannot (another process set the embedding
        model a moment ago and the index is not built yet: "Invalid arguments for procedure"),
        an exact scan of the stored vectors does, so a search never fails for it."""
        try:
            return await self._read(lambda: reads.vector_search(self.conn, vector, limit))
        except Exception as exc:
            if "Invalid arguments for procedure" not in str(exc):
                raise
        model = await self.embedding_model()
        if model is not None and model[1] > 0 and not self.read_only:  # a graph that lost its index gets it back
            await self._read(lambda: change_indexes(self.conn, [vector_index(model[1])]))
        matrix: VectorMatrix = await self.cache.fetch("vectors", lambda: build_matrix(reads.vector_rows(self.conn)))
        return matrix.search(vector, limit)

    async def _has_vectors(self) -> bool:
        moments: VectorMoments = await self.cache.fetch("moments", lambda: build_moments(reads.vector_rows(self.conn)))
        return moments.count > 0

    # -- agent writes ------------------------------------------------------------------------

    async def upsert_entities(self, entities: Sequence[ExtractedEntity], source: str) -> None:
        from evigraph.store.core.merge_plan import redirect_entities
        from evigraph.store.falkordb.merging import primary_reader

        read = primary_reader(self.conn)
        await self._write(lambda: documents.upsert_entities(self.conn, redirect_entities(read, entities), source))

    async def upsert_relations(self, relations: Sequence[tuple[ExtractedRelation, Sequence[str]]], source: str) -> None:
        from evigraph.store.core.merge_plan import redirect_relations
        from evigraph.store.falkordb.merging import primary_reader

        read = primary_reader(self.conn)
        await self._write(lambda: documents.upsert_relations(self.conn, redirect_relations(read, relations), source))

    # -- bookkeeping -------------------------------------------------------------------------

    async def get_setting(self, key: str) -> str | None:
        return await self._read(lambda: reads.get_meta(self.conn, key))

    async def set_setting(self, key: str, value: str | None) -> None:
        await self._write(
            lambda: self.conn.write_sync("MERGE (m:EvigraphMeta {key: $k}) SET m.value = $v", {"k": key, "v": value})
        )

    async def log_sources(self, records: Sequence[SourceRecord]) -> None:
        at = datetime.now(UTC).isoformat()
        rows = [
            {"key": r.key, "state": r.state.value, "hash": r.content_hash, "version": r.version, "error": r.error}
            for r in {r.key: r for r in records}.values()
        ]
        if rows:
            await self._write(
                lambda: self.conn.write_many(
                    """UNWIND $rows AS r MERGE (s:SourceLog {key: r.key})
                       SET s.state = r.state, s.content_hash = r.hash, s.version = r.version, s.error = r.error,
                           s.at = $at""",
                    rows,
                    at=at,
                )
            )

    async def holds_legacy_keys(self) -> bool:
        def found() -> bool:
            params = {"prefixes": LEGACY_PREFIXES}
            return any(self.conn.read_sync(legacy_key_query(label), params) for label in ("Document", "SourceLog"))

        return await self._read(found)

    async def source_log(self, keys: Sequence[str]) -> dict[str, SourceRecord]:
        if not keys:
            return {}
        rows = await self._read(
            lambda: self.conn.read_sync(
                f"UNWIND $keys AS k MATCH (s:SourceLog {{key: k}}) RETURN {SOURCE_FIELDS}", {"keys": list(keys)}
            )
        )
        return {r["key"]: _source(r) for r in rows}

    async def failed_sources(self, limit: int = 100) -> list[SourceRecord]:
        rows = await self._read(
            lambda: self.conn.read_sync(
                f"MATCH (s:SourceLog) WHERE s.state = $failed RETURN {SOURCE_FIELDS} ORDER BY s.at DESC, s.key "
                "LIMIT $limit",
                {"failed": SourceState.failed.value, "limit": limit},
            )
        )
        return [_source(r) for r in rows]

    async def count_failed_sources(self) -> int:
        rows = await self._read(
            lambda: self.conn.read_sync(
                "MATCH (s:SourceLog) WHERE s.state = $failed RETURN count(s) AS n", {"failed": SourceState.failed.value}
            )
        )
        return int(rows[0]["n"])

    async def cached_extractions(self, keys: Sequence[str], kind: str = EXTRACTION_KIND) -> dict[str, str]:
        stored = {_cache_key(kind, k): k for k in keys}
        if not stored:
            return {}
        rows = await self._read(
            lambda: self.conn.read_sync(
                "UNWIND $keys AS k MATCH (c:ExtractionCache {key: k}) RETURN c.key AS key, c.value AS value",
                {"keys": list(stored)},
            )
        )
        return {stored[r["key"]]: r["value"] for r in rows}

    async def cache_extractions(self, entries: dict[str, str], kind: str = EXTRACTION_KIND) -> None:
        rows = [{"key": _cache_key(kind, k), "value": v} for k, v in entries.items()]
        if rows:
            await asyncio.to_thread(
                self.conn.write_many,
                "UNWIND $rows AS r MERGE (c:ExtractionCache {key: r.key}) SET c.value = r.value",
                rows,
            )

    async def replace_themes(self, themes: Sequence[ThemeRecord]) -> None:
        run = datetime.now(UTC).isoformat()
        rows = [t.model_dump() for t in themes]
        await self._write(
            lambda: self.conn.write_sync(
                """OPTIONAL MATCH (t:Theme) WITH collect(t) AS old FOREACH (t IN old | DELETE t)
                   WITH 1 AS one UNWIND $rows AS r
                   CREATE (:Theme {id: r.id, members: r.members, names: r.names, labels: r.labels, size: r.size,
                                   run: $run})""",
                {"rows": rows, "run": run},
            )
        )

    async def themes(self) -> list[ThemeRecord]:
        def work() -> list[ThemeRecord]:
            rows = self.conn.read_sync(
                """MATCH (t:Theme) RETURN t.id AS id, t.members AS members, t.names AS names, t.labels AS labels,
                       t.size AS size ORDER BY t.size DESC, t.id"""
            )
            return [ThemeRecord(**{**r, "size": int(r["size"] or 0)}) for r in rows]

        found: list[ThemeRecord] = await self.cache.fetch("themes", work)
        return found

    def cypher_guide(self) -> str:
        return CYPHER_GUIDE

    # -- plumbing ----------------------------------------------------------------------------

    async def _read(self, fn: Callable[[], T]) -> T:
        return await asyncio.to_thread(fn)

    async def _write_unindexed(self, fn: Callable[[], T]) -> T:
        """A write nothing cached or saved derives from (declared property values): the
        generation stays, so no reader rebuilds an index for it."""
        if self.read_only:
            raise read_only_error()
        return await asyncio.to_thread(fn)

    async def _write(self, fn: Callable[[], T]) -> T:
        """A write through this process: the generation moves on afterwards, success or not (a
        failed write may have changed part of what caches hold)."""
        if self.read_only:
            raise read_only_error()
        # Bumped before as well: an index another process builds while the write runs is labelled
        # with the first bump's value and no longer matches once the second lands, and one built
        # before the write started is never labelled with the value after it. (A writer killed
        # mid-write never makes the second bump: an index built meanwhile stays current until the
        # next write, as the in-process caches of every reader always did.)
        await asyncio.to_thread(self.cache.bump)
        try:
            return await asyncio.to_thread(fn)
        finally:
            await asyncio.to_thread(self.cache.bump)


def _source(row: dict[str, Any]) -> SourceRecord:
    at = row["at"]
    return source_record(row, at.replace("+00:00", "Z") if isinstance(at, str) else None)


def _cache_key(kind: str, key: str) -> str:
    return key if kind == EXTRACTION_KIND else f"{kind}:{key}"


_CLAIM = (
    "OPTIONAL MATCH (n) WHERE NOT n:EvigraphMeta "
    "WITH count(n) AS foreign WHERE foreign = 0 "
    "MERGE (a:EvigraphMeta {key: 'app'}) ON CREATE SET a.value = 'evigraph' "
    "MERGE (v:EvigraphMeta {key: 'schema_version'}) ON CREATE SET v.value = $v "
    "RETURN a.value AS app, v.value AS version"
)
"""Marks an empty graph as a knowledge base, in one query so no other writer comes between the
check and the mark; returns no row when the graph holds someone else's nodes. `ON CREATE` keeps
the marks a concurrent claim already wrote."""


def _marks(conn: Connection) -> dict[str, Any]:
    """The graph's evigraph marks (`app`, `schema_version`), read on the primary: a replica may
    not have the marks of a graph created a moment ago."""
    rows = conn.read_primary_sync("MATCH (m:EvigraphMeta) RETURN m.key AS key, m.value AS value")
    return {r["key"]: r["value"] for r in rows}
