"""A document's title becomes the entity its passages are about; bridge sentences join two entities."""

from __future__ import annotations

import pytest
from tests.extraction.test_rules_extraction import chunks

from evigraph.ingest.bridges import bridge_sentences, sentence_entities
from evigraph.ingest.ontology import DEFAULT_ONTOLOGY
from evigraph.ingest.subjects import subject_name, with_subject
from evigraph.models import ExtractedEntity, GraphData, Mention, Span


@pytest.mark.parametrize(
    ("title", "name"),
    [
        ("Move (1970 film)", "Move"),  # the disambiguation is not part of the name
        ("Query Parameters", "Query Parameters"),
        ("Docker", "Docker"),
        ("README.md", None),  # a file name
        ("src/app.py", None),
        ("https://example.org/page", None),
        ("# Heading", "Heading"),  # the marker is trimmed as the extractor trims names
        ("2021", None),
        ("How to configure the proxy when the network refuses every outbound request", None),  # a sentence
        ("", None),
    ],
)
def test_subject_name(title: str, name: str | None) -> None:
    assert subject_name(title) == name


def test_subject_reuses_the_extracted_entity_and_is_mentioned_by_every_chunk() -> None:
    boris = ExtractedEntity.create("Boris Kellerman", "Person")
    graph = GraphData(
        entities=(boris,),
        mentions=(Mention(entity_id=boris.id, chunk_index=0, spans=(Span(start=0, end=15),)),),
    )
    out = with_subject(graph, "Boris Kellerman", [0, 1, 2], DEFAULT_ONTOLOGY)
    assert [e.id for e in out.entities] == [boris.id]  # one entity for one thing
    by_chunk = {m.chunk_index: m for m in out.mentions if m.entity_id == boris.id}
    assert sorted(by_chunk) == [0, 1, 2]
    assert by_chunk[0].spans == (Span(start=0, end=15),) and by_chunk[1].spans == ()  # spans kept where found


def test_a_qualified_title_is_its_own_entity_with_the_bare_name_as_alias() -> None:
    move = ExtractedEntity.create("Move", "Product")  # the extractor's "Move" may be any of several
    graph = GraphData(entities=(move,), mentions=(Mention(entity_id=move.id, chunk_index=0),))
    out = with_subject(graph, "Move (1970 film)", [0], DEFAULT_ONTOLOGY)
    subject = out.entities[-1]
    assert (subject.name, subject.label) == ("Move (1970 film)", "Concept") and "Move" in subject.aliases
    assert subject.id != move.id and len(out.entities) == 2


def test_subject_not_found_by_the_extractor_is_a_concept() -> None:
    [subject] = with_subject(GraphData(), "Query Parameters", [0], DEFAULT_ONTOLOGY).entities
    assert (subject.name, subject.label) == ("Query Parameters", "Concept")
    assert with_subject(GraphData(), "notes/todo.txt", [0], DEFAULT_ONTOLOGY) == GraphData()


def test_bridge_sentences_join_two_entities_and_the_subject_is_in_every_sentence() -> None:
    text = "He was born in Tallinn. He liked boats. His mother was Greta Lind and his father Jaan Lind."
    [chunk] = chunks(text)
    tallinn, greta, jaan = (ExtractedEntity.create(n, "Person") for n in ("Tallinn", "Greta Lind", "Jaan Lind"))
    mentions = tuple(
        Mention(entity_id=e.id, chunk_index=0, spans=(Span(start=text.index(n), end=text.index(n) + len(n)),))
        for e, n in ((tallinn, "Tallinn"), (greta, "Greta Lind"), (jaan, "Jaan Lind"))
    )
    plain = GraphData(entities=(tallinn, greta, jaan), mentions=mentions)
    [spans] = bridge_sentences([chunk], plain)
    assert [text[s.start : s.end] for s in spans] == ["His mother was Greta Lind and his father Jaan Lind."]
    about = with_subject(plain, "Boris Kellerman", [0], DEFAULT_ONTOLOGY)
    [spans] = bridge_sentences([chunk], about)
    assert [text[s.start : s.end] for s in spans] == [  # the subject joins Tallinn; "He liked boats." joins nothing
        "He was born in Tallinn.",
        "His mother was Greta Lind and his father Jaan Lind.",
    ]


def test_sentence_entities_places_each_mention_in_its_sentence() -> None:
    spans = [(0, 10), (11, 20)]
    found = sentence_entities(spans, [("a", (2,)), ("b", (12, 15)), ("subject", ())])
    assert found == [{"a", "subject"}, {"b", "subject"}]
