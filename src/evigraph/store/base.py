"""The store contract: domain operations on a knowledge graph, whatever engine holds it.

Ingestion, retrieval and the toolkit speak only to `GraphStore`, never to an engine, so a FalkorDB
implementation sits beside the embedded one without touching them. Operations are async, as a
server-backed engine is I/O-bound; the embedded engine runs its calls in a worker thread.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar

from evigraph.code_records import CodeChange, CodeGraph
from evigraph.errors import StoreError
from evigraph.integrity_records import IntegrityReport
from evigraph.models import (
    DEFAULT_WALK,
    DocumentVersion,
    EntityHit,
    ExtractedEntity,
    ExtractedRelation,
    GraphWalk,
    Neighbour,
    PassageHit,
    SourceRecord,
    StoreCounts,
    StoredDocument,
    TableInfo,
    ThemeRecord,
    WalkBounds,
)
from evigraph.store.compaction import CompactProgress, CompactReport
from evigraph.store.graph_rewrite import GraphRewriteStore
from evigraph.store.keys import KeyStore
from evigraph.store.merging import EntityMerge, EntityRecord, MergeOutcome
from evigraph.store.properties import PropertyStore
from evigraph.store.ranking import EntityVector, RankingRow, RankingText, StoreChanges
from evigraph.trace_records import (
    DecisionRecord,
    DecisionState,
    DecisionText,
    EventRecord,
    EventSummary,
    NewDecision,
    NewEvent,
    NewStep,
    NewSupport,
    ReviewProgress,
    StepRecord,
    StepState,
    SupportRecord,
    TaskRecord,
    TraceRequest,
)

if TYPE_CHECKING:
    from evigraph.store.index_files import IndexFiles

IndexProgress = Callable[[str, int, int], None]
"""Told `(index name, indexes done, indexes in all)` as derived indexes are saved (`GraphStore.save_indexes`)."""

T = TypeVar("T")

EXTRACTION_KIND = "extraction"
"""The kind of cached LLM results the extraction cache held before it held others (`cached_extractions`)."""


@dataclass(frozen=True)
class VectorSearch:
    """The nearest passages, and how similar the query is to the passages searched as a whole.

    The mean and spread come from the same product that ranks the passages, so they cost nothing
    more; they are the background a best hit is judged against (`evigraph.retrieval.match`).
    """

    hits: list[tuple[str, float]] = field(default_factory=list)
    """(passage id, cosine similarity), nearest first."""
    passages: int = 0
    """Passages compared (every passage with a vector); 0 when none has one."""
    mean: float = 0.0
    """Mean cosine of the query with those passages."""
    std: float = 0.0
    """Their standard deviation."""


@dataclass(frozen=True)
class TermCounts:
    """How many passages contain each term, out of how many (a term's document frequency)."""

    passages: int
    counts: dict[str, int]
    """Term -> passages containing it; every term asked is a key, 0 when no passage has it."""


MAX_CAUSES = 20
"""Review causes a store keeps per decision: the first ones say why; a document edited daily must
not grow a decision's record without bound."""


def opened(held: T | None) -> T:
    """What an open store holds (its executor, its connection), or the error saying to open it first."""
    if held is None:
        raise StoreError("the store is not open", hint="use `async with` or call open() first")
    return held


class GraphStore(PropertyStore, KeyStore, GraphRewriteStore, ABC):
    """One knowledge base: documents, passages, entities and relations.

    Writes are atomic per call: `write_versions` replaces every given document's previous
    version in one transaction, so a crash leaves each document at its old or its new version,
    never half of one. Reads run in read-only transactions, so the engine itself refuses a
    write smuggled into a query.
    """

    read_only: bool

    write_group_passages: int = 0
    """How many passages an ingest may gather into one `write_versions` call, growing with the
    knowledge base up to this (0: one call per processed batch). A store whose write costs grow with
    the size of what it already holds (the embedded engine rewrites whole tables at checkpoints)
    writes fewer, larger transactions as it grows; see `evigraph.ingest.pipeline`."""

    writes_on_this_machine: bool = True
    """Whether the store's writes run on the ingesting machine's cores (an embedded engine) rather
    than on a server's. An ingest into a server gives extraction a worker process early
    (`evigraph.ingest.extraction.offload`); one into an engine here, whose writes already keep
    the cores busy, does so only for large batches while an embedding model shares the cores."""

    writes_at_once: int = 1
    """How many `write_versions` calls one ingest may have running at once. One for a store whose
    engine must not be written beside anything else; more where the server takes concurrent
    writes whole (each query alone) and the client's share of one write (spelling its
    parameters, reading the reply) can overlap the server's share of another."""

    @abstractmethod
    async def open(self) -> None:
        """Connect, creating the knowledge base when writable and absent."""

    @abstractmethod
    async def close(self) -> None: ...

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -- documents ---------------------------------------------------------------------------

    @abstractmethod
    async def get_documents(self, keys: Sequence[str]) -> dict[str, StoredDocument]:
        """The stored current version of each key that exists."""

    @abstractmethod
    async def list_documents(self, limit: int = 100, offset: int = 0) -> list[StoredDocument]: ...

    @abstractmethod
    async def write_versions(self, versions: Sequence[DocumentVersion]) -> list[StoredDocument]:
        """Write new versions of documents, replacing their previous versions in one step.

        Old passages and mentions go; relations lose the old passages as sources, and extracted ones
        go when none remain (an agent's relation stays, as it was before any passage stated it);
        extracted entities that nothing mentions any more go. A key's version numbers only grow,
        across deletes too: a passage id (which names the version) never names two texts.
        """

    @abstractmethod
    async def delete_document(self, key: str) -> bool:
        """Remove a document the way a replacement removes its old version; False if absent. The
        key's highest version number is kept: an ingest after the delete numbers past it."""

    @abstractmethod
    async def check(self, repair: bool = False) -> IntegrityReport:
        """Find damage a crash or an engine fault left (ghost edges, orphans, stray passages); fix it on repair."""

    @abstractmethod
    async def compact(self, progress: CompactProgress | None = None) -> CompactReport:
        """Give back the space deletes and rewrites left in the knowledge base, keeping every row.

        Whole-graph maintenance for the operator, never an agent's tool. A store that must take its
        data offline to do it refuses while another process uses the knowledge base, and on any
        failure leaves it as it was; one whose engine reclaims space itself reports `replaced=False`.
        The store stays open (on the compacted data) afterwards, unless another process opened the
        replaced file first: then it is closed and `reopen_error` says why.
        """

    # -- reads -------------------------------------------------------------------------------

    @abstractmethod
    async def counts(self) -> StoreCounts: ...

    async def holds_documents(self) -> bool:
        """Whether the whole knowledge base holds a document, whatever part of it this store shows.

        For decisions about the shared graph (may a first ontology replace the default one?),
        which a scope hiding what others ingested must not sway.
        """
        return (await self.counts()).documents > 0

    @abstractmethod
    async def search_passages(self, query: str, limit: int = 10) -> list[PassageHit]:
        """Full-text (BM25) search over passages."""

    @abstractmethod
    async def neighbours(self, entity_ids: Sequence[str], hops: int = 1, limit: int = 50) -> list[Neighbour]:
        """Relations reachable from the given entities, nearest hop first."""

    @abstractmethod
    async def cypher_query(
        self, cypher: str, params: dict[str, Any] | None = None, limit: int = 100, timeout_ms: int = 10_000
    ) -> list[dict[str, Any]]:
        """Run read-only Cypher within `timeout_ms`; writes are refused by the engine.

        Rows come back JSON-safe and without engine internals (node ids, vectors, index text), so
        callers show them as they are. Refusals raise `CypherRefused`, running out of time
        `QueryTimeout`, other failures `ReadOnlyQueryError`, each with a hint.
        """

    @abstractmethod
    def cypher_guide(self) -> str:
        """How to write `query` Cypher for this engine: tables, properties, an example."""

    # -- retrieval ---------------------------------------------------------------------------

    @abstractmethod
    async def passages_by_ids(self, ids: Sequence[str]) -> list[PassageHit]:
        """Passages by id, in the order asked; unknown ids are skipped."""

    @abstractmethod
    async def passages_for_entities(self, entity_ids: Sequence[str], per_entity: int = 3) -> list[tuple[str, str]]:
        """(entity id, passage id) pairs: passages that mention each entity."""

    @abstractmethod
    async def search_entities(self, query: str, limit: int = 10) -> list[EntityHit]:
        """Full-text search over entity names and descriptions."""

    @abstractmethod
    async def entities_by_ids(self, ids: Sequence[str]) -> list[EntityHit]: ...

    @abstractmethod
    async def entities_named(self, phrases: Sequence[str]) -> dict[str, list[str]]:
        """Entity ids whose name or alias equals each phrase (after normalisation)."""

    @abstractmethod
    async def entities_for_passages(self, passage_ids: Sequence[str]) -> list[tuple[str, str]]:
        """(passage id, entity id) pairs: the entities each passage mentions."""

    @abstractmethod
    async def relations_for_passages(self, passage_ids: Sequence[str], limit: int = 50) -> list[Neighbour]:
        """Relations stated in the given passages."""

    # -- embeddings --------------------------------------------------------------------------

    @abstractmethod
    async def embedding_model(self) -> tuple[str, int] | None:
        """(model name, dimension) the passages are embedded with, or None."""

    @abstractmethod
    async def set_embedding_model(self, name: str | None, dimension: int = 0) -> None:
        """Record the model; None clears every stored vector so another model can take over."""

    @abstractmethod
    async def pending_embeddings(self, limit: int = 256) -> list[tuple[str, str]]:
        """(passage id, text) of passages without a vector."""

    @abstractmethod
    async def count_pending_embeddings(self) -> int: ...

    @abstractmethod
    async def write_embeddings(self, rows: Sequence[tuple[str, Sequence[float]]]) -> None: ...

    @abstractmethod
    async def vector_search(self, vector: Sequence[float], limit: int = 10) -> list[tuple[str, float]]:
        """(passage id, cosine similarity) of the nearest passages."""

    @abstractmethod
    async def vector_search_stats(self, vector: Sequence[float], limit: int = 10) -> VectorSearch:
        """`vector_search`, with the mean and spread of the query's cosine to every passage with a
        vector, computed in the pass that ranks them (a second pass would cost a second search)."""

    @abstractmethod
    async def search_facts(self, vector: Sequence[float], limit: int = 10) -> list[tuple[Neighbour, float]]:
        """Relations whose facts are nearest `vector`, best first, with the cosines (none unembedded)."""

    @abstractmethod
    async def term_counts(self, terms: Sequence[str]) -> TermCounts:
        """How many current passages contain each term, as `passage_terms` reads a passage.

        A passage is read with its document's title and its section path, as full-text search
        reads it. Whole-corpus counts are what an IDF needs; they must cost a look-up per term,
        not a scan per question.
        """

    # -- graph ranking's inputs (store/ranking.py) ---------------------------------------------

    @abstractmethod
    async def pending_ranking_texts(self, limit: int = 256, *, facts: bool = True) -> list[RankingText]:
        """Bridge sentences, entity names and (with `facts`) relation facts stored without a vector;
        cleared by `set_embedding_model(None)`."""

    @abstractmethod
    async def write_ranking_vectors(self, rows: Sequence[tuple[RankingText, Sequence[Sequence[float]]]]) -> None:
        """Store one vector per text of each `RankingText`, in order."""

    @abstractmethod
    async def ranking_rows(self, documents: Sequence[str] | None = None) -> list[RankingRow]:
        """The passages of the current versions of `documents` (every document when None)."""

    @abstractmethod
    async def entity_vectors(self, ids: Sequence[str] | None = None) -> list[EntityVector]:
        """Name vectors of the entities `ids` (every embedded entity when None)."""

    @abstractmethod
    async def ranking_changes(self, since: str | None) -> StoreChanges:
        """Documents and entity vectors changed since the token `since`, or `full` to reload all."""

    def saved_index_files(self) -> IndexFiles | None:
        """Where indexes retrieval derives from this store are kept between opens
        (`store/index_files.py`), labelled with `write_generation`; None: nowhere (a scoped view,
        whose reads differ from the whole knowledge base's)."""
        return None

    async def write_generation(self) -> str | None:
        """The label of the data as it is now: every write that changes what retrieval derives
        moves it on. None when not known: nothing is saved or read then."""
        return None

    async def save_indexes(self, progress: IndexProgress | None = None, *, facts: bool = False) -> None:
        """Save what retrieval derives from the store beside it, at its write generation, when a
        write since the open left them stale (a writer's `close` does it anyway; fact vectors only
        with `facts`, for a strategy that `searches_fact_vectors`). It takes about one full rebuild
        (minutes at 100,000 passages), so a caller with someone watching is told `progress(name,
        done, total)` before each index and once with `done == total`."""
        return None

    # -- graph navigation and agent writes ---------------------------------------------------

    @abstractmethod
    async def document_passages(self, key: str, limit: int = 5000) -> list[PassageHit]:
        """The passages of a document's current version, in reading order."""

    @abstractmethod
    async def explore(self, entity_id: str, bounds: WalkBounds = DEFAULT_WALK) -> GraphWalk:
        """Relations around one entity, bounded, saying which bound cut the walk."""

    @abstractmethod
    async def relation_weights(self) -> dict[tuple[str, str], float]:
        """Entity pairs joined by relations and how many relations join each (for themes)."""

    @abstractmethod
    async def upsert_entities(self, entities: Sequence[ExtractedEntity], source: str) -> None:
        """Create or merge entities written by an agent; `source` is their `_source` provenance."""

    @abstractmethod
    async def upsert_relations(self, relations: Sequence[tuple[ExtractedRelation, Sequence[str]]], source: str) -> None:
        """Create or merge relations written by an agent, each with its supporting passage ids."""

    # -- code structure (evigraph/code_records.py) ---------------------------------------------
    #
    # Repo, Module, Class and Function nodes joined by CONTAINS, IMPORTS, CALLS and INHERITS, and
    # (:Chunk)-[:MENTIONS]->(symbol) from passages naming a symbol. No document scope applies to
    # code: a scoped store shows it only when its scope hides nothing.

    @abstractmethod
    async def code_graph(self) -> CodeGraph:
        """Every repository, symbol (with its raw refs) and derived edge, for resolution to diff against."""

    @abstractmethod
    async def write_code(self, change: CodeChange) -> None:
        """Apply one ingest's change: removed symbols go with every edge touching them, new ones come
        with their CONTAINS edge, derived edges are removed and added as listed."""

    @abstractmethod
    async def search_code(self, query: str, limit: int = 10) -> list[EntityHit]:
        """Full-text search over symbols' names, signatures and docstrings; hits are labelled by kind."""

    @abstractmethod
    async def code_by_ids(self, ids: Sequence[str]) -> list[EntityHit]:
        """Symbols by id, in the order asked; unknown ids are skipped."""

    @abstractmethod
    async def code_mentions(self, symbol_ids: Sequence[str], per_symbol: int = 3) -> list[tuple[str, str]]:
        """(symbol id, passage id) pairs: current passages that name each symbol."""

    @abstractmethod
    async def explore_code(self, symbol_id: str, bounds: WalkBounds = DEFAULT_WALK) -> GraphWalk:
        """The relationships around one symbol (CONTAINS both ways, CALLS, IMPORTS, INHERITS), bounded
        as `explore` is and saying which bound cut the walk; no nodes when no symbol has that id."""

    @abstractmethod
    async def link_code_mentions(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Record that passages name symbols, (passage id, symbol id) each; pairs already linked or naming
        a passage or symbol that is gone are skipped."""

    # -- resolution at finalize (store/merging.py) ---------------------------------------------

    @abstractmethod
    async def entity_records(self) -> list[EntityRecord]:
        """Every entity of the whole graph with its names, label and passage count, ordered by id.

        Resolution at finalize blocks on all of them at once; a scope does not narrow it, as
        duplicates span documents.
        """

    @abstractmethod
    async def merge_entities(self, merges: Sequence[EntityMerge]) -> MergeOutcome:
        """Fold each merge's entities into its survivor, all merges in one transaction.

        The survivor keeps every alias, description and declared property value it lacks (with
        who set it); mentions and relations are re-pointed at it, those it already had folded in
        (spans, sources, properties, fact vectors kept), relations to itself dropped. Each
        merged-away id is recorded; later writes (`write_versions`, `upsert_entities`,
        `upsert_relations`) re-point it at its survivor. A merge naming a gone entity is skipped.
        """

    @abstractmethod
    async def entity_redirects(self) -> dict[str, str]:
        """Every merged-away entity id -> the survivor later writes re-point it at."""

    # -- traces: an agent's tasks, events and steps (store/traces.py) -------------------------
    #
    # Every call names its project, and reads never cross projects. A document scope does not
    # apply: traces are the agent's own record, not documents. Each write is one transaction; a
    # write given a `TraceRequest` already saved returns the saved result and writes nothing.
    # A task another call names that the project lacks raises `TaskNotFoundError`.

    @abstractmethod
    async def create_task(
        self, project: str, agent: str, name: str, goal: str, request: TraceRequest | None = None
    ) -> TaskRecord:
        """The task `name`, created with `goal` when new; another goal under the name raises `TaskExistsError`."""

    @abstractmethod
    async def get_task(self, project: str, name: str) -> TaskRecord | None: ...

    @abstractmethod
    async def list_tasks(self, project: str, after_name: str | None = None, limit: int = 50) -> list[TaskRecord]:
        """The project's tasks named after `after_name`, by name, at most `limit`."""

    @abstractmethod
    async def record_event(
        self, project: str, agent: str, task: str, event: NewEvent, request: TraceRequest | None = None
    ) -> EventSummary:
        """Append an event, numbered one past the task's last (1 for the first)."""

    @abstractmethod
    async def list_events(self, project: str, task: str, after_seq: int = 0, limit: int = 50) -> list[EventSummary]:
        """Events numbered above `after_seq`, in order, at most `limit`."""

    @abstractmethod
    async def fetch_event(self, project: str, task: str, seq: int) -> EventRecord | None: ...

    @abstractmethod
    async def set_step(
        self,
        project: str,
        agent: str,
        task: str,
        step: NewStep,
        result: NewEvent | None = None,
        request: TraceRequest | None = None,
    ) -> StepRecord:
        """Create or replace the step `step.name`.

        `result`, when given, is appended as an event in the same transaction and becomes the
        step's `result_event_seq`; a `result_event_seq` given instead must name an event of the
        task (`TaskNotFoundError` otherwise).
        """

    @abstractmethod
    async def list_steps(
        self, project: str, task: str, state: StepState, after_name: str | None = None, limit: int = 50
    ) -> list[StepRecord]:
        """Steps in `state` named after `after_name`, by name, at most `limit`."""

    # -- decisions: conclusions resting on passages and other decisions ----------------------
    #
    # Every call names its project, and no read crosses projects. The store checks, in the
    # write's transaction, what the caller cannot: a passage support's document is still at the
    # version it was read from (`StaleEvidenceError`), a decision cited or replaced still stands
    # (`DecisionStateError`), the task exists (`TaskNotFoundError`). A document write or delete
    # flags, in its own transaction, every standing decision with a current support on a passage
    # of the version it replaced; `continue_decision_review` carries the flags to what rests on them.

    @abstractmethod
    async def record_decision(
        self, project: str, agent: str, decision: NewDecision, request: TraceRequest | None = None
    ) -> DecisionRecord:
        """A new active decision; with `decision.supersedes`, the old one becomes superseded."""

    @abstractmethod
    async def reaffirm_decision(
        self,
        project: str,
        agent: str,
        decision_id: str,
        supports: Sequence[NewSupport],
        explanation: str,
        request: TraceRequest | None = None,
    ) -> DecisionRecord:
        """Active again on `supports` (passages), which replace its passage supports; its decision
        supports stay and must all be active."""

    @abstractmethod
    async def reject_decision(
        self, project: str, agent: str, decision_id: str, reason: str, request: TraceRequest | None = None
    ) -> DecisionRecord:
        """A person's override: rejected, history kept, and what rests on it queued for review."""

    @abstractmethod
    async def get_decisions(self, project: str, ids: Sequence[str]) -> list[DecisionRecord]:
        """The project's decisions among `ids`, in the order asked; unknown ids are left out."""

    @abstractmethod
    async def list_decisions(
        self,
        project: str,
        task: str | None = None,
        states: Sequence[DecisionState] | None = None,
        after_id: str | None = None,
        limit: int = 50,
    ) -> list[DecisionRecord]:
        """Decisions (of `task`, in `states`) by creation time, those after `after_id`, at most `limit`."""

    @abstractmethod
    async def list_support_history(
        self, project: str, decision_id: str, after_ordinal: int = -1, limit: int = 20
    ) -> list[SupportRecord]:
        """Every support the decision was ever given, current or replaced, by ordinal."""

    @abstractmethod
    async def decision_texts(self, project: str, states: Sequence[DecisionState]) -> list[DecisionText]:
        """The text and vector of each decision in `states`, for `search_decisions` to rank."""

    @abstractmethod
    async def list_conflicts(self, project: str, limit: int = 20) -> list[list[DecisionRecord]]:
        """Groups of active decisions sharing a choice_key with different conclusions (compared
        trimmed and case-folded), by choice_key, at most `limit` groups."""

    @abstractmethod
    async def continue_decision_review(self, project: str | None = None, limit: int = 20) -> ReviewProgress:
        """Examine up to `limit` queued flagged decisions (of `project`, or of every project) and
        flag the active decisions resting on them, queueing those in turn."""

    # -- bookkeeping -------------------------------------------------------------------------

    @abstractmethod
    async def get_setting(self, key: str) -> str | None: ...

    @abstractmethod
    async def set_setting(self, key: str, value: str | None) -> None: ...

    @abstractmethod
    async def log_sources(self, records: Sequence[SourceRecord]) -> None:
        """Remember each key's last outcome (written, failed, deleted) for `source_status`."""

    @abstractmethod
    async def source_log(self, keys: Sequence[str]) -> dict[str, SourceRecord]: ...

    @abstractmethod
    async def failed_sources(self, limit: int = 100) -> list[SourceRecord]:
        """Keys whose last ingest failed, with the reason, newest first.

        A folder ingest that failed a few files must not look like a complete one in `status`.
        """

    @abstractmethod
    async def count_failed_sources(self) -> int:
        """How many keys `failed_sources` would list without a limit."""

    @abstractmethod
    async def cached_extractions(self, keys: Sequence[str], kind: str = EXTRACTION_KIND) -> dict[str, str]:
        """LLM results stored under `keys` in `kind`, those found.

        A key hashes what a result depends on (for an extraction, a passage's text, the ontology,
        the model, the prompt), so a changed document costs model calls only for its changed
        passages. `kind` says which caller's results ("extraction", "context"): one cache serves
        them all, and a key of one kind never answers for another.
        """

    @abstractmethod
    async def cache_extractions(self, entries: dict[str, str], kind: str = EXTRACTION_KIND) -> None:
        """Store LLM results of `kind` by key (text, often JSON); a key already stored is overwritten."""

    @abstractmethod
    async def replace_themes(self, themes: Sequence[ThemeRecord]) -> None: ...

    @abstractmethod
    async def themes(self) -> list[ThemeRecord]: ...

    @abstractmethod
    async def schema_tables(self) -> list[TableInfo]:
        """Node and relationship tables with properties, row counts and sample keys, for Cypher authors."""
