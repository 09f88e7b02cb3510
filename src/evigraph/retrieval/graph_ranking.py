"""Graph ranking: personalized PageRank over the entity-passage graph, seeded by the question.

Fusion ranks passages by how well each one alone matches the question; a multi-hop question's
second passage often matches it poorly ("who is the mother of the director of film X?": the
mother's name is in the director's article, which never names X). The graph finds it:

1. Seeds: the entities nearest (by name vector) to each name found in the question. An entity's
   weight is divided by how many passages mention it (its specificity), so a hub named in
   hundreds of passages steers less than a rare name does.
2. Bridging: from each active entity, the not yet used sentence that names it and is most similar
   to the question activates the other entities of that sentence, at the product of the two
   scores. Two rounds reach the entities two hops away; the similarity threshold stops a walk
   once the sentences stop resembling the question. The hop is found by what a sentence says,
   not by an extracted relation type, so co-occurrence suffices.
3. PageRank with restart over passages and entities (damping 0.5: half of the mass stays near
   the seeds), where the restart vector holds the activated entities and every candidate
   passage's fused score plus a bonus for the activated entities it mentions.

The shape follows LinearRAG (relation-free graph, semantic bridging, PPR) and HippoRAG 2
(passages inside the graph, node specificity, damping 0.5); the constants are theirs unless a
comment says otherwise, and bench/retrieval.py measures them on all three dev sets at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evigraph.retrieval.ranking_snapshot import Snapshot

DAMPING = 0.5
BRIDGE_ROUNDS = 2
BRIDGE_THRESHOLD = 0.3
"""A walk continues through a sentence while seed similarity x sentence similarity stays above it."""
PASSAGE_PRIOR = 1.5
"""Weight of a passage's own (fused) score against the log-bonus of the activated entities it names."""
PASSAGE_RESET = 0.05
"""Share of the restart vector given to passages relative to entities (LinearRAG's passage_node_weight)."""
ITERATIONS = 20
"""Power iterations: with damping 0.5 the error after 20 is below 1e-6 of the mass, far under the
gaps between the scores that decide a top 10."""


def rank(
    snap: Snapshot,
    question_vector: Any,
    mention_vectors: Any,
    exact: Mapping[int, float],
    prior: Mapping[str, float],
    limit: int,
) -> dict[str, float] | None:
    """Chunk id -> PageRank score for the best `limit` passages, best first; None when the
    question names no entity the graph knows.

    `exact` holds the entity nodes the question names verbatim (at similarity 1),
    `mention_vectors` the vectors of its other names (rows), `prior` each candidate passage's own
    score (0..1).
    """
    import numpy as np

    seeds = {**_seeds(snap, mention_vectors), **exact}
    if not seeds:
        return None
    active = _bridge(snap, np.asarray(question_vector, dtype=np.float32), seeds)
    n_passages = len(snap.passages)
    reset = np.zeros(n_passages + len(snap.entity_keys), dtype=np.float64)
    for e, (score, _) in active.items():
        reset[n_passages + e] += score / max(snap.passage_count[e], 1.0)
    bonus = np.zeros(n_passages, dtype=np.float64)
    weights = np.zeros(len(snap.entity_keys), dtype=np.float64)
    for e, (score, tier) in active.items():
        weights[e] = score / tier
    hit = weights[snap.edge_entity] > 0
    np.add.at(bonus, snap.edge_passage[hit], weights[snap.edge_entity[hit]] * np.log1p(snap.edge_count[hit]))
    base = np.zeros(n_passages, dtype=np.float64)
    for chunk, score in prior.items():
        row = snap.row_of.get(chunk)
        if row is not None:
            base[row] = score
    reset[:n_passages] = (PASSAGE_PRIOR * base + np.log1p(bonus)) * PASSAGE_RESET
    reset[:n_passages] *= snap.alive
    total = reset.sum()
    if total <= 0:
        return None
    scores = _pagerank(snap, reset / total)[:n_passages] * snap.alive
    k = min(limit, int(snap.alive.sum()))
    if k <= 0:
        return None
    top = np.argpartition(-scores, k - 1)[:k]
    top = top[np.argsort(-scores[top])]
    return {snap.passages[i]: float(scores[i]) for i in top if scores[i] > 0}


def _seeds(snap: Snapshot, mention_vectors: Any) -> dict[int, float]:
    """Entity row -> similarity: the nearest usable entity to each name in the question."""
    import numpy as np

    seeds: dict[int, float] = {}
    if mention_vectors is None or not len(mention_vectors) or not snap.entity_usable.any():
        return seeds
    sims = snap.entity_vectors @ np.asarray(mention_vectors, dtype=np.float32).T
    sims[~snap.entity_usable] = -1.0
    for j in range(sims.shape[1]):
        e = int(np.argmax(sims[:, j]))
        if sims[e, j] > 0:
            seeds[e] = max(seeds.get(e, 0.0), float(sims[e, j]))
    return seeds


def _bridge(snap: Snapshot, question: Any, seeds: dict[int, float]) -> dict[int, tuple[float, int]]:
    """Entity row -> (activation, tier): seeds at tier 1, entities reached through sentences after."""
    import numpy as np

    active = {e: (s, 1) for e, s in seeds.items()}
    if not len(snap.sentence_vectors):
        return active
    frontier = dict(active)
    used: set[int] = set()
    similarity: dict[int, float] = {}
    for round_ in range(1, BRIDGE_ROUNDS + 1):
        reached: dict[int, tuple[float, int]] = {}
        for e, (score, _) in frontier.items():
            if score < BRIDGE_THRESHOLD:
                continue
            candidates = [s for s in snap.entity_sentences[e] if s not in used]
            if not candidates:
                continue
            fresh = [s for s in candidates if s not in similarity]
            if fresh:
                sims = snap.sentence_vectors[np.asarray(fresh)] @ question
                similarity.update(zip(fresh, sims.tolist(), strict=True))
            best = max(candidates, key=similarity.__getitem__)
            used.add(best)
            for other in snap.sentence_entities[best]:
                value = score * similarity[best]
                if value >= BRIDGE_THRESHOLD and value > reached.get(other, (0.0, 0))[0]:
                    reached[other] = (value, round_ + 1)
        for e, (value, tier) in reached.items():
            old = active.get(e)
            active[e] = (old[0] + value, old[1]) if old else (value, tier)
        frontier = reached
        if not frontier:
            break
    return active


def _pagerank(snap: Snapshot, reset: Any) -> Any:
    """Power iteration of x = (1 - d) r + d W x on the undirected passage-entity graph."""
    x = reset.copy()
    for _ in range(ITERATIONS):
        x = (1 - DAMPING) * reset + DAMPING * (snap.walk @ x)
    return x
