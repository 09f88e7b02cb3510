"""Reading a knowledge base: retrieval, passage and entity reads, themes, Cypher, counts.

Tools, the MCP server and the CLI reach data only through these methods; each one opens the
store and hands it to a recipe in `retrieval/`, where the algorithm lives. Method names match
the tool names, so `kb.search_entities` is what the `search_entities` tool runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, get_args

from evigraph.code_records import SYMBOL_KINDS
from evigraph.evidence.ledger import EvidenceLedger
from evigraph.kb.core import STATUS_FAILED_LISTED, KnowledgeBaseCore, Status
from evigraph.kb.properties import show_properties
from evigraph.kb.spend import recorded_spend
from evigraph.limits import bounded_input
from evigraph.models import SourceRecord, SourceState, StoredDocument, WalkBounds
from evigraph.retrieval.entities import EntitySearch, Exploration
from evigraph.retrieval.navigation import Navigation, Relation
from evigraph.retrieval.passages import PassageRead, PassageSearch, SearchMode
from evigraph.retrieval.query import RetrieveInput, query_hint
from evigraph.retrieval.result import RetrievalResult
from evigraph.retrieval.schema import CypherRows, OntologyOverview
from evigraph.retrieval.themes import ThemeSearch
from evigraph.strict import build, require_at_least, require_choice

if TYPE_CHECKING:
    from evigraph.kb.answers import Answer, AnswerInput, AnswerStream, Prepared

SEARCH_MODES: tuple[str, ...] = get_args(SearchMode)
RELATIONS: tuple[str, ...] = get_args(Relation)
FRESH_LEDGER_CAPACITY = 1000
"""More than one retrieval can return at the highest max_hits (200 passages, 200 entities, 40
relations, 200 facts)."""


class ReadOps(KnowledgeBaseCore):
    """The reading half of `KnowledgeBase`."""

    async def retrieve(
        self, query: str | RetrieveInput, *, ledger: EvidenceLedger | None = None, **options: Any
    ) -> RetrievalResult:
        """Find the passages, entities, relations and facts that answer a question, each numbered.

        `options` are the other fields of `RetrieveInput`: `paths` (search paths by name; all of
        passages, exact_names, fuzzy_names, links, facts by default), `top_k` (items per section,
        1 to `limits.max_hits`, default 10) and `expand_hops` (1-5, how far `links` walks from the named entities).
        Items are numbered by `ledger` (a session's), or by a fresh one so `[n]` starts at 1.
        """
        from evigraph.ingest.gc_threshold import fewer_collections
        from evigraph.retrieval.strategy import RetrievalContext

        query = self._retrieve_input(query, options)
        store = await self._open(for_write=False)
        with fewer_collections():  # the first retrieve loads models and builds indexes (see gc_threshold)
            context = RetrievalContext(store, self.embedder, self.graph_stage())
            result = await self.retrieval.retrieve(query, context, self.reranker)
        await show_properties(store, await self.load_ontology(), result.entities, [*result.relations, *result.facts])
        ledger = ledger if ledger is not None else EvidenceLedger(FRESH_LEDGER_CAPACITY)
        ledger.cite("retrieve", result.passages)
        ledger.cite("retrieve", result.entities)
        ledger.cite("retrieve", result.relations)
        ledger.cite("retrieve", result.facts, kind="fact")
        return result

    async def answer(
        self, query: str | RetrieveInput, *, ledger: EvidenceLedger | None = None, **options: Any
    ) -> Answer:
        """An answer the LLM writes from the retrieved evidence, its `[n]` checked (`answer.verified`).

        `options` are the fields of `AnswerInput`: those of `retrieve`, `max_context_tokens`
        (the evidence's budget) and `max_answer_tokens`. Numbers come from `ledger` (a
        session's), else a fresh one. Needs an LLM (`KnowledgeBase(llm=...)`).
        """
        from evigraph.kb.answers import answer, build_query

        return await answer(await self._prepare_answer(build_query(query, options, self.limits), ledger))

    def answer_stream(
        self, query: str | RetrieveInput, *, ledger: EvidenceLedger | None = None, **options: Any
    ) -> AnswerStream:
        """`answer` as the model writes it: `async with kb.answer_stream(q) as s: async for delta in s`,
        then `s.result` is the checked `Answer`. Bad options are refused here, before anything runs."""
        from evigraph.kb.answers import AnswerStream, build_query

        chosen = build_query(query, options, self.limits)
        return AnswerStream(lambda: self._prepare_answer(chosen, ledger))

    def _retrieve_input(self, query: str | RetrieveInput, options: Mapping[str, Any]) -> RetrieveInput:
        """The query within the operator's limits (top_k up to max_hits), however it was given: a
        query built elsewhere, by the plain model or an answer's, is checked again against them."""
        fields = set(RetrieveInput.model_fields)
        given = {"question": query} if isinstance(query, str) else query.model_dump(include=fields, exclude_unset=True)
        model = bounded_input(RetrieveInput, self.limits)
        return build(model, {**given, **options}, hint=query_hint(self.limits.max_hits))

    async def _prepare_answer(self, query: AnswerInput, ledger: EvidenceLedger | None) -> Prepared:
        from evigraph.kb.answers import prepare

        await self._open(for_write=False)  # the LLM a knowledge base recorded is known once it is open
        ledger = ledger if ledger is not None else EvidenceLedger(FRESH_LEDGER_CAPACITY)
        return await prepare(query, self.llm, lambda q, led: self.retrieve(q, ledger=led), ledger)

    async def search_passages(self, query: str, *, mode: SearchMode = "hybrid", limit: int = 10) -> PassageSearch:
        """Passage snippets for plain words: lexical (BM25), semantic (vectors) or hybrid (both)."""
        from evigraph.retrieval.passages import search_passages

        require_choice("mode", mode, SEARCH_MODES)
        require_at_least("limit", limit)
        store = await self._open(for_write=False)
        return await search_passages(store, self.embedder, query, mode, limit, self.limits.max_snippet_chars)

    async def read_passages(self, ids: Sequence[str], *, max_chars: int = 4000) -> PassageRead:
        """The stored text of passages by id, each with a citation line; ids not found are listed."""
        from evigraph.retrieval.passages import read_passages

        require_at_least("max_chars", max_chars)
        store = await self._open(for_write=False)
        return await read_passages(store, ids, max_chars)

    async def navigate_document(
        self, passage: str, relation: Relation, *, limit: int = 10, max_chars: int = 12000
    ) -> Navigation:
        """Passages standing in `relation` (parent, children, siblings, ...) to one passage."""
        from evigraph.retrieval.navigation import navigate

        require_choice("relation", relation, RELATIONS)
        require_at_least("limit", limit)
        require_at_least("max_chars", max_chars)
        store = await self._open(for_write=False)
        return await navigate(store, passage, relation, limit, max_chars)

    async def search_entities(
        self, query: str, *, mode: SearchMode = "hybrid", labels: Sequence[str] | None = None, limit: int = 10
    ) -> EntitySearch:
        """Entities by name or meaning, each with passages that mention it."""
        from evigraph.retrieval.entities import search_entities

        require_choice("mode", mode, SEARCH_MODES)
        require_at_least("limit", limit)
        store = await self._open(for_write=False)
        snippet_chars = self.limits.max_snippet_chars
        found = await search_entities(store, self.embedder, query, mode, labels, limit, snippet_chars)
        await show_properties(store, await self.load_ontology(), found.hits, [])
        return found

    async def explore_relationships(
        self,
        entity: str,
        *,
        depth: int = 1,
        relation_types: Sequence[str] | None = None,
        max_nodes: int = 25,
        max_edges: int = 50,
    ) -> Exploration:
        """The relations around one entity or code symbol (its id or exact name), bounded; a symbol's
        are its code graph edges (CONTAINS, CALLS, IMPORTS, INHERITS), with the passages naming it."""
        from evigraph.retrieval.entities import explore

        for name, value in (("depth", depth), ("max_nodes", max_nodes), ("max_edges", max_edges)):
            require_at_least(name, value)
        bounds = WalkBounds(
            depth=depth,
            relation_types=tuple(relation_types) if relation_types is not None else None,
            max_nodes=max_nodes,
            max_edges=max_edges,
        )
        store = await self._open(for_write=False)
        found = await explore(store, entity, bounds, self.limits.max_snippet_chars)
        await show_properties(store, await self.load_ontology(), found.nodes, found.edges)
        return found

    async def missing_entities(self, ids: Sequence[str]) -> list[str]:
        """The ids among `ids` that name no entity (visible here)."""
        from evigraph.retrieval.entities import missing_entities

        return await missing_entities(await self._open(for_write=False), ids)

    async def missing_passages(self, ids: Sequence[str]) -> list[str]:
        """The ids among `ids` that name no current passage (visible here)."""
        from evigraph.retrieval.passages import missing_passages

        return await missing_passages(await self._open(for_write=False), ids)

    async def search_themes(self, query: str, *, limit: int = 5, support_limit: int = 3) -> ThemeSearch:
        """Themes (entity communities found at finalize) ranked for `query`, with supporting passages."""
        from evigraph.retrieval.themes import search_themes

        require_at_least("limit", limit)
        require_at_least("support_limit", support_limit)
        store = await self._open(for_write=False)
        snippet_chars = self.limits.max_snippet_chars
        return await search_themes(store, self.embedder, query, limit, support_limit, snippet_chars)

    async def cypher_query(self, query: str, params: dict[str, Any] | None = None, *, limit: int = 100) -> CypherRows:
        """Read-only Cypher, guarded and bounded by the store; errors carry a hint. The engine stops
        it at its time limit or at the read deadline (`limits.read_deadline_seconds`), the sooner."""
        from evigraph.retrieval.schema import cypher_query

        require_at_least("limit", limit)
        store = await self._open(for_write=False)
        return await cypher_query(store, query, params or {}, limit, self.limits.read_deadline_seconds)

    async def get_ontology(self) -> OntologyOverview:
        """The ontology's types with stored counts, plus the tables and guide for writing Cypher."""
        from evigraph.retrieval.schema import ontology_overview

        store = await self._open(for_write=False)
        return await ontology_overview(store, await self.load_ontology())

    async def source_status(self, key: str) -> SourceRecord:
        """Whether a document is being ingested now, current, failed at its last ingest, deleted,
        or unknown here. A pending document still shows the version stored before this ingest."""
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
        else:
            record = logged or SourceRecord(key=key, state=SourceState.unknown)
        if key in self._in_flight:
            record = record.model_copy(update={"state": SourceState.pending})
        return record

    async def status(self) -> Status:
        """Counts of what the knowledge base holds, its embedding model, its themes, and the
        sources whose last ingest failed (with their reasons)."""
        store = await self._open(for_write=False)
        counts = await store.counts()
        model = await store.embedding_model()
        failed = await store.count_failed_sources()
        code = counts.code
        return Status(
            db=str(self.location),
            engine=self.engine,
            passages=counts.chunks,
            **counts.model_dump(exclude={"chunks", "code"}),
            code_repos=code.get("Repo", 0),
            code_files=code.get("Module", 0),
            code_symbols={kind: n for kind, n in code.items() if kind in SYMBOL_KINDS and kind != "Module"},
            embedding_model=model[0] if model else None,
            embedding_dimension=model[1] if model else 0,
            pending_embeddings=await store.count_pending_embeddings() if model else 0,
            themes=len(await store.themes()),
            failed_documents=failed,
            failed_sources=await store.failed_sources(STATUS_FAILED_LISTED) if failed else [],
            llm=await recorded_spend(store),
        )

    async def documents(self, limit: int = 100, offset: int = 0) -> list[StoredDocument]:
        store = await self._open(for_write=False)
        return await store.list_documents(limit, offset)
