"""Ranking a project's decisions for `search_decisions`: by their words and by meaning, fused.

Words are BM25 over the same terms passages are counted by; meaning is the cosine to each
decision's stored vector when the knowledge base has an embedder; the two lists are fused by rank
(`rrf`) as passage search fuses its legs. A project's decisions number in the thousands, so they
are ranked in memory rather than through an engine index each store would need.
"""

from __future__ import annotations

import math
from collections import Counter, OrderedDict
from collections.abc import Sequence

from evigraph.retrieval.fusion import Fused, rrf
from evigraph.store.terms import passage_terms, passage_words
from evigraph.trace_records import DecisionText

MEANING_POOL = 100
"""Decisions the meaning list holds, nearest first: as many as a search may return (at most 100)."""


def rank_decisions(
    query: str, texts: Sequence[DecisionText], counted: WordCounts, vector: Sequence[float] | None
) -> list[Fused[str]]:
    """Decision ids best first, with each list's share of the score (`words`, `meaning`)."""
    ranked = {"words": by_words(query, texts, counted)}
    meaning = by_meaning(vector, texts) if vector is not None else []
    if meaning:
        ranked["meaning"] = meaning
    return rrf(ranked)


def by_meaning(vector: Sequence[float], texts: Sequence[DecisionText]) -> list[str]:
    """Decisions by cosine to `vector`, nearest first, those with a vector of its size."""
    scored = [
        (sum(a * b for a, b in zip(vector, t.vector, strict=True)), t.id)
        for t in texts
        if t.vector and len(t.vector) == len(vector)
    ]
    return [i for _, i in sorted(scored, key=lambda s: -s[0])[:MEANING_POOL]]


class WordCounts:
    """Each decision's word counts, kept by id: a decision's text never changes (superseding
    writes a new decision), and counting words was most of a search's time (about 60 of 68 ms
    p50 at 1,000 decisions, bench/tools.py). Bounded, oldest first out."""

    def __init__(self, capacity: int = 50_000) -> None:
        self.capacity = capacity
        self._counts: OrderedDict[str, Counter[str]] = OrderedDict()

    def of(self, t: DecisionText) -> Counter[str]:
        found = self._counts.get(t.id)
        if found is None:
            found = self._counts[t.id] = Counter(passage_words(t.text))
            if len(self._counts) > self.capacity:
                self._counts.popitem(last=False)
        return found


def by_words(
    query: str, texts: Sequence[DecisionText], counted: WordCounts, k1: float = 1.2, b: float = 0.75
) -> list[str]:
    """BM25 over the decisions' words, counted as passages' are (`passage_terms`); only decisions
    sharing a word with the query are ranked."""
    asked = passage_terms(query)
    if not asked or not texts:
        return []
    words = [counted.of(t) for t in texts]
    lengths = [sum(c.values()) for c in words]
    mean = sum(lengths) / len(lengths) or 1.0
    frequency = Counter(w for c in words for w in asked & c.keys())
    scored = []
    for t, counts, size in zip(texts, words, lengths, strict=True):
        score = 0.0
        for w in asked & counts.keys():
            idf = math.log(1 + (len(texts) - frequency[w] + 0.5) / (frequency[w] + 0.5))
            tf = counts[w]
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * size / mean))
        if score > 0:
            scored.append((score, t.id))
    return [i for _, i in sorted(scored, key=lambda s: -s[0])]
