"""What every part of the knowledge base shares: options, the lazily opened store, strategies.

The store opens lazily: a write creates the knowledge base, a read of one that was never written
fails with a hint and creates nothing. Reads (`reads.py`) and writes (`writes.py`) build on this.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from pydantic import BaseModel, Field

from evigraph.errors import ConfigurationError, KnowledgeBaseMissingError
from evigraph.gate import Gate
from evigraph.ingest.graph_resolution.base import ResolutionReport
from evigraph.ingest.loaders.common import DEFAULT_MAX_BYTES
from evigraph.ingest.resolution import ExactMatchResolution, ResolutionStrategy, resolver_by_name
from evigraph.ingest.writing import InFlight
from evigraph.kb.llm import LLMChoice
from evigraph.limits import Limits
from evigraph.models import LLMSpend, Ontology, SourceRecord
from evigraph.providers.embedders import Embedder
from evigraph.store.base import GraphStore, IndexProgress
from evigraph.store.location import StoreLocation

if TYPE_CHECKING:  # the ingest pipeline's parts, imported when an ingest asks for them (not by a search)
    from evigraph.ingest.chunking.base import ChunkingStrategy
    from evigraph.ingest.extraction.base import ExtractionStrategy
    from evigraph.ingest.loaders.base import LoaderStrategy
    from evigraph.ingest.pipeline import Strategies
    from evigraph.ingest.sources import SourceFile
    from evigraph.providers.llms import LLM
    from evigraph.retrieval.graph_stage import GraphStage
    from evigraph.retrieval.recipe import RetrievalRecipe
    from evigraph.retrieval.strategy import Reranker, RetrievalStrategy


STATUS_FAILED_LISTED = 100
"""Failed sources a status lists with their reasons (newest first); `failed_documents` counts them all."""


log = logging.getLogger(__name__)


class Status(BaseModel):
    """What a knowledge base holds, and which sources its last ingests could not read."""

    db: str
    engine: str
    documents: int
    passages: int
    entities: int
    relations: int
    mentions: int
    labels: dict[str, int]
    relation_types: dict[str, int]
    code_repos: int = Field(0, description="repositories whose code was ingested (ingest_code)")
    code_files: int = Field(0, description="source files held as code, one Module node each")
    code_symbols: dict[str, int] = Field(
        default_factory=dict, description="classes and functions (methods included) per kind; empty without code"
    )
    embedding_model: str | None = None
    embedding_dimension: int = 0
    pending_embeddings: int = 0
    themes: int = 0
    failed_documents: int = Field(0, description="sources whose last ingest failed (an older version may be stored)")
    failed_sources: list[SourceRecord] = Field(
        default_factory=list, description=f"the newest {STATUS_FAILED_LISTED} of them, each with its error"
    )
    llm: LLMSpend | None = Field(None, description="what LLM calls building the graph cost, summed over every session")


class FinalizeReport(BaseModel):
    """What `finalize` did: documents typed again, passages embedded, entities resolved and themes found."""

    retyped: int = Field(0, description="documents whose graph changed when their names were typed again")
    embedded: int = 0
    themes: int = 0
    resolution: ResolutionReport | None = Field(None, description="candidate pairs, merges and LLM spend")


ONTOLOGY_SETTING = "ontology"
EMBEDDER_SETTING = "embedder"
"""The spec of the embedder the stored vectors come from (`Embedder.spec`), for later sessions."""


class KnowledgeBaseCore:
    """Options, the store and the strategies; `KnowledgeBase` adds the reads and writes."""

    def __init__(
        self,
        db: str | os.PathLike[str] | StoreLocation | None = None,
        *,
        store: GraphStore | None = None,
        engine: str = "auto",
        read_only: bool = False,
        scope: Sequence[str] | None = None,
        ontology: Ontology | None = None,
        chunker: ChunkingStrategy | str | None = None,
        extractor: ExtractionStrategy | str | None = None,
        resolver: ResolutionStrategy | str | None = None,
        loaders: Sequence[LoaderStrategy] = (),
        embedder: Embedder | str | None = None,
        llm: LLM | str | None = None,
        retrieval: RetrievalStrategy | RetrievalRecipe | str | None = None,
        reranker: Reranker | str | None = None,
        max_file_bytes: int = DEFAULT_MAX_BYTES,
        batch_documents: int = 64,
        limits: Limits | Mapping[str, Any] | None = None,
        vector_codec: str | None = None,
    ) -> None:
        from evigraph.store.caches import vector_codec as resolve_vector_codec

        self.vector_codec = resolve_vector_codec(vector_codec)
        """How passage vectors are held for search: float32, or int8 (a quarter of the memory;
        `store.caches.VECTOR_CODECS`); else EVIGRAPH_VECTOR_CODEC. A FalkorDB server searches its own index."""
        self.limits = Limits.of(limits)
        """The operator's limits (`evigraph.limits`): every surface serving this knowledge base to
        agents reads them here, so one setting bounds its toolkit, MCP and REST alike."""
        self.location = StoreLocation.parse(db)
        if self.location.server:
            from evigraph.store.opening import server_vector_codec

            self.vector_codec = server_vector_codec(self.location, vector_codec)
        self.path: Path | None = self.location.path
        """The database file of an embedded knowledge base (None for a server one)."""
        self.scope: tuple[str, ...] = tuple(scope or ())
        """Document keys or globs every read is limited to; empty: the whole knowledge base."""
        self.read_only = read_only
        self.engine = engine
        self._store = store
        self._opened = False
        self._ontology = ontology
        self._chunker = chunker
        self._extractor = extractor
        self._resolver = resolver_by_name(resolver) if isinstance(resolver, str) else resolver or ExactMatchResolution()
        self._loaders = tuple(loaders)
        if isinstance(embedder, str):  # a spec ("minilm", "none"): refused now if unknown or not installed
            from evigraph.providers.embedders import embedder_by_name

            self._embedder_chosen = bool(embedder.strip())  # "" is "not set", as in EVIGRAPH_EMBEDDER
            embedder = embedder_by_name(embedder)
        else:
            self._embedder_chosen = embedder is not None
        self._embedder: Embedder | None = embedder
        self._embedder_spec: str | None = None
        """The recorded embedder's spec, built on first use (see `_recall_embedder`)."""
        self._unrebuildable: str | None = None  # a recorded model evigraph cannot build by name
        self._llm = LLMChoice(llm)
        self._retrieval = _retrieval_strategy(retrieval)
        self._reranker = _reranker(reranker)
        if max_file_bytes <= 0:
            raise ConfigurationError("max_file_bytes must be positive", hint="e.g. max_file_bytes=50 * 2**20")
        self.max_file_bytes = max_file_bytes
        if batch_documents <= 0:
            raise ConfigurationError("batch_documents must be positive", hint="e.g. batch_documents=64 (the default)")
        self.batch_documents = batch_documents
        self._gate = Gate()
        self._in_flight = InFlight()
        """Document keys being ingested now, for `source_status`."""
        self._graph_stage: GraphStage | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def save_indexes(self, progress: IndexProgress | None = None) -> None:
        """Save the indexes retrieval derives from the knowledge base beside it now, telling
        `progress(name, done, total)` before each: a writer's `close` saves whatever is stale
        anyway, which at 100,000 passages takes minutes a caller may want to show."""
        if self._store is not None and self._opened and not self._store.read_only:
            await self._store.save_indexes(progress, facts=self.retrieval.searches_fact_vectors)
            await self._save_ranking_snapshot()

    async def _save_ranking_snapshot(self) -> None:
        """Graph ranking's snapshot, if a question loaded it: the store's own save leaves it out."""
        if self._store is None or self._graph_stage is None or self._store.read_only:
            return
        try:
            await self._graph_stage.index.save(self._store)
        except Exception as exc:  # the next open loads it again; a close must not fail for it
            log.warning("could not save graph ranking's snapshot of %s (%s)", self.location, exc)

    async def close(self) -> None:
        await self._llm.aclose()
        if self._store is not None and self._opened:
            try:
                if self.retrieval.searches_fact_vectors:  # the store's own close leaves fact vectors out
                    await self.save_indexes()
                else:
                    await self._save_ranking_snapshot()
            finally:
                await self._store.close()
            self._opened = False

    async def _open(self, *, for_write: bool, create: bool = True) -> GraphStore:
        """The store, opened. Only a write that adds content (`create`) may bring a new file into
        being: a read, a check or a delete on a mistyped path must say so, not leave an empty one."""
        if self._store is None:
            from evigraph.store import connect

            if (not for_write or not create) and not self._exists():
                raise KnowledgeBaseMissingError(
                    f"no knowledge base at {self.location}",
                    hint=f"create it with `evigraph ingest PATH --db {self.location}` or pass the right --db",
                )
            self._store = connect(
                self.location,
                read_only=self.read_only,
                scope=self.scope,
                engine=self.engine,
                vector_codec=self.vector_codec,
            )
        if for_write and self._store.read_only:
            raise ConfigurationError(
                f"{self.location} is open read-only", hint="open the KnowledgeBase with read_only=False to write"
            )
        if not self._opened:
            await self._store.open()
            self._opened = True
            if self._ontology is None:
                stored = await self._store.get_setting(ONTOLOGY_SETTING)
                if stored:
                    self._ontology = Ontology.model_validate_json(stored)
            if not self._embedder_chosen:
                await self._recall_embedder(self._store)
        await self._llm.opened(self._store, writable=for_write)
        return self._store

    async def _recall_embedder(self, store: GraphStore) -> None:
        """Use the embedder the knowledge base was embedded with when none was chosen.

        Without this, a knowledge base ingested with `--embedder minilm` was searched full-text
        only unless every command repeated the flag, and documents added later got no vectors.
        The model itself loads on first use, so commands that never embed stay quick.
        """
        stored = await store.embedding_model()
        if stored is None:
            return
        spec = await store.get_setting(EMBEDDER_SETTING) or _spec_of_model(stored[0])
        if spec:
            self._embedder_spec = spec
        else:
            self._unrebuildable = stored[0]

    @property
    def embedder(self) -> Embedder | None:
        """The embedder: the one given, else the one the knowledge base recorded (built on first
        use); None for full-text and graph search only.

        A knowledge base embedded by a model evigraph cannot build by name (a class of your own)
        refuses to search without it instead of quietly leaving vectors out.
        """
        if self._embedder is None and self._embedder_spec is not None:
            from evigraph.providers.embedders import embedder_by_name

            self._embedder = embedder_by_name(self._embedder_spec)
            self._embedder_spec = None
        if self._embedder is None and self._unrebuildable is not None:
            raise ConfigurationError(
                f"{self.location} is embedded with {self._unrebuildable!r}, which evigraph cannot load by name",
                hint="pass it again: --embedder SPEC on the command line, KnowledgeBase(embedder=...) in Python; "
                "or `none` for full-text and graph search only",
            )
        return self._embedder

    @property
    def llm(self) -> LLM | None:
        """The LLM: the one given, else the one the knowledge base recorded (built on first use,
        its URL and key read from the environment then); None without one."""
        return self._llm.get()

    def _exists(self) -> bool:
        """Whether there is a knowledge base to read; a server location is asked when opened."""
        return self.path is None or self.path.exists()

    async def open(self, *, for_write: bool = False) -> None:
        """Open now rather than at the first call: a server checks its database at start.

        A read of a knowledge base that was never written raises and creates nothing.
        """
        await self._open(for_write=for_write)

    @property
    def loaders(self) -> tuple[LoaderStrategy, ...]:
        """User loaders, consulted before the built-in ones."""
        return self._loaders

    @property
    def store(self) -> GraphStore | None:
        """The store once opened, for code below the agent protocol (benchmarks, maintenance).

        Tools, the MCP server and the CLI never use it: they go through this class's methods,
        which hold the write gate and speak in evidence, not engine rows.
        """
        return self._store

    # -- strategies --------------------------------------------------------------------------

    async def load_ontology(self) -> Ontology:
        """The ontology extraction uses: the one passed in, else the one stored, else the default."""
        if self._ontology is None and (self._store is not None or self._exists()):
            await self._open(for_write=False)
        return self.ontology

    @property
    def ontology(self) -> Ontology:
        if self._ontology is None:
            from evigraph.ingest.ontology import DEFAULT_ONTOLOGY

            self._ontology = DEFAULT_ONTOLOGY
        return self._ontology

    @property
    def file_extensions(self) -> frozenset[str]:
        """What folder walks and globs pick up: the built-in loaders' extensions and the custom loaders'."""
        from evigraph.ingest.loaders import SUPPORTED_EXTENSIONS

        custom = (e.lower() if e.startswith(".") else f".{e.lower()}" for ld in self._loaders for e in ld.extensions)
        return frozenset({*SUPPORTED_EXTENSIONS, *custom})

    @property
    def retrieval(self) -> RetrievalStrategy:
        """How `retrieve` (and so `answer`) searches: the strategy given, else the default recipe's."""
        if self._retrieval is None:
            from evigraph.retrieval.retriever import MultiPathRetrieval

            self._retrieval = MultiPathRetrieval()
        return self._retrieval

    @property
    def reranker(self) -> Reranker | None:
        """What reorders `retrieve`'s passages after the strategy found them; None keeps its order."""
        return self._reranker

    def graph_stage(self) -> GraphStage:
        """Graph ranking's state for this knowledge base, made on first use."""
        if self._graph_stage is None:
            from evigraph.retrieval.graph_stage import GraphStage

            self._graph_stage = GraphStage(self.ontology)
        return self._graph_stage

    def _extraction(self) -> ExtractionStrategy:
        """The extractor, resolved from its name (or the default) on first use."""
        from evigraph.ingest.extraction import default_extractor, extractor_by_name

        if isinstance(self._extractor, str):
            self._extractor = extractor_by_name(self._extractor)
        self._extractor = self._extractor or default_extractor()
        return self._extractor

    def _strategies(self) -> Strategies:
        from evigraph.ingest.chunking import StructuralChunking, chunker_by_name
        from evigraph.ingest.loaders import loader_for
        from evigraph.ingest.pipeline import Strategies

        if isinstance(self._chunker, str):
            self._chunker = chunker_by_name(self._chunker)
        chunker = self._chunker = self._chunker or StructuralChunking()
        extractor = self._extraction()
        custom = self._loaders
        max_bytes = self.max_file_bytes

        def pick(src: SourceFile) -> LoaderStrategy:
            return loader_for(src.path, custom, max_bytes=max_bytes)

        return Strategies(
            chunker=chunker,
            extractor=extractor,
            resolver=self._resolver,
            ontology=self.ontology,
            loader_for=pick,
            extensions=sorted(self.file_extensions),
            embedder=self.embedder,
        )


def _retrieval_strategy(given: RetrievalStrategy | RetrievalRecipe | str | None) -> RetrievalStrategy | None:
    """The strategy `KnowledgeBase(retrieval=...)` names: a strategy as given, a recipe or a recipe's
    name run by `MultiPathRetrieval` (an unknown name refused now, with the names); None: the default."""
    if given is None:
        return None
    from evigraph.retrieval.recipe import RetrievalRecipe
    from evigraph.retrieval.retriever import MultiPathRetrieval
    from evigraph.retrieval.strategy import RetrievalStrategy

    if isinstance(given, RetrievalStrategy):
        return given
    if isinstance(given, str | RetrievalRecipe):
        return MultiPathRetrieval(given)
    raise ConfigurationError(
        f"retrieval must be a RetrievalStrategy, a RetrievalRecipe or a recipe's name, not {type(given).__name__}",
        hint="e.g. KnowledgeBase(retrieval='fusion'), or a subclass of evigraph.RetrievalStrategy",
    )


def _reranker(given: Reranker | str | None) -> Reranker | None:
    """The reranker `KnowledgeBase(reranker=...)` names: as given, or built from its spec now
    ("cosine", "cross-encoder:<model>"; "" or "none": no reranker)."""
    if given is None:
        return None
    from evigraph.retrieval.rerankers import reranker_by_name
    from evigraph.retrieval.strategy import Reranker

    if isinstance(given, Reranker):
        return given
    if isinstance(given, str):
        return None if given.strip().lower() in {"", "none"} else reranker_by_name(given)
    raise ConfigurationError(
        f"reranker must be a Reranker or a reranker's name, not {type(given).__name__}",
        hint="e.g. KnowledgeBase(reranker='cosine'), or a subclass of evigraph.Reranker",
    )


def _spec_of_model(model: str) -> str | None:
    """The spec of a model recorded before specs were: knowledge bases embedded by an older
    release name only the model. A sentence-transformers hub name says how to load it; any
    other name (an OpenAI model, a folder) could mean several embedders, so it is not guessed."""
    from evigraph.providers.embedders.base import MINILM_NAME

    if model == MINILM_NAME:
        return "minilm"
    return f"sentence-transformers:{model}" if model.startswith("sentence-transformers/") else None
