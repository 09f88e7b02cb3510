"""A store that shows only some documents: the scope an operator gives a server.

Every read a tool makes goes through the store, so filtering here bounds every tool at once and
no tool argument can widen it. Passages count when their document key matches the scope (exact
keys or globs); an entity when a passage in scope mentions it; a relation when a passage in
scope states it, and then only with those passages as its sources. Free-form Cypher cannot be
bounded this way, so it is refused. Counts (`status`) follow the same rules, so they neither
reveal how much lies outside the scope nor promise evidence no tool will return.

A scope of `*` hides nothing, so there the store behaves as the one it wraps (the contract suite
holds it to that), Cypher included.
"""

from __future__ import annotations

import fnmatch
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from evigraph.code_records import CodeChange, CodeGraph
from evigraph.errors import ReadOnlyQueryError, StoreError
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
from evigraph.store.base import GraphStore, TermCounts, VectorSearch
from evigraph.store.compaction import CompactProgress, CompactReport
from evigraph.store.forwarding import ForwardingStore
from evigraph.store.merging import EntityMerge, MergeOutcome
from evigraph.store.ranking import RankingRow
from evigraph.store.terms import passage_terms, searchable_text

_CODE_HINT = "ingest and read code through a server whose scope is '*'"
_OVERFETCH = 5
_ALL = 1_000_000


def _by_count(counts: dict[str, int]) -> dict[str, int]:
    """Largest first, then by name: the order the unscoped store reports."""
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


class ScopedStore(ForwardingStore):
    """Overrides the reads a scope bounds; the rest reaches the wrapped store whole
    (`ForwardingStore`), for reasons that hold for each:

    - traces (tasks, events, steps, decisions, reviews) are the agent's own record, not
      documents; a passage support outside the scope never reaches `record_decision`, because
      the knowledge base resolves passages through this store, which does not find them;
    - entity vectors: graph ranking asks for the entities its in-scope passages mention, and a
      name alone reveals nothing a passage in scope does not;
    - entity records, redirects, settings, and typing names again (`found_documents`,
      `replace_graphs`) are whole-graph maintenance for the operator (finalize, like `check`:
      duplicates and a name's cues span scopes);
    - the extraction cache is keyed by passage content and reveals no document.
    """

    def __init__(self, inner: GraphStore, scope: Sequence[str]) -> None:
        if not scope:
            raise ValueError("a scope needs at least one document key or glob")
        super().__init__(inner)
        self.scope = tuple(scope)
        self._chunks: set[str] | None = None
        self._terms: TermCounts | None = None  # every term of the passages in scope, with its count
        self._counted: tuple[StoreCounts, StoreCounts] | None = None  # (whole graph, scope) when last counted

    @property
    def everything(self) -> bool:
        """True when the scope hides nothing: `*` matches every key."""
        return "*" in self.scope

    def allows(self, key: str) -> bool:
        return any(key == p or fnmatch.fnmatchcase(key, p) for p in self.scope)

    async def _in_scope(self) -> set[str]:
        if self._chunks is None:
            chunks: set[str] = set()
            offset = 0
            while docs := await self.inner.list_documents(1000, offset):
                offset += len(docs)
                for d in docs:
                    if self.allows(d.key):
                        chunks.update(c.id for c in await self.inner.document_passages(d.key, _ALL))
            self._chunks = chunks
        return self._chunks

    async def _scope_terms(self) -> TermCounts:
        """Term counts over the passages in scope: counts over the whole graph would tell a caller
        whether a word occurs in documents outside it."""
        if self._terms is None:
            frequencies: Counter[str] = Counter()
            passages = 0
            offset = 0
            while docs := await self.inner.list_documents(1000, offset):
                offset += len(docs)
                for d in docs:
                    if self.allows(d.key):
                        for c in await self.inner.document_passages(d.key, _ALL):
                            frequencies.update(
                                passage_terms(searchable_text(c.title, c.breadcrumbs, c.text, c.context))
                            )
                            passages += 1
            self._terms = TermCounts(passages, dict(frequencies))
        return self._terms

    def _changed(self) -> None:
        self._chunks = None
        self._terms = None
        self._counted = None

    async def _visible_entities(self, ids: Sequence[str]) -> set[str]:
        if self.everything:  # entities an agent recorded without a passage belong to no document
            return set(ids)
        allowed = await self._in_scope()
        pairs = await self.inner.passages_for_entities(list(ids), per_entity=_ALL)
        return {eid for eid, cid in pairs if cid in allowed}

    async def _relations(self, rels: list[Neighbour]) -> list[Neighbour]:
        allowed = await self._in_scope()
        out = []
        for r in rels:
            kept = [c for c in r.source_passages if c in allowed]
            if kept:
                out.append(r.model_copy(update={"source_passages": kept}))
            elif self.everything and not r.source_passages:  # an agent's relation no passage states, as entities
                out.append(r)
        return out

    # -- lifecycle and writes ----------------------------------------------------------------

    async def write_versions(self, versions: Sequence[DocumentVersion]) -> list[StoredDocument]:
        outside = [v.key for v in versions if not self.allows(v.key)]
        if outside:
            raise StoreError(
                f"{outside[0]} is outside this server's document scope", hint="ingest under a key the scope names"
            )
        self._changed()
        return await self.inner.write_versions(versions)

    async def delete_document(self, key: str) -> bool:
        if not self.allows(key):
            return False
        self._changed()
        return await self.inner.delete_document(key)

    async def rename_documents(self, renames: Mapping[str, str]) -> list[str]:
        outside = [k for pair in renames.items() for k in pair if not self.allows(k)]
        if outside:
            raise StoreError(
                f"{outside[0]} is outside this server's document scope", hint="rename keys the scope names"
            )
        self._changed()
        return await self.inner.rename_documents(renames)

    async def check(self, repair: bool = False) -> IntegrityReport:
        """Whole-graph maintenance for the operator, not a tool: damage is not confined to a scope."""
        self._changed()
        return await self.inner.check(repair)

    async def compact(self, progress: CompactProgress | None = None) -> CompactReport:
        """Whole-file maintenance for the operator, like `check`: the file holds every scope."""
        self._changed()
        return await self.inner.compact(progress)

    async def upsert_entities(self, entities: Sequence[ExtractedEntity], source: str) -> None:
        await self.inner.upsert_entities(entities, source)
        self._counted = None

    async def upsert_relations(self, relations: Sequence[tuple[ExtractedRelation, Sequence[str]]], source: str) -> None:
        allowed = await self._in_scope()
        if any(c not in allowed for _, chunks in relations for c in chunks):
            raise StoreError("a cited passage is outside this server's scope", hint="cite passages you can read")
        await self.inner.upsert_relations(relations, source)
        self._counted = None

    # -- code: not documents, so a scope that hides anything shows and writes none ----------------

    async def code_graph(self) -> CodeGraph:
        return await self.inner.code_graph() if self.everything else CodeGraph()

    async def write_code(self, change: CodeChange) -> None:
        if not self.everything:
            raise StoreError("code ingest is not offered by a server scoped to some documents", hint=_CODE_HINT)
        self._counted = None
        await self.inner.write_code(change)

    async def search_code(self, query: str, limit: int = 10) -> list[EntityHit]:
        return await self.inner.search_code(query, limit) if self.everything else []

    async def code_by_ids(self, ids: Sequence[str]) -> list[EntityHit]:
        return await self.inner.code_by_ids(ids) if self.everything else []

    async def code_mentions(self, symbol_ids: Sequence[str], per_symbol: int = 3) -> list[tuple[str, str]]:
        return await self.inner.code_mentions(symbol_ids, per_symbol) if self.everything else []

    async def explore_code(self, symbol_id: str, bounds: WalkBounds = DEFAULT_WALK) -> GraphWalk:
        return await self.inner.explore_code(symbol_id, bounds) if self.everything else GraphWalk(nodes=[], edges=[])

    async def link_code_mentions(self, pairs: Sequence[tuple[str, str]]) -> None:
        if self.everything:
            await self.inner.link_code_mentions(pairs)

    # -- documents and passages --------------------------------------------------------------

    async def get_documents(self, keys: Sequence[str]) -> dict[str, StoredDocument]:
        return await self.inner.get_documents([k for k in keys if self.allows(k)])

    async def list_documents(self, limit: int = 100, offset: int = 0) -> list[StoredDocument]:
        out: list[StoredDocument] = []
        skipped = 0
        position = 0
        while len(out) < limit and (docs := await self.inner.list_documents(1000, position)):
            position += len(docs)
            for d in docs:
                if not self.allows(d.key):
                    continue
                if skipped < offset:
                    skipped += 1
                elif len(out) < limit:
                    out.append(d)
        return out

    async def counts(self) -> StoreCounts:
        # Built from the same filtered reads the tools see, not from engine counts, so a figure
        # here is always something a tool can reach. That costs about a second per 10,000
        # relations in scope, so the figures are kept until a write through this store, or a
        # change in the whole graph's (cached) counts, shows they may be stale.
        whole = await self.inner.counts()
        if self.everything:  # the rules below would miss what an agent recorded without a passage
            return whole
        if self._counted is not None and self._counted[0] == whole:
            return self._counted[1].model_copy(deep=True)
        allowed = await self._in_scope()
        documents = 0
        offset = 0
        while docs := await self.inner.list_documents(1000, offset):
            offset += len(docs)
            documents += sum(1 for d in docs if self.allows(d.key))
        mentions = await self.inner.entities_for_passages(sorted(allowed))
        entity_ids = sorted({eid for _, eid in mentions})
        labels: dict[str, int] = {}
        for e in await self.inner.entities_by_ids(entity_ids):
            labels[e.label] = labels.get(e.label, 0) + 1
        relations = await self._relations(await self.inner.neighbours(entity_ids, 1, _ALL)) if entity_ids else []
        types: dict[str, int] = {}
        for r in {r.id: r for r in relations}.values():
            types[r.type] = types.get(r.type, 0) + 1
        counted = StoreCounts(
            documents=documents,
            chunks=len(allowed),
            entities=sum(labels.values()),
            relations=sum(types.values()),
            mentions=len(mentions),
            labels=_by_count(labels),
            relation_types=_by_count(types),
        )
        self._counted = (whole, counted)
        return counted.model_copy(deep=True)

    async def search_passages(self, query: str, limit: int = 10) -> list[PassageHit]:
        hits = await self.inner.search_passages(query, limit * _OVERFETCH)
        return [h for h in hits if self.allows(h.document)][:limit]

    async def passages_by_ids(self, ids: Sequence[str]) -> list[PassageHit]:
        allowed = await self._in_scope()
        return await self.inner.passages_by_ids([i for i in ids if i in allowed])

    async def document_passages(self, key: str, limit: int = 5000) -> list[PassageHit]:
        return await self.inner.document_passages(key, limit) if self.allows(key) else []

    async def vector_search(self, vector: Sequence[float], limit: int = 10) -> list[tuple[str, float]]:
        allowed = await self._in_scope()
        return [(c, s) for c, s in await self.inner.vector_search(vector, limit * _OVERFETCH) if c in allowed][:limit]

    async def vector_search_stats(self, vector: Sequence[float], limit: int = 10) -> VectorSearch:
        """The background (mean and spread of cosines) stays the whole graph's: this store sees only
        the hits the inner one returns, not every cosine, and a mean and a spread name no passage,
        so they tell a caller nothing about the documents outside the scope."""
        found = await self.inner.vector_search_stats(vector, limit if self.everything else limit * _OVERFETCH)
        if self.everything:
            return found
        allowed = await self._in_scope()
        return replace(found, hits=[(c, s) for c, s in found.hits if c in allowed][:limit])

    async def term_counts(self, terms: Sequence[str]) -> TermCounts:
        if self.everything:
            return await self.inner.term_counts(terms)
        counted = await self._scope_terms()
        return TermCounts(counted.passages, {t: counted.counts.get(t, 0) for t in terms})

    # -- entities and relations --------------------------------------------------------------

    async def passages_for_entities(self, entity_ids: Sequence[str], per_entity: int = 3) -> list[tuple[str, str]]:
        allowed = await self._in_scope()
        out: list[tuple[str, str]] = []
        counts: dict[str, int] = {}
        for eid, cid in await self.inner.passages_for_entities(entity_ids, per_entity=_ALL):
            if cid in allowed and counts.get(eid, 0) < per_entity:
                counts[eid] = counts.get(eid, 0) + 1
                out.append((eid, cid))
        return out

    async def entities_for_passages(self, passage_ids: Sequence[str]) -> list[tuple[str, str]]:
        allowed = await self._in_scope()
        return await self.inner.entities_for_passages([c for c in passage_ids if c in allowed])

    async def search_entities(self, query: str, limit: int = 10) -> list[EntityHit]:
        hits = await self.inner.search_entities(query, limit * _OVERFETCH)
        visible = await self._visible_entities([h.id for h in hits])
        return [h for h in hits if h.id in visible][:limit]

    async def entities_by_ids(self, ids: Sequence[str]) -> list[EntityHit]:
        visible = await self._visible_entities(ids)
        return await self.inner.entities_by_ids([i for i in ids if i in visible])

    async def entities_named(self, phrases: Sequence[str]) -> dict[str, list[str]]:
        named = await self.inner.entities_named(phrases)
        visible = await self._visible_entities([e for ids in named.values() for e in ids])
        return {p: kept for p, ids in named.items() if (kept := [e for e in ids if e in visible])}

    async def neighbours(self, entity_ids: Sequence[str], hops: int = 1, limit: int = 50) -> list[Neighbour]:
        return (await self._relations(await self.inner.neighbours(entity_ids, hops, limit * _OVERFETCH)))[:limit]

    async def search_facts(self, vector: Sequence[float], limit: int = 10) -> list[tuple[Neighbour, float]]:
        found = await self.inner.search_facts(vector, limit if self.everything else limit * _OVERFETCH)
        score = {r.id: s for r, s in found}
        return [(r, score[r.id]) for r in await self._relations([r for r, _ in found])][:limit]

    async def relations_for_passages(self, passage_ids: Sequence[str], limit: int = 50) -> list[Neighbour]:
        allowed = await self._in_scope()
        rels = await self.inner.relations_for_passages([c for c in passage_ids if c in allowed], limit)
        return await self._relations(rels)

    async def explore(self, entity_id: str, bounds: WalkBounds = DEFAULT_WALK) -> GraphWalk:
        if not await self._visible_entities([entity_id]):
            return GraphWalk(nodes=[], edges=[])
        walk = await self.inner.explore(entity_id, bounds)
        edges = await self._relations(walk.edges)
        ends = {entity_id} | {e for r in edges for e in (r.source, r.target)}
        return GraphWalk(nodes=[n for n in walk.nodes if n in ends], edges=edges, truncated_by=walk.truncated_by)

    async def themes(self) -> list[ThemeRecord]:
        out = []
        for t in await self.inner.themes():
            visible = await self._visible_entities(t.members)
            keep = [i for i, m in enumerate(t.members) if m in visible]
            if len(keep) >= 2:
                out.append(
                    ThemeRecord(
                        id=t.id,
                        members=[t.members[i] for i in keep],
                        names=[t.names[i] for i in keep],
                        labels=[t.labels[i] for i in keep],
                        size=len(keep),
                    )
                )
        return out

    # -- queries, embeddings, bookkeeping ----------------------------------------------------

    async def cypher_query(
        self, cypher: str, params: dict[str, Any] | None = None, limit: int = 100, timeout_ms: int = 10_000
    ) -> list[dict[str, Any]]:
        if self.everything:
            return await self.inner.cypher_query(cypher, params, limit, timeout_ms)
        raise ReadOnlyQueryError(
            "free-form Cypher cannot be limited to this server's document scope, so it is off",
            hint="use retrieve, search_passages, search_entities or explore_relationships",
        )

    async def schema_tables(self) -> list[TableInfo]:
        tables = await self.inner.schema_tables()
        return tables if self.everything else [t.model_copy(update={"sample_keys": []}) for t in tables]

    async def ranking_rows(self, documents: Sequence[str] | None = None) -> list[RankingRow]:
        rows = await self.inner.ranking_rows(documents)
        return rows if self.everything else [r for r in rows if self.allows(r.document)]

    async def merge_entities(self, merges: Sequence[EntityMerge]) -> MergeOutcome:
        self._changed()
        return await self.inner.merge_entities(merges)

    async def source_log(self, keys: Sequence[str]) -> dict[str, SourceRecord]:
        return await self.inner.source_log([k for k in keys if self.allows(k)])

    async def failed_sources(self, limit: int = 100) -> list[SourceRecord]:
        if self.everything:
            return await self.inner.failed_sources(limit)
        every = await self.inner.failed_sources(await self.inner.count_failed_sources())
        return [r for r in every if self.allows(r.key)][:limit]

    async def count_failed_sources(self) -> int:
        if self.everything:
            return await self.inner.count_failed_sources()
        return len(await self.failed_sources(_ALL))
