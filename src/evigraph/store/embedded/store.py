"""`EmbeddedStore`: the GraphStore on a local Kuzu or LadybugDB file, no server needed."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evigraph import models
from evigraph.errors import NotAKnowledgeBaseError, StoreError
from evigraph.integrity_records import IntegrityReport
from evigraph.property_types import SOURCES_COLUMN
from evigraph.store.base import EXTRACTION_KIND, GraphStore, opened
from evigraph.store.caches import (
    Cached,
)
from evigraph.store.caches import (
    vector_codec as resolve_vector_codec,
)
from evigraph.store.compaction import CompactProgress, CompactReport
from evigraph.store.core.merge_plan import (
    read_entity_records,
    read_redirects,
    redirect_entities,
    redirect_relations,
    redirect_versions,
)
from evigraph.store.core.ranking_reads import read_entity_vectors, read_ranking_rows
from evigraph.store.core.rekey import checked_renames
from evigraph.store.cypher.rows import Slots
from evigraph.store.embedded import (
    compaction,
    cypher_run,
    generation,
    graph_rewrite,
    integrity,
    merging,
    ranking_io,
    reader_lock,
    reads,
    records,
    rekey,
    writes,
)
from evigraph.store.embedded.code import EmbeddedCodeOps, code_counts
from evigraph.store.embedded.creation import (
    UnfinishedSchema,
    create_database_file,
    discard,
    finish_interrupted_checkpoint,
)
from evigraph.store.embedded.cypher_ops import CypherOps
from evigraph.store.embedded.cypher_worker import CypherWorkers
from evigraph.store.embedded.decisions import DecisionOps, flag_documents
from evigraph.store.embedded.engine import (
    default_buffer_pool_mb,
    engine_name,
    import_engine,
    load_extensions,
    open_database,
)
from evigraph.store.embedded.executor import Executor, Tx
from evigraph.store.embedded.generation import bumping
from evigraph.store.embedded.index_ops import IndexOps
from evigraph.store.embedded.packed import unpack_ints
from evigraph.store.embedded.properties import EmbeddedPropertyOps
from evigraph.store.embedded.schema import (
    CONTEXT_COLUMN,
    DDL,
    FACT_COLUMN,
    FOUND_COLUMN,
    META_TABLE,
    NODE_TABLES,
    SCHEMA_VERSION,
    STEP_SUPPORTS,
    TABLES,
    TRACE_STEP,
)
from evigraph.store.embedded.upgrades import drop_retired_indexes, missing_columns, upgrade_columns
from evigraph.store.graph_rewrite import DocumentGraph, FoundPage
from evigraph.store.index_files import SUFFIX, IndexFiles, prefetch_numpy
from evigraph.store.merging import EntityMerge, EntityRecord, MergeOutcome
from evigraph.store.ranking import ChangeJournal, EntityVector, RankingRow, RankingText, StoreChanges
from evigraph.store.saved_indexes import SavedIndexes


class EmbeddedStore(EmbeddedCodeOps, EmbeddedPropertyOps, CypherOps, DecisionOps, IndexOps, GraphStore):
    """A knowledge base in one database file.

    `engine` is "auto" (an existing file's own engine; LadybugDB for a new one), "ladybug" or "kuzu"
    (`engine.import_engine`). The file is created on the first write; opening it read-only never
    creates anything, so a read on a path that was never written fails with a hint instead of
    leaving an empty database behind.
    """

    write_group_passages = 2_048
    """Each checkpoint rewrites every relationship node group a transaction touched, so an ingest
    writes fewer, larger transactions as the file grows (`evigraph.ingest.writing.WriteGroup`). The
    cap bounds what one transaction holds in memory until it commits, which is where an ingest's
    peak is; since the log may grow to several transactions' before a checkpoint
    (`engine.checkpoint_threshold_mb`), a smaller one no longer means more checkpoints. LadybugDB,
    100,000 generated passages, 128 MB log, one session: groups of 2,048 ingested in 426 s and
    peaked at 1,817 MB, groups of 4,096 in 391 s at 2,078 MB (each checkpointing every 4th and
    every 2nd commit); at the engine's 16 MB log and 4,096, 566 s at 1,926 MB."""

    writes_on_this_machine = True
    """The engine's writes use this machine's cores: a worker process started for every ingest of
    many small batches took them from the writer (10k one-passage records, interleaved runs:
    42.7 s against 36.9 s), so extraction leaves the process only for large batches."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        read_only: bool = False,
        engine: str = "auto",
        buffer_pool_mb: int | None = None,
        read_connections: int = 4,
        vector_codec: str | None = None,
    ) -> None:
        self.path = Path(path).expanduser()
        self.vector_codec = resolve_vector_codec(vector_codec)
        self.read_only = read_only
        self.engine = engine
        self.buffer_pool_mb = (
            buffer_pool_mb if buffer_pool_mb is not None else default_buffer_pool_mb(self.path, read_only=read_only)
        )
        self.read_connections = read_connections
        self._refusal: StoreError | None = None  # why writes wait (`upgrades`), found at open
        self._exec: Executor | None = None
        self._cache = Cached()
        self._saved = SavedIndexes(None)  # the folder beside the file, once open
        self._opened_at: str | None = None  # the write generation at open
        self._journal = ChangeJournal()
        self._ranking_columns = True  # False on a read-only open of a file from before graph ranking
        self._context_column = True  # False on a read-only open of a file from before contextual chunks
        self._step_supports = True  # False on a read-only open of a file from before steps' supports
        self._fact_column = True  # False on a read-only open of a file from before fact vectors
        self._cypher_slots = Slots()
        self._cypher_workers: CypherWorkers | None = None
        self._cypher_budget: cypher_run.MemoryBudget | None = None
        self._reader_lock: int | None = None  # a read-only open's shared lock on the file (`reader_lock`)

    @property
    def executor(self) -> Executor:
        return opened(self._exec)

    async def open(self) -> None:
        if self._exec is not None:
            return

        prefetch_numpy()
        self._exec = await asyncio.to_thread(self._open_sync)
        self._saved = SavedIndexes(IndexFiles(self.path.with_name(self.path.name + SUFFIX)))
        self._opened_at = await self._exec.read(generation.current)

    def _open_sync(self) -> Executor:
        module = import_engine(self.engine, self.path)
        name = engine_name(module)
        if not self.read_only and not os.path.lexists(self.path):
            self._create_file(module, name)
        if self.read_only:
            finish_interrupted_checkpoint(module, self.path)
            ex = self._connect(module, name)
            try:  # after the open, whose errors say what is wrong with the file
                self._reader_lock = reader_lock.hold_shared(self.path)
            except BaseException:
                ex.close()
                raise
            return ex
        try:
            return self._connect(module, name)
        except UnfinishedSchema:
            # Left by a process killed while creating it, before crash-safe creation: it holds
            # no rows, and its half-built full-text index cannot be finished in place.
            discard(self.path)
            self._create_file(module, name)
            return self._connect(module, name)

    def _create_file(self, module: Any, engine_name: str) -> None:
        create_database_file(
            module,
            self.path,
            buffer_pool_mb=min(self.buffer_pool_mb, 128),
            prepare=lambda conn: load_extensions(conn, engine_name),
            build=self._create_schema,
        )

    def _connect(self, module: Any, engine_name: str) -> Executor:
        db = open_database(module, self.path, read_only=self.read_only, buffer_pool_mb=self.buffer_pool_mb)
        ex = Executor(db, module, read_only=self.read_only, pool_size=self.read_connections)
        try:
            ex.on_connect(lambda conn: load_extensions(conn, engine_name))
            self._refusal = None
            ex.raw(self._check_or_create_schema)
            ex.refusal = self._refusal
        except BaseException:
            ex.close()
            raise
        return ex

    def _check_or_create_schema(self, tx: Tx) -> None:
        tables = {r["name"] for r in tx.rows("CALL SHOW_TABLES() RETURN name")}
        if META_TABLE in tables:
            rows = tx.rows(f"MATCH (m:{META_TABLE} {{key: 'schema_version'}}) RETURN m.value AS v")
            if rows:
                if rows[0]["v"] != SCHEMA_VERSION:
                    raise StoreError(
                        f"{self.path} has evigraph schema version {rows[0]['v']}, this evigraph reads {SCHEMA_VERSION}",
                        hint="upgrade evigraph, or re-ingest into a new --db path",
                    )
                if not self.read_only and not tables >= TABLES:
                    self._create_schema(tx)  # additive: tables a later release introduced
                if not self.read_only:
                    self._refusal = upgrade_columns(tx, self.path)
                    if self._refusal is None:  # else `compact` leaves them behind as it copies
                        drop_retired_indexes(tx)
                else:
                    missing = {(table, column) for table, column, _ in missing_columns(tx)}
                    later = {
                        ("Chunk", CONTEXT_COLUMN),
                        ("Chunk", FOUND_COLUMN),
                        (TRACE_STEP, STEP_SUPPORTS),
                        FACT_COLUMN[:2],
                        ("Entity", SOURCES_COLUMN),
                        ("RELATES", SOURCES_COLUMN),
                    }
                    self._ranking_columns = not missing - later
                    self._fact_column = FACT_COLUMN[:2] not in missing
                    self._context_column = ("Chunk", CONTEXT_COLUMN) not in missing
                    self._step_supports = (TRACE_STEP, STEP_SUPPORTS) not in missing
                return
        if not tables <= TABLES:
            raise NotAKnowledgeBaseError(
                f"{self.path} is a graph database, but not an evigraph knowledge base",
                hint="pass another --db path; evigraph does not modify foreign databases",
            )
        if self.read_only:
            raise NotAKnowledgeBaseError(
                f"{self.path} holds no evigraph knowledge base yet",
                hint=f"ingest something first: `evigraph ingest PATH --db {self.path}`",
            )
        if all(not tx.column(f"MATCH (n:{t}) RETURN count(n) > 0")[0] for t in tables & NODE_TABLES):
            raise UnfinishedSchema(str(self.path))
        self._create_schema(tx)

    @staticmethod
    def _create_schema(tx: Tx) -> None:
        """Create tables, then the version mark.

        A new file is built aside (`creation`), so a crash here only ever interrupts adding the
        tables a later release introduced to an existing knowledge base; the next open resumes.
        """
        tx.execute("BEGIN TRANSACTION").close()
        for statement in DDL:
            tx.execute(statement).close()
        tx.execute("COMMIT").close()
        tx.execute(
            f"MERGE (m:{META_TABLE} {{key: 'app'}}) SET m.value = 'evigraph' "
            f"MERGE (v:{META_TABLE} {{key: 'schema_version'}}) SET v.value = $v",
            {"v": SCHEMA_VERSION},
        ).close()

    async def close(self) -> None:
        try:
            await self.save_indexes()
        finally:
            self._release()

    def _release(self) -> None:
        self._close_workers()
        if self._exec is not None:
            ex, self._exec = self._exec, None
            ex.close()
        lock, self._reader_lock = self._reader_lock, None
        reader_lock.release(lock)

    async def compact(self, progress: CompactProgress | None = None) -> CompactReport:
        """Rebuild the file beside itself and swap it in (`compaction`): holding the file for writing
        proves no other process has it open."""
        if self.read_only:
            raise StoreError(f"cannot compact {self.path}: it is open read-only", hint="open it writable to compact it")
        module = import_engine(self.engine, self.path)
        source = compaction.Compacted(
            self.executor,
            self.path,
            module,
            prepare=lambda conn: load_extensions(conn, engine_name(module)),
            release=self._release,
            reacquire=lambda: setattr(self, "_exec", self._open_sync()),
            buffer_pool_mb=self.buffer_pool_mb,
        )
        try:
            return await compaction.run(source, progress)
        finally:
            self._cache.invalidate()
            self._journal.reset()

    # -- documents ---------------------------------------------------------------------------

    async def get_documents(self, keys: Sequence[str]) -> dict[str, models.StoredDocument]:
        if not keys:
            return {}
        return await self.executor.read(lambda tx: reads.get_documents(tx, keys))

    async def list_documents(self, limit: int = 100, offset: int = 0) -> list[models.StoredDocument]:
        return await self.executor.read(lambda tx: reads.list_documents(tx, limit, offset))

    async def write_versions(self, versions: Sequence[models.DocumentVersion]) -> list[models.StoredDocument]:
        if not versions:
            return []

        def work(tx: Tx) -> list[models.StoredDocument]:
            numbers = writes.write_versions(tx, redirect_versions(tx.rows, versions))
            flag_documents(tx, numbers)
            return [v.stored(numbers[v.key]) for v in versions]

        try:
            return await self.executor.write(bumping(work))
        finally:
            self._cache.invalidate()
            self._journal.documents([v.key for v in versions])

    async def delete_document(self, key: str) -> bool:
        try:

            def work(tx: Tx) -> bool:
                deleted = writes.delete_document(tx, key)
                flag_documents(tx, {key: None} if deleted else {})
                return deleted

            return await self.executor.write(bumping(work))
        finally:
            self._cache.invalidate()
            self._journal.documents([key])

    async def found_documents(self, after: str | None, limit: int) -> FoundPage:
        return await self.executor.read(lambda tx: graph_rewrite.found_documents(tx, after, limit))

    async def replace_graphs(self, graphs: Sequence[DocumentGraph]) -> list[str]:
        if not graphs:
            return []
        changed: list[str] = []

        def work(tx: Tx) -> list[str]:
            done = graph_rewrite.replace_graphs(tx, graphs)
            if done:  # a finalize that changes nothing leaves the saved indexes current
                generation.bump(tx)
            return done

        try:
            changed = await self.executor.write(work)
            return changed
        finally:
            self._cache.invalidate()
            if changed:
                self._journal.reset()  # mentions moved: graph ranking reloads, as after a merge

    async def rename_documents(self, renames: Mapping[str, str]) -> list[str]:
        pairs = checked_renames(renames)
        if not pairs:
            return []
        try:
            return await self.executor.write(bumping(lambda tx: rekey.rename_documents(tx, pairs)))
        finally:
            self._cache.invalidate()
            self._journal.documents([*pairs, *pairs.values()])

    async def holds_legacy_keys(self) -> bool:
        return await self.executor.read(rekey.holds_legacy_keys)

    async def check(self, repair: bool = False) -> IntegrityReport:
        found = await self.executor.read(integrity.inspect)
        report = IntegrityReport(found=integrity.problems(found))
        if not repair or not report.found:
            report.remaining = report.found
            return report
        if self.read_only:
            raise StoreError("cannot repair a knowledge base opened read-only", hint="open it writable to repair")
        try:
            if found.needs_schema:  # first: the graph checks need every table
                await asyncio.to_thread(self.executor.raw, self._create_schema)
            report.repaired = await self.executor.write(bumping(integrity.repair))
            if found.needs_schema:
                report.repaired["schema"] = 1
        finally:
            self._cache.invalidate()
            self._journal.reset()
        report.remaining = integrity.problems(await self.executor.read(integrity.inspect))
        return report

    # -- reads -------------------------------------------------------------------------------

    async def counts(self) -> models.StoreCounts:
        # Full scans; cached until the next write, as agents ask for status and the ontology often.
        found: models.StoreCounts = await self._cache.fetch("counts", lambda: self.executor.read_sync(_counts))
        return found.model_copy(deep=True)

    # -- retrieval ---------------------------------------------------------------------------

    async def passages_by_ids(self, ids: Sequence[str]) -> list[models.PassageHit]:
        if not ids:
            return []
        docs = await self._titles()
        return await self.executor.read(lambda tx: reads.passages_by_ids(tx, ids, docs, self._context_column))

    async def entities_by_ids(self, ids: Sequence[str]) -> list[models.EntityHit]:
        if not ids:
            return []
        return await self.executor.read(lambda tx: reads.entities_by_ids(tx, ids))

    # -- embeddings --------------------------------------------------------------------------

    async def embedding_model(self) -> tuple[str, int] | None:
        def work(tx: Tx) -> tuple[str, int] | None:
            name = reads.get_meta(tx, "embedding_model")
            dim = reads.get_meta(tx, "embedding_dimension")
            return (name, int(dim or 0)) if name else None

        # Read on every retrieve; the cache is dropped by any write, including set_embedding_model.
        model: tuple[str, int] | None = await self._cache.fetch(
            "embedding_model", lambda: self.executor.read_sync(work)
        )
        return model

    async def set_embedding_model(self, name: str | None, dimension: int = 0) -> None:
        def work(tx: Tx) -> None:
            if name is None:
                tx.execute("MATCH (c:Chunk) WHERE c.embedding IS NOT NULL SET c.embedding = NULL").close()
                if self._ranking_columns:
                    ranking_io.clear_ranking_vectors(tx, self._fact_column)
            for key, value in (("embedding_model", name), ("embedding_dimension", str(dimension) if name else None)):
                tx.execute(f"MERGE (m:{META_TABLE} {{key: $k}}) SET m.value = $v", {"k": key, "v": value}).close()

        try:
            await self.executor.write(bumping(work))
        finally:
            self._cache.invalidate()
            self._journal.reset()

    async def pending_embeddings(self, limit: int = 256) -> list[tuple[str, str]]:
        return await self.executor.read(lambda tx: reads.pending_embeddings(tx, limit, self._context_column))

    async def count_pending_embeddings(self) -> int:
        return await self.executor.read(reads.count_pending_embeddings)

    async def write_embeddings(self, rows: Sequence[tuple[str, Sequence[float]]]) -> None:
        payload = [{"id": cid, "v": [float(x) for x in vec]} for cid, vec in rows]
        try:
            await self.executor.write(
                bumping(
                    lambda tx: tx.run_batched(
                        "UNWIND $rows AS r WITH r.id AS cid, r.v AS v "
                        "MATCH (c:Chunk {id: cid}) SET c.embedding = CAST(v AS FLOAT[])",
                        payload,
                    )
                )
            )
        finally:
            self._cache.invalidate()

    # -- graph ranking's inputs -------------------------------------------------------------

    async def pending_ranking_texts(self, limit: int = 256, *, facts: bool = True) -> list[RankingText]:
        if not self._ranking_columns:
            return []
        with_facts = facts and self._fact_column
        return await self.executor.read(
            lambda tx: ranking_io.pending_ranking_texts(tx, limit, self._context_column, with_facts)
        )

    async def write_ranking_vectors(self, rows: Sequence[tuple[RankingText, Sequence[Sequence[float]]]]) -> None:
        if not rows:
            return
        kinds = {t.kind for t, _ in rows}
        try:
            documents, before, after = await self.executor.write(
                generation.moving(lambda tx: ranking_io.write_ranking_vectors(tx, rows))
            )
        finally:
            if "fact" in kinds:
                self._cache.drop("fact_vectors")
        await asyncio.to_thread(self._saved.relabel, before, after, kinds)
        self._journal.documents(documents)
        self._journal.entities(t.id for t, _ in rows if t.kind == "entity")

    async def ranking_rows(self, documents: Sequence[str] | None = None) -> list[RankingRow]:
        if not self._ranking_columns or (documents is not None and not documents):
            return []
        return await self.executor.read(
            lambda tx: read_ranking_rows(tx.rows, documents, live="", spans=unpack_ints, vector=tuple)
        )

    async def entity_vectors(self, ids: Sequence[str] | None = None) -> list[EntityVector]:
        if not self._ranking_columns or (ids is not None and not ids):
            return []
        return await self.executor.read(lambda tx: read_entity_vectors(tx.rows, ids, tuple))

    async def ranking_changes(self, since: str | None) -> StoreChanges:
        return self._journal.since(since)

    # -- graph navigation and agent writes ---------------------------------------------------

    async def document_passages(self, key: str, limit: int = 5000) -> list[models.PassageHit]:
        return await self.executor.read(lambda tx: reads.document_passages(tx, key, limit, self._context_column))

    async def upsert_entities(self, entities: Sequence[models.ExtractedEntity], source: str) -> None:
        await self._write(lambda tx: writes.upsert_entities(tx, redirect_entities(tx.rows, entities), source))

    async def upsert_relations(
        self, relations: Sequence[tuple[models.ExtractedRelation, Sequence[str]]], source: str
    ) -> None:
        await self._write(lambda tx: writes.upsert_relations(tx, redirect_relations(tx.rows, relations), source))

    # -- resolution at finalize (store/merging.py) ---------------------------------------------

    async def entity_records(self) -> list[EntityRecord]:
        return await self.executor.read(lambda tx: read_entity_records(tx.rows))

    async def merge_entities(self, merges: Sequence[EntityMerge]) -> MergeOutcome:
        if not merges:
            return MergeOutcome()
        try:
            return await self.executor.write(bumping(lambda tx: merging.merge_entities(tx, merges)))
        finally:
            self._cache.invalidate()
            self._journal.reset()  # mentions moved in documents anywhere: graph ranking reloads

    async def entity_redirects(self) -> dict[str, str]:
        def work(tx: Tx) -> dict[str, str]:
            if self.read_only and not merging.has_redirects_table(tx):
                return {}
            return {old: new for old, (new, _) in read_redirects(tx.rows).items()}

        return await self.executor.read(work)

    # -- bookkeeping -------------------------------------------------------------------------

    async def get_setting(self, key: str) -> str | None:
        return await self.executor.read(lambda tx: reads.get_meta(tx, key))

    async def set_setting(self, key: str, value: str | None) -> None:
        await self._write(lambda tx: records.set_meta(tx, key, value))

    async def log_sources(self, records_: Sequence[models.SourceRecord]) -> None:
        if records_:
            await self.executor.write(lambda tx: records.log_sources(tx, records_))

    async def source_log(self, keys: Sequence[str]) -> dict[str, models.SourceRecord]:
        if not keys:
            return {}
        return await self.executor.read(lambda tx: records.source_log(tx, keys))

    async def failed_sources(self, limit: int = 100) -> list[models.SourceRecord]:
        return await self.executor.read(lambda tx: records.failed_sources(tx, limit))

    async def count_failed_sources(self) -> int:
        return await self.executor.read(records.count_failed_sources)

    async def cached_extractions(self, keys: Sequence[str], kind: str = EXTRACTION_KIND) -> dict[str, str]:
        if not keys:
            return {}
        return await self.executor.read(lambda tx: records.cached_extractions(tx, keys, kind))

    async def cache_extractions(self, entries: dict[str, str], kind: str = EXTRACTION_KIND) -> None:
        if entries:  # no read cache holds these: no invalidation
            await self.executor.write(lambda tx: records.cache_extractions(tx, entries, kind))

    async def replace_themes(self, themes: Sequence[models.ThemeRecord]) -> None:
        run = datetime.now(UTC).isoformat()
        await self._write(lambda tx: records.replace_themes(tx, themes, run))

    async def themes(self) -> list[models.ThemeRecord]:
        found: list[models.ThemeRecord] = await self._cache.fetch(
            "themes", lambda: self.executor.read_sync(records.themes)
        )
        return found

    async def schema_tables(self) -> list[models.TableInfo]:
        found: list[models.TableInfo] = await self._cache.fetch(
            "schema", lambda: self.executor.read_sync(records.schema_tables)
        )
        return [t.model_copy(deep=True) for t in found]

    async def _write(self, fn: Callable[[Tx], object]) -> None:
        """A write that changes what the read caches hold."""
        try:
            await self.executor.write(bumping(fn))
        finally:
            self._cache.invalidate()


def _counts(tx: Tx) -> models.StoreCounts:
    found = reads.counts(tx)
    found.code = code_counts(tx)
    return found
