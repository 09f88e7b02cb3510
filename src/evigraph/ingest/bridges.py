"""Bridge sentences: the sentences that connect two entities, embedded for graph ranking.

A multi-hop question moves from one entity to the next through a sentence that names both
("X is a 1970 film directed by Y"). Graph ranking finds that hop by how similar such a sentence
is to the question, so each one needs a vector; a sentence naming one entity or none leads
nowhere and is not embedded. A mention without spans (a document's subject) is present in every
sentence of its chunk. The same rule, applied by `sentence_entities`, tells the ranking index
which entities each stored sentence joins, so ingest and retrieval cannot disagree.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import TypeVar

from evigraph.ingest.sentences import split_sentences
from evigraph.models import GraphData, Span, TextChunk

K = TypeVar("K", bound=Hashable)

MIN_ENTITIES = 2
"""A sentence bridges when it joins at least this many distinct entities."""


def sentence_entities(spans: Sequence[tuple[int, int]], mentions: Iterable[tuple[K, Sequence[int]]]) -> list[set[K]]:
    """For each sentence span, the entities named in it; `mentions` are (entity, span starts)."""
    found: list[set[K]] = [set() for _ in spans]
    for entity, starts in mentions:
        if not starts:
            for s in found:
                s.add(entity)
            continue
        for start in starts:
            for i, (a, b) in enumerate(spans):
                if a <= start < b:
                    found[i].add(entity)
                    break
    return found


def bridge_sentences(chunks: Sequence[TextChunk], graph: GraphData) -> tuple[tuple[Span, ...], ...]:
    """Per chunk (in order), the spans of the sentences that join two or more entities."""
    by_chunk: dict[int, list[tuple[str, list[int]]]] = {}
    for m in graph.mentions:
        by_chunk.setdefault(m.chunk_index, []).append((m.entity_id, [s.start for s in m.spans]))
    out: list[tuple[Span, ...]] = []
    for chunk in chunks:
        spans = split_sentences(chunk.text)
        joined = sentence_entities(spans, by_chunk.get(chunk.index, []))
        out.append(
            tuple(Span(start=a, end=b) for (a, b), ents in zip(spans, joined, strict=True) if len(ents) >= MIN_ENTITIES)
        )
    return tuple(out)
