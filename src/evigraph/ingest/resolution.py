"""Entity resolution: merge the entities that are one thing.

Resolution runs per document at ingest (cheap, exact) and across the whole graph at finalize;
the contract is the same so an LLM-verified resolver can replace the exact one later.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Annotated

from evigraph.models import ExtractedEntity, ExtractedRelation, GraphData, Mention
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
    merged: dict[str, ExtractedEntity] = {}
    for ent in graph.entities:
        seen = merged.get(ent.id)
        if seen is None:
            merged[ent.id] = ent
            continue
        merged[ent.id] = seen.model_copy(
            update={
                "descriptions": _union(seen.descriptions, ent.descriptions),
                "aliases": _union(seen.aliases, ent.aliases),
            }
        )

    relations: dict[str, ExtractedRelation] = {}
    for rel in graph.relations:
        if rel.source not in merged or rel.target not in merged or rel.source == rel.target:
            continue
        seen_rel = relations.get(rel.id)
        if seen_rel is None:
            relations[rel.id] = rel
        else:
            relations[rel.id] = seen_rel.model_copy(
                update={
                    "confidence": max(seen_rel.confidence, rel.confidence),
                    "chunk_indexes": tuple(sorted(set(seen_rel.chunk_indexes) | set(rel.chunk_indexes))),
                }
            )

    mentions: dict[tuple[str, int], Mention] = {}
    for m in graph.mentions:
        if m.entity_id not in merged:
            continue
        key = (m.entity_id, m.chunk_index)
        seen_m = mentions.get(key)
        if seen_m is None:
            mentions[key] = m
        else:
            spans = tuple(sorted(set(seen_m.spans) | set(m.spans), key=lambda s: (s.start, s.end)))
            mentions[key] = seen_m.model_copy(update={"spans": spans})

    return GraphData(
        entities=tuple(merged.values()),
        relations=tuple(relations.values()),
        mentions=tuple(mentions.values()),
    )


def _union(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(x for x in (*a, *b) if x))
