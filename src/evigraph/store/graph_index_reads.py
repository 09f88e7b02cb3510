"""The graph reads every backend answers from its in-process graph index (`graph_index`):
neighbours, mentions both ways, relations of passages, bounded exploration, relation weights.

Written once for the backends, which differ only in how they build and keep the index
(`_graph`): each reads it from its own engine and saves it beside the knowledge base. An empty
request answers at once, without building the index.
"""

from __future__ import annotations

from collections.abc import Sequence

from evigraph.models import Exploration, Neighbour
from evigraph.store.graph_index import GraphIndex


class GraphIndexReads:
    """A store mixin; the store supplies `_graph`."""

    async def _graph(self) -> GraphIndex:
        raise NotImplementedError

    async def neighbours(self, entity_ids: Sequence[str], hops: int = 1, limit: int = 50) -> list[Neighbour]:
        return (await self._graph()).neighbours(entity_ids, hops, limit) if entity_ids else []

    async def chunks_for_entities(self, entity_ids: Sequence[str], per_entity: int = 3) -> list[tuple[str, str]]:
        return (await self._graph()).chunks_for_entities(entity_ids, per_entity) if entity_ids else []

    async def entities_for_chunks(self, chunk_ids: Sequence[str]) -> list[tuple[str, str]]:
        return (await self._graph()).entities_for_chunks(chunk_ids) if chunk_ids else []

    async def relations_for_chunks(self, chunk_ids: Sequence[str], limit: int = 50) -> list[Neighbour]:
        return (await self._graph()).relations_for_chunks(chunk_ids, limit) if chunk_ids else []

    async def explore(
        self,
        entity_id: str,
        depth: int = 1,
        relation_types: Sequence[str] | None = None,
        max_nodes: int = 25,
        max_edges: int = 50,
    ) -> Exploration:
        return (await self._graph()).explore(entity_id, depth, relation_types, max_nodes, max_edges)

    async def relation_weights(self) -> dict[tuple[str, str], float]:
        return (await self._graph()).weighted_pairs()
