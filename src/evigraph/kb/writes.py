"""Writing to a knowledge base: ingest, finalize, delete, agent-recorded knowledge, the ontology.

Every write runs under the knowledge base's gate, so two sessions of one process (two MCP
clients) never interleave a version switch, a theme rebuild or an ontology update; an ontology
is read, merged and written inside the gate, so neither session's addition is lost. The few
reads here (documents by key, which entities and passages exist) serve the checks a writer makes
before it writes.

Files are keyed `file:` + their root's name + their path under it, whether named on the command
line or under an agent's files root (see `evigraph.ingest.roots`), so a file is one document
however it was ingested, and stays one when its folder moves.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evigraph.errors import ConfigurationError, EvigraphError
from evigraph.ingest.roots import active_roots, keyed_by
from evigraph.kb.code import link_documents_to_code
from evigraph.kb.core import EMBEDDER_SETTING, ONTOLOGY_SETTING, FinalizeReport
from evigraph.kb.edits import REVIEW_STEP, EditOps
from evigraph.kb.properties import check_ontology, make_columns, refuse_lost_values
from evigraph.kb.spend import record_spend
from evigraph.models import (
    DocumentOutcome,
    EntityType,
    IngestReport,
    IngestStatus,
    LoadedDocument,
    Ontology,
    RelationType,
    SourceRecord,
    SourceState,
    StoredDocument,
)
from evigraph.store.base import GraphStore

if TYPE_CHECKING:  # the ingest pipeline's parts are imported by the methods that write, not by a search
    from evigraph.ingest.cancel import Cancellation
    from evigraph.ingest.chunking.base import ChunkingStrategy
    from evigraph.ingest.extraction.base import ExtractionStrategy
    from evigraph.ingest.extraction.budget import TokenBudget
    from evigraph.ingest.files_root import FilesRoot
    from evigraph.ingest.graph_resolution import GraphResolver
    from evigraph.ingest.loaders.base import LoaderStrategy
    from evigraph.ingest.ontology_merge import OntologyExtension
    from evigraph.ingest.progress import IngestProgress
    from evigraph.ingest.resolution import ResolutionStrategy


_WRITTEN = (IngestStatus.created, IngestStatus.updated)


@dataclass(frozen=True)
class FilePlan:
    """The strategies one file is ingested with, by registry name; None keeps the knowledge base's own."""

    chunker: str | None = None
    extractor: str | None = None
    resolver: str | None = None


class WriteOps(EditOps):
    """The writing half of `KnowledgeBase`."""

    async def set_ontology(self, ontology: Ontology) -> None:
        """Use and store `ontology`, so later sessions and processes extract with it too.

        Its declared properties become storable at once. It is refused (`InputError`, naming them)
        when it leaves out a property that still holds values, or gives one another type.
        """
        store = await self._open(for_write=True)
        async with self._gate.exclusive():
            columns = check_ontology(ontology)
            await refuse_lost_values(store, await self.load_ontology(), ontology)
            await make_columns(store, columns)
            await store.set_setting(ONTOLOGY_SETTING, ontology.model_dump_json())
            self._ontology = ontology

    async def extend_ontology(
        self, entities: Sequence[EntityType] = (), relations: Sequence[RelationType] = ()
    ) -> OntologyExtension:
        """Add entity types, relation types and patterns to the ontology; never removes one.

        The first declaration in a knowledge base that holds no document and no stored
        ontology replaces the default types instead, since nothing was extracted with them. That
        is decided on the whole graph, so a server scoped to an empty part of a shared knowledge
        base only adds. Read, merge and write happen under the write gate, so two sessions
        extending at once both keep their additions.
        """
        store = await self._open(for_write=True)
        async with self._gate.exclusive():
            from evigraph.ingest.ontology import DEFAULT_ONTOLOGY
            from evigraph.ingest.ontology_merge import extend_ontology

            current = self.ontology
            replace = current == DEFAULT_ONTOLOGY and await store.get_setting(ONTOLOGY_SETTING) is None
            replace = replace and not await store.holds_documents()
            merged, change = extend_ontology(current, entities, relations, replace=replace)
            await make_columns(store, check_ontology(merged))
            await store.set_setting(ONTOLOGY_SETTING, merged.model_dump_json())
            self._ontology = merged
        return change

    # -- reads a writer checks before writing ------------------------------------------------

    async def get_documents(self, keys: Sequence[str]) -> dict[str, StoredDocument]:
        """The stored current version of each key that exists (keys not stored are left out)."""
        store = await self._open(for_write=True)
        return await _documents(store, keys)

    @contextlib.asynccontextmanager
    async def apart_from_writes(self) -> AsyncIterator[None]:
        """Inside, no ingest of this knowledge base writes: one writing now ends its transaction first.

        For a process that serves reads to others while it ingests (`evigraph.cli.serving`); why
        the engine needs it is on `InFlight`.
        """
        async with self._in_flight.writes:
            yield

    async def _log_failures(self, failed: Sequence[DocumentOutcome]) -> None:
        """Record files that failed before any ingest ran, so `source_status` says failed."""
        if failed:
            store = await self._open(for_write=True)
            async with self._gate.shared():
                await self._log_outcomes(store, IngestReport(documents=list(failed)))

    # -- ingest ------------------------------------------------------------------------------

    async def ingest(
        self,
        sources: Sequence[str | os.PathLike[str]] | str | os.PathLike[str] = (),
        *,
        text: str | None = None,
        key: str | None = None,
        title: str | None = None,
        progress: bool | IngestProgress | None = None,
        reextract: bool = False,
        cancellation: Cancellation | None = None,
        include: str | Sequence[str] = (),
        exclude: str | Sequence[str] = (),
        encoding: str | None = None,
        max_llm_tokens: int | None = None,
        root_name: str | None = None,
    ) -> IngestReport:
        """Ingest files, folders and globs, or one `text` under `key`; unchanged documents are skipped.

        A file's key is `file:` + its root's name + its path under the root: a folder named here
        becomes a root named after itself (`root_name` names it otherwise, or says "this is that
        root, moved or mounted here"; it is refused with sources in several folders, which would
        share its keys), unless it lies in a root already; a file or glob's root is its folder.
        A folder whose name another existing root holds fails with the fix, and documents still
        keyed by absolute path are renamed to the new form, not ingested anew.

        Each document's new version replaces its old one in one step. Bad sources come back as
        `failed` outcomes with the fix in `error`; nothing stored before is lost. `reextract`
        processes unchanged documents too (after the ontology grew, or to give a knowledge base
        from an older release what graph ranking needs).

        `progress`: a bar on stderr (True; None: when stderr is a terminal), or your own
        `IngestProgress`, told of each stage and of each outcome once final. Cancelling
        `cancellation` stops within one step: the report then holds what was written.

        Folders and globs take the files a loader reads; the others are counted by extension in
        `report.skipped`. `include` and `exclude` are globs (a list, or comma-separated) that
        filter every file, named or found, by its name, its folders' names or its path relative
        to the folder walked (`evigraph.ingest.sources.FileFilter` has the rule); the files they
        leave out are counted in `report.excluded`, not as skipped. `encoding` is for text files
        that are neither UTF-8 nor marked by a byte order mark; without it UTF-16 with its mark and
        Latin-1/cp1252 are recognised and other files fail with a hint to pass it.

        `max_llm_tokens` caps what an LLM extractor may spend (input and output tokens): no call
        is sent that could pass it; the documents finished are written and the rest are listed in
        `report.left`. `report.llm` says what was spent (None without an LLM extractor).
        """
        from evigraph.ingest.loaders.decoding import assumed_encoding
        from evigraph.ingest.progress import IngestProgress
        from evigraph.ingest.sources import FileFilter, collect_sources
        from evigraph.ingest.text_documents import text_document

        if isinstance(sources, str | os.PathLike):
            sources = [sources]
        texts = []
        if text is not None:
            texts.append(text_document(text, key or "", title))
        elif key is not None:
            raise ConfigurationError("key= is for text= input", hint="pass text= with key=, or paths alone")
        with assumed_encoding(encoding):
            named = [os.fspath(s) for s in sources]
            select = FileFilter.of(include, exclude)
            found = await asyncio.to_thread(collect_sources, named, self.file_extensions, select)
            if not texts and not found.files and self._store is None and not self._exists():
                # Every path was wrong: a knowledge base that does not exist yet is not created empty.
                report = IngestReport(
                    documents=[
                        DocumentOutcome(key=f.source, status=IngestStatus.failed, error=f.error) for f in found.failures
                    ]
                )
                report.skipped, report.excluded = found.skipped_by_extension(), found.excluded
                if isinstance(progress, IngestProgress):
                    progress.finished(report.documents)
                    progress.close()
                return report
            self._refuse_without_llm()  # placing the roots writes them: not into a file that must not be made
            report = await self._keyed(
                lambda files: self.ingest_documents(
                    texts,
                    sources=files,
                    progress=progress,
                    reextract=reextract,
                    cancellation=cancellation,
                    max_llm_tokens=max_llm_tokens,
                ),
                named,
                found,
                root_name,
                progress,
            )
        report.skipped, report.excluded = found.skipped_by_extension(), found.excluded
        return report

    def _refuse_without_llm(
        self,
        extractor: ExtractionStrategy | str | None = None,
        chunker: ChunkingStrategy | str | None = None,
        resolver: ResolutionStrategy | str | None = None,
    ) -> None:
        """A strategy that needs an LLM, with none given or recorded, fails before the file is made."""
        from evigraph.ingest.extraction.base import ExtractionRun
        from evigraph.ingest.resolution import ResolutionRun

        if self._store is None and not self._exists():
            probe = ExtractionRun(llm=lambda: self.llm)
            (_extractor(extractor) if extractor is not None else self._extraction()).for_run(probe)
            _chunker(chunker or self._chunker or "structural").for_run(probe)
            (_resolver(resolver) if resolver is not None else self._resolver).for_run(ResolutionRun(llm=probe.llm))

    async def ingest_files(
        self,
        files: Sequence[str | os.PathLike[str]],
        *,
        root: FilesRoot | None = None,
        plans: Mapping[str, FilePlan] | None = None,
        reextract: bool = False,
        max_chunks: int | None = None,
        progress: bool | None = None,
        max_llm_tokens: int | None = None,
        max_llm_pairs: int | None = None,
    ) -> IngestReport:
        """Ingest the named files, each with its own plan of strategies.

        `plans` maps a file, as named in `files`, to the chunker, extractor and resolver it is
        ingested with; files without one use the knowledge base's own. Files with the same plan
        are ingested together. With `root`, names are paths under it (or document keys a tool
        returned) and every read goes through it, so no link or `..` leads outside; without,
        names are paths on disk. Files that cannot be read come back failed, with the fix.
        `max_llm_tokens` is one ceiling for the whole call, whatever the plans, and so is
        `max_llm_pairs`, the candidate pairs an LLM resolver may send.
        """
        from evigraph.ingest.file_loading import load_files
        from evigraph.ingest.loaders import loader_for
        from evigraph.ingest.resolution import checked_max_llm_pairs

        checked_max_llm_pairs(max_llm_pairs)  # before the subtraction below turns a negative into 0
        custom, max_bytes = self._loaders, self.max_file_bytes

        def pick(path: Path) -> LoaderStrategy:
            return loader_for(path, custom, max_bytes=max_bytes)

        named = [os.fspath(f) for f in files]
        refused: list[DocumentOutcome] = []
        if root is not None:
            roots = await self.root_for(root.root)
        else:
            paths = {f: Path(f).expanduser().resolve() for f in named}
            roots, placed, refused = await self._roots_of([], list(paths.values()))
            named = [f for f in named if not placed.refuses(paths[f])]
        with keyed_by(roots):
            loaded = await asyncio.to_thread(load_files, named, pick, root)
        where = [p for f in loaded if (p := roots.path_of(f.key)) is not None]
        await self._adopt_legacy(roots, where)
        report = IngestReport(documents=[o for f in loaded for o in f.failures])
        await self._log_failures(report.documents)
        report.documents[:0] = refused
        groups: dict[FilePlan, list[LoadedDocument]] = {}
        for f in loaded:
            if f.documents:
                groups.setdefault((plans or {}).get(f.given, FilePlan()), []).extend(f.documents)
        for plan, documents in groups.items():
            spent = report.llm.total_tokens if report.llm else 0
            sent = report.resolution.sent if report.resolution else 0
            part = await self.ingest_documents(
                documents,
                chunker=plan.chunker,
                extractor=plan.extractor,
                resolver=plan.resolver,
                reextract=reextract,
                max_chunks=max_chunks,
                exclusive=None,
                progress=progress,
                max_llm_tokens=None if max_llm_tokens is None else max(0, max_llm_tokens - spent),
                max_llm_pairs=None if max_llm_pairs is None else max(0, max_llm_pairs - sent),
            )
            if part.resolution is not None:
                report.resolution = (
                    part.resolution if report.resolution is None else report.resolution.add(part.resolution)
                )
            report.documents += part.documents
            report.pruned.merge(part.pruned)
            report.left += part.left
            if part.llm is not None:
                report.llm = part.llm if report.llm is None else report.llm + part.llm
        if report.llm is not None:
            report.llm.max_tokens = max_llm_tokens
        return report

    async def ingest_documents(
        self,
        documents: Sequence[LoadedDocument],
        *,
        sources: Sequence[str] = (),
        chunker: ChunkingStrategy | str | None = None,
        extractor: ExtractionStrategy | str | None = None,
        resolver: ResolutionStrategy | str | None = None,
        reextract: bool = False,
        max_chunks: int | None = None,
        exclusive: bool | None = True,
        progress: bool | IngestProgress | None = None,
        cancellation: Cancellation | None = None,
        max_llm_tokens: int | None = None,
        max_llm_pairs: int | None = None,
    ) -> IngestReport:
        """Ingest already-loaded documents (and `sources` paths) with optional per-call strategies.

        `reextract` processes unchanged documents again (after the ontology grew); `max_chunks`
        refuses a document that chunks into more passages before it is extracted. With
        `exclusive=False` the ingest may run beside other non-exclusive ones; only ingests that
        add new documents should ask for that. `exclusive=None` decides it: alone when any of
        `documents` is stored already (its update prunes what only it mentioned), else beside others.
        `max_llm_tokens` is the LLM token ceiling (see `ingest`); `max_llm_pairs` caps the candidate
        pairs an LLM resolver (`llm_verified`) sends in this call, below its own setting.
        """
        from evigraph.ingest.cancel import Cancellation
        from evigraph.ingest.extraction.base import ExtractionRun
        from evigraph.ingest.extraction.budget import TokenBudget
        from evigraph.ingest.pipeline import IngestRun
        from evigraph.ingest.resolution import ResolutionRun, checked_max_llm_pairs
        from evigraph.ingest.vectors import embed_ranking_texts

        if max_llm_tokens is not None and max_llm_tokens < 0:
            raise ConfigurationError("max_llm_tokens must not be negative", hint="e.g. max_llm_tokens=200000")
        checked_max_llm_pairs(max_llm_pairs)
        if sources and active_roots() is None:  # called directly: key the files as `ingest` does
            return await self._keyed(
                lambda named: self.ingest_documents(
                    documents,
                    sources=named,
                    chunker=chunker,
                    extractor=extractor,
                    resolver=resolver,
                    reextract=reextract,
                    max_chunks=max_chunks,
                    exclusive=exclusive,
                    progress=progress,
                    cancellation=cancellation,
                    max_llm_tokens=max_llm_tokens,
                    max_llm_pairs=max_llm_pairs,
                ),
                sources,
            )
        self._refuse_without_llm(extractor, chunker, resolver)
        store = await self._open(for_write=True)
        await self._claim_embedding_model(store)
        strategies = self._strategies()
        if chunker is not None:
            strategies.chunker = _chunker(chunker)
        if extractor is not None:
            strategies.extractor = _extractor(extractor)
        if resolver is not None:
            strategies.resolver = _resolver(resolver)
        budget = TokenBudget(max_llm_tokens)
        run_context = ExtractionRun(llm=lambda: self.llm, store=store, budget=budget)
        strategies.extractor = strategies.extractor.for_run(run_context)  # a missing LLM is refused here
        strategies.chunker = strategies.chunker.for_run(run_context)  # and here, for a contextual chunker
        strategies.resolver = strategies.resolver.for_run(  # and here, for llm_verified
            ResolutionRun(store, run_context.llm, self.embedder, budget, max_llm_pairs)
        )
        if exclusive is None:
            exclusive = bool(sources) or bool(await _documents(store, [d.key for d in documents]))
        watcher, owned = _progress(progress)
        run = IngestRun(
            store,
            strategies,
            batch_documents=self.batch_documents,
            force=reextract,
            max_chunks=max_chunks,
            in_flight=self._in_flight,
            progress=watcher,
            cancellation=cancellation or Cancellation(),
        )
        gate = self._gate.exclusive() if exclusive or reextract else self._gate.shared()
        keys = [d.key for d in documents]
        self._in_flight.hold(keys)  # pending while waiting at the gate too; files from `sources` once loaded
        try:
            async with gate:
                try:
                    report = await run.run(list(sources), list(documents))
                    report.resolution = strategies.resolver.summary()
                    # Left pending when stopped (it may take minutes): the next ingest or finalize embeds them.
                    written = [d.key for d in report.documents if d.status in _WRITTEN]
                    if written and not run.cancellation.cancelled and not store.read_only:
                        async with self._in_flight.writes:
                            await link_documents_to_code(store, written)
                    if self.embedder is not None and written and not run.cancellation.cancelled:
                        facts = self.retrieval.searches_fact_vectors  # relation facts: only if searched
                        async with self._in_flight.writes:
                            await embed_ranking_texts(store, self.embedder, facts=facts)
                except EvigraphError:  # a misconfigured LLM stopped it: what was written is still recorded
                    await self._record_run(store, run.report, budget)
                    raise
                finally:
                    if owned:
                        watcher.close()
                await self._record_run(store, report, budget)
        finally:
            self._in_flight.release(keys)
        return report

    async def _record_run(self, store: GraphStore, report: IngestReport, budget: TokenBudget) -> None:
        """Log the run's outcomes, and add what its LLM spent to the knowledge base's total."""
        report.llm = budget.spend() if budget.active else None
        async with self._in_flight.writes:
            await self._log_outcomes(store, report)
            if report.llm is not None:
                await record_spend(store, report.llm)
            if any(d.status in _WRITTEN for d in report.documents):
                await store.continue_decision_review(None, REVIEW_STEP)

    @staticmethod
    async def _log_outcomes(store: GraphStore, report: IngestReport) -> None:
        """Record each written or failed document for `source_status`; unchanged ones need nothing."""
        written = _WRITTEN
        records = [
            SourceRecord(key=d.key, state=SourceState.current, content_hash=d.content_hash, version=d.version)
            for d in report.documents
            if d.status in written
        ]
        records += [SourceRecord(key=d.key, state=SourceState.failed, error=d.error) for d in report.failed if d.key]
        await store.log_sources(records)

    async def finalize(
        self, *, resolver: GraphResolver | str | None = None, max_llm_pairs: int | None = None
    ) -> FinalizeReport:
        """Finish a batch of ingests: type names again, embed what has no vector, resolve entities,
        then find themes.

        Names are typed from the whole knowledge base's cues (`ingest/retyping.py`), so the graph
        holds what a fresh ingest of the same files would, whatever order they came in.

        `resolver` merges entities of the whole graph that are one thing: "exact" (the default:
        nothing beyond ingest's exact name match), "fuzzy" (by names, offline) or "llm" (this
        knowledge base's LLM confirms candidate pairs); `report.resolution` says what it found,
        merged and spent. It runs after the embedding, as it reuses the entities' name vectors.
        Themes are communities of entities (Louvain over the relations); they are recomputed
        whole, since one ingest can merge or split clusters anywhere in the graph. `max_llm_pairs`
        caps the candidate pairs a resolver named "llm" sends (an agent's plan limit; 0: none).
        """
        from evigraph.ingest.communities import detect_themes
        from evigraph.ingest.graph_resolution import resolve_graph
        from evigraph.ingest.retyping import retype
        from evigraph.ingest.vectors import embed_passages, embed_ranking_texts

        judge = self._graph_resolver(resolver, max_llm_pairs)  # an unknown name or a missing LLM fails first
        store = await self._open(for_write=True, create=False)  # a mistyped --db is said, not created
        report = FinalizeReport()
        async with self._gate.exclusive():
            report.retyped = await retype(store, await self.load_ontology())
            if self.embedder is not None:
                await self._claim_embedding_model(store)
                report.embedded = await embed_passages(store, self.embedder)
                await embed_ranking_texts(store, self.embedder, facts=self.retrieval.searches_fact_vectors)
            report.resolution = await resolve_graph(store, judge)
            if report.resolution.llm is not None:  # building the graph's cost includes judging its duplicates
                await record_spend(store, report.resolution.llm)
            themes = await detect_themes(store)
            await store.replace_themes(themes)
            report.themes = len(themes)
        return report

    def _graph_resolver(self, resolver: GraphResolver | str | None, max_llm_pairs: int | None) -> GraphResolver:
        from evigraph.ingest.graph_resolution import graph_resolver_by_name
        from evigraph.ingest.resolution import checked_max_llm_pairs

        checked_max_llm_pairs(max_llm_pairs)
        if resolver is None or isinstance(resolver, str):
            llm = self.llm if resolver == "llm" else None
            return graph_resolver_by_name(resolver or "exact", llm=llm, max_pairs=max_llm_pairs)
        return resolver

    async def reembed(self) -> int:
        """Drop every stored vector and embed all passages with this knowledge base's embedder."""
        if self.embedder is None:
            raise ConfigurationError("no embedder to re-embed with", hint="pass embedder= to KnowledgeBase")
        store = await self._open(for_write=True, create=False)
        await store.set_embedding_model(None)
        return (await self.finalize()).embedded

    async def _claim_embedding_model(self, store: GraphStore) -> None:
        """Record the embedder (model and spec) on first use; refuse one that differs from the
        stored vectors' model."""
        embedder = self.embedder
        if embedder is None:
            return
        stored = await store.embedding_model()
        if stored is None:
            dimension = await asyncio.to_thread(lambda: embedder.dimension)
            await store.set_embedding_model(embedder.name, dimension)
        elif stored[0] != embedder.name:
            raise ConfigurationError(
                f"{self.location} is embedded with {stored[0]!r}, not {embedder.name!r}",
                hint="use the same embedder, or re-embed every passage with `evigraph reembed --embedder ...` "
                "(KnowledgeBase.reembed())",
            )
        spec = embedder.spec
        if spec and await store.get_setting(EMBEDDER_SETTING) != spec:
            await store.set_setting(EMBEDDER_SETTING, spec)  # also upgrades a file from before it was kept


async def _documents(store: GraphStore, keys: Sequence[str]) -> dict[str, StoredDocument]:
    """`store.get_documents` in slices, so a record file's many keys make no giant statement."""
    out: dict[str, StoredDocument] = {}
    for i in range(0, len(keys), 1000):
        out.update(await store.get_documents(list(keys[i : i + 1000])))
    return out


def _chunker(value: ChunkingStrategy | str) -> ChunkingStrategy:
    from evigraph.ingest.chunking import chunker_by_name

    return chunker_by_name(value) if isinstance(value, str) else value


def _extractor(value: ExtractionStrategy | str) -> ExtractionStrategy:
    from evigraph.ingest.extraction import extractor_by_name

    return extractor_by_name(value) if isinstance(value, str) else value


def _resolver(value: ResolutionStrategy | str) -> ResolutionStrategy:
    from evigraph.ingest.resolution import resolver_by_name

    return resolver_by_name(value) if isinstance(value, str) else value


def _progress(progress: bool | IngestProgress | None) -> tuple[IngestProgress, bool]:
    """The ingest's watcher, and whether this call made it (and so closes it).

    The default bar is on only when stderr is a terminal, so logs and pipes get no bar.
    """
    from evigraph.ingest.progress import IngestProgress, ProgressBar

    if isinstance(progress, IngestProgress):
        return progress, False
    if progress is None:
        progress = sys.stderr.isatty()
    return (ProgressBar() if progress else IngestProgress()), True
