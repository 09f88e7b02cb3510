"""The graph's structure held in memory, for the traversals retrieval makes on every question.

The engine answers a look-up from a list of ids with a join over the whole relationship table
(about 130 ms per hop on 60k relations), while retrieval walks a few hops from a handful of
entities per question. Adjacency lists answer the same walk in microseconds: dictionaries when
built with two scans after a write, or look-ups over the arrays saved beside the knowledge base
(`store/saved_indexes.py`) when an open reads them. Texts stay in the database except the fact
sentences, which every traversal returns.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from evigraph.models import GraphWalk, Neighbour, WalkBounds

S = TypeVar("S", bound="GraphSink")


@dataclass(frozen=True)
class Rel:
    id: str
    source: str
    target: str
    source_name: str
    target_name: str
    type: str
    fact: str
    confidence: float
    chunks: tuple[str, ...]

    def neighbour(self, hop: int) -> Neighbour:
        # Built from rows this index read and typed itself, so pydantic's validation is skipped:
        # a question's fact candidates are a few hundred of these (265 on average on the 2Wiki
        # dev set), and validating them cost about 1 ms a question.
        return Neighbour.model_construct(
            id=self.id,
            source=self.source,
            source_name=self.source_name,
            type=self.type,
            fact=self.fact,
            target=self.target,
            target_name=self.target_name,
            confidence=self.confidence,
            hop=hop,
            source_passages=list(self.chunks),
        )


@dataclass
class GraphIndex:
    """Dicts when built from the graph; look-ups over mapped arrays when read from disk (`saved_indexes`)."""

    edges: Mapping[str, Sequence[Rel]] = field(default_factory=dict)  # both directions
    mentions: Mapping[str, Sequence[str]] = field(default_factory=dict)  # entity -> chunks
    mentioned: Mapping[str, Sequence[str]] = field(default_factory=dict)  # chunk -> entities
    stated: Mapping[str, Sequence[Rel]] = field(default_factory=dict)  # chunk -> its relations

    def neighbours(self, entity_ids: Sequence[str], hops: int, limit: int) -> list[Neighbour]:
        """Breadth-first over relations in either direction, nearest hop first.

        Each hop may take an equal share of what the cap has left, so a busy first hop cannot
        crowd out the deeper hops a multi-hop question needs; a sparse hop leaves its share to
        the next. Within a hop, more confident relations come first.
        """
        seen: set[str] = set()
        visited = set(entity_ids)
        frontier = list(dict.fromkeys(entity_ids))
        out: list[Neighbour] = []
        for hop in range(1, hops + 1):
            if not frontier or len(out) >= limit:
                break
            allowance = -(-(limit - len(out)) // (hops - hop + 1))
            candidates = sorted(
                {r.id: (eid, r) for eid in frontier for r in self.edges.get(eid, ())}.values(),
                key=lambda pair: (-pair[1].confidence, pair[1].id),
            )
            nxt: list[str] = []
            taken = 0
            for eid, rel in candidates:
                if rel.id in seen:
                    continue
                seen.add(rel.id)
                out.append(rel.neighbour(hop))
                taken += 1
                other = rel.target if rel.source == eid else rel.source
                if other not in visited:
                    visited.add(other)
                    nxt.append(other)
                if taken >= allowance:
                    break
            frontier = nxt
        return out

    def explore(self, entity_id: str, bounds: WalkBounds) -> GraphWalk:
        """Relations around one entity, breadth first, most confident first within a hop.

        The walk stops at whichever bound it meets first and says which, so an agent knows the
        neighbourhood is bigger than what it sees.
        """
        wanted = set(bounds.relation_types) if bounds.relation_types else None
        max_nodes, max_edges = bounds.max_nodes, bounds.max_edges
        nodes = [entity_id]
        known = {entity_id}
        edges: list[Neighbour] = []
        seen: set[str] = set()
        truncated: set[str] = set()
        frontier = [entity_id]
        for hop in range(1, bounds.depth + 1):
            nxt: list[str] = []
            for eid in frontier:
                for rel in sorted(self.edges.get(eid, ()), key=lambda r: (-r.confidence, r.id)):
                    if rel.id in seen or (wanted is not None and rel.type not in wanted):
                        continue
                    other = rel.target if rel.source == eid else rel.source
                    if other not in known and len(nodes) >= max_nodes:
                        truncated.add("max_nodes")
                        continue
                    if len(edges) >= max_edges:
                        truncated.add("max_edges")
                        break
                    seen.add(rel.id)
                    edges.append(rel.neighbour(hop))
                    if other not in known:
                        known.add(other)
                        nodes.append(other)
                        nxt.append(other)
            frontier = nxt
        return GraphWalk(nodes=nodes, edges=edges, truncated_by=sorted(truncated))

    def weighted_pairs(self) -> dict[tuple[str, str], float]:
        """Entity pairs joined by relations, weighted by how many relations join them."""
        out: dict[tuple[str, str], float] = defaultdict(float)
        for eid, rels in self.edges.items():
            for rel in rels:
                if rel.source == eid and rel.source != rel.target:
                    a, b = sorted((rel.source, rel.target))
                    out[(a, b)] += 1.0
        return dict(out)

    def passages_for_entities(self, entity_ids: Sequence[str], per_entity: int) -> list[tuple[str, str]]:
        return [(eid, cid) for eid in entity_ids for cid in sorted(self.mentions.get(eid, ()))[:per_entity]]

    def entities_for_passages(self, passage_ids: Sequence[str]) -> list[tuple[str, str]]:
        return [(cid, eid) for cid in passage_ids for eid in self.mentioned.get(cid, ())]

    def relations_for_passages(self, passage_ids: Sequence[str], limit: int) -> list[Neighbour]:
        """The relations the chunks state, chunk by chunk; read from the chunk's own list, since
        walking its entities' edges meant scanning every relation of a hub (1,034 on 2Wiki)."""
        out: dict[str, Neighbour] = {}
        for cid in passage_ids:
            for rel in self.stated.get(cid, ()):
                if rel.id not in out:
                    out[rel.id] = rel.neighbour(1)
                    if len(out) >= limit:
                        return list(out.values())
        return list(out.values())

    def relations_at(self, places: Sequence[tuple[str, str, str]]) -> list[Neighbour | None]:
        """Each (relation id, passage, source entity) as its relation, found in the passage's list
        (a few relations), else the source entity's; None for one the graph no longer holds."""
        out: list[Neighbour | None] = []
        for rid, chunk, source in places:
            listed = self.stated.get(chunk, ()) if chunk else self.edges.get(source, ())
            out.append(next((rel.neighbour(1) for rel in listed if rel.id == rid), None))
        return out


class GraphSink(Protocol):
    """Where the graph's rows go as they are read: `GraphLists` (dicts) or `graph_arrays.GraphArrays`."""

    def relation(self, rel: Rel) -> None: ...

    def mention(self, entity: str, chunk: str) -> None: ...


@dataclass
class GraphLists:
    """A `GraphIndex` being built, relation by relation and mention by mention."""

    edges: defaultdict[str, list[Rel]] = field(default_factory=lambda: defaultdict(list))
    mentions: defaultdict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    mentioned: defaultdict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    stated: defaultdict[str, list[Rel]] = field(default_factory=lambda: defaultdict(list))

    def relation(self, rel: Rel) -> None:
        self.edges[rel.source].append(rel)
        if rel.target != rel.source:
            self.edges[rel.target].append(rel)
        for cid in dict.fromkeys(rel.chunks):
            self.stated[cid].append(rel)

    def mention(self, entity: str, chunk: str) -> None:
        self.mentions[entity].append(chunk)
        self.mentioned[chunk].append(entity)

    def done(self) -> GraphIndex:
        """Mentions sorted by id: the order rows come in is the engine's storage order, which a
        compaction on LadybugDB changes (and FalkorDB's is its own), so an index read from saved
        arrays and one built from the file after it must list them alike."""
        for lists in (self.mentions, self.mentioned):
            for listed in lists.values():
                listed.sort()
        return GraphIndex(dict(self.edges), dict(self.mentions), dict(self.mentioned), dict(self.stated))
