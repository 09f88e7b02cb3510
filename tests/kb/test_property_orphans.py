"""An extracted entity an agent gave declared properties stands on the agent's word: deleting the
only document that mentioned it keeps it, and `check` does not call it an orphan nor `check
--repair` delete it, on both stores (a plain extracted orphan still goes)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import FalkorServer

from evigraph import KnowledgeBase
from evigraph.models import EntityType, Ontology
from evigraph.property_types import PropertyOwner

pytestmark = pytest.mark.slow

NOTE = "Ingrid Halvorsen met Bob Marley in Oslo."


@pytest.fixture(params=["embedded", "falkordb"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "embedded":
        return str(tmp_path / "kb.db")
    server: FalkorServer = request.getfixturevalue("falkordb_server")
    return server.url(f"orphans_{tmp_path.name}".replace("-", "_"))


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
        repaired = await kb.check(repair=True)
        assert not repaired.repaired and ingrid.id in {r.id for r in await store.entity_records()}
        held = await store.read_properties([PropertyOwner(owner="entity", id=ingrid.id)], ["role"])
        assert held[ingrid.id].values == {"role": "pilot"}
