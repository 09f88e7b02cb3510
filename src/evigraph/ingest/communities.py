"""Community detection over the entity graph: the themes an agent can browse.

Louvain (greedy modularity with aggregation) in plain Python: the graphs evigraph holds have
tens of thousands of relations, which it handles in well under a second, and it needs no
dependency. Ties are broken by sorted node order, so one graph always gives the same themes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

_EPS = 1e-12


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
