"""Declared properties through the tools and Python: declare, upsert with provenance, read in
results and Cypher, bad input refused with the fix, and nothing lost by re-declaring or re-ingesting."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.tools.conftest import run

from evigraph import KnowledgeBase, Toolkit
from evigraph.errors import EvigraphError, InputError
from evigraph.models import EntityType, Ontology, RelationType
from evigraph.tools.graph_tools import CypherResult, EntitySearchResult, ExplorationResult, OntologyResult
from evigraph.tools.write_tools import IngestResult, OntologyChange, UpsertResult

NOTE = "Dr. Ingrid Halvorsen works for Acme Robotics Corp in Oslo."
ONTOLOGY: dict[str, Any] = {
    "entities": [
        {
            "label": "Person",
            "properties": [
                {"name": "born", "type": "date", "description": "date of birth"},
                {"name": "patents", "type": "integer"},
                {"name": "skills", "type": "string_list"},
            ],
        },
        {"label": "Organization", "properties": [{"name": "public", "type": "boolean"}, "ticker"]},
    ],
    "relations": [
        {
            "label": "WORKS_FOR",
            "patterns": [["Person", "Organization"]],
            "properties": [{"name": "since", "type": "date"}, {"name": "share", "type": "number"}],
        }
    ],
}
INGRID = {"name": "Ingrid Halvorsen", "label": "Person"}
ACME = {"name": "Acme Robotics Corp", "label": "Organization"}


@pytest.fixture
async def kb(tmp_path: Path) -> AsyncIterator[KnowledgeBase]:
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules") as fresh:
        yield fresh


@pytest.fixture
def tk(kb: KnowledgeBase) -> Toolkit:
    return Toolkit(kb, project="props", agent="scribe")


async def declared(tk: Toolkit) -> None:
    change = await run(tk, "set_ontology", ONTOLOGY, OntologyChange)
    assert "Person.born" in change.added_properties and "WORKS_FOR.since" in change.added_properties
    assert "Organization.ticker" in change.added_properties  # a bare name is a string property


async def rows(tk: Toolkit, query: str) -> list[dict[str, Any]]:
    return (await run(tk, "cypher_query", {"query": query}, CypherResult)).rows


async def test_declared_properties_are_written_shown_and_queried(tk: Toolkit) -> None:
    await declared(tk)
    await run(tk, "ingest", {"text": NOTE, "document_key": "notes/n1"}, IngestResult)
    props = {"born": "1971-03-02", "patents": 12, "skills": ["robotics", "logistics"]}
    await run(tk, "upsert_entities", {"entities": [{**INGRID, "properties": props}, ACME]}, UpsertResult)
    await run(
        tk,
        "upsert_relations",
        {
            "relations": [
                {
                    "source": INGRID,
                    "type": "WORKS_FOR",
                    "target": ACME,
                    "fact": "Ingrid Halvorsen works for Acme Robotics Corp.",
                    "properties": {"since": "2011-05-01", "share": 0.4},
                }
            ]
        },
        UpsertResult,
    )
    found = await run(tk, "search_entities", {"query": "Ingrid Halvorsen", "limit": 3}, EntitySearchResult)
    card = next(h for h in found.hits if h.name == "Ingrid Halvorsen")
    assert card.properties == props
    assert card.property_sources == dict.fromkeys(props, "agent:scribe")
    assert "born: 1971-03-02" in found.to_llm_text(4000)

    walk = await run(tk, "explore_relationships", {"entity": card.id}, ExplorationResult)
    edge = next(e for e in walk.edges if e.type == "WORKS_FOR")
    assert edge.properties == {"since": "2011-05-01", "share": 0.4}

    assert await rows(
        tk, "MATCH (e:Entity) WHERE e.patents > 10 RETURN e.name AS name, e.born AS born, e.skills AS skills"
    ) == [{"name": "Ingrid Halvorsen", "born": "1971-03-02", "skills": ["robotics", "logistics"]}]
    assert await rows(
        tk, "MATCH (:Entity)-[r:RELATES]->(:Entity) WHERE r.since < '2020-01-01' RETURN r.share AS s"
    ) == [{"s": 0.4}]
    ontology = await run(tk, "get_ontology", {}, OntologyResult)
    person = next(e for e in ontology.entity_types if e.label == "Person")
    assert [(p.name, p.type) for p in person.properties] == [
        ("born", "date"),
        ("patents", "integer"),
        ("skills", "string_list"),
    ]
    assert "born date (date of birth)" in ontology.to_llm_text(8000)
    entity_table = next(t for t in ontology.tables if t.name == "Entity")
    assert entity_table.properties["patents"] == "INT64"

    # Re-ingesting the document (changed) updates the entity from extraction; the agent's values stay.
    await run(tk, "ingest", {"text": NOTE + " She moved to Bergen.", "document_key": "notes/n1"}, IngestResult)
    again = await run(tk, "search_entities", {"query": "Ingrid Halvorsen", "limit": 3}, EntitySearchResult)
    assert next(h for h in again.hits if h.name == "Ingrid Halvorsen").properties == props
    # A partial update keeps what it does not name; null removes one.
    await run(
        tk, "upsert_entities", {"entities": [{**INGRID, "properties": {"patents": 13, "skills": None}}]}, UpsertResult
    )
    last = await run(tk, "search_entities", {"query": "Ingrid Halvorsen", "limit": 3}, EntitySearchResult)
    assert next(h for h in last.hits if h.name == "Ingrid Halvorsen").properties == {
        "born": "1971-03-02",
        "patents": 13,
    }


@pytest.mark.parametrize(
    ("properties", "expected"),
    [
        ({"height": 1.7}, r"property 'height' is not declared \(declared: born, patents, skills\)"),
        ({"patents": "12"}, r"'patents' is integer, not str.*pass a whole number"),
        ({"patents": True}, r"'patents' is integer, not bool"),
        ({"born": "02/03/1971"}, r"'born' is date.*'YYYY-MM-DD'"),
        ({"born": "1971-02-30"}, r"'born' is date"),
        ({"skills": ["x" * 201]}, r"'skills' is 201 characters; at most 200"),
        ({"skills": [str(i) for i in range(51)]}, r"'skills' has 51 items; at most 50"),
    ],
)
async def test_bad_values_are_refused_with_the_fix_and_nothing_is_written(
    tk: Toolkit, properties: dict[str, Any], expected: str
) -> None:
    await declared(tk)
    with pytest.raises(EvigraphError, match=expected):
        await tk.call("upsert_entities", {"entities": [{**INGRID, "properties": properties}]})
    assert await rows(tk, "MATCH (e:Entity) RETURN e.name AS name") == []  # the entity was not written either


async def test_bad_declarations_are_refused(tk: Toolkit) -> None:
    await declared(tk)
    with pytest.raises(EvigraphError, match="cannot become integer"):
        await tk.call(
            "set_ontology", {"entities": [{"label": "Person", "properties": [{"name": "born", "type": "integer"}]}]}
        )
    with pytest.raises(EvigraphError, match="'born' is date on Person but integer on Place"):
        await tk.call(
            "set_ontology", {"entities": [{"label": "Place", "properties": [{"name": "born", "type": "integer"}]}]}
        )
    with pytest.raises(EvigraphError, match="lower_snake_case"):
        await tk.call("set_ontology", {"entities": [{"label": "Place", "properties": [{"name": "Founded Year"}]}]})
    with pytest.raises(EvigraphError, match="one of evigraph's own columns"):
        await tk.call("set_ontology", {"entities": [{"label": "Place", "properties": [{"name": "name"}]}]})
    with pytest.raises(EvigraphError, match="at most 30"):
        many = [{"name": f"p{i}"} for i in range(31)]
        await tk.call("set_ontology", {"entities": [{"label": "Place", "properties": many}]})
    await run(tk, "upsert_entities", {"entities": [INGRID, ACME]}, UpsertResult)
    with pytest.raises(EvigraphError, match="'share' is number"):
        await tk.call(
            "upsert_relations",
            {
                "relations": [
                    {"source": INGRID, "type": "WORKS_FOR", "target": ACME, "fact": "x", "properties": {"share": "a"}}
                ]
            },
        )


@pytest.mark.parametrize(
    ("share", "expected"),
    [
        (10**400, r"'share' is out of a number's range"),
        (-(10**400), r"'share' is out of a number's range"),
        (float("inf"), r"'share' is number, not float"),
        (float("nan"), r"'share' is number, not float"),
    ],
)
async def test_a_number_no_double_holds_is_refused_with_the_fix(tk: Toolkit, share: float, expected: str) -> None:
    await declared(tk)
    await run(tk, "upsert_entities", {"entities": [INGRID, ACME]}, UpsertResult)
    relation = {"source": INGRID, "type": "WORKS_FOR", "target": ACME, "fact": "x", "properties": {"share": share}}
    with pytest.raises(EvigraphError, match=expected):
        await tk.call("upsert_relations", {"relations": [relation]})


async def test_python_set_ontology_keeps_values_it_would_drop(kb: KnowledgeBase) -> None:
    person = EntityType(label="Person", properties=({"name": "patents", "type": "integer"},))  # type: ignore[arg-type]
    works = RelationType(type="WORKS_FOR")
    await kb.set_ontology(Ontology(entities=(person,), relations=(works,)))
    from evigraph.models import ExtractedEntity

    ada = ExtractedEntity.create("Ada Lovelace", "Person")
    await kb.upsert_entities([ada], properties={ada.id: {"patents": 0}})
    with pytest.raises(InputError, match=r"leaves out entity properties that hold values: patents \(1 entity\)"):
        await kb.set_ontology(Ontology(entities=(EntityType(label="Person"),), relations=(works,)))
    # Keeping it (and adding one) is fine; the value is still there.
    wider = EntityType.model_validate(
        {"label": "Person", "properties": [*person.properties, {"name": "born", "type": "date"}]}
    )  # validated: model_copy(update=) would keep a plain dict where a PropertyType belongs
    await kb.set_ontology(Ontology(entities=(EntityType.model_validate(wider.model_dump()),), relations=(works,)))
    rows = await kb.cypher_query("MATCH (e:Entity) RETURN e.patents AS p, e.born AS b")
    assert rows.rows == [{"p": 0, "b": None}]
    with pytest.raises(InputError, match="properties given for entities not written"):
        await kb.upsert_entities([ada], properties={"person:nobody": {"patents": 1}})


async def test_properties_under_a_merged_away_name_reach_the_survivor(kb: KnowledgeBase) -> None:
    from evigraph.models import ExtractedEntity, ExtractedRelation
    from evigraph.store.merging import EntityMerge

    person = EntityType(label="Person", properties=({"name": "patents", "type": "integer"},))  # type: ignore[arg-type]
    works = RelationType(type="WORKS_FOR", properties=({"name": "since", "type": "date"},))  # type: ignore[arg-type]
    await kb.set_ontology(Ontology(entities=(person,), relations=(works,)))
    ada, lovelace, acme = (ExtractedEntity.create(n, "Person") for n in ("Ada Lovelace", "Ada King", "Acme"))
    await kb.upsert_entities([ada, lovelace, acme])
    assert kb.store is not None
    await kb.store.merge_entities([EntityMerge(survivor=ada.id, merged=(lovelace.id,))])
    # An agent still naming the merged-away spelling writes to the survivor, as the upsert does.
    await kb.upsert_entities([lovelace], properties={lovelace.id: {"patents": 2}})
    joined = ExtractedRelation(
        source=lovelace.id,
        target=acme.id,
        type="WORKS_FOR",
        fact="Ada King works for Acme.",
        confidence=1.0,
        chunk_indexes=(),
    )
    await kb.upsert_relations([(joined, [])], properties={joined.id: {"since": "1840-01-01"}})
    rows = await kb.cypher_query("MATCH (e:Entity {id: $id}) RETURN e.patents AS p", {"id": ada.id})
    assert rows.rows == [{"p": 2}]
    rows = await kb.cypher_query("MATCH (:Entity {id: $id})-[r:RELATES]->() RETURN r.since AS s", {"id": ada.id})
    assert rows.rows == [{"s": "1840-01-01"}]
    # A relation whose end does not exist is refused, not dropped unseen.
    ghost = joined.model_copy(update={"target": "person:nobody"})
    with pytest.raises(InputError, match="person:nobody"):
        await kb.upsert_relations([(ghost, [])], properties={ghost.id: {"since": "1841-01-01"}})


async def test_python_set_ontology_keeps_the_declaration_limits(kb: KnowledgeBase) -> None:
    many = EntityType.model_validate({"label": "Place", "properties": [{"name": f"p{i}"} for i in range(33)]})
    with pytest.raises(InputError, match="Place declares 33 properties; at most 30"):
        await kb.set_ontology(Ontology(entities=(many,)))
    twice = EntityType.model_validate({"label": "Place", "properties": [{"name": "p"}, {"name": "p"}]})
    with pytest.raises(InputError, match="Place declares p more than once"):
        await kb.set_ontology(Ontology(entities=(twice,)))
    clash = EntityType.model_validate({"label": "Person", "properties": [{"name": "p", "type": "integer"}]})
    with pytest.raises(InputError, match="'p' is string on Place but integer on Person"):
        await kb.set_ontology(
            Ontology(entities=(EntityType.model_validate({"label": "Place", "properties": ["p"]}), clash))
        )
    assert not any(kb.ontology.declared_properties("entity").values())  # nothing refused was kept
    await kb.extend_ontology([EntityType(label="Place")])  # a later extension still works


@pytest.mark.parametrize("new_type", ["date", "integer"])
@pytest.mark.slow
async def test_python_set_ontology_refuses_a_new_type_for_a_name_holding_values(location: str, new_type: str) -> None:
    async with KnowledgeBase(location, extractor="rules") as kb:
        await _retype(kb, new_type)


async def _retype(kb: KnowledgeBase, new_type: str) -> None:
    from evigraph.models import ExtractedEntity

    person = EntityType.model_validate({"label": "Person", "properties": [{"name": "note"}]})
    await kb.set_ontology(Ontology(entities=(person,)))
    ada = ExtractedEntity.create("Ada Lovelace", "Person")
    await kb.upsert_entities([ada], properties={ada.id: {"note": "1815-12-10"}})
    retyped = EntityType.model_validate({"label": "Person", "properties": [{"name": "note", "type": new_type}]})
    with pytest.raises(InputError, match=r"note \(string, 1 entity\).*cannot become " + new_type):
        await kb.set_ontology(Ontology(entities=(retyped,)))
    rows = await kb.cypher_query("MATCH (e:Entity) RETURN e.note AS n")
    assert rows.rows == [{"n": "1815-12-10"}]
    # Another type may drop the name while Person keeps it.
    place = EntityType.model_validate({"label": "Place", "properties": [{"name": "note"}]})
    await kb.set_ontology(Ontology(entities=(person, place)))
    await kb.set_ontology(Ontology(entities=(person,)))
    if new_type == "date":  # a name that holds nothing may change type (to one its column holds)
        await kb.upsert_entities([ada], properties={ada.id: {"note": None}})
        await kb.set_ontology(Ontology(entities=(retyped,)))
