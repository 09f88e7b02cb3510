"""Community detection over the entity graph: the themes an agent can browse.

Louvain (greedy modularity with aggregation) in plain Python: the graphs evigraph holds have
tens of thousands of relations, which it handles in well under a second, and it needs no
dependency. Ties are broken by sorted node order, so one graph always gives the same themes.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import defaultdict
from collections.abc import Mapping

from evigraph.models import ThemeRecord
from evigraph.store.base import GraphStore

_EPS = 1e-12
THEME_MIN_SIZE = 2
MAX_THEMES = 2000


async def detect_themes(store: GraphStore) -> list[ThemeRecord]:
    """The graph's themes: communities of at least two entities, largest first, most connected member first.

    A theme's id is a digest of its members, so an unchanged cluster keeps its id across runs.
    """
    weights = await store.relation_weights()
    groups = [g for g in await asyncio.to_thread(louvain, weights) if len(g) >= THEME_MIN_SIZE][:MAX_THEMES]
    degree: dict[str, float] = defaultdict(float)
    for (a, b), w in weights.items():
        degree[a] += w
        degree[b] += w
    wanted = [eid for g in groups for eid in g]
    details = {e.id: e for e in await store.entities_by_ids(wanted)} if wanted else {}
    themes = []
    for group in groups:
        members = sorted((e for e in group if e in details), key=lambda e: (-degree[e], e))
        if len(members) < THEME_MIN_SIZE:
            continue
        digest = hashlib.sha1("\x1f".join(sorted(members)).encode("utf-8", "surrogatepass")).hexdigest()[:16]
        themes.append(
            ThemeRecord(
                id=f"theme:{digest}",
                members=members,
                names=[details[e].name for e in members],
                labels=[details[e].label for e in members],
                size=len(members),
            )
        )
    return themes


def louvain(pairs: Mapping[tuple[str, str], float], resolution: float = 1.0, max_levels: int = 10) -> list[list[str]]:
    """Partition the nodes of a weighted undirected graph; communities largest first.

    `pairs` maps (a, b) to the weight joining them; self-pairs are ignored. Nodes appear in a
    community in sorted order.
    """
    adj: dict[str, dict[str, float]] = defaultdict(dict)
    for (a, b), w in pairs.items():
        if a == b or w <= 0:
            continue
        adj[a][b] = adj[a].get(b, 0.0) + w
        adj[b][a] = adj[b].get(a, 0.0) + w
    membership = {n: n for n in adj}  # original node -> current super-node
    graph: dict[str, dict[str, float]] = {n: dict(nbrs) for n, nbrs in adj.items()}
    for _ in range(max_levels):
        moved, comm = _local_moves(graph, resolution)
        if not moved:
            break
        membership = {n: comm[s] for n, s in membership.items()}
        graph = _aggregate(graph, comm)
    groups: dict[str, list[str]] = defaultdict(list)
    for node, c in membership.items():
        groups[c].append(node)
    return sorted((sorted(g) for g in groups.values()), key=lambda g: (-len(g), g[0]))


def _local_moves(graph: dict[str, dict[str, float]], resolution: float) -> tuple[bool, dict[str, str]]:
    degree = {n: sum(w * (2 if m == n else 1) for m, w in nbrs.items()) for n, nbrs in graph.items()}
    two_m = sum(degree.values())
    comm = {n: n for n in graph}
    total = dict(degree)
    if two_m <= 0:
        return False, comm
    moved = False
    improved = True
    while improved:
        improved = False
        for n in sorted(graph):
            k = degree[n]
            links: dict[str, float] = defaultdict(float)
            for m, w in graph[n].items():
                if m != n:
                    links[comm[m]] += w
            old = comm[n]
            total[old] -= k
            best, best_gain = old, links.get(old, 0.0) - resolution * total[old] * k / two_m
            for c in sorted(links):
                gain = links[c] - resolution * total[c] * k / two_m
                if gain > best_gain + _EPS:
                    best, best_gain = c, gain
            total[best] += k
            if best != old:
                comm[n] = best
                improved = moved = True
    return moved, comm


def _aggregate(graph: dict[str, dict[str, float]], comm: dict[str, str]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for n, nbrs in graph.items():
        for m, w in nbrs.items():
            a, b = comm[n], comm[m]
            if a == b and n != m:
                w /= 2  # an internal edge is seen from both ends
            out[a][b] = out[a].get(b, 0.0) + w
    for c in set(comm.values()):
        out.setdefault(c, {})
    return dict(out)
