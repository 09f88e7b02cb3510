"""Co-occurrence relations: same sentence only, the sentence as fact, bounded pairing."""

from __future__ import annotations

import re

from evigraph.ingest.extraction.cooccurrence import (
    MAX_FACT_CHARS,
    Hit,
    cooccurrence_relations,
    graph_from_hits,
    merge_relations,
)
from evigraph.models import DEFAULT_RELATION_TYPE, ExtractedRelation, GraphData, TextChunk


def chunk(text: str, index: int = 0) -> TextChunk:
    return TextChunk(index=index, text=text, start=0, end=len(text))


def spans_of(text: str, *names: str) -> list[tuple[int, int, str]]:
    out = []
    for name in names:
        for m in re.finditer(re.escape(name), text):
            out.append((m.start(), m.end(), name.lower()))
    return out


def test_relations_only_within_a_sentence_with_the_sentence_as_fact() -> None:
    text = "Alice met Bob in Paris. Carol  stayed\nin Rome."
    rels = cooccurrence_relations(chunk(text, 4), spans_of(text, "Alice", "Bob", "Paris", "Carol", "Rome"))
    pairs = {(r.source, r.target) for r in rels}
    assert pairs == {("alice", "bob"), ("alice", "paris"), ("bob", "paris"), ("carol", "rome")}
    facts = {(r.source, r.target): r.fact for r in rels}
    assert facts[("alice", "bob")] == "Alice met Bob in Paris."
    assert facts[("carol", "rome")] == "Carol stayed in Rome."  # white space collapsed
    assert all(r.type == DEFAULT_RELATION_TYPE and r.chunk_indexes == (4,) for r in rels)


def test_direction_follows_reading_order_and_confidence_falls_with_distance() -> None:
    text = "Delta, Alpha, Charlie and Bravo met."
    rels = cooccurrence_relations(chunk(text), spans_of(text, "Alpha", "Bravo", "Charlie", "Delta"))
    conf = {(r.source, r.target): r.confidence for r in rels}
    assert conf[("delta", "alpha")] == 0.5
    assert conf[("delta", "charlie")] == 0.4
    assert conf[("delta", "bravo")] == 0.3
    assert ("alpha", "delta") not in conf


def test_ten_names_in_one_sentence_give_at_most_three_pairs_per_entity() -> None:
    names = [f"Name{c}" for c in "ABCDEFGHIJ"]
    text = ", ".join(names) + " all signed the letter."
    rels = cooccurrence_relations(chunk(text), spans_of(text, *names))
    by_source: dict[str, int] = {}
    for r in rels:
        by_source[r.source] = by_source.get(r.source, 0) + 1
    assert max(by_source.values()) == 3
    assert len(rels) == 3 * 7 + 2 + 1  # linear, not 45 pairs
    assert min(r.confidence for r in rels) >= 0.2


def test_repeated_entity_is_one_node_and_never_paired_with_itself() -> None:
    text = "Alice told Alice's friend Bob about Alice."
    rels = cooccurrence_relations(chunk(text), spans_of(text, "Alice", "Bob"))
    assert [(r.source, r.target) for r in rels] == [("alice", "bob")]


def test_span_crossing_a_sentence_boundary_is_ignored() -> None:
    text = "Alice left. Bob arrived with Carol."
    spans = [(0, 15, "straddler"), *spans_of(text, "Bob", "Carol")]
    rels = cooccurrence_relations(chunk(text), spans)
    assert {(r.source, r.target) for r in rels} == {("bob", "carol")}


def test_long_sentence_fact_is_capped() -> None:
    text = "Alice " + "and more words " * 60 + "Bob."
    rels = cooccurrence_relations(chunk(text), spans_of(text, "Alice", "Bob"))
    assert len(rels) == 1 and len(rels[0].fact) <= MAX_FACT_CHARS
    assert rels[0].fact.startswith("Alice and more words")


def test_merge_relations_unions_chunks_of_a_restated_sentence() -> None:
    a = ExtractedRelation(source="x", target="y", fact="X met Y.", confidence=0.4, chunk_indexes=(0,))
    b = a.model_copy(update={"confidence": 0.5, "chunk_indexes": (1,)})
    merged = merge_relations([a, b])
    assert len(merged) == 1
    assert merged[0].chunk_indexes == (0, 1) and merged[0].confidence == 0.5


def test_graph_from_hits_deduplicates_entities_and_groups_mentions() -> None:
    t0, t1 = "Alice met Bob. Alice left.", "Bob met ALICE."
    hits0 = [Hit(0, 5, "Alice", "Person"), Hit(10, 13, "Bob", "Person"), Hit(15, 20, "Alice", "Person")]
    hits1 = [Hit(0, 3, "Bob", "Person"), Hit(8, 13, "ALICE", "Person")]
    graph = graph_from_hits([chunk(t0, 0), chunk(t1, 1)], [hits0, hits1])
    assert sorted(e.id for e in graph.entities) == ["person:alice", "person:bob"]
    alice = next(e for e in graph.entities if e.id == "person:alice")
    assert alice.name == "Alice" and alice.aliases == ("Alice", "ALICE")
    first = next(m for m in graph.mentions if m.entity_id == "person:alice" and m.chunk_index == 0)
    assert [(s.start, s.end) for s in first.spans] == [(0, 5), (15, 20)]
    assert {(r.source, r.target, r.chunk_indexes) for r in graph.relations} == {
        ("person:alice", "person:bob", (0,)),
        ("person:bob", "person:alice", (1,)),
    }


def test_a_graph_from_hits_equals_its_validated_form() -> None:
    """Spans are gathered as offset pairs and confidences come from a table: what is built must
    be exactly what validation makes (tuples, not lists; the rounded confidences)."""
    text = "Alice met Bob and Carol in Paris. Alice left."
    names = [("Alice", 0), ("Bob", 10), ("Carol", 18), ("Paris", 27), ("Alice", 34)]
    hits = [Hit(at, at + len(name), name, "Person") for name, at in names]
    graph = graph_from_hits([chunk(text)], [hits])
    assert graph == GraphData.model_validate(graph.model_dump())
    assert sorted({r.confidence for r in graph.relations}) == [0.3, 0.4, 0.5]
    assert all(type(m.spans) is tuple for m in graph.mentions)
    built = [*graph.relations, *(s for m in graph.mentions for s in m.spans)]  # made `unchecked`
    assert all(model.model_fields_set == set(type(model).model_fields) for model in built)
    assert graph.relations[0].model_copy(update={"type": "MET"}).type == "MET" != graph.relations[1].type


def test_a_relation_copied_with_new_endpoints_gets_the_id_they_give() -> None:
    """The id is kept once computed; a copy that changes a field must not carry it over."""
    rel = ExtractedRelation(source="x", target="y", fact="X met Y.", confidence=0.4, chunk_indexes=(0,))
    assert rel.id == rel.model_copy().id
    moved = rel.model_copy(update={"source": "z"})
    fresh = ExtractedRelation(source="z", target="y", fact="X met Y.", confidence=0.4, chunk_indexes=(0,))
    assert moved.id == fresh.id != rel.id
    assert moved == fresh and rel.model_dump() == {**fresh.model_dump(), "source": "x"}
