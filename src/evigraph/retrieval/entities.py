"""Entity reads: search by name or meaning, finding one entity from a reference, and walks.

Lexical search fuses exact names found in the query with full-text on names and descriptions;
semantic search takes the entities mentioned in the passages nearest in meaning, since entity
names alone carry too little text to embed well.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from evigraph.errors import ConfigurationError, NotFoundError
from evigraph.evidence.items import EntityCard, EntityItem, RelationItem
from evigraph.models import WalkBounds
from evigraph.providers.embedders import Embedder
from evigraph.retrieval.analysis import question_phrases
from evigraph.retrieval.code_symbols import details
from evigraph.retrieval.code_symbols import mentions as symbol_mentions
from evigraph.retrieval.fusion import rrf
from evigraph.retrieval.hits import entity_item, passage_item, relation_item
from evigraph.retrieval.passages import SearchMode, snippet
from evigraph.retrieval.vectors import nearest_passages
from evigraph.store.base import GraphStore

SUPPORT_PER_ENTITY = 3


class EntitySearch(BaseModel):
    query: str
    hits: list[EntityCard] = Field(default_factory=list)
    semantic_skipped: bool = Field(False, description="hybrid ran lexical only: no embedder or no vectors")


async def search_entities(
    store: GraphStore,
    embedder: Embedder | None,
    query: str,
    mode: SearchMode,
    labels: Sequence[str] | None,
    limit: int,
) -> EntitySearch:
    """Entities for `query`, each with up to three passages that mention it."""
    pool = limit * 3
    lists: dict[str, list[str]] = {}
    if mode in ("lexical", "hybrid"):
        named = await store.entities_named([*question_phrases(query), query])
        lists["exact"] = list(dict.fromkeys(eid for ids in named.values() for eid in ids))
        lists["lexical"] = [e.id for e in await store.search_entities(query, pool)]
        lists["code"] = [e.id for e in await store.search_code(query, pool)]
    result = EntitySearch(query=query)
    if mode in ("semantic", "hybrid"):
        chunks = await nearest_passages(store, embedder, query, pool)
        if chunks is None:
            if mode == "semantic":
                raise ConfigurationError(
                    "semantic entity search needs passage vectors",
                    hint="use mode='lexical', or serve with the embedder",
                )
            result.semantic_skipped = True
        else:
            rank = {cid: i for i, cid in enumerate(chunks)}
            pairs = sorted(await store.entities_for_passages(chunks), key=lambda p: rank[p[0]])
            lists["semantic"] = list(dict.fromkeys(eid for _, eid in pairs))
    fused = [f.key for f in rrf({k: v for k, v in lists.items() if v})]
    found = {e.id: e for e in await details(store, fused[: pool * 2])}
    wanted = set(labels or ())
    for key in fused:
        ent = found.get(key)
        if ent is None or (wanted and ent.label not in wanted):
            continue
        result.hits.append(EntityCard(id=ent.id, name=ent.name, label=ent.label, description=ent.description))
        if len(result.hits) >= limit:
            break
    mentions = await symbol_mentions(store, [e.id for e in result.hits], per_entity=SUPPORT_PER_ENTITY)
    texts = {h.id: h for h in await store.passages_by_ids(list(dict.fromkeys(cid for _, cid in mentions)))}
    cards = {e.id: e for e in result.hits}
    for owner, cid in mentions:
        hit = texts.get(cid)
        if hit is not None:
            cards[owner].support.append(passage_item(hit, snippet(hit.text, cards[owner].name)))
    return result


async def find_entity(store: GraphStore, ref: str) -> str:
    """The id of the entity `ref` names: its id, else its exact name when that names one entity."""
    if await store.entities_by_ids([ref]):
        return ref
    named = list(dict.fromkeys(e for ids in (await store.entities_named([ref])).values() for e in ids))
    if len(named) == 1:
        return named[0]
    if len(named) > 1:
        raise NotFoundError(f"{ref!r} names {len(named)} entities: {', '.join(named[:5])}", hint="pass one entity id")
    raise NotFoundError(f"no entity {ref!r}", hint="find it with search_entities and pass its id or evidence number")


async def missing_entities(store: GraphStore, ids: Sequence[str]) -> list[str]:
    """The ids among `ids` that name no entity."""
    wanted = list(dict.fromkeys(ids))
    known = {e.id for e in await store.entities_by_ids(wanted)}
    return [i for i in wanted if i not in known]


class Exploration(BaseModel):
    entity: str = Field(description="id of the entity explored from")
    nodes: list[EntityItem] = Field(default_factory=list)
    edges: list[RelationItem] = Field(default_factory=list)
    truncated_by: list[str] = Field(default_factory=list, description="the bounds that cut the walk")


async def explore(store: GraphStore, ref: str, bounds: WalkBounds) -> Exploration:
    """The relations around the entity `ref` names, bounded, saying which bound cut the walk."""
    eid = await find_entity(store, ref)
    walk = await store.explore(eid, bounds)
    details = {e.id: e for e in await store.entities_by_ids(walk.nodes)}
    return Exploration(
        entity=eid,
        nodes=[entity_item(d) for d in (details.get(n) for n in walk.nodes) if d is not None],
        edges=[relation_item(r) for r in walk.edges],
        truncated_by=walk.truncated_by,
    )
