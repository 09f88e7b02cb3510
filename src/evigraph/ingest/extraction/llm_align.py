"""Turning what an LLM said about a passage into entities, mentions and relations of the graph.

A model paraphrases, so nothing it names is taken on trust: an entity is kept only where its
name is found in the passage (those spans become its mentions, and only they let a search reach
it), and a relation only between two entities so kept. What is dropped is counted, so a model
that invents names shows in the ingest report instead of in the graph.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from evigraph.ingest.extraction.cooccurrence import Hit, graph_from_hits, merge_relations, sentence_fact
from evigraph.ingest.extraction.llm_prompts import RawExtraction
from evigraph.ingest.extraction.names import EDGE_JUNK
from evigraph.models import ExtractedRelation, GraphData, Ontology, TextChunk, entity_id, normalize_name

LLM_CONFIDENCE = 0.8
"""Confidence of a relation the model stated (a co-occurrence gets 0.5 at most)."""

MAX_NAME_CHARS = 200


@dataclass
class Alignment:
    """One document's graph and what aligning it dropped."""

    graph: GraphData
    unaligned_entities: int = 0
    dangling_relations: int = 0


@dataclass
class _Chunk:
    hits: list[Hit] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)  # normalised name -> entity id
    unaligned: int = 0


def align_document(chunks: Sequence[TextChunk], raws: Sequence[RawExtraction], ontology: Ontology) -> Alignment:
    """The graph of one document from the model's answer for each of its chunks (`raws[i]` for `chunks[i]`).

    Labels and relation types are put in the ontology's spelling when they match it ignoring case;
    others are kept as written, for the ontology pruning to drop and report.
    """
    labels = {label.casefold(): label for label in ontology.labels}
    types = {r.type.casefold(): r.type for r in ontology.relations}
    per_chunk: list[list[Hit]] = []
    relations: list[ExtractedRelation] = []
    unaligned = dangling = 0
    for chunk, raw in zip(chunks, raws, strict=True):
        found = _align_entities(chunk.text, raw.entities, labels)
        per_chunk.append(found.hits)
        unaligned += found.unaligned
        for source, rtype, target, fact in raw.relations:
            a, b = found.names.get(normalize_name(source)), found.names.get(normalize_name(target))
            if a is None or b is None or a == b:
                dangling += 1
                continue
            kind = _relation_type(rtype, types)
            relations.append(
                ExtractedRelation(
                    source=a,
                    target=b,
                    type=kind,
                    fact=sentence_fact(fact) or f"{source} {kind.lower().replace('_', ' ')} {target}.",
                    confidence=LLM_CONFIDENCE,
                    chunk_indexes=(chunk.index,),
                )
            )
    graph = graph_from_hits(chunks, per_chunk, cooccurring=False)
    graph = graph.model_copy(update={"relations": tuple(merge_relations(relations))})
    return Alignment(graph, unaligned, dangling)


def _align_entities(text: str, entities: Sequence[tuple[str, str]], labels: dict[str, str]) -> _Chunk:
    """Spans of each named entity in `text`, longer names first so "New York" inside "New York
    Times" is not taken for a mention of the city (unless the city is named nowhere else)."""
    out = _Chunk()
    taken: list[tuple[int, int]] = []
    seen: set[tuple[str, str]] = set()
    for name, label in sorted(entities, key=lambda e: -len(e[0])):
        name = name.strip(EDGE_JUNK)
        label = labels.get(label.casefold(), label)
        key = (normalize_name(name), label)
        if key in seen:
            continue
        seen.add(key)
        spans = find_name(text, name) if key[0] and len(name) <= MAX_NAME_CHARS else []
        if not spans:
            out.unaligned += 1
            continue
        free = [s for s in spans if not any(s[0] < e and b < s[1] for b, e in taken)]
        used = free or spans
        taken += used
        surface = text[used[0][0] : used[0][1]]
        out.hits += [Hit(s, e, text[s:e], label) for s, e in used]
        out.names.setdefault(key[0], entity_id(surface, label))
    out.hits.sort(key=lambda h: (h.start, h.end))
    return out


def find_name(text: str, name: str) -> list[tuple[int, int]]:
    """Where `name` stands in `text` as whole words (any run of white space between its words):
    as written, else ignoring case."""
    words = name.split()
    if not words:
        return []
    pattern = r"(?<!\w)" + r"\s+".join(map(re.escape, words)) + r"(?!\w)"
    for flags in (0, re.IGNORECASE):
        spans = [m.span() for m in re.finditer(pattern, text, flags)]
        if spans:
            return spans
    return []


def _relation_type(written: str, declared: dict[str, str]) -> str:
    snake = re.sub(r"\W+", "_", written).strip("_").upper() or written
    return declared.get(written.casefold()) or declared.get(snake.casefold()) or snake
