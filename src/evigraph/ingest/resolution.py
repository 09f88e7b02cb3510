"""Entity resolution: merge the entities that are one thing.

Resolution runs per document at ingest (cheap, exact; this module) and across the whole graph
at finalize (`graph_resolution`: candidate pairs by blocking, judged by names or by an LLM).
A merge made at finalize is recorded by the store, which re-points the merged-away id in every
later write, so an ingest never splits what finalize joined.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Annotated

from evigraph.graphdata import fold_graph
from evigraph.models import GraphData
from evigraph.strategies import Registry


class ResolutionStrategy(ABC):
    """Deduplicates entities and re-points relations and mentions at the survivors."""

    name: str = "custom"

    @abstractmethod
    async def resolve(self, graph: GraphData) -> GraphData: ...


class ExactMatchResolution(ResolutionStrategy):
    """Merges entities with the same (normalised name, label), which is exactly their id.

    The survivor keeps every description and every surface form as an alias; relations and
    mentions are re-pointed (a no-op for exact ids) and duplicates among them are folded.
    """

    name = "exact"

    async def resolve(self, graph: GraphData) -> GraphData:
        return resolve_exact(graph)


RESOLVERS: Registry[ResolutionStrategy] = Registry("resolver")
RESOLVERS.register(
    "exact",
    ExactMatchResolution,
    description="merge entities whose normalised name and label match; local, instant",
)

ResolverName = Annotated[str, RESOLVERS.enum_schema()]
"""A resolver's name in an input model: its JSON Schema lists the registered resolvers."""


def resolver_by_name(name: str) -> ResolutionStrategy:
    """The resolver a configuration or an agent's plan names; unknown names are refused with the choices."""
    return RESOLVERS.create(name)


def resolve_exact(graph: GraphData) -> GraphData:
    """Entities with one id (normalised name and label) folded into one; see `fold_graph`."""
    return fold_graph(graph)
