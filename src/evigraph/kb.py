"""`KnowledgeBase`: the one object users hold.

It wires strategies to a store and delegates; the algorithms live in `ingest/` and
`retrieval/`, the engine behind `store/`. The store opens lazily: a write creates the
knowledge base, a read of one that was never written fails with a hint and creates nothing.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from pydantic import BaseModel

from evigraph.errors import ConfigurationError, KnowledgeBaseMissingError
from evigraph.gate import Gate
from evigraph.ingest.chunking.base import ChunkingStrategy
from evigraph.ingest.communities import detect_themes
from evigraph.ingest.extraction.base import ExtractionStrategy
from evigraph.ingest.loaders.base import LoaderStrategy
from evigraph.ingest.loaders.common import DEFAULT_MAX_BYTES
from evigraph.ingest.pipeline import IngestRun, ProgressFn, Strategies, embed_all, text_document
from evigraph.ingest.resolution import ExactMatchResolution, ResolutionStrategy
from evigraph.ingest.sources import SourceFile
from evigraph.models import (
    ExtractedEntity,
    ExtractedRelation,
    IngestReport,
    IngestStatus,
    IntegrityReport,
    LoadedDocument,
    Ontology,
    SourceRecord,
    SourceState,
    StoreCounts,
    StoredDocument,
)
from evigraph.providers.embedders import Embedder
from evigraph.retrieval.result import RetrievalResult
from evigraph.store.base import GraphStore

DEFAULT_DB = "evigraph.db"


def resolve_db_path(db: str | os.PathLike[str] | None = None) -> Path:
    """`db` if given, else `$EVIGRAPH_DB`, else `./evigraph.db`."""
    chosen = os.fspath(db) if db is not None else os.environ.get("EVIGRAPH_DB") or DEFAULT_DB
    return Path(chosen).expanduser()


class Status(BaseModel):
    """What a knowledge base holds."""

    db: str
    engine: str
    documents: int
    chunks: int
    entities: int
    relations: int
    mentions: int
    labels: dict[str, int]
    relation_types: dict[str, int]
    embedding_model: str | None = None
    embedding_dimension: int = 0
    pending_embeddings: int = 0


class FinalizeReport(BaseModel):
    """What `finalize` did: passages embedded and themes found."""

    embedded: int = 0
    themes: int = 0


ONTOLOGY_SETTING = "ontology"


class KnowledgeBase:
    """A knowledge graph of documents, passages, entities and relations in one local database.

    Example::

        async with KnowledgeBase("notes.db") as kb:
            report = await kb.ingest(["docs/"])
            print(await kb.status())
    """

    def __init__(
        self,
        db: str | os.PathLike[str] | None = None,
        *,
        store: GraphStore | None = None,
        engine: str = "auto",
        read_only: bool = False,
        ontology: Ontology | None = None,
        chunker: ChunkingStrategy | str | None = None,
        extractor: ExtractionStrategy | str | None = None,
        resolver: ResolutionStrategy | None = None,
        loaders: Sequence[LoaderStrategy] = (),
        embedder: Embedder | None = None,
        max_file_bytes: int = DEFAULT_MAX_BYTES,
        batch_documents: int = 64,
    ) -> None:
        self.path = resolve_db_path(db)
        self.read_only = read_only
        self.engine = engine
        self._store = store
        self._opened = False
        self._ontology = ontology
        self._chunker = chunker
        self._extractor = extractor
        self._resolver = resolver or ExactMatchResolution()
        self._loaders = tuple(loaders)
        self.embedder = embedder
        if max_file_bytes <= 0:
            raise ConfigurationError("max_file_bytes must be positive", hint="e.g. max_file_bytes=50 * 2**20")
        self.max_file_bytes = max_file_bytes
        self.batch_documents = batch_documents
        self._gate = Gate()

    # -- lifecycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        if self._store is not None and self._opened:
            await self._store.close()
            self._opened = False

    async def _open(self, *, for_write: bool, create: bool = True) -> GraphStore:
        """The store, opened. Only a write that adds content (`create`) may bring a new file into
        being: a read, a check or a delete on a mistyped path must say so, not leave an empty one."""
        if self._store is None:
            from evigraph.store.embedded.store import EmbeddedStore

            if (not for_write or not create) and not self.path.exists():
                raise KnowledgeBaseMissingError(
                    f"no knowledge base at {self.path}",
                    hint=f"create it with `evigraph ingest PATH --db {self.path}` or pass the right --db",
                )
            self._store = EmbeddedStore(self.path, read_only=self.read_only, engine=self.engine)
        if for_write and self._store.read_only:
            raise ConfigurationError(
                f"{self.path} is open read-only", hint="open the KnowledgeBase with read_only=False to write"
            )
        if not self._opened:
            await self._store.open()
            self._opened = True
            if self._ontology is None:
                stored = await self._store.get_setting(ONTOLOGY_SETTING)
                if stored:
                    self._ontology = Ontology.model_validate_json(stored)
        return self._store

    async def open_store(self, *, for_write: bool = False) -> GraphStore:
        """The store, opened; a read of a knowledge base that was never written raises and creates nothing."""
        return await self._open(for_write=for_write)

    @property
    def loaders(self) -> tuple[LoaderStrategy, ...]:
        """User loaders, consulted before the built-in ones."""
        return self._loaders

    @property
    def store(self) -> GraphStore | None:
        return self._store

    # -- strategies --------------------------------------------------------------------------

    async def get_ontology(self) -> Ontology:
        """The ontology extraction uses: the one passed in, else the one stored, else the default."""
        if self._ontology is None and (self._store is not None or self.path.exists()):
            await self._open(for_write=False)
        return self.ontology

    async def set_ontology(self, ontology: Ontology) -> None:
        """Use and store `ontology`, so later sessions and processes extract with it too."""
        store = await self._open(for_write=True)
        async with self._gate.exclusive():
            await store.set_setting(ONTOLOGY_SETTING, ontology.model_dump_json())
            self._ontology = ontology

    @property
    def ontology(self) -> Ontology:
        if self._ontology is None:
            from evigraph.ingest.ontology import DEFAULT_ONTOLOGY

            self._ontology = DEFAULT_ONTOLOGY
        return self._ontology

    def _strategies(self) -> Strategies:
        from evigraph.ingest.chunking import StructuralChunking, chunker_by_name
        from evigraph.ingest.extraction import default_extractor, extractor_by_name
        from evigraph.ingest.loaders import SUPPORTED_EXTENSIONS, loader_for

        if isinstance(self._chunker, str):
            self._chunker = chunker_by_name(self._chunker)
        if isinstance(self._extractor, str):
            self._extractor = extractor_by_name(self._extractor)
        chunker = self._chunker = self._chunker or StructuralChunking()
        extractor = self._extractor = self._extractor or default_extractor()
        custom = self._loaders
        max_bytes = self.max_file_bytes
        extensions = {*SUPPORTED_EXTENSIONS, *(e for ld in custom for e in ld.extensions)}

        def pick(src: SourceFile) -> LoaderStrategy:
            return loader_for(src.path, custom, max_bytes=max_bytes)

        return Strategies(
            chunker=chunker,
            extractor=extractor,
            resolver=self._resolver,
            ontology=self.ontology,
            loader_for=pick,
            extensions=sorted(extensions),
            embedder=self.embedder,
        )

    # -- operations --------------------------------------------------------------------------

    async def ingest(
        self,
        sources: Sequence[str | os.PathLike[str]] | str | os.PathLike[str] = (),
        *,
        text: str | None = None,
        key: str | None = None,
        title: str | None = None,
        progress: bool | None = None,
    ) -> IngestReport:
        """Ingest files, folders and globs, or one `text` under `key`; unchanged documents are skipped.

        Each document's new version replaces its old one in one step. Bad sources come back as
        `failed` outcomes with the fix in `error`; nothing stored before is lost.
        """
        if isinstance(sources, str | os.PathLike):
            sources = [sources]
        texts = []
        if text is not None:
            texts.append(text_document(text, key or "", title))
        elif key is not None:
            raise ConfigurationError("key= is for text= input", hint="pass text= with key=, or paths alone")
        return await self.ingest_documents(texts, sources=[os.fspath(s) for s in sources], progress=progress)

    async def ingest_documents(
        self,
        documents: Sequence[LoadedDocument],
        *,
        sources: Sequence[str] = (),
        chunker: ChunkingStrategy | str | None = None,
        extractor: ExtractionStrategy | str | None = None,
        resolver: ResolutionStrategy | None = None,
        reextract: bool = False,
        max_chunks: int | None = None,
        exclusive: bool = True,
        progress: bool | None = None,
    ) -> IngestReport:
        """Ingest already-loaded documents (and `sources` paths) with optional per-call strategies.

        `reextract` processes unchanged documents again (after the ontology grew); `max_chunks`
        refuses a document that chunks into more passages before it is extracted. With
        `exclusive=False` the ingest may run beside other non-exclusive ones; only ingests that
        add new documents should ask for that.
        """
        store = await self._open(for_write=True)
        await self._claim_embedding_model(store)
        strategies = self._strategies()
        if chunker is not None:
            strategies.chunker = _chunker(chunker)
        if extractor is not None:
            strategies.extractor = _extractor(extractor)
        if resolver is not None:
            strategies.resolver = resolver
        run = IngestRun(store, strategies, batch_documents=self.batch_documents, force=reextract, max_chunks=max_chunks)
        gate = self._gate.exclusive() if exclusive or reextract else self._gate.shared()
        async with gate:
            bar = _progress_bar(progress)
            try:
                report = await run.run(list(sources), list(documents), start_progress=bar.start if bar else None)
            finally:
                if bar is not None:
                    bar.close()
            await self._log_outcomes(store, report)
        return report

    @staticmethod
    async def _log_outcomes(store: GraphStore, report: IngestReport) -> None:
        """Record each written or failed document for `source_status`; unchanged ones need nothing."""
        written = (IngestStatus.created, IngestStatus.updated)
        records = [
            SourceRecord(key=d.key, state=SourceState.current, content_hash=d.content_hash, version=d.version)
            for d in report.documents
            if d.status in written
        ]
        records += [SourceRecord(key=d.key, state=SourceState.failed, error=d.error) for d in report.failed if d.key]
        await store.log_sources(records)

    async def retrieve(
        self,
        question: str,
        *,
        paths: Sequence[str] | None = None,
        top_k: int = 10,
        expand_hops: int = 1,
    ) -> RetrievalResult:
        """Find the passages, entities, relations and facts that answer `question`, each numbered.

        `paths` picks search paths by name (default: all of passages, exact_names, fuzzy_names,
        links, facts); `expand_hops` (1-5) is how far `links` walks from the named entities.
        """
        from evigraph.retrieval.retriever import MultiPathRetriever

        store = await self._open(for_write=False)
        retriever = MultiPathRetriever(store, self.embedder)
        return await retriever.search(question, paths=paths, top_k=top_k, expand_hops=expand_hops)

    async def finalize(self) -> FinalizeReport:
        """Finish a batch of ingests: embed passages without a vector, then find themes.

        Themes are communities of entities (Louvain over the relations); they are recomputed
        whole, since one ingest can merge or split clusters anywhere in the graph.
        """
        store = await self._open(for_write=True)
        report = FinalizeReport()
        async with self._gate.exclusive():
            if self.embedder is not None:
                await self._claim_embedding_model(store)
                while batch := await store.pending_embeddings(limit=512):
                    vectors = await asyncio.to_thread(embed_all, self.embedder, [text for _, text in batch])
                    await store.write_embeddings([(cid, vec) for (cid, _), vec in zip(batch, vectors, strict=True)])
                    report.embedded += len(batch)
            themes = await detect_themes(store)
            await store.replace_themes(themes)
            report.themes = len(themes)
        return report

    async def reembed(self) -> int:
        """Drop every stored vector and embed all passages with this knowledge base's embedder."""
        if self.embedder is None:
            raise ConfigurationError("no embedder to re-embed with", hint="pass embedder= to KnowledgeBase")
        store = await self._open(for_write=True)
        await store.set_embedding_model(None)
        return (await self.finalize()).embedded

    async def _claim_embedding_model(self, store: GraphStore) -> None:
        """Record the embedder on first use; refuse one that differs from the stored vectors' model."""
        if self.embedder is None:
            return
        stored = await store.embedding_model()
        if stored is None:
            dimension = await asyncio.to_thread(lambda: self.embedder.dimension if self.embedder else 0)
            await store.set_embedding_model(self.embedder.name, dimension)
        elif stored[0] != self.embedder.name:
            raise ConfigurationError(
                f"{self.path} is embedded with {stored[0]!r}, not {self.embedder.name!r}",
                hint="use the same embedder, or re-embed every passage with `evigraph reembed --embedder ...` "
                "(KnowledgeBase.reembed())",
            )

    async def delete(self, key: str) -> bool:
        """Remove a document, its passages and the entities only it mentioned; False if absent."""
        store = await self._open(for_write=True, create=False)
        async with self._gate.exclusive():
            deleted = await store.delete_document(key)
            if deleted:
                await store.log_sources([SourceRecord(key=key, state=SourceState.deleted)])
            return deleted

    async def check(self, repair: bool = False) -> IntegrityReport:
        """Look for damage a crash or an engine fault left (ghost edges, orphans, missing indexes).

        With `repair` it fixes what it can and says what is left (`report.remaining`).
        """
        store = await self._open(for_write=repair, create=False)
        if not repair:
            return await store.check()
        async with self._gate.exclusive():
            return await store.check(repair=True)

    async def upsert_entities(self, entities: Sequence[ExtractedEntity], source: str = "agent") -> None:
        """Record entities (idempotent): new ones are created with `source` as provenance, known ones merged."""
        store = await self._open(for_write=True)
        async with self._gate.exclusive():
            await store.upsert_entities(entities, source)

    async def upsert_relations(
        self, relations: Sequence[tuple[ExtractedRelation, Sequence[str]]], source: str = "agent"
    ) -> None:
        """Record relations between existing entities, each with the chunk ids that support it."""
        store = await self._open(for_write=True)
        async with self._gate.exclusive():
            await store.upsert_relations(relations, source)

    async def source_status(self, key: str) -> SourceRecord:
        """Whether a document is current, failed at its last ingest, deleted, or unknown here."""
        store = await self._open(for_write=False)
        doc = (await store.get_documents([key])).get(key)
        logged = (await store.source_log([key])).get(key)
        if doc is not None:
            record = SourceRecord(
                key=key, state=SourceState.current, content_hash=doc.content_hash, version=doc.version
            )
            if logged is not None:
                record.at = logged.at
                if logged.state == SourceState.failed:
                    record.error = f"the last ingest failed, the stored version is older: {logged.error}"
            return record
        return logged or SourceRecord(key=key, state=SourceState.unknown)

    async def status(self) -> Status:
        store = await self._open(for_write=False)
        counts: StoreCounts = await store.counts()
        model = await store.embedding_model()
        return Status(
            db=str(self.path),
            engine=self.engine,
            **counts.model_dump(),
            embedding_model=model[0] if model else None,
            embedding_dimension=model[1] if model else 0,
            pending_embeddings=await store.count_pending_embeddings() if model else 0,
        )

    async def documents(self, limit: int = 100, offset: int = 0) -> list[StoredDocument]:
        store = await self._open(for_write=False)
        return await store.list_documents(limit, offset)


def _chunker(value: ChunkingStrategy | str) -> ChunkingStrategy:
    from evigraph.ingest.chunking import chunker_by_name

    return chunker_by_name(value) if isinstance(value, str) else value


def _extractor(value: ExtractionStrategy | str) -> ExtractionStrategy:
    from evigraph.ingest.extraction import extractor_by_name

    return extractor_by_name(value) if isinstance(value, str) else value


def _progress_bar(enabled: bool | None) -> _ProgressBar | None:
    """A tqdm bar on stderr, on by default only when stderr is a terminal."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    return _ProgressBar() if enabled else None


class _ProgressBar:
    """Documents done out of documents found; a record file raises the total as it is read."""

    def __init__(self) -> None:
        self._bar: Any = None

    def start(self, total: int) -> ProgressFn:
        from tqdm import tqdm

        bar = self._bar = tqdm(total=total, unit="doc", desc="ingest", file=sys.stderr, dynamic_ncols=True, leave=False)

        def advance(n: int) -> None:
            bar.update(n)
            if bar.total is not None and bar.n > bar.total:
                bar.total = bar.n
                bar.refresh()

        return advance

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
