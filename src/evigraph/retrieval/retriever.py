"""Multi-path hybrid retrieval: full-text, vectors and the graph, fused into one cited result.

`MultiPathRetrieval` follows a `RetrievalRecipe`: the recipe says which paths run and how their
lists are weighed, `paths.py` runs the legs those paths need concurrently against the store, and
graph ranking (when the recipe and the query want it) re-ranks the fused passages. Each leg is
cheap on its own (one or two store calls), so the latency is roughly the slowest leg plus
embedding the question.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from evigraph.evidence.items import EntityItem, PassageItem, RelationItem
from evigraph.models import Neighbour, PassageHit
from evigraph.retrieval import code_symbols
from evigraph.retrieval.diversity import diversify
from evigraph.retrieval.fusion import Fused, cap_per_label, rrf
from evigraph.retrieval.hits import relation_item, source_of
from evigraph.retrieval.match import assess, question_terms
from evigraph.retrieval.paths import Asked, Found, run_legs
from evigraph.retrieval.query import RetrieveInput
from evigraph.retrieval.recipe import DEFAULT_RECIPE, RetrievalRecipe, recipe_by_name
from evigraph.retrieval.result import RetrievalResult
from evigraph.retrieval.strategy import RetrievalContext, RetrievalStrategy
from evigraph.retrieval.vectors import question_vectors
from evigraph.store.base import GraphStore
from evigraph.store.terms import searchable_text


class MultiPathRetrieval(RetrievalStrategy):
    """Runs the search paths a `RetrieveInput` names (else the recipe's) and fuses what they find.

    Items come back unnumbered: numbering is the ledger's job.
    """

    def __init__(self, recipe: RetrievalRecipe | str = DEFAULT_RECIPE) -> None:
        self.recipe = recipe_by_name(recipe) if isinstance(recipe, str) else recipe
        self.name = self.recipe.name

    @property
    def searches_fact_vectors(self) -> bool:
        return self.recipe.fact_vectors

    async def search(self, query: RetrieveInput, context: RetrievalContext, passages: int) -> RetrievalResult:
        recipe, store, embedder = self.recipe, context.store, context.embedder
        question, top_k, passages = query.question, query.top_k, max(query.top_k, passages)
        chosen = query.chosen_paths() if query.paths is not None else list(recipe.paths)
        wants_vector = embedder is not None and {"passages", "facts"} & set(chosen)
        graph = context.graph if recipe.graph_ranking and query.ranking == "graph" and "passages" in chosen else None
        plan = await graph.plan(store, question) if graph is not None and wants_vector else None
        vector, name_vectors = (
            await question_vectors(store, embedder, question, plan.unknown if plan else ())
            if wants_vector and embedder
            else (None, [])
        )
        asked = Asked(
            store=store,
            question=question,
            paths=tuple(chosen),
            top_k=top_k,
            hops=query.expand_hops,
            pool=recipe.pool(top_k),
            vector=vector,
            vector_pool=recipe.graph_pool if plan is not None and vector is not None else 0,
            fact_pool=recipe.pool(top_k) if recipe.fact_vectors else 0,
        )
        found = await run_legs(asked)
        if graph is not None and plan is not None and vector is not None:
            found.graph = await graph.rank(plan, vector, name_vectors, found.vector, self._candidates(passages))
        return await self._assemble(asked, passages, found)

    async def _assemble(self, asked: Asked, passages: int, found: Found) -> RetrievalResult:
        """Up to `passages` passages and `asked.top_k` of each other item, with their sources."""
        store, question, paths, top_k = asked.store, asked.question, asked.paths, asked.top_k
        candidates = self._candidates(passages)
        fused = fused_passages(found, paths, self.recipe)[:candidates]
        if found.graph:
            fused = graph_order(found.graph, fused, passages, self.recipe.hybrid_floor, candidates)
        hits = {h.id: h for h in found.bm25}
        missing = [f.key for f in fused if f.key not in hits]
        fetched, entities, counts = await asyncio.gather(
            store.passages_by_ids(missing),
            self._entities(store, paths, top_k, found),
            store.term_counts(question_terms(question)),
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
        result.passages = diversify(result.passages, question, passages, self.recipe.document_cap)
        first = (
            searchable_text(p.source.title, p.source.breadcrumbs, p.text, hits[p.id].context) for p in result.passages
        )
        result.match = assess(question, counts, first, found.vector_stats)
        result.entities = entities
        result.relations, result.facts = relations_and_facts(found.links, merged_facts(found, top_k))
        await _attach_sources(store, result, found, hits)
        return result

    def _candidates(self, passages: int) -> int:
        """Passages ranked for `passages` places: twice as many when one document's share is capped,
        so the places it gives up go to the next documents the search found."""
        return passages * 2 if self.recipe.document_cap > 0 else passages

    async def _entities(self, store: GraphStore, paths: Sequence[str], top_k: int, found: Found) -> list[EntityItem]:
        lists: dict[str, list[str]] = {}
        if "exact_names" in paths:
            lists["exact_names"] = found.exact
        if "fuzzy_names" in paths:
            lists["fuzzy_names"] = [e.id for e in found.fuzzy]
        if found.near_facts:  # the ends of the facts nearest the question
            lists["facts"] = [eid for r in found.near_facts for eid in (r.source, r.target)]
        if not lists:
            return []
        fused = rrf(lists)
        details = {e.id: e for e in found.fuzzy}
        details.update(
            {e.id: e for e in await code_symbols.details(store, [f.key for f in fused if f.key not in details])}
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
        return cap_per_label(items, lambda e: e.label, self.recipe.label_cap, top_k)


async def _attach_sources(
    store: GraphStore, result: RetrievalResult, found: Found, hits: dict[str, PassageHit]
) -> None:
    """Give entities and relations the document location of one passage that backs them."""
    first_mention: dict[str, str] = {}
    for eid, cid in found.mentions:
        first_mention.setdefault(eid, cid)
    wanted = [first_mention[e.id] for e in result.entities if e.id in first_mention]
    wanted += [r.passages[0] for r in (*result.relations, *result.facts) if r.passages]
    missing = [cid for cid in dict.fromkeys(wanted) if cid not in hits]
    hits.update({h.id: h for h in await store.passages_by_ids(missing)})
    for e in result.entities:
        hit = hits.get(first_mention.get(e.id, ""))
        e.location = source_of(hit) if hit else None
    for r in (*result.relations, *result.facts):
        hit = hits.get(r.passages[0]) if r.passages else None
        r.location = source_of(hit) if hit else None


def graph_order(
    graph: dict[str, float], fused: Sequence[Fused[str]], top_k: int, floor: int, candidates: int | None = None
) -> list[Fused[str]]:
    """Graph ranking's top `top_k`, with fusion's first `floor` passages kept in it (the recipe's
    `hybrid_floor`), then up to `candidates` in all: the graph's next, then fusion's.

    The graph re-ranks and reaches passages fusion cannot, but a passage that full-text and
    vectors both rank first is rarely wrong; keeping fusion's best in the list means the graph
    adds its finds in the remaining places instead of pushing those out.
    """
    order = list(graph)[:top_k]
    kept = [f.key for f in fused[:floor] if f.key not in order]
    order = order[: max(0, top_k - len(kept))] + kept
    if candidates is not None and candidates > len(order):
        more = dict.fromkeys([*graph, *(f.key for f in fused)])
        order += [cid for cid in more if cid not in set(order)][: candidates - len(order)]
    by_key = {f.key: f for f in fused}
    out = []
    for cid in order:
        scores = dict(by_key[cid].scores) if cid in by_key else {}
        if cid in graph:
            scores["graph"] = graph[cid]
        out.append(Fused(cid, graph.get(cid, 0.0), scores))
    return out


def fused_passages(found: Found, paths: Sequence[str], recipe: RetrievalRecipe) -> list[Fused[str]]:
    """Every candidate passage by weighted reciprocal-rank fusion of the lists that found it."""
    ranked: dict[str, list[str]] = {}
    if "passages" in paths:
        ranked["lexical"] = [h.id for h in found.bm25]
        ranked["semantic"] = [cid for cid, _ in found.vector]
    entity_rank = {eid: i for i, eid in enumerate([*found.exact, *(e.id for e in found.fuzzy)])}
    ranked["entity_mentions"] = [cid for _, cid in sorted(found.mentions, key=lambda m: entity_rank.get(m[0], 99))]
    ranked["relation_sources"] = [cid for rel in [*found.links, *found.facts] for cid in rel.source_passages]
    ranked["fact_sources"] = [cid for rel in found.near_facts for cid in rel.source_passages]
    return rrf({k: v for k, v in ranked.items() if v}, recipe.weights, k=recipe.rrf_k)


def merged_facts(found: Found, top_k: int) -> list[Neighbour]:
    """The facts sharing the question's words and those nearest it by vector, alternately, one
    relation per sentence, `top_k` at most: both are direct matches, of words and of meaning."""
    if not found.near_facts:
        return found.facts
    ranked = rrf({"words": [r.id for r in found.facts], "meaning": [r.id for r in found.near_facts]})
    by_id = {r.id: r for r in [*found.near_facts, *found.facts]}
    seen: set[str] = set()
    out = []
    for f in ranked:
        rel = by_id[f.key]
        sentence = " ".join(rel.fact.split()).casefold()
        if sentence not in seen:
            seen.add(sentence)
            out.append(rel)
    return out[:top_k]


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


def _direct_paths(scores: dict[str, float]) -> set[str]:
    return {"passages"} if {"lexical", "semantic", "graph"} & scores.keys() else set()


def _graph_paths(paths: Sequence[str], found: Found) -> dict[str, set[str]]:
    """Passage id -> the graph search paths (by their public names) that reached it, built once."""
    out: dict[str, set[str]] = {}
    exact, fuzzy = set(found.exact), {e.id for e in found.fuzzy}
    for eid, cid in found.mentions:
        if "exact_names" in paths and eid in exact:
            out.setdefault(cid, set()).add("exact_names")
        if "fuzzy_names" in paths and eid in fuzzy:
            out.setdefault(cid, set()).add("fuzzy_names")
    for name, rels in (("links", found.links), ("facts", [*found.facts, *found.near_facts])):
        for r in rels:
            for cid in r.source_passages:
                out.setdefault(cid, set()).add(name)
    return out
