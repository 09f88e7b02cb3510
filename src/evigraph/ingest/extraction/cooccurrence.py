"""Co-occurrence relations: two entities named in one sentence are related, and the sentence says how.

Offline extractors cannot read a predicate out of text reliably, but a sentence that names two
entities is nearly always evidence about both, and keeping that sentence as the relation's fact
lets an agent read the actual claim. Pairing is bounded: each entity is paired only with the next
few distinct entities in reading order, so a sentence that lists twenty names yields a linear
number of edges, not a quadratic one, and nearby names (which are more likely to be about each
other) get the higher confidence.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from operator import itemgetter
from typing import NamedTuple

from evigraph.ingest.sentences import split_sentences
from evigraph.models import (
    DEFAULT_RELATION_TYPE,
    ExtractedEntity,
    ExtractedRelation,
    GraphData,
    Mention,
    Span,
    TextChunk,
)
from evigraph.trusted_models import unchecked

MAX_PARTNERS = 3
"""How many following distinct entities each entity of a sentence is paired with."""

MAX_FACT_CHARS = 500
"""Facts longer than this are cut: a run-on "sentence" (a table row, a list) is not one claim."""

BASE_CONFIDENCE = 0.5
CONFIDENCE_STEP = 0.1
MIN_CONFIDENCE = 0.2

_CONFIDENCES = tuple(
    round(max(MIN_CONFIDENCE, BASE_CONFIDENCE - CONFIDENCE_STEP * step), 2) for step in range(MAX_PARTNERS)
)
"""The confidence of a pair by how many distinct entities lie between its two names (0, 1, ...)."""

_by_offsets = itemgetter(0, 1)

_entity = functools.lru_cache(maxsize=1 << 14)(ExtractedEntity.create)
"""Entities by (name, label): frozen, so documents share them, and a name met again skips its
normalisation and validation (most names of a large corpus recur across documents)."""


class Hit(NamedTuple):
    """An entity an offline extractor found in a chunk: offsets into the chunk's text, name, label."""

    start: int
    end: int
    name: str
    label: str


class EntitySpan(NamedTuple):
    """Where an entity is named in a chunk: offsets into the chunk's own text."""

    start: int
    end: int
    entity_id: str


def cooccurrence_relations(chunk: TextChunk, spans: Iterable[tuple[int, int, str]]) -> list[ExtractedRelation]:
    """Relations between the entities named in each sentence of `chunk`.

    `spans` are (start, end, entity id) in chunk-text offsets; a span that crosses a sentence
    boundary belongs to no sentence and is ignored (the splitter and the extractor disagree about
    it, so neither sentence clearly states it).
    """
    ordered = sorted(spans, key=_by_offsets)
    if len(ordered) < 2:
        return []
    relations: dict[tuple[str, str, str], ExtractedRelation] = {}
    cursor = 0
    for sent_start, sent_end in split_sentences(chunk.text):
        while cursor < len(ordered) and ordered[cursor][0] < sent_start:
            cursor += 1  # spans before this sentence (or straddling into it)
        ids: list[str] = []
        i = cursor
        while i < len(ordered) and ordered[i][0] < sent_end:
            _, end, entity_id = ordered[i]
            if end <= sent_end and entity_id not in ids:
                ids.append(entity_id)
            i += 1
        cursor = i
        if len(ids) < 2:
            continue
        fact = sentence_fact(chunk.text[sent_start:sent_end])
        for rel in _pairs(ids, fact, chunk.index):
            # Keyed like `ExtractedRelation.id` (the fact is already collapsed) without hashing.
            relations.setdefault((rel.source, rel.target, rel.fact.casefold()), rel)
    return list(relations.values())


def _pairs(ids: Sequence[str], fact: str, chunk_index: int) -> Iterable[ExtractedRelation]:
    for i, source in enumerate(ids):
        for step, target in enumerate(ids[i + 1 : i + 1 + MAX_PARTNERS]):
            yield unchecked(  # every value is valid by construction (`unchecked`)
                ExtractedRelation,
                {
                    "source": source,
                    "target": target,
                    "type": DEFAULT_RELATION_TYPE,
                    "fact": fact,
                    "confidence": _CONFIDENCES[step],
                    "chunk_indexes": (chunk_index,),
                },
            )


def sentence_fact(sentence: str) -> str:
    """A sentence as a relation fact: white space collapsed and length capped."""
    fact = re.sub(r"\s+", " ", sentence).strip()
    if len(fact) > MAX_FACT_CHARS:
        fact = fact[:MAX_FACT_CHARS].rstrip()
    return fact


def merge_relations(relations: Iterable[ExtractedRelation]) -> list[ExtractedRelation]:
    """Fold relations with the same id (same endpoints, type and fact) into one.

    Overlapping chunks restate the same sentence; one relation naming every chunk that states it
    is what the store expects, and the strongest confidence seen is kept.
    """
    merged: dict[str, ExtractedRelation] = {}
    for rel in relations:
        key = rel.id
        seen = merged.get(key)
        if seen is None:
            merged[key] = rel
            continue
        chunks = tuple(sorted(set(seen.chunk_indexes) | set(rel.chunk_indexes)))
        merged[key] = seen.model_copy(
            update={"chunk_indexes": chunks, "confidence": max(seen.confidence, rel.confidence)}
        )
    return list(merged.values())


def graph_from_hits(
    chunks: Sequence[TextChunk], hits: Sequence[Sequence[Hit]], *, cooccurring: bool = True
) -> GraphData:
    """The graph of one document from the hits found in each of its chunks (`hits[i]` for `chunks[i]`).

    Offline extractors only differ in how they find spans; turning spans into entities,
    mentions and co-occurrence relations is shared so every extractor emits the same shape.
    An extractor that reads real relations (an LLM) passes `cooccurring=False` and adds its own.
    Entities are deduplicated by id within the document (the first surface form names the
    entity, other forms become aliases), each (entity, chunk) gets one mention holding all its
    spans, and relations restated by overlapping chunks are merged.
    """
    entities: dict[str, ExtractedEntity] = {}
    mentions: list[Mention] = []
    relations: list[ExtractedRelation] = []
    for chunk, chunk_hits in zip(chunks, hits, strict=True):
        spans: dict[str, set[tuple[int, int]]] = {}
        located: list[EntitySpan] = []
        for hit in chunk_hits:
            entity = _entity(hit.name, hit.label)
            known = entities.get(entity.id)
            if known is None:
                entities[entity.id] = entity
            elif entity.name not in known.aliases:
                entities[entity.id] = known.model_copy(update={"aliases": (*known.aliases, entity.name)})
            spans.setdefault(entity.id, set()).add((hit.start, hit.end))
            located.append(EntitySpan(hit.start, hit.end, entity.id))
        for eid, found in spans.items():
            # the hits' own ints: nothing to validate, and validating was a hot spot of large ingests
            ordered = tuple(unchecked(Span, {"start": s, "end": e}) for s, e in sorted(found))
            mentions.append(Mention(entity_id=eid, chunk_index=chunk.index, spans=ordered))
        if cooccurring:
            relations.extend(cooccurrence_relations(chunk, located))
    return GraphData(
        entities=tuple(entities.values()),
        relations=tuple(merge_relations(relations)),
        mentions=tuple(mentions),
    )
