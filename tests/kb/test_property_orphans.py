"""An extracted entity or relation an agent gave declared properties stands on the agent's word:
deleting the only document that mentioned it keeps it, and `check` does not call it an orphan nor
`check --repair` delete it, on both stores (a plain extracted orphan still goes)."""

from __future__ import annotations

import pytest

from evigraph import KnowledgeBase
from evigraph.models import EntityType, ExtractedEntity, ExtractedRelation, Ontology, RelationType
from evigraph.property_types import PropertyOwner
from evigraph.store.core.schema_names import EXTRACTION_SOURCE

pytestmark = pytest.mark.slow

NOTE = "Ingrid Halvorsen met Bob Marley in Oslo."


async def test_properties_keep_an_unmentioned_extracted_entity(location: str) -> None:
    async with KnowledgeBase(location, extractor="rules") as kb:
        assert (await kb.ingest(text=NOTE, key="note", progress=False)).ok
        hits = {h.name: h for h in (await kb.search_entities("Ingrid Halvorsen Bob Marley", limit=10)).hits}
        ingrid, bob = hits["Ingrid Halvorsen"], hits["Bob Marley"]
        person = EntityType.model_validate({"label": ingrid.label, "properties": [{"name": "role", "type": "string"}]})
        await kb.set_ontology(Ontology(entities=(person,)))
        store = kb.store
        assert store is not None
        missing = await store.write_properties(
            [(PropertyOwner(owner="entity", id=ingrid.id), {"role": "pilot"})], "agent"
        )
        assert missing == []
        assert await kb.delete_document("note")
        records = {r.id for r in await store.entity_records()}
        assert ingrid.id in records and bob.id not in records  # the plain orphan went with its passage
        found = await kb.check()
        assert found.ok, found.found
        # A plain extracted orphan (as a crash leaves one) gives repair something to do.
        stray = ExtractedEntity.create("Stray Person", ingrid.label, "")
        await store.upsert_entities([stray], EXTRACTION_SOURCE)
        found = await kb.check()
        assert [(p.kind, p.examples) for p in found.found] == [("orphan_entities", [stray.id])]
        repaired = await kb.check(repair=True)
        assert repaired.repaired == {"orphan_entities": 1}
        records = {r.id for r in await store.entity_records()}
        assert ingrid.id in records and stray.id not in records
        held = await store.read_properties([PropertyOwner(owner="entity", id=ingrid.id)], ["role"])
        assert held[ingrid.id].values == {"role": "pilot"}


async def test_properties_keep_an_extracted_relation_whose_passages_are_gone(location: str) -> None:
    async with KnowledgeBase(location, extractor="rules") as kb:
        assert (await kb.ingest(text=NOTE, key="note", progress=False)).ok
        hits = {h.name: h for h in (await kb.search_entities("Ingrid Halvorsen Bob Marley", limit=10)).hits}
        ingrid, bob = hits["Ingrid Halvorsen"], hits["Bob Marley"]
        met = RelationType.model_validate({"type": "MET", "properties": [{"name": "since", "type": "date"}]})
        await kb.extend_ontology(relations=[met])
        store = kb.store
        assert store is not None

        def relation(fact: str) -> ExtractedRelation:
            return ExtractedRelation(
                source=ingrid.id, target=bob.id, type="MET", fact=fact, confidence=0.9, chunk_indexes=()
            )

        kept, plain = relation("Ingrid met Bob."), relation("Ingrid saw Bob.")
        # Both cite a passage that is gone, as a crash between two writes leaves a relation.
        await store.upsert_relations([(kept, ["gone-chunk"]), (plain, ["gone-chunk"])], EXTRACTION_SOURCE)
        owner = PropertyOwner(owner="relation", id=kept.id, source=ingrid.id, target=bob.id)
        assert await store.write_properties([(owner, {"since": "1975-06-01"})], "agent") == []
        found = await kb.check()
        assert [p.kind for p in found.found] == ["dangling_relation_sources"], found.found
        repaired = await kb.check(repair=True)
        assert repaired.repaired == {"dangling_relation_sources": 2}
        rows = await store.cypher_query(
            "MATCH (:Entity {id: $a})-[r:RELATES]->(:Entity {id: $b}) RETURN r.id AS id", {"a": ingrid.id, "b": bob.id}
        )
        assert kept.id in {r["id"] for r in rows} and plain.id not in {r["id"] for r in rows}
        held = await store.read_properties([owner], ["since"])
        assert held[kept.id].values == {"since": "1975-06-01"}
        assert (await kb.check()).ok
