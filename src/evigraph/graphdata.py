"""Folding extracted graph data: entities that share an id become one, ids can be re-pointed.

Ingest-time resolution folds a document's entities by id, and a store folds them again after
re-pointing ids that resolution at finalize merged away (`redirect_graph`), so a document naming
"J. Smith" after "J. Smith" was merged into "John Smith" attaches to John Smith. One fold for
both, so the two cannot disagree on what a merge keeps: every description and surface form, the
union of mention spans, the union of a relation's passages and its highest confidence.
"""

from __future__ import annotations

from collections.abc import Mapping

from evigraph.models import ExtractedEntity, ExtractedRelation, GraphData, Mention


def fold_graph(graph: GraphData) -> GraphData:
    """Entities with one id merged; relations and mentions folded, relations to themselves dropped."""
    merged: dict[str, ExtractedEntity] = {}
    for ent in graph.entities:
        seen = merged.get(ent.id)
        if seen is None:
            merged[ent.id] = ent
            continue
        merged[ent.id] = seen.model_copy(
            update={
                "descriptions": union(seen.descriptions, ent.descriptions),
                "aliases": union(seen.aliases, ent.aliases),
            }
        )

    relations: dict[str, ExtractedRelation] = {}
    for rel in graph.relations:
        if rel.source not in merged or rel.target not in merged or rel.source == rel.target:
            continue
        rid = rel.id  # a hash of the fact: computed once
        seen_rel = relations.get(rid)
        if seen_rel is None:
            relations[rid] = rel
        else:
            relations[rid] = seen_rel.model_copy(
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


def redirect_graph(graph: GraphData, survivors: Mapping[str, tuple[str, str]]) -> GraphData:
    """`graph` with each entity id in `survivors` (id -> (survivor id, survivor name)) replaced by
    its survivor, then folded. The name written becomes the survivor's and the name written
    stays as an alias; relations get the ids their new ends give them (a relation's id hashes
    its ends)."""
    if not survivors or not any(e.id in survivors for e in graph.entities):
        return graph
    entities = []
    for e in graph.entities:
        target = survivors.get(e.id)
        if target is None:
            entities.append(e)
        else:
            sid, name = target
            entities.append(e.model_copy(update={"id": sid, "name": name, "aliases": union(e.aliases, (e.name,))}))

    def to(eid: str) -> str:
        found = survivors.get(eid)
        return found[0] if found else eid

    relations = [r.model_copy(update={"source": to(r.source), "target": to(r.target)}) for r in graph.relations]
    mentions = [m.model_copy(update={"entity_id": to(m.entity_id)}) for m in graph.mentions]
    return fold_graph(GraphData(entities=tuple(entities), relations=tuple(relations), mentions=tuple(mentions)))


def union(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    """Both tuples' non-empty items, first seen first, each once."""
    return tuple(dict.fromkeys(x for x in (*a, *b) if x))
