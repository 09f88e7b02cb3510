"""The graph reads every backend answers from its in-process graph index (`graph_index`):
neighbours, mentions both ways, relations of passages, bounded exploration, relation weights,
and relations by the vectors of their facts (the rows of a `FactVectors` index the store keeps).

Written once for the backends, which differ only in how they build and keep the index
(`_graph`): each reads it from its own engine and saves it beside the knowledge base. An empty
request answers at once, without building the index.
"""

from __future__ import annotations

from collections.abc import Sequence

from evigraph.models import DEFAULT_WALK, GraphWalk, Neighbour, WalkBounds
from evigraph.store.caches import FactVectors
from evigraph.store.core.graph_index import GraphIndex


class GraphIndexReads:
    """A store mixin; the store supplies `_graph` and `_fact_vectors`."""

    async def _graph(self) -> GraphIndex:
        raise NotImplementedError

    async def _fact_vectors(self) -> FactVectors:
        raise NotImplementedError

    async def search_facts(self, vector: Sequence[float], limit: int = 10) -> list[tuple[Neighbour, float]]:
        facts = await self._fact_vectors()
        if limit <= 0 or not facts.vectors.ids:
            return []
        nearest = facts.nearest(vector, limit)
        found = (await self._graph()).relations_at([place for place, _ in nearest])
        return [(rel, score) for rel, (_, score) in zip(found, nearest, strict=True) if rel is not None]

    async def neighbours(self, entity_ids: Sequence[str], hops: int = 1, limit: int = 50) -> list[Neighbour]:
        return (await self._graph()).neighbours(entity_ids, hops, limit) if entity_ids else []

    async def passages_for_entities(self, entity_ids: Sequence[str], per_entity: int = 3) -> list[tuple[str, str]]:
        return (await self._graph()).passages_for_entities(entity_ids, per_entity) if entity_ids else []

    async def entities_for_passages(self, passage_ids: Sequence[str]) -> list[tuple[str, str]]:
        return (await self._graph()).entities_for_passages(passage_ids) if passage_ids else []

    async def relations_for_passages(self, passage_ids: Sequence[str], limit: int = 50) -> list[Neighbour]:
        return (await self._graph()).relations_for_passages(passage_ids, limit) if passage_ids else []

    async def explore(self, entity_id: str, bounds: WalkBounds = DEFAULT_WALK) -> GraphWalk:
        return (await self._graph()).explore(entity_id, bounds)

    async def relation_weights(self) -> dict[tuple[str, str], float]:
        return (await self._graph()).weighted_pairs()
