"""The write half of the store contract: each test gets a fresh, empty store of each kind."""

from __future__ import annotations

import pytest
from tests.store.contract.conftest import (
    ADA,
    ALPHA,
    BABBAGE,
    BETA,
    ENGINE,
    LONDON,
    StoreFactory,
    build_library,
    covers,
    version,
)

from evigraph.errors import StoreError
from evigraph.models import DocumentVersion, ExtractedEntity, ExtractedRelation, SourceRecord, SourceState, ThemeRecord
from evigraph.store import GraphStore

ALPHA_V2 = version(
    ALPHA.key,
    ["Ada Lovelace wrote notes on the engine in Marlow."],
    [[("Ada Lovelace", "Person"), ("Marlow", "Location")]],
)
MARLOW = ExtractedEntity.create("Marlow", "Location").id


@covers("open", "close", "write_versions")
async def test_what_is_written_is_there_after_reopening(factory: StoreFactory, location: str) -> None:
    async with factory.connect(location) as store:
        assert store.read_only is False
        written = await store.write_versions([ALPHA, BETA])
        assert [(d.key, d.version, d.chunks, d.title) for d in written] == [
            (ALPHA.key, 1, 2, "Alpha"),
            (BETA.key, 1, 1, "Beta"),
        ]
        assert await store.write_versions([]) == []
    async with factory.connect(location, read_only=True) as again:
        assert again.read_only is True
        assert (await again.counts()).documents == 2
        assert [h.document for h in await again.search_passages("Philadelphia")] == [BETA.key]
        with pytest.raises(StoreError, match="read-only"):
            await again.delete_document(ALPHA.key)
        with pytest.raises(StoreError, match="read-only"):
            await again.write_versions([ALPHA_V2])
    store = factory.connect(location)
    await store.open()
    await store.open()  # opening twice is harmless
    assert (await store.get_documents([ALPHA.key]))[ALPHA.key].version == 1
    await store.close()


@covers("write_versions")
async def test_a_new_version_replaces_the_old_in_one_step(store: GraphStore) -> None:
    library = await build_library(store)
    [stored] = await store.write_versions([ALPHA_V2])
    assert (stored.key, stored.version, stored.chunks) == (ALPHA.key, 2, 1)
    assert (await store.get_documents([ALPHA.key]))[ALPHA.key].version == 2
    new = await store.document_passages(ALPHA.key)
    assert [c.text for c in new] == [ALPHA_V2.chunks[0].text]
    assert await store.passages_by_ids(library.alpha) == []  # old passages go
    assert await store.search_passages("Analytical") == []  # and leave the full-text index
    assert [h.id for h in await store.search_passages("Marlow")] == [new[0].id]
    assert await store.entities_by_ids([BABBAGE, LONDON, ENGINE]) == []  # mentioned only by the old version
    assert [e.id for e in await store.entities_by_ids([ADA])] == [ADA]  # still mentioned
    assert await store.passages_for_entities([ADA], per_entity=5) == [(ADA, new[0].id)]  # old mentions go
    assert [(r.source, r.target) for r in await store.neighbours([ADA], hops=2)] == [(ADA, MARLOW)]
    assert await store.relations_for_passages(library.alpha) == []
    counts = await store.counts()
    assert (counts.documents, counts.chunks, counts.entities, counts.relations, counts.mentions) == (2, 2, 4, 2, 4)
    assert await store.entities_named(["charles babbage"]) == {}
    assert sorted(c for c, _ in await store.pending_embeddings()) == sorted([new[0].id, *library.beta])
    assert [c for c, _ in await store.vector_search([1.0, 0.0, 0.0], limit=5)] == []  # old vectors went too


@covers("write_versions")
async def test_a_relation_stated_again_gathers_sources_and_new_endpoints_make_new_relations(store: GraphStore) -> None:
    """A later document restating alpha's first sentence adds its passage to those relations'
    sources (stores may skip looking up relations with a new endpoint: they cannot exist yet)."""
    library = await build_library(store)
    gamma = version(
        "team/gamma",
        [ALPHA.chunks[0].text, "Ada Lovelace wrote notes on the engine in Marlow."],
        [
            [("Ada Lovelace", "Person"), ("Charles Babbage", "Person"), ("London", "Location")],
            [
                ("Ada Lovelace", "Person"),
                ("Marlow", "Location"),
            ],
        ],
    )
    await store.write_versions([gamma])
    restated, new = (c.id for c in await store.document_passages(gamma.key))
    by_pair = {(r.source, r.target): r for r in await store.relations_for_passages([restated, new])}
    assert set(by_pair) == {(ADA, BABBAGE), (BABBAGE, LONDON), (ADA, MARLOW)}
    assert sorted(by_pair[ADA, BABBAGE].source_passages) == sorted([library.alpha[0], restated])
    assert sorted(by_pair[BABBAGE, LONDON].source_passages) == sorted([library.alpha[0], restated])
    assert by_pair[ADA, MARLOW].source_passages == [new]
    counts = await store.counts()
    assert (counts.relations, counts.entities) == (5, 7)  # alpha 3 + beta 1 + Ada-Marlow; Marlow is new


@covers("write_versions", "neighbours")
async def test_a_relation_restated_keeps_the_highest_confidence_any_source_gave(store: GraphStore) -> None:
    """A later passage stating a relation more surely raises its confidence; one stating it less
    surely leaves it, while both are added to its sources."""
    fact = "Ada Lovelace met Charles Babbage."
    entities = [("Ada Lovelace", "Person"), ("Charles Babbage", "Person")]

    def stated(key: str, confidence: float) -> DocumentVersion:
        written = version(key, [fact], [entities])
        relations = tuple(r.model_copy(update={"confidence": confidence}) for r in written.graph.relations)
        graph = written.graph.model_copy(update={"relations": relations})
        return written.model_copy(update={"graph": graph})

    passages = []
    for key, confidence, expected in (("team/a", 0.4, 0.4), ("team/b", 0.7, 0.7), ("team/c", 0.3, 0.7)):
        await store.write_versions([stated(key, confidence)])
        passages += [c.id for c in await store.document_passages(key)]
        [relation] = [r for r in await store.neighbours([ADA]) if r.target == BABBAGE]
        assert relation.confidence == pytest.approx(expected)
        assert sorted(relation.source_passages) == sorted(passages)
    assert (await store.counts()).relations == 1


@covers("write_versions", "search_entities")
async def test_search_finds_an_entity_by_what_a_later_document_taught(store: GraphStore) -> None:
    """An alias and a description a later document gives an existing entity are searchable."""
    await build_library(store)
    assert await store.search_entities("Enchantress") == []
    taught = version("team/delta", ["Ada Lovelace wrote notes."], [[("Ada Lovelace", "Person")]])
    lovelace = taught.graph.entities[0]
    entity = lovelace.model_copy(
        update={"aliases": (*lovelace.aliases, "Enchantress of Numbers"), "descriptions": ("countess mathematician",)}
    )
    await store.write_versions(
        [taught.model_copy(update={"graph": taught.graph.model_copy(update={"entities": (entity,)})})]
    )
    assert [h.id for h in await store.search_entities("Enchantress")] == [ADA]
    assert [h.id for h in await store.search_entities("countess mathematician")] == [ADA]


@covers("write_versions")
async def test_a_failed_batch_writes_nothing(store: GraphStore) -> None:
    with pytest.raises(ValueError, match="two versions"):
        await store.write_versions([ALPHA, BETA, ALPHA])
    assert (await store.counts()).documents == 0
    assert await store.search_passages("Babbage") == []


@covers("delete_document", "holds_documents")
async def test_delete_removes_a_document_like_a_replacement(store: GraphStore) -> None:
    assert await store.holds_documents() is False
    library = await build_library(store)
    assert await store.delete_document(ALPHA.key) is True
    assert await store.delete_document(ALPHA.key) is False
    assert await store.delete_document("team/none") is False
    assert list(await store.get_documents([ALPHA.key, BETA.key])) == [BETA.key]
    assert await store.passages_by_ids(library.alpha) == []
    assert await store.entities_by_ids([ADA, BABBAGE, LONDON, ENGINE]) == []
    counts = await store.counts()
    assert (counts.documents, counts.chunks, counts.entities, counts.relations, counts.mentions) == (1, 1, 2, 1, 2)
    assert [h.document for h in await store.search_passages("Babbage Hopper")] == [BETA.key]
    assert await store.relation_weights() != {} and all(ADA not in pair for pair in await store.relation_weights())
    assert (await store.check()).found == []
    assert await store.delete_document(BETA.key) is True
    assert await store.holds_documents() is False


@covers("delete_document", "write_versions")
async def test_a_key_deleted_and_ingested_again_never_gets_a_version_number_back(
    factory: StoreFactory, location: str
) -> None:
    """A passage id names its document's version (`chunk_id`), and decisions and evidence ids pin
    it: a number given again would let what was read before the delete stand for other text."""
    async with factory.connect(location) as store:
        await store.write_versions([ALPHA])
        await store.write_versions([ALPHA_V2])
        read = [c.id for c in await store.document_passages(ALPHA.key)]
        assert await store.delete_document(ALPHA.key) is True
        assert (await store.check()).found == []  # the number kept without its document is no damage
    async with factory.connect(location) as store:  # what the delete kept outlives the session
        [again] = await store.write_versions([ALPHA])
        assert again.version == 3
        assert await store.passages_by_ids(read) == []
        assert not {c.id for c in await store.document_passages(ALPHA.key)} & set(read)
        assert [d.version for d in await store.write_versions([ALPHA_V2])] == [4]
        assert (await store.check()).found == []


@covers("check")
async def test_check_and_repair_a_healthy_graph(store: GraphStore) -> None:
    await build_library(store)
    report = await store.check(repair=True)
    assert report.found == [] and report.remaining == [] and report.repaired == {}
    assert (await store.counts()).documents == 2


@covers("set_embedding_model", "write_embeddings", "pending_embeddings", "count_pending_embeddings")
async def test_embedding_model_set_and_cleared(store: GraphStore) -> None:
    library = await build_library(store)
    assert await store.count_pending_embeddings() == 1
    await store.write_embeddings([(library.beta[0], [0.0, 0.0, 1.0])])
    assert await store.count_pending_embeddings() == 0 and await store.pending_embeddings() == []
    assert [c for c, _ in await store.vector_search([0.0, 0.0, 1.0], limit=1)] == library.beta
    await store.set_embedding_model(None)
    assert await store.embedding_model() is None
    assert await store.count_pending_embeddings() == 3  # every vector went with the model
    assert await store.vector_search([0.0, 0.0, 1.0]) == []
    await store.set_embedding_model("another", 2)
    assert await store.embedding_model() == ("another", 2)
    assert len(await store.pending_embeddings(limit=2)) == 2


@covers("upsert_entities", "upsert_relations")
async def test_agent_writes_create_and_merge(store: GraphStore) -> None:
    library = await build_library(store)
    ada_again = ExtractedEntity(id=ADA, name="Ada Lovelace", label="Person", aliases=("Countess of Lovelace",))
    agent = ExtractedEntity.create("Difference Engine", "Product", "a mechanical calculator")
    await store.upsert_entities([ada_again, agent], source="agent:test")
    [found] = await store.entities_by_ids([agent.id])
    assert (found.name, found.label, found.description) == ("Difference Engine", "Product", "a mechanical calculator")
    assert await store.entities_named(["countess of lovelace"]) == {"countess of lovelace": [ADA]}
    assert [e.id for e in await store.search_entities("Difference")][:1] == [agent.id]
    assert (await store.counts()).entities == 7
    fact = "Ada Lovelace described the Difference Engine."
    relation = ExtractedRelation(source=ADA, target=agent.id, fact=fact, confidence=0.9, chunk_indexes=())
    await store.upsert_relations([(relation, [library.alpha[0]])], source="agent:test")
    added = [r for r in await store.neighbours([ADA]) if r.target == agent.id]
    assert [(r.fact, r.source_passages) for r in added] == [(fact, [library.alpha[0]])]
    assert any(r.target == agent.id for r in await store.relations_for_passages([library.alpha[0]]))
    await store.upsert_relations([(relation, [library.alpha[1]])], source="agent:test")  # the same relation again
    [merged] = [r for r in await store.neighbours([ADA]) if r.target == agent.id]
    assert sorted(merged.source_passages) == sorted(library.alpha)
    assert (await store.counts()).relations == 5


@covers("upsert_relations", "write_versions", "relations_for_passages", "delete_document")
async def test_a_document_stating_a_relation_an_agent_recorded_without_passages_becomes_its_source(
    store: GraphStore,
) -> None:
    """Sources are appended to a relation that lists none without a blank id (the agent's
    relation keeps its higher confidence), and writing the document again leaves the new
    version's passage listed once. The relation stands on the agent's word: losing the
    document's passages leaves it as the agent recorded it."""
    fact = "Ada Lovelace met Charles Babbage."
    said = version("team/met", [fact], [[("Ada Lovelace", "Person"), ("Charles Babbage", "Person")]])
    await store.upsert_entities(said.graph.entities, source="agent:test")
    bare = ExtractedRelation(source=ADA, target=BABBAGE, fact=fact, confidence=0.9, chunk_indexes=())
    await store.upsert_relations([(bare, [])], source="agent:test")
    for expected_version in (1, 2):
        [written] = await store.write_versions([said])
        assert written.version == expected_version
        [chunk] = [c.id for c in await store.document_passages(said.key)]
        [relation] = [r for r in await store.neighbours([ADA]) if r.target == BABBAGE]
        assert relation.source_passages == [chunk]
        assert [r.target for r in await store.relations_for_passages([chunk])] == [BABBAGE]
        assert relation.confidence == 0.9
    assert (await store.counts()).relations == 1
    assert await store.delete_document(said.key)
    [relation] = [r for r in await store.neighbours([ADA]) if r.target == BABBAGE]
    assert (relation.fact, relation.confidence, relation.source_passages) == (fact, 0.9, [])


@covers("set_setting", "get_setting")
async def test_settings(store: GraphStore) -> None:
    assert await store.get_setting("contract.k") is None
    await store.set_setting("contract.k", "one")
    await store.set_setting("contract.k", "two")
    assert await store.get_setting("contract.k") == "two"
    await store.set_setting("contract.k", None)
    assert await store.get_setting("contract.k") is None


@covers("log_sources", "source_log")
async def test_source_log_keeps_each_keys_last_outcome(store: GraphStore) -> None:
    await store.log_sources(
        [
            SourceRecord(key="a", state=SourceState.failed, error="unreadable", at="2026-01-01T00:00:00+00:00"),
            SourceRecord(key="b", state=SourceState.current, content_hash="h", version=1),
        ]
    )
    await store.log_sources([SourceRecord(key="a", state=SourceState.current, content_hash="h2", version=3)])
    await store.log_sources([])
    log = await store.source_log(["a", "b", "c"])
    assert set(log) == {"a", "b"}
    assert (log["a"].state, log["a"].version, log["a"].content_hash, log["a"].error) == (
        SourceState.current,
        3,
        "h2",
        None,
    )
    assert (log["b"].state, log["b"].content_hash) == (SourceState.current, "h")


@covers("failed_sources", "count_failed_sources")
async def test_failed_sources_are_the_keys_whose_last_ingest_failed(store: GraphStore) -> None:
    assert await store.failed_sources() == [] and await store.count_failed_sources() == 0
    await store.log_sources(
        [
            SourceRecord(key="a", state=SourceState.failed, error="unreadable"),
            SourceRecord(key="b", state=SourceState.failed, error="binary file"),
            SourceRecord(key="c", state=SourceState.current, content_hash="h", version=1),
        ]
    )
    await store.log_sources([SourceRecord(key="b", state=SourceState.current, content_hash="h2", version=1)])
    await store.log_sources([SourceRecord(key="d", state=SourceState.failed, error="too large")])
    failed = await store.failed_sources()
    assert [(r.key, r.state, r.error) for r in failed] == [  # newest first; b was fixed since
        ("d", SourceState.failed, "too large"),
        ("a", SourceState.failed, "unreadable"),
    ]
    assert all(r.at for r in failed)
    assert await store.count_failed_sources() == 2
    assert [r.key for r in await store.failed_sources(limit=1)] == ["d"]


@covers("replace_themes", "themes")
async def test_themes_are_replaced_as_a_whole(store: GraphStore) -> None:
    await build_library(store)
    theme = ThemeRecord(
        id="t1",
        members=[BABBAGE, ADA, ENGINE],
        names=["Charles Babbage", "Ada Lovelace", "Analytical Engine"],
        labels=["Person", "Person", "Product"],
        size=3,
    )
    await store.replace_themes([theme])
    assert await store.themes() == [theme]
    await store.replace_themes([])
    assert await store.themes() == []
