"""Entity reads: search by name or meaning, finding one entity from a reference, and walks.

Lexical search fuses exact names found in the query with full-text on names and descriptions;
semantic search takes the entities mentioned in the passages nearest in meaning, since entity
names alone carry too little text to embed well.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from evigraph.errors import ConfigurationError, NotFoundError
from evigraph.evidence.items import EntityCard, EntityItem, PassageItem, RelationItem
from evigraph.models import WalkBounds
from evigraph.providers.embedders import Embedder
from evigraph.retrieval.analysis import question_phrases
from evigraph.retrieval.code_symbols import details, is_symbol
from evigraph.retrieval.code_symbols import mentions as symbol_mentions
from evigraph.retrieval.fusion import rrf
from evigraph.retrieval.hits import entity_item, passage_item, relation_item
from evigraph.retrieval.passages import SNIPPET_CHARS, SearchMode, snippet
from evigraph.retrieval.vectors import nearest_passages
from evigraph.store.base import GraphStore

SUPPORT_PER_ENTITY = 3
NAMED_SYMBOLS = 20
"""Symbols a name is searched among for the one whose whole name it is (`find_entity`)."""


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
    snippet_chars: int = SNIPPET_CHARS,
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
    support = await supporting_passages(store, {e.id: e.name for e in result.hits}, snippet_chars)
    for card in result.hits:
        card.support = support.get(card.id, [])
    return result


async def supporting_passages(
    store: GraphStore, named: dict[str, str], snippet_chars: int = SNIPPET_CHARS
) -> dict[str, list[PassageItem]]:
    """Entity or symbol id -> up to `SUPPORT_PER_ENTITY` passages that mention it, each cut to
    `snippet_chars` around its name (`named` gives the id's name)."""
    mentions = await symbol_mentions(store, list(named), per_entity=SUPPORT_PER_ENTITY)
    texts = {h.id: h for h in await store.passages_by_ids(list(dict.fromkeys(cid for _, cid in mentions)))}
    out: dict[str, list[PassageItem]] = {}
    for owner, cid in mentions:
        hit = texts.get(cid)
        if hit is not None:
            out.setdefault(owner, []).append(passage_item(hit, snippet(hit.text, named[owner], snippet_chars)))
    return out


SYMBOL_GONE_HINT = (
    "its code changed since, or was never ingested here: find the symbol again with search_entities and pass "
    "the id or evidence number it returns (ingest_code adds or refreshes a repository)"
)


async def find_entity(store: GraphStore, ref: str) -> str:
    """The id of the entity or code symbol `ref` names: its id, else its exact name when that names
    one entity, or else one symbol (`pkg.mod.Class.method`)."""
    if is_symbol(ref):
        if await store.code_by_ids([ref]):
            return ref
        raise NotFoundError(f"no code symbol {ref!r}", hint=SYMBOL_GONE_HINT)
    if await store.entities_by_ids([ref]):
        return ref
    named = list(dict.fromkeys(e for ids in (await store.entities_named([ref])).values() for e in ids))
    if not named:
        named = [h.id for h in await store.search_code(ref, NAMED_SYMBOLS) if h.name == ref]
    if len(named) == 1:
        return named[0]
    if len(named) > 1:
        raise NotFoundError(f"{ref!r} names {len(named)} entities: {', '.join(named[:5])}", hint="pass one entity id")
    raise NotFoundError(
        f"no entity or code symbol {ref!r}", hint="find it with search_entities and pass its id or evidence number"
    )


async def missing_entities(store: GraphStore, ids: Sequence[str]) -> list[str]:
    """The ids among `ids` that name no entity."""
    wanted = list(dict.fromkeys(ids))
    known = {e.id for e in await store.entities_by_ids(wanted)}
    return [i for i in wanted if i not in known]


class Exploration(BaseModel):
    entity: str = Field(description="id of the entity or code symbol explored from")
    nodes: list[EntityItem] = Field(default_factory=list)
    edges: list[RelationItem] = Field(default_factory=list)
    truncated_by: list[str] = Field(default_factory=list, description="the bounds that cut the walk")
    passages: list[PassageItem] = Field(
        default_factory=list,
        description="passages naming the code symbol explored from (an entity's relations list their own passages)",
    )


async def explore(store: GraphStore, ref: str, bounds: WalkBounds, snippet_chars: int = SNIPPET_CHARS) -> Exploration:
    """The relations around the entity or code symbol `ref` names, bounded, saying which bound cut
    the walk. A symbol's are the code graph's (CONTAINS, CALLS, IMPORTS, INHERITS), with the
    passages that name it."""
    eid = await find_entity(store, ref)
    symbol = is_symbol(eid)
    walk = await (store.explore_code(eid, bounds) if symbol else store.explore(eid, bounds))
    found = {e.id: e for e in await details(store, walk.nodes)}
    result = Exploration(
        entity=eid,
        nodes=[entity_item(d) for d in (found.get(n) for n in walk.nodes) if d is not None],
        edges=[relation_item(r) for r in walk.edges],
        truncated_by=walk.truncated_by,
    )
    if symbol and eid in found:
        result.passages = (await supporting_passages(store, {eid: found[eid].name}, snippet_chars)).get(eid, [])
    return result
