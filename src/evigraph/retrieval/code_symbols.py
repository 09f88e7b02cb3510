"""Code symbols read as entities: searched, described and backed by passages like any entity.

Symbols are not `Entity` rows (they come from code, not from passages, and resolution never merges
them), so every entity read that may meet a symbol id asks both: the ids say which (`Function:...`).
"""

from __future__ import annotations

from collections.abc import Sequence

from evigraph.code_records import kind_of
from evigraph.models import EntityHit
from evigraph.retrieval.fusion import rrf
from evigraph.store.base import GraphStore


def is_symbol(ref: str) -> bool:
    return kind_of(ref) is not None


async def search_with_code(store: GraphStore, query: str, limit: int) -> list[EntityHit]:
    """Entities and code symbols matching `query` by full text, fused by rank (each list's scores
    are BM25 over different fields, so ranks compare and scores do not)."""
    entities = await store.search_entities(query, limit)
    symbols = await store.search_code(query, limit)
    if not symbols:
        return entities
    by_id = {h.id: h for h in (*entities, *symbols)}
    fused = rrf({"entities": [h.id for h in entities], "code": [h.id for h in symbols]})
    return [by_id[f.key] for f in fused[:limit]]


async def details(store: GraphStore, ids: Sequence[str]) -> list[EntityHit]:
    """Entities and symbols by id, in the order asked; unknown ids are skipped."""
    code = [i for i in ids if is_symbol(i)]
    found = {h.id: h for h in await store.entities_by_ids([i for i in ids if not is_symbol(i)])}
    found.update({h.id: h for h in await store.code_by_ids(code)} if code else {})
    return [found[i] for i in ids if i in found]


async def mentions(store: GraphStore, ids: Sequence[str], per_entity: int) -> list[tuple[str, str]]:
    """(entity or symbol id, chunk id): the passages that mention each entity or name each symbol."""
    code = [i for i in ids if is_symbol(i)]
    pairs = await store.passages_for_entities([i for i in ids if not is_symbol(i)], per_entity)
    return pairs + (await store.code_mentions(code, per_entity) if code else [])
