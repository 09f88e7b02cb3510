"""RuleBasedExtraction: regex-only names, dates and quantities, typed through the ontology."""

from __future__ import annotations

import pytest

from evigraph.ingest.extraction import RuleBasedExtraction
from evigraph.ingest.ontology import DEFAULT_ONTOLOGY
from evigraph.models import UNKNOWN_LABEL, EntityType, GraphData, Ontology, TextChunk

TEXT = (
    "Dr. Jane Smith joined the University of Oxford in 1998. "
    "President Abraham Lincoln of Illinois met Mr. Brown at the Bank of America. "
    "The Clean Air Act was signed on 12 March 2004 in New York City. "
    "World War II ended in 1945."
)


def chunks(*texts: str) -> list[TextChunk]:
    out, offset = [], 0
    for i, text in enumerate(texts):
        out.append(TextChunk(index=i, text=text, start=offset, end=offset + len(text)))
        offset += len(text) + 1
    return out


async def extract(*texts: str, ontology: Ontology = DEFAULT_ONTOLOGY) -> GraphData:
    return await RuleBasedExtraction().extract(chunks(*texts), ontology)


def labels(graph: GraphData) -> dict[str, str]:
    return {e.name: e.label for e in graph.entities}


async def test_names_are_typed_by_title_and_suffix() -> None:
    found = labels(await extract(TEXT))
    assert found["Jane Smith"] == "Person"
    assert found["Abraham Lincoln"] == "Person"
    assert found["Brown"] == "Person"
    assert found["University of Oxford"] == "Organization"
    assert found["Bank of America"] == "Organization"
    assert found["New York City"] == "Location"
    assert found["Clean Air Act"] == "Law"
    assert found["World War II"] == "Event"
    assert found["Illinois"] == UNKNOWN_LABEL  # no title, no suffix: not guessed
    assert found["1998"] == found["1945"] == found["12 March 2004"] == "Date"


async def test_sentence_starters_months_and_titles_alone_are_not_names() -> None:
    found = labels(
        await extract(
            "The report was late. However, Google replied. In Paris it rained on Monday. "
            "Yesterday Prof. X Y arrived. Recently, NASA said so. Moreover it was May."
        )
    )
    assert set(found) == {"Google", "Paris", "X Y", "NASA"}
    assert found["X Y"] == "Person"


@pytest.mark.parametrize(
    ("text", "date"),
    [
        ("It opened on 12 March 2004 downtown.", "12 March 2004"),
        ("It opened on March 12, 2004 downtown.", "March 12, 2004"),
        ("It opened in March 2004 downtown.", "March 2004"),
        ("It opened on 2004-03-12 downtown.", "2004-03-12"),
        ("It has grown since 1987 steadily.", "1987"),
        ("It was the year 2010 exactly.", "2010"),
    ],
)
async def test_date_forms(text: str, date: str) -> None:
    graph = await extract(text)
    assert [(e.name, e.label) for e in graph.entities] == [(date, "Date")]


async def test_bare_numbers_are_not_dates() -> None:
    graph = await extract("Route 1998 has 2004 lanes.")
    assert not [e for e in graph.entities if e.label == "Date"]


async def test_quantities_are_unknown_unless_the_ontology_has_a_quantity_label() -> None:
    text = "They raised $40 billion, a 20% rise, built 5 km of road, 150 kg each, for 3.2 million people over 30 years."
    expected = {"$40 billion", "20%", "5 km", "150 kg", "3.2 million", "30 years"}
    default = labels(await extract(text))
    assert expected <= set(default)
    assert {default[q] for q in expected} == {UNKNOWN_LABEL}
    onto = Ontology(entities=(EntityType(label="Person"), EntityType(label="Measure")))
    assert {labels(await extract(text, ontology=onto))[q] for q in expected} == {"Measure"}


async def test_ontology_without_person_makes_people_unknown() -> None:
    onto = Ontology(entities=(EntityType(label="Organization"), EntityType(label="Date")))
    found = labels(await extract(TEXT, ontology=onto))
    assert found["Jane Smith"] == UNKNOWN_LABEL
    assert found["University of Oxford"] == "Organization"
    assert all(label in ("Organization", "Date", UNKNOWN_LABEL) for label in found.values())


async def test_spans_reproduce_the_surface_text() -> None:
    texts = (TEXT, "  Later, Mr. Brown visited the Bank of America again in 2001.")
    graph = await extract(*texts)
    names = {e.id: set(e.aliases) for e in graph.entities}
    assert graph.mentions
    for mention in graph.mentions:
        for span in mention.spans:
            assert texts[mention.chunk_index][span.start : span.end] in names[mention.entity_id]


async def test_entities_are_deduplicated_within_a_document() -> None:
    graph = await extract("Mr. Brown works at Acme Corp.", "Acme Corp hired Mr. Brown again.")
    ids = [e.id for e in graph.entities]
    assert len(ids) == len(set(ids)) == 2
    assert {m.chunk_index for m in graph.mentions if m.entity_id == "organization:acme corp"} == {0, 1}


async def test_relations_link_entities_of_one_sentence_with_it_as_fact() -> None:
    graph = await extract("Dr. Jane Smith joined Acme Corp in 1998. Mr. Brown lives in Springfield City.")
    by_id = {e.id: e.name for e in graph.entities}
    rels = {(by_id[r.source], by_id[r.target]): r.fact for r in graph.relations}
    assert rels == {
        ("Jane Smith", "Acme Corp"): "Dr. Jane Smith joined Acme Corp in 1998.",
        ("Jane Smith", "1998"): "Dr. Jane Smith joined Acme Corp in 1998.",
        ("Acme Corp", "1998"): "Dr. Jane Smith joined Acme Corp in 1998.",
        ("Brown", "Springfield City"): "Mr. Brown lives in Springfield City.",
    }


async def test_extract_many_equals_one_by_one() -> None:
    docs = [chunks(TEXT), chunks("Mr. Brown met Dr. Jane Smith.", "Acme Corp moved to Boston City.")]
    extractor = RuleBasedExtraction()
    together = await extractor.extract_many(docs, DEFAULT_ONTOLOGY)
    alone = [await extractor.extract(doc, DEFAULT_ONTOLOGY) for doc in docs]
    assert together == alone
    assert len(together[1].entities) == 4


async def test_empty_input() -> None:
    assert await RuleBasedExtraction().extract([], DEFAULT_ONTOLOGY) == GraphData()
