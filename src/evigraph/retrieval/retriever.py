"""Multi-path hybrid retrieval: full-text, vectors and the graph, fused into one cited result.

`search` validates and assembles; `_gather` runs the paths concurrently against the store.
Each path is cheap on its own (one or two store calls), so the latency is roughly the slowest
path plus embedding the question.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from evigraph.evidence.items import EntityItem, PassageItem, RelationItem
from evigraph.models import ChunkHit, EntityHit, Neighbour
from evigraph.providers.embedders import Embedder
from evigraph.retrieval import code_symbols
from evigraph.retrieval.analysis import question_phrases
from evigraph.retrieval.fusion import Fused, cap_per_label, rrf
from evigraph.retrieval.graph_stage import GraphStage
from evigraph.retrieval.hits import relation_item, source_of
from evigraph.retrieval.match import assess, question_terms
from evigraph.retrieval.query import RetrieveQuery
from evigraph.retrieval.result import RetrievalResult
from evigraph.retrieval.vectors import question_vectors
from evigraph.store.base import GraphStore, VectorSearch
from evigraph.store.terms import searchable_text

# How much each ranked list counts in passage fusion. Direct matches (words, meaning) lead;
# passages reached through named entities or their relations break ties and fill the list, but
# never outvote a direct match. Measured on the three multi-hop sets of bench/retrieval.py
# (grid: vector 1/1.2/1.5/2, graph 0/0.05/0.1, k 20/60; no held-out split, so small gaps are
# noise): graph weights of 0.35/0.25 cost 12 points of recall@5 on hotpotqa, whose distractors
# name the same entities as the gold passages; vector 1.2 with graph 0.1/0.05 and k = 20 is the
# best setting with the embedder on all three sets and keeps every set above BM25 without it.
PASSAGE_WEIGHTS = {"lexical": 1.0, "semantic": 1.2, "entity_mentions": 0.1, "relation_sources": 0.05}
HYBRID_FLOOR = 2
"""Fusion's best passages that graph ranking keeps in its list (see `graph_order`). Two, because a
multi-hop answer needs at least two passages and these are the ones fusion finds first; keeping
them lifted recall@5 by 0.5 (2Wiki) and 1.7 (HotpotQA) points and cut the questions that rank
worse than dense alone from 8 to 5 and 17 to 9; keeping three cost 2Wiki 0.8 points."""
GRAPH_POOL = 60
"""Passages the vector search returns when graph ranking runs: its restart vector scales cosines
over this many (as in the dev-set trials). Full-text keeps its usual pool: fetching 60 passage
texts cost 2-3 ms a question and graph ranking does not read them."""
PASSAGE_RRF_K = 20
"""A smaller k than the usual 60 lets the top ranks of each list count more: the first few
full-text and vector hits are where the gold passages of multi-hop questions sit."""

_TERM = re.compile(r"\w+", re.UNICODE)
_FACT_STOP = frozenset("a an the of in on at to for from by with and or is are was were who what which".split())  # noqa: SIM905


@dataclass
class _Found:
    bm25: list[ChunkHit] = field(default_factory=list)
    vector: list[tuple[str, float]] = field(default_factory=list)
    exact: list[str] = field(default_factory=list)
    fuzzy: list[EntityHit] = field(default_factory=list)
    links: list[Neighbour] = field(default_factory=list)
    facts: list[Neighbour] = field(default_factory=list)
    mentions: list[tuple[str, str]] = field(default_factory=list)
    graph: dict[str, float] | None = None  # chunk id -> graph ranking score, best first
    vector_stats: VectorSearch | None = None  # the question's cosines to every passage, for match quality


class MultiPathRetriever:
    """Runs the search paths a `RetrieveQuery` names and fuses what they find.

    `label_cap` bounds how many entities of one label the result lists before other labels get
    a turn (0 disables it). Items come back unnumbered: numbering is the ledger's job.
    """

    def __init__(
        self,
        store: GraphStore,
        embedder: Embedder | None = None,
        *,
        label_cap: int = 3,
        graph: GraphStage | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.label_cap = label_cap
        self.graph = graph

    async def search(self, query: RetrieveQuery) -> RetrievalResult:
        question, chosen, top_k = query.question, query.chosen_paths(), query.top_k
        wants_vector = self.embedder is not None and {"passages", "facts"} & set(chosen)
        graph = self.graph if query.ranking == "graph" and "passages" in chosen and wants_vector else None
        plan = await graph.plan(self.store, question) if graph is not None else None
        vector, name_vectors = (
            await question_vectors(self.store, self.embedder, question, plan.unknown if plan else ())
            if wants_vector and self.embedder
            else (None, [])
        )
        ranking = plan is not None and vector is not None
        found = await self._gather(question, chosen, top_k, query.expand_hops, vector, GRAPH_POOL if ranking else 0)
        if graph is not None and plan is not None and vector is not None:
            found.graph = await graph.rank(plan, vector, name_vectors, found.vector, top_k)
        return await self._assemble(question, chosen, top_k, found)

    async def _gather(
        self,
        question: str,
        paths: Sequence[str],
        top_k: int,
        hops: int,
        vector: list[float] | None,
        vector_pool: int = 0,
    ) -> _Found:
        """Run the paths; `vector_pool` is the least number of passages the vector search returns (graph
        ranking scales cosines over them), full-text results stay at the usual pool."""
        found = _Found()
        pool = max(top_k * 3, 20)
        want_names = "exact_names" in paths or "links" in paths

        async def passages() -> None:
            if "passages" in paths or "facts" in paths:
                found.bm25 = await self.store.search_chunks(question, pool)
                if vector is not None:
                    found.vector_stats = await self.store.vector_search_stats(vector, max(pool, vector_pool))
                    found.vector = found.vector_stats.hits

        async def exact() -> None:
            if want_names:
                named = await self.store.entities_named(question_phrases(question))
                found.exact = list(dict.fromkeys(eid for ids in named.values() for eid in ids))

        async def fuzzy() -> None:
            if "fuzzy_names" in paths or ("links" in paths and "exact_names" not in paths):
                found.fuzzy = await code_symbols.search_with_code(self.store, question, top_k * 2)

        await asyncio.gather(passages(), exact(), fuzzy())

        seeds = list(dict.fromkeys([*found.exact, *(e.id for e in found.fuzzy[:5])]))
        entity_ids = list(
            dict.fromkeys(
                [
                    *(found.exact if "exact_names" in paths else []),
                    *(e.id for e in found.fuzzy if "fuzzy_names" in paths),
                ]
            )
        )

        async def links() -> None:
            if "links" in paths and seeds:
                found.links = await self.store.neighbours(seeds, hops=hops, limit=min(4 * top_k, 40))

        async def facts() -> None:
            if "facts" in paths:
                top_chunks = [h.id for h in found.bm25[:10]] + [cid for cid, _ in found.vector[:10]]
                candidates = await self.store.relations_for_chunks(list(dict.fromkeys(top_chunks)), limit=400)
                found.facts = rank_facts(question, candidates)[:top_k]

        async def mentions() -> None:
            if entity_ids:
                found.mentions = await code_symbols.mentions(self.store, entity_ids[:top_k], per_entity=3)

        await asyncio.gather(links(), facts(), mentions())
        return found

    async def _assemble(self, question: str, paths: Sequence[str], top_k: int, found: _Found) -> RetrievalResult:
        fused = fused_passages(found, paths)[:top_k]
        if found.graph:
            fused = graph_order(found.graph, fused, top_k)
        hits = {h.id: h for h in found.bm25}
        missing = [f.key for f in fused if f.key not in hits]
        fetched, entities, counts = await asyncio.gather(
            self.store.chunks_by_ids(missing),
            self._entities(paths, top_k, found),
            self.store.term_counts(question_terms(question)),
        )
        hits.update({h.id: h for h in fetched})

        result = RetrievalResult(question=question, paths=list(paths))
        reached = _graph_paths(paths, found)
        for f in fused:
            hit = hits.get(f.key)
            if hit is None:
                continue
            result.passages.append(
                PassageItem(
                    id=hit.id,
                    text=hit.text,
                    score=f.score,
                    scores=f.scores,
                    paths=sorted(reached.get(hit.id, set()) | _direct_paths(f.scores)),
                    source=source_of(hit),
                )
            )
        first = (
            searchable_text(p.source.title, p.source.breadcrumbs, p.text, hits[p.id].context) for p in result.passages
        )
        result.match = assess(question, counts, first, found.vector_stats)
        result.entities = entities
        result.relations, result.facts = relations_and_facts(found.links, found.facts)
        await self._attach_sources(result, found, hits)
        return result

    async def _attach_sources(self, result: RetrievalResult, found: _Found, hits: dict[str, ChunkHit]) -> None:
        """Give entities and relations the document location of one passage that backs them."""
        first_mention: dict[str, str] = {}
        for eid, cid in found.mentions:
            first_mention.setdefault(eid, cid)
        wanted = [first_mention[e.id] for e in result.entities if e.id in first_mention]
        wanted += [r.passages[0] for r in (*result.relations, *result.facts) if r.passages]
        missing = [cid for cid in dict.fromkeys(wanted) if cid not in hits]
        hits.update({h.id: h for h in await self.store.chunks_by_ids(missing)})
        for e in result.entities:
            hit = hits.get(first_mention.get(e.id, ""))
            e.location = source_of(hit) if hit else None
        for r in (*result.relations, *result.facts):
            hit = hits.get(r.passages[0]) if r.passages else None
            r.location = source_of(hit) if hit else None

    async def _entities(self, paths: Sequence[str], top_k: int, found: _Found) -> list[EntityItem]:
        lists: dict[str, list[str]] = {}
        if "exact_names" in paths:
            lists["exact_names"] = found.exact
        if "fuzzy_names" in paths:
            lists["fuzzy_names"] = [e.id for e in found.fuzzy]
        if not lists:
            return []
        fused = rrf(lists)
        details = {e.id: e for e in found.fuzzy}
        details.update(
            {e.id: e for e in await code_symbols.details(self.store, [f.key for f in fused if f.key not in details])}
        )
        items = [
            EntityItem(
                id=f.key,
                name=details[f.key].name,
                label=details[f.key].label,
                description=details[f.key].description,
                score=f.score,
                scores=f.scores,
                paths=sorted(f.scores),
            )
            for f in fused
            if f.key in details
        ]
        return cap_per_label(items, lambda e: e.label, self.label_cap, top_k)


def graph_order(graph: dict[str, float], fused: Sequence[Fused[str]], top_k: int) -> list[Fused[str]]:
    """Graph ranking's top `top_k`, with fusion's first `HYBRID_FLOOR` passages kept in it.

    The graph re-ranks and reaches passages fusion cannot, but a passage that full-text and
    vectors both rank first is rarely wrong; keeping fusion's best in the list means the graph
    adds its finds in the remaining places instead of pushing those out.
    """
    order = list(graph)[:top_k]
    kept = [f.key for f in fused[:HYBRID_FLOOR] if f.key not in order]
    order = order[: max(0, top_k - len(kept))] + kept
    by_key = {f.key: f for f in fused}
    out = []
    for cid in order:
        scores = dict(by_key[cid].scores) if cid in by_key else {}
        if cid in graph:
            scores["graph"] = graph[cid]
        out.append(Fused(cid, graph.get(cid, 0.0), scores))
    return out


def fused_passages(found: _Found, paths: Sequence[str]) -> list[Fused[str]]:
    """Every candidate passage by weighted reciprocal-rank fusion of the lists that found it."""
    ranked: dict[str, list[str]] = {}
    if "passages" in paths:
        ranked["lexical"] = [h.id for h in found.bm25]
        ranked["semantic"] = [cid for cid, _ in found.vector]
    entity_rank = {eid: i for i, eid in enumerate([*found.exact, *(e.id for e in found.fuzzy)])}
    ranked["entity_mentions"] = [cid for _, cid in sorted(found.mentions, key=lambda m: entity_rank.get(m[0], 99))]
    ranked["relation_sources"] = [cid for rel in [*found.links, *found.facts] for cid in rel.source_chunks]
    return rrf({k: v for k, v in ranked.items() if v}, PASSAGE_WEIGHTS, k=PASSAGE_RRF_K)


def relations_and_facts(
    links: Sequence[Neighbour], facts: Sequence[Neighbour]
) -> tuple[list[RelationItem], list[RelationItem]]:
    """The `links` path's relations and the `facts` path's, each relation once.

    A relation both paths found is one piece of evidence: it stays a relation (which says how many
    hops it lies from the question's entities), marked as found by both, and is not listed again
    as a fact, so no reply or JSON result prints it twice.
    """
    relations: dict[str, RelationItem] = {}
    for r in links:  # nearest hop first: a relation reached again further out keeps its first place
        relations.setdefault(r.id, relation_item(r)).paths = ["links"]
    only_facts: dict[str, RelationItem] = {}
    for r in facts:
        if r.id in relations:
            relations[r.id].paths = ["facts", "links"]
        else:
            only_facts.setdefault(r.id, relation_item(r)).paths = ["facts"]
    return list(relations.values()), list(only_facts.values())


def rank_facts(question: str, candidates: Sequence[Neighbour]) -> list[Neighbour]:
    """Facts sharing the most question terms first; ties by confidence."""
    terms = {t for t in _TERM.findall(question.casefold()) if t not in _FACT_STOP}
    scored = []
    for rel in {r.id: r for r in candidates}.values():
        overlap = len(terms & _fact_terms(rel.fact))
        if overlap:
            scored.append((overlap, rel.confidence, rel))
    scored.sort(key=lambda t: (-t[0], -t[1], t[2].id))
    seen: set[str] = set()
    out = []
    for _, _, rel in scored:  # one fact per sentence: several relations often share it
        sentence = " ".join(rel.fact.split()).casefold()
        if sentence not in seen:
            seen.add(sentence)
            out.append(rel)
    return out


@lru_cache(maxsize=65_536)
def _fact_terms(fact: str) -> frozenset[str]:
    """A fact sentence's words, kept across questions: the same few hundred candidate facts come
    back for every question about a topic, and splitting them anew was half of ranking them."""
    return frozenset(_TERM.findall(fact.casefold()))


def _direct_paths(scores: dict[str, float]) -> set[str]:
    return {"passages"} if {"lexical", "semantic", "graph"} & scores.keys() else set()


def _graph_paths(paths: Sequence[str], found: _Found) -> dict[str, set[str]]:
    """Passage id -> the graph search paths (by their public names) that reached it, built once."""
    out: dict[str, set[str]] = {}
    exact, fuzzy = set(found.exact), {e.id for e in found.fuzzy}
    for eid, cid in found.mentions:
        if "exact_names" in paths and eid in exact:
            out.setdefault(cid, set()).add("exact_names")
        if "fuzzy_names" in paths and eid in fuzzy:
            out.setdefault(cid, set()).add("fuzzy_names")
    for name, rels in (("links", found.links), ("facts", found.facts)):
        for r in rels:
            for cid in r.source_chunks:
                out.setdefault(cid, set()).add(name)
    return out
