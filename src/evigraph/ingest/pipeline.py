"""The ingest pipeline: sources -> documents -> chunks -> graph -> store, in batches.

Documents are processed in batches so the extractor sees many chunks per model call and the
store writes many rows per statement. Processed batches are written in groups that grow with the
knowledge base, up to the store's `write_group_passages` (one batch a write where it has none);
while a group is written (two at once on a store that takes them, `GraphStore.writes_at_once`),
the next is chunked and extracted. Extraction runs a batch ahead of embedding (`_start`), so a
batch reaches the one embedding thread with its graph known: each passage is read by the model
once, its bridge sentences and its entities' names pooled from that pass
(`passage_vectors`), and the next batch waits queued behind it, so the thread is never idle
between batches. Names no mention gives are embedded before the write (`name_vectors`). A failure is
pinned to the one document that caused it: the rest of its group is retried in halves, so one
bad file never costs the rest.

Documents are streamed: loaders are read a few batches ahead (`LoaderStrategy.stream`,
`batching.Batches`), so a 100,000-record JSONL file holds ~16 batches of documents in memory, not
all of them, and a bad record is reported on its own line while the rest of the file is ingested.

Progress is told per stage (`evigraph.ingest.progress`), and outcomes as soon as they are final.
A stop asked through `cancellation` is honoured between stages and embedding slices: the batch
being prepared is dropped, batches already processed are written, a write already running ends
as one transaction, and `run` returns what was written (`evigraph.ingest.cancel` says why a flag
and not `KeyboardInterrupt`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from evigraph.display import one_line
from evigraph.errors import ConfigurationError, EvigraphError, StoreUnavailableError
from evigraph.ingest.batch_stages import Embedding, Extracted, Pending, Started
from evigraph.ingest.batching import Batches, StoredVersions
from evigraph.ingest.bridges import bridge_sentences
from evigraph.ingest.cancel import Cancellation, IngestCancelled
from evigraph.ingest.chunking.base import ChunkingStrategy
from evigraph.ingest.document_graph import settled_graph
from evigraph.ingest.embedding import on_embedding_thread
from evigraph.ingest.extraction import offload
from evigraph.ingest.extraction.base import ExtractionStrategy
from evigraph.ingest.extraction.budget import CeilingReached, PartlyExtracted
from evigraph.ingest.gc_threshold import fewer_collections
from evigraph.ingest.loaders.base import LoaderStrategy, RejectedRecord
from evigraph.ingest.name_vectors import NameVectors
from evigraph.ingest.passage_vectors import DocumentText, DocumentVectors, embed_documents
from evigraph.ingest.progress import CHUNKED, EMBEDDED, EXTRACTED, IngestProgress, Shares
from evigraph.ingest.resolution import ResolutionStrategy
from evigraph.ingest.sources import SourceFile, expand_sources
from evigraph.ingest.text_documents import unstorable
from evigraph.ingest.writing import InFlight, WriteGroup
from evigraph.memory import give_back_memory
from evigraph.models import (
    DocumentOutcome,
    DocumentVersion,
    GraphData,
    IngestReport,
    IngestStatus,
    LoadedDocument,
    Ontology,
    Span,
    TextChunk,
)
from evigraph.providers.embedders import Embedder
from evigraph.store.base import GraphStore
from evigraph.surrogates import escaped

log = logging.getLogger(__name__)


@dataclass
class Strategies:
    """The strategies one ingest runs with; any of them may be a user-written class."""

    chunker: ChunkingStrategy
    extractor: ExtractionStrategy
    resolver: ResolutionStrategy
    ontology: Ontology
    loader_for: Callable[[SourceFile], LoaderStrategy]
    extensions: Sequence[str]
    embedder: Embedder | None = None


@dataclass
class IngestRun:
    store: GraphStore
    strategies: Strategies
    batch_documents: int = 64
    batch_chunks: int = 2048
    max_chunks: int | None = None
    """Refuse a document that chunks into more passages than this, before extracting it."""
    force: bool = False
    """Process documents even when unchanged (re-extraction after the ontology grew)."""
    report: IngestReport = field(default_factory=IngestReport)
    in_flight: InFlight = field(default_factory=InFlight)
    """Where the keys of the batch being worked on are held until its write ends."""
    progress: IngestProgress = field(default_factory=IngestProgress)
    cancellation: Cancellation = field(default_factory=Cancellation)
    """Set it to stop: `run` then returns what was written; `cancellation.cancelled` tells why it returned."""
    _seen: set[str] = field(default_factory=set, init=False, repr=False)  # keys admitted so far
    _stored: StoredVersions = field(init=False, repr=False)
    _shares: Shares = field(init=False, repr=False)
    _told: int = field(default=0, init=False, repr=False)  # outcomes already passed to `progress.finished`
    _at_ceiling: bool = field(default=False, init=False, repr=False)  # the LLM token ceiling stopped extraction
    _names: NameVectors | None = field(default=None, init=False, repr=False)  # with an embedder
    _extracting: asyncio.Task[Extracted] | None = field(default=None, init=False, repr=False)
    _extracting_before: asyncio.Task[Extracted] | None = field(default=None, init=False, repr=False)
    _overlap: bool = field(default=False, init=False, repr=False)  # a batch out before the last is back
    _embedding: deque[Embedding | None] = field(default_factory=deque, init=False, repr=False)
    _to_come: Callable[[], int | None] = field(default=lambda: None, init=False, repr=False)

    def __post_init__(self) -> None:
        # A store (perhaps user-written) that takes no write at all would leave nothing to wait on.
        if self.store.writes_at_once < 1:
            raise ValueError(
                f"{type(self.store).__name__}.writes_at_once is {self.store.writes_at_once}; "
                "a store takes at least one write at a time (set it to 1)"
            )
        self._shares = Shares(self.progress)
        self._stored = StoredVersions(self.store)
        if self.strategies.embedder is not None:
            self._names = NameVectors(self.store, self.strategies.embedder)

    async def run(self, sources: Sequence[str], texts: Sequence[LoadedDocument] = ()) -> IngestReport:
        # A server's writes, or no embedding model, leave a core to the worker (`offload.early`).
        early = not self.store.writes_on_this_machine or self.strategies.embedder is None
        self._overlap = early and self.strategies.extractor.queues_batches
        token = offload.early.set(early)
        try:
            with fewer_collections():
                return await self._run(sources, texts)
        finally:
            offload.early.reset(token)

    async def _run(self, sources: Sequence[str], texts: Sequence[LoadedDocument]) -> IngestReport:
        files, failures = await asyncio.to_thread(expand_sources, sources, self.strategies.extensions)
        # A record file holds an unknown number of documents: the total is a first estimate.
        self.progress.start(len(failures) + len(files) + len(texts))
        for f in failures:
            self._fail(f.source, f.error)
        stream = Batches(
            self._documents(files, texts),
            self.batch_documents,
            self.batch_chunks,
            lambda: self.cancellation.cancelled,
        )
        writing: deque[asyncio.Task[None]] = deque()  # oldest first
        held: list[list[str]] = []  # keys of the batches not yet written, oldest first
        held_before = await self.store.counts()
        self._stored.empty = held_before.documents == 0
        # A write group grows with the knowledge base where the store's write cost follows its size.
        group: WriteGroup[Pending] = WriteGroup(stored=held_before.chunks if self.store.write_group_passages else 0)
        ahead: deque[Started | None] = deque()  # batches chunked and extracting, not yet embedding

        def to_come() -> int | None:
            """Passages left after the write group, once the stream has ended (else None)."""
            if not stream.exhausted:
                return None
            started = sum(len(c) for s in ahead if s is not None for _, c in s.chunked)
            queued = sum(len(c) for e in self._embedding if e is not None for _, c, _, _ in e.ready)
            return stream.waiting_passages + started + queued

        self._to_come = to_come
        try:
            try:
                while (
                    not self.cancellation.cancelled
                    and not self._at_ceiling
                    and (loaded := await asyncio.to_thread(stream.next))
                ):
                    self._tell()
                    held.append([d.key for d in loaded])
                    self.in_flight.hold(held[-1])
                    pending = await self._skip_unchanged(self._admit(loaded), stream)
                    self._tell()
                    ahead.append(await self._start(pending) if pending else None)
                    while len(ahead) > 1:
                        await self._add(group, ahead.popleft(), writing, held)
                while ahead:  # past the LLM token ceiling, `_extract` leaves a batch's documents
                    await self._add(group, ahead.popleft(), writing, held)
                await self._add(group, None, writing, held, flush=True)
            except IngestCancelled:
                log.info("ingest stopped on request; the batches being prepared were dropped")
            await self._drop(ahead)  # after a stop
            if group.batches:  # processed whole, so written even when stopped
                await self._hand_over(group, writing, held)
            while writing:
                await writing.popleft()
            if self._at_ceiling:
                await self._leave_rest(stream)
        finally:
            if writing:  # each ends as one transaction before anyone may close the store
                await asyncio.wait(writing)
                for task in writing:
                    if not task.cancelled():
                        task.exception()  # raised by `await` on the normal path; retrieved here
            await self._drop(ahead)
            for keys in held:
                self.in_flight.release(keys)
            if self._names is not None:
                await self._names.close()
            self._tell()
        return self.report

    async def _add(
        self,
        group: WriteGroup[Pending],
        started: Started | None,
        writing: deque[asyncio.Task[None]],
        held: list[list[str]],
        flush: bool = False,
    ) -> None:
        """Take a started batch (None: nothing to process) to its embedding, and the batch queued
        before it (all of them with `flush`) into the write group, handing the group over once full.

        One batch stays queued on the embedding thread behind the one it embeds, so resolving
        the next batch and building this one's versions never leave the thread idle.
        """
        if not flush:
            self._embedding.append(await self._process(started) if started is not None else None)
        while len(self._embedding) > (0 if flush else 1):
            versions = await self._finish(self._embedding.popleft())
            if self._names is not None:  # names no mention gave, queued behind the next batch
                self._names.start([v for _, v in versions])
            group.add(versions)
            self._tell()
            if group.full(self.store.write_group_passages, self._to_come()):
                await self._hand_over(group, writing, held)

    async def _drop(self, ahead: deque[Started | None]) -> None:
        """Wait out the extraction and embedding of batches that will not be written (after a stop
        or a failure), so no worker thread outlives the run."""
        while ahead:
            started = ahead.popleft()
            if started is not None:
                await asyncio.gather(started.graphs, return_exceptions=True)
        while self._embedding:
            embedding = self._embedding.popleft()
            if embedding is not None and embedding.vectors is not None:
                await asyncio.gather(embedding.vectors, return_exceptions=True)

    async def _hand_over(
        self, group: WriteGroup[Pending], writing: deque[asyncio.Task[None]], held: list[list[str]]
    ) -> None:
        """Start writing `group` once fewer writes than the store takes at once are running; the
        batches it holds are released from `in_flight` when it ends. The next group is prepared
        meanwhile."""
        while len(writing) >= self.store.writes_at_once:
            await writing.popleft()
        versions, batches = group.take()
        mine = held[:batches]
        del held[:batches]  # now the write's own: it releases them, whenever it ends

        async def write_then_release() -> None:
            try:
                await self._write(await self._names.attach(versions) if self._names is not None else versions)
            finally:
                for keys in mine:
                    self.in_flight.release(keys)

        writing.append(asyncio.create_task(write_then_release()))

    # -- stages ------------------------------------------------------------------------------

    def _documents(self, files: Sequence[SourceFile], texts: Sequence[LoadedDocument]) -> Iterator[LoadedDocument]:
        """Every document to ingest, read lazily; a file that cannot be read becomes a failure."""
        for src in files:
            try:
                for item in self.strategies.loader_for(src).stream(src.path, src.key):
                    if isinstance(item, RejectedRecord):
                        self._fail(item.key, item.error, path=str(src.path), line=item.line)
                    else:
                        yield item
            except EvigraphError as exc:
                self._fail(src.key, str(exc), path=str(src.path))
            except Exception as exc:  # a user loader's bug must not sink the batch
                log.exception("loader failed on %s", src.path)
                self._fail(src.key, f"could not load {src.path}: {exc}", path=str(src.path))
        yield from texts

    def _admit(self, docs: list[LoadedDocument]) -> list[LoadedDocument]:
        """Drop (as failures) documents whose key was seen in this ingest or whose text cannot be stored."""
        out = []
        for d in docs:
            if d.key in self._seen:
                self._fail(d.key, f"duplicate document key {d.key!r} in this ingest; give each record its own id")
            elif problem := unstorable(d):
                self._fail(escaped(d.key), problem, path=escaped(d.path) if d.path else None)
            else:
                self._seen.add(d.key)
                out.append(d)
        return out

    async def _skip_unchanged(self, docs: list[LoadedDocument], stream: Batches) -> list[Pending]:
        stored = await self._stored.take([d.key for d in docs], stream.upcoming())
        pending = []
        for d in docs:
            old = stored.get(d.key)
            if old is not None and old.content_hash == d.content_hash and not self.force:
                self._outcome(
                    DocumentOutcome(
                        key=d.key,
                        status=IngestStatus.unchanged,
                        path=d.path,
                        chunks=old.chunks,
                        content_hash=old.content_hash,
                        version=old.version,
                    )
                )
            else:
                pending.append(Pending(d, existed=old is not None))
        return pending

    async def _start(self, batch: list[Pending]) -> Started | None:
        """Chunk a batch and start extracting it, after the batch before it; `_process` takes it on.

        Extracted a batch ahead, a batch reaches the embedding thread with its graph, so its names
        are pooled from its passages' pass (`passage_vectors`), and one extraction at a time
        leaves the other core to the model. With no model on this machine's cores (`early`), an
        extractor that takes batches in turn (`ExtractionStrategy.queues_batches`) is handed the
        next batch while it works on this one, after the one before.
        """
        self.cancellation.check()
        chunked = await asyncio.to_thread(self._chunk_all, batch)
        self.cancellation.check()
        chunked = await self._contextualize(chunked)
        if not chunked:
            return None
        self._shares.credit((p.doc.key, CHUNKED) for p, _ in chunked)
        after = self._extracting_before if self._overlap else self._extracting
        task = asyncio.create_task(self._extract(chunked, after))
        self._extracting_before, self._extracting = self._extracting, task
        return Started(chunked, task)

    async def _process(self, started: Started) -> Embedding | None:
        """The batch's graphs resolved, and its vectors started on the embedding thread."""
        extracted = await started.graphs
        graphs = extracted.graphs
        if extracted.here:  # after every batch, trims took 6% of a 100,000-record ingest's threads' time
            await asyncio.to_thread(give_back_memory)  # the extractor's temporaries
        self.cancellation.check()
        ready: list[tuple[Pending, list[TextChunk], GraphData, tuple[tuple[Span, ...], ...]]] = []
        for (p, chunks), graph in zip(started.chunked, graphs, strict=True):
            if graph is None:
                continue
            strategies = self.strategies
            try:
                resolved, pruned = await settled_graph(strategies.resolver, strategies.ontology, p.doc, chunks, graph)
            except Exception as exc:
                self._fail(p.doc.key, f"resolution failed: {exc}", path=p.doc.path)
                continue
            self.report.pruned.merge(pruned)
            ready.append((p, chunks, resolved, bridge_sentences(chunks, resolved)))
        if not ready:
            return None
        embedder = self.strategies.embedder
        return Embedding(ready, asyncio.create_task(self._embed(embedder, ready)) if embedder is not None else None)

    async def _finish(self, embedding: Embedding | None) -> list[tuple[Pending, DocumentVersion]]:
        """The batch's versions, with their vectors once computed."""
        if embedding is None:
            return []
        vectors = await embedding.vectors if embedding.vectors is not None else None
        if vectors is not None:
            await asyncio.to_thread(give_back_memory)  # the model's temporaries
        out = []
        for n, (p, chunks, resolved, spans) in enumerate(embedding.ready):
            mine = vectors[n] if vectors is not None else None
            out.append(
                (
                    p,
                    DocumentVersion(
                        key=p.doc.key,
                        title=p.doc.title,
                        path=p.doc.path,
                        content_hash=p.doc.content_hash,
                        loader=p.doc.loader,
                        metadata=p.doc.metadata,
                        chunks=tuple(chunks),
                        graph=resolved,
                        embeddings=tuple(mine.passages) if mine is not None else None,
                        sentences=spans,
                        sentence_embeddings=mine.sentences if mine is not None else None,
                        name_embeddings=(mine.names or None) if mine is not None else None,
                        found=resolved.found,
                    ),
                )
            )
        return out

    def _chunk_all(self, batch: list[Pending]) -> list[tuple[Pending, list[TextChunk]]]:
        out = []
        for p in batch:
            try:
                chunks = self.strategies.chunker.chunk(p.doc)
            except Exception as exc:
                self._fail(p.doc.key, f"chunking failed: {exc}", path=p.doc.path)
                continue
            if not chunks:
                self._fail(p.doc.key, "the chunker produced no passages; the document has no text", path=p.doc.path)
                continue
            if self.max_chunks is not None and len(chunks) > self.max_chunks:
                self._fail(
                    p.doc.key,
                    f"{len(chunks)} passages, over the limit of {self.max_chunks} per file; "
                    "split the file, pick a chunker with larger passages, or raise the plan's max_chunks",
                    path=p.doc.path,
                )
                continue
            out.append((p, chunks))
        return out

    async def _contextualize(
        self, chunked: list[tuple[Pending, list[TextChunk]]]
    ) -> list[tuple[Pending, list[TextChunk]]]:
        """The chunker's contexts (`ChunkingStrategy.contextualize`): a document it could not give
        them fails, one the token ceiling held back is left; a configuration error stops the ingest."""
        if not chunked:
            return chunked
        got = await self.strategies.chunker.contextualize([(p.doc, chunks) for p, chunks in chunked])
        out = []
        for (p, _), result in zip(chunked, got, strict=True):
            if isinstance(result, CeilingReached):
                self._at_ceiling = True
                self._left([p.doc.key])
            elif isinstance(result, Exception):
                self._fail(p.doc.key, f"writing passage contexts failed: {result}", path=p.doc.path)
            else:
                out.append((p, list(result)))
        self.cancellation.check()
        return out

    async def _embed(
        self,
        embedder: Embedder,
        ready: list[tuple[Pending, list[TextChunk], GraphData, tuple[tuple[Span, ...], ...]]],
    ) -> list[DocumentVectors]:
        """Vectors for every passage of the batch, its bridge sentences' and its names', from one pass."""
        owners = [(p.doc.key, EMBEDDED / len(chunks)) for p, chunks, _, _ in ready for _ in chunks]

        def embedded(part: Sequence[int]) -> None:
            self.cancellation.check()  # between slices: one slice is the longest wait for a stop
            self._shares.credit(owners[j] for j in part)

        docs = [DocumentText(p.doc.title, chunks, graph, spans) for p, chunks, graph, spans in ready]
        return await on_embedding_thread(embed_documents, embedder, docs, embedded)

    async def _extract(
        self, chunked: list[tuple[Pending, list[TextChunk]]], after: asyncio.Task[Extracted] | None
    ) -> Extracted:
        """`chunked`'s graphs, extracted once `after` is (the batch before it, or the one before that
        for an extractor that queues batches, `_start`): after the LLM token ceiling, or a failure
        that ends the ingest, nothing more is started."""
        if after is not None:
            await asyncio.wait([after])
            if after.cancelled() or after.exception() is not None:
                return Extracted([None] * len(chunked), here=False)
        if self._at_ceiling:
            self._left([p.doc.key for p, _ in chunked])
            return Extracted([None] * len(chunked), here=False)
        self.cancellation.check()
        with offload.tallied() as tally:
            graphs = await self._extract_graphs(chunked)
        here = tally.sent < sum(len(c) for _, c in chunked)
        share = EXTRACTED if self.strategies.embedder is not None else EXTRACTED + EMBEDDED
        self._shares.credit((p.doc.key, share) for (p, _), g in zip(chunked, graphs, strict=True) if g is not None)
        return Extracted(graphs, here)

    async def _extract_graphs(self, chunked: list[tuple[Pending, list[TextChunk]]]) -> list[GraphData | None]:
        """A ceiling reached keeps the documents finished and leaves the rest; a configuration error
        (a misconfigured LLM) stops the ingest, as it would fail every document alike."""
        extractor, ontology = self.strategies.extractor, self.strategies.ontology
        done: list[GraphData | None] = [None] * len(chunked)
        try:
            return list(await extractor.extract_many([c for _, c in chunked], ontology))
        except CeilingReached as stop:
            return self._leave(chunked, stop.done)
        except ConfigurationError:
            raise
        except Exception as exc:  # the reason in one line; its traceback only under --verbose
            # a batch that failed in part retries only the documents of its failed calls
            done, cause = (exc.done, exc.cause) if isinstance(exc, PartlyExtracted) else (done, exc)
            retry = "batched extraction failed (%s); retrying %d of %d documents one by one"
            log.warning(retry, one_line(str(cause)), done.count(None), len(done))
            log.debug("the batch's failure", exc_info=cause)
        graphs: list[GraphData | None] = []
        for i, (p, chunks) in enumerate(chunked):
            graph = done[i]
            if graph is None:
                try:
                    graph = await extractor.extract(chunks, ontology)
                except CeilingReached:
                    return graphs + self._leave(chunked[i:], done[i:])
                except ConfigurationError:
                    raise
                except Exception as exc:
                    self._fail(p.doc.key, f"extraction failed: {exc}", path=p.doc.path)
            graphs.append(graph)
        return graphs

    def _leave(
        self, chunked: list[tuple[Pending, list[TextChunk]]], done: list[GraphData | None]
    ) -> list[GraphData | None]:
        """`done` (one per document, None where not extracted) padded, the others reported as left."""
        self._at_ceiling = True
        graphs = done + [None] * (len(chunked) - len(done))
        self._left([p.doc.key for (p, _), g in zip(chunked, graphs, strict=True) if g is None])
        return graphs

    async def _leave_rest(self, stream: Batches) -> None:
        """After the ceiling: the documents not read yet are reported, unchanged ones as unchanged
        (they cost nothing) and the others as left, without chunking or extracting them."""
        while loaded := await asyncio.to_thread(stream.next):
            pending = await self._skip_unchanged(self._admit(loaded), stream)
            self._left([p.doc.key for p in pending])
            self._tell()

    def _left(self, keys: list[str]) -> None:
        self.report.left += keys
        for key in keys:
            self._shares.complete(key)  # the bar ends full: nothing more happens to them in this run

    async def _write(self, versions: list[tuple[Pending, DocumentVersion]]) -> None:
        if not versions:
            return
        try:
            async with self._write_turn():
                stored = await self.store.write_versions([v for _, v in versions])
            await asyncio.to_thread(give_back_memory)  # the statements' parameter rows
        except StoreUnavailableError:
            raise  # the server is gone: each document would fail alike; what was written stays
        except Exception as exc:
            if len(versions) == 1:
                p, _ = versions[0]
                self._fail(p.doc.key, f"could not store the document: {exc}", path=p.doc.path)
                return
            # Halves, not one document at a time: a group of thousands with one bad document is
            # written in about 2 log2(n) transactions, each paying the store's per-write cost once.
            log.warning("write of %d documents failed (%s); retrying in halves", len(versions), one_line(str(exc)))
            log.debug("the write's failure", exc_info=True)
            middle = len(versions) // 2
            for half in (versions[:middle], versions[middle:]):
                if self.cancellation.cancelled:  # the rest were not written: left for the next run
                    break
                await self._write(half)
            return
        for (p, v), doc in zip(versions, stored, strict=True):
            status = IngestStatus.updated if p.existed else IngestStatus.created
            self._outcome(
                DocumentOutcome(
                    key=v.key,
                    status=status,
                    path=v.path,
                    chunks=len(v.chunks),
                    entities=len(v.graph.entities),
                    relations=len(v.graph.relations),
                    content_hash=doc.content_hash,
                    version=doc.version,
                )
            )
        self._tell()  # the batch's lines appear as soon as its transaction committed

    def _write_turn(self) -> contextlib.AbstractAsyncContextManager[object]:
        """The turn a write takes (`InFlight.writes`) where the store takes one write at a time."""
        if self.store.writes_at_once > 1:
            return contextlib.nullcontext()
        return self.in_flight.writes

    # -- outcomes ----------------------------------------------------------------------------

    def _fail(self, key: str, error: str, path: str | None = None, line: int | None = None) -> None:
        self._outcome(DocumentOutcome(key=key, status=IngestStatus.failed, error=error, path=path, line=line))

    def _outcome(self, outcome: DocumentOutcome) -> None:
        """Record a final outcome; loaders and the chunker call this from worker threads too."""
        self.report.documents.append(outcome)
        self._shares.complete(outcome.key)

    def _tell(self) -> None:
        """Pass the outcomes recorded since the last call to `progress`, in the event loop's thread."""
        new = self.report.documents[self._told :]
        self._told += len(new)
        if new:
            self.progress.finished(new)
