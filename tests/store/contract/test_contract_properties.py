"""Declared properties on every store: columns, writes with provenance, reads, counts, Cypher."""

from __future__ import annotations

from tests.store.contract.conftest import ADA, ALPHA, BABBAGE, LONDON, build_library, covers, version

from evigraph.models import ExtractedRelation
from evigraph.property_types import PropertyKind, PropertyOwner
from evigraph.store import GraphStore

ENTITY_COLUMNS = {
    "born": PropertyKind.date,
    "papers": PropertyKind.integer,
    "height_m": PropertyKind.number,
    "living": PropertyKind.boolean,
    "fields": PropertyKind.string_list,
    "nickname": PropertyKind.string,
}


def entity(eid: str) -> PropertyOwner:
    return PropertyOwner(owner="entity", id=eid)


async def _relation(store: GraphStore, a: str, b: str) -> PropertyOwner:
    rows = await store.cypher_query(
        "MATCH (a:Entity {id: $a})-[r:RELATES]->(b:Entity {id: $b}) RETURN r.id AS id", {"a": a, "b": b}
    )
    return PropertyOwner(owner="relation", id=rows[0]["id"], source=a, target=b)


@covers("add_property_columns", "write_properties", "read_properties")
async def test_entity_properties_are_written_with_their_source_and_read_back(store: GraphStore) -> None:
    await build_library(store)
    await store.add_property_columns("entity", ENTITY_COLUMNS)
    await store.add_property_columns("entity", ENTITY_COLUMNS)  # idempotent
    values = {
        "born": "1815-12-10",
        "papers": 1,
        "height_m": 1.6,
        "living": False,
        "fields": ["mathematics", "computing"],
        "nickname": "Enchantress of Numbers",
    }
    missing = await store.write_properties([(entity(ADA), values), (entity("person:nobody"), {"papers": 2})], "agent")
    assert missing == ["person:nobody"]
    await store.write_properties([(entity(BABBAGE), {"papers": 80})], "agent:scribe")
    found = await store.read_properties([entity(ADA), entity(BABBAGE), entity(LONDON)], list(ENTITY_COLUMNS))
    assert found[ADA].values == values
    assert found[ADA].sources == dict.fromkeys(values, "agent")
    assert found[BABBAGE].values == {"papers": 80} and found[BABBAGE].sources == {"papers": "agent:scribe"}
    assert LONDON not in found  # holds none

    # Properties not named are kept; None removes one, and its provenance with it.
    await store.write_properties([(entity(ADA), {"nickname": None, "papers": 3})], "agent:other")
    again = (await store.read_properties([entity(ADA)], list(ENTITY_COLUMNS)))[ADA]
    assert "nickname" not in again.values and "nickname" not in again.sources
    assert again.values["papers"] == 3 and again.sources["papers"] == "agent:other"
    assert again.values["born"] == "1815-12-10" and again.sources["born"] == "agent"
    # Only the names asked for come back.
    assert (await store.read_properties([entity(ADA)], ["papers"]))[ADA].values == {"papers": 3}


@covers("cypher_query", "write_properties")
async def test_cypher_reads_a_declared_property_as_a_real_property(store: GraphStore) -> None:
    await build_library(store)
    await store.add_property_columns("entity", ENTITY_COLUMNS)
    await store.write_properties(
        [(entity(ADA), {"born": "1815-12-10", "papers": 1}), (entity(BABBAGE), {"born": "1791-12-26", "papers": 80})],
        "agent",
    )
    rows = await store.cypher_query(
        "MATCH (e:Entity) WHERE e.born >= '1800-01-01' RETURN e.name AS name, e.born AS born, e.papers AS papers"
    )
    assert rows == [{"name": "Ada Lovelace", "born": "1815-12-10", "papers": 1}]
    rows = await store.cypher_query("MATCH (e:Entity) WHERE e.papers > 10 RETURN e")
    [node] = [r["e"] for r in rows]
    assert node["papers"] == 80 and node["name"] == "Charles Babbage"
    assert not any(str(k).startswith("_") for k in node)  # provenance is internal, as `_source` is


@covers("add_property_columns", "write_properties", "read_properties", "count_property_values")
async def test_relation_properties_and_counts(store: GraphStore) -> None:
    await build_library(store)
    await store.add_property_columns("relation", {"since": PropertyKind.date, "weight": PropertyKind.number})
    await store.add_property_columns("entity", {"papers": PropertyKind.integer})
    met = await _relation(store, ADA, BABBAGE)
    ghost = PropertyOwner(owner="relation", id="nope", source=ADA, target=BABBAGE)
    assert await store.write_properties([(met, {"since": "1833-06-05"}), (ghost, {"weight": 1.0})], "agent") == ["nope"]
    found = await store.read_properties([met], ["since", "weight"])
    assert found[met.id].values == {"since": "1833-06-05"} and found[met.id].sources == {"since": "agent"}
    rows = await store.cypher_query(
        "MATCH (:Entity)-[r:RELATES]->(:Entity) WHERE r.since IS NOT NULL RETURN r.since AS since"
    )
    assert rows == [{"since": "1833-06-05"}]
    await store.write_properties([(entity(ADA), {"papers": 1}), (entity(LONDON), {"papers": 0})], "agent")
    assert await store.count_property_values("entity", ["papers"]) == {"papers": 2}
    assert await store.count_property_values("relation", ["since", "weight"]) == {"since": 1, "weight": 0}
    assert await store.count_property_values("entity", ["papers"], types=["Person"]) == {"papers": 1}  # Ada
    assert await store.count_property_values("relation", ["since"], types=["NO_SUCH_TYPE"]) == {"since": 0}
    assert await store.read_properties([], ["since"]) == {}


@covers("write_versions", "upsert_entities", "upsert_relations")
async def test_an_ingest_update_keeps_what_an_agent_set(store: GraphStore) -> None:
    await build_library(store)
    await store.add_property_columns("entity", {"papers": PropertyKind.integer})
    await store.add_property_columns("relation", {"since": PropertyKind.date})
    await store.write_properties([(entity(ADA), {"papers": 1})], "agent")
    met = await _relation(store, ADA, BABBAGE)
    await store.write_properties([(met, {"since": "1833-06-05"})], "agent")
    # A new version that mentions Ada again (and states the same relation) updates her from ingest.
    v2 = version(
        ALPHA.key,
        ["Ada Lovelace met Charles Babbage in London."],
        [[("Ada Lovelace", "Person"), ("Charles Babbage", "Person"), ("London", "Location")]],
    )
    await store.write_versions([v2])
    # An agent's upsert of the same entity and relation merges into them.
    from evigraph.models import ExtractedEntity

    await store.upsert_entities([ExtractedEntity.create("Ada Lovelace", "Person", "Countess")], "agent")
    [stored] = await store.cypher_query(
        "MATCH (:Entity {id: $a})-[r:RELATES]->(:Entity {id: $b}) RETURN r.type AS type, r.fact AS fact",
        {"a": ADA, "b": BABBAGE},
    )
    same = ExtractedRelation(
        source=ADA, target=BABBAGE, type=stored["type"], fact=stored["fact"], confidence=1.0, chunk_indexes=()
    )
    assert same.id == met.id  # the very relation the agent gave `since`
    await store.upsert_relations([(same, [])], "agent")
    assert (await store.read_properties([entity(ADA)], ["papers"]))[ADA].values == {"papers": 1}
    rows = await store.cypher_query(
        "MATCH (:Entity {id: $a})-[r:RELATES]->(:Entity {id: $b}) RETURN r.id AS id, r.since AS since",
        {"a": ADA, "b": BABBAGE},
    )
    assert rows == [{"id": met.id, "since": "1833-06-05"}]  # one relation, and it keeps `since`
    found = await store.read_properties([met], ["since"])
    assert found[met.id].values == {"since": "1833-06-05"}


@covers("compact", "add_property_columns")
async def test_compaction_keeps_declared_properties(store: GraphStore) -> None:
    await build_library(store)
    await store.add_property_columns("entity", {"papers": PropertyKind.integer, "fields": PropertyKind.string_list})
    await store.write_properties([(entity(ADA), {"papers": 1, "fields": ["maths"]})], "agent")
    await store.compact()
    found = await store.read_properties([entity(ADA)], ["papers", "fields"])
    assert found[ADA].values == {"papers": 1, "fields": ["maths"]} and found[ADA].sources["papers"] == "agent"
    assert await store.cypher_query("MATCH (e:Entity) WHERE e.papers = 1 RETURN e.name AS n") == [{"n": "Ada Lovelace"}]


@covers("merge_entities", "write_properties", "search_facts")
async def test_a_merge_keeps_a_relations_declared_properties_and_fact_vector(store: GraphStore) -> None:
    from evigraph.models import ExtractedEntity
    from evigraph.store.merging import EntityMerge

    await build_library(store)
    await store.add_property_columns("relation", {"since": PropertyKind.date})
    met = await _relation(store, ADA, BABBAGE)
    await store.write_properties([(met, {"since": "1833-06-05"})], "agent")
    pending = await store.pending_ranking_texts(limit=100)
    await store.write_ranking_vectors(
        [(t, [[1.0, 0.0, 0.0]] if t.kind == "fact" else [[0.0, 0.0, 1.0]] * max(1, len(t.spans))) for t in pending]
    )
    before = sorted(r.fact for r, _ in await store.search_facts([1.0, 0.0, 0.0], 20))
    charles = ExtractedEntity.create("C. Babbage", "Person")
    await store.upsert_entities([charles], "agent")
    await store.merge_entities([EntityMerge(survivor=charles.id, merged=(BABBAGE,))])
    moved = await _relation(store, ADA, charles.id)
    assert moved.id != met.id  # re-keyed by its new end
    found = await store.read_properties([moved], ["since"])
    assert found[moved.id].values == {"since": "1833-06-05"} and found[moved.id].sources == {"since": "agent"}
    assert sorted(r.fact for r, _ in await store.search_facts([1.0, 0.0, 0.0], 20)) == before
    assert not [t for t in await store.pending_ranking_texts(limit=100) if t.kind == "fact"]


@covers("merge_entities", "write_properties")
async def test_a_merge_gives_the_survivor_the_properties_it_lacks(store: GraphStore) -> None:
    from evigraph.models import ExtractedEntity
    from evigraph.store.merging import EntityMerge

    await build_library(store)
    await store.add_property_columns("entity", {"papers": PropertyKind.integer, "born": PropertyKind.date})
    charles = ExtractedEntity.create("C. Babbage", "Person")
    await store.upsert_entities([charles], "agent")
    await store.write_properties([(entity(charles.id), {"papers": 80})], "agent:a")
    await store.write_properties([(entity(BABBAGE), {"papers": 1, "born": "1791-12-26"})], "agent:b")
    await store.merge_entities([EntityMerge(survivor=charles.id, merged=(BABBAGE,))])
    held = (await store.read_properties([entity(charles.id)], ["papers", "born"]))[charles.id]
    assert held.values == {"papers": 80, "born": "1791-12-26"}  # its own value wins; the one it lacked moves
    assert held.sources == {"papers": "agent:a", "born": "agent:b"}
