"""A scoped store shows a tool only the documents in scope, whatever the tool asks for."""

from __future__ import annotations

from pathlib import Path

import pytest

from evigraph import KnowledgeBase, ToolError, Toolkit
from evigraph.models import ExtractedEntity, ExtractedRelation, SourceRecord, SourceState, StoreCounts
from evigraph.store import connect
from evigraph.store.scoped import ScopedStore

ALPHA = "Ada Quillfeather founded Quillworks in Lisbon. Quillworks builds sonar buoys for harbours."
BETA = "Boris Marrowind runs Marrowind Shipping in Porto. Marrowind Shipping moves grain to Tangier."


@pytest.fixture
async def scoped(tmp_path: Path) -> Toolkit:
    db = tmp_path / "kb.db"
    async with KnowledgeBase(db, extractor="rules") as kb:
        await kb.ingest(text=ALPHA, key="team-a/quill")
        await kb.ingest(text=BETA, key="team-b/marrow")
        await kb.finalize()
    store = connect(db, read_only=True, scope=["team-a/*"])
    kb = KnowledgeBase(db, store=store, read_only=True)
    yield Toolkit(kb, read_only=True)
    await kb.close()


async def test_out_of_scope_passages_never_come_back(scoped: Toolkit) -> None:
    found = await scoped.call("retrieve", {"question": "Who runs Marrowind Shipping in Porto?"})
    docs = {p.source.document_key for p in found.passages}
    assert "team-b/marrow" not in docs
    inside_retrieve = await scoped.call("retrieve", {"question": "Who founded Quillworks in Lisbon?"})
    assert {p.source.document_key for p in inside_retrieve.passages} == {"team-a/quill"}
    assert all("Marrowind" not in r.fact for r in [*found.relations, *found.facts])
    lexical = await scoped.call("search_passages", {"query": "Marrowind grain Tangier", "mode": "lexical"})
    assert all(h.source.document_key == "team-a/quill" for h in lexical.hits)
    inside = await scoped.call("search_passages", {"query": "Quillworks sonar buoys", "mode": "lexical"})
    assert [h.source.document_key for h in inside.hits] == ["team-a/quill"]


async def test_entities_and_ids_outside_scope_are_unreachable(scoped: Toolkit) -> None:
    hits = await scoped.call("search_entities", {"query": "Marrowind Shipping", "mode": "lexical"})
    assert all("marrowind" not in e.id for e in hits.hits)
    visible = await scoped.call("search_entities", {"query": "Quillworks", "mode": "lexical"})
    assert any("quillworks" in e.id for e in visible.hits)  # the filter hides, it does not blind
    with pytest.raises(ToolError):
        await scoped.call("explore_relationships", {"entity": "Boris Marrowind"})
    store = scoped.kb.store
    assert store is not None
    inner = store.inner if isinstance(store, ScopedStore) else store
    hidden = [c.id for c in await inner.document_passages("team-b/marrow")]
    assert hidden
    read = await scoped.call("read_passages", {"passages": [f"passage:{hidden[0]}"]})
    assert read.passages == [] and read.missing == [f"passage:{hidden[0]}"]
    with pytest.raises(ToolError) as err:
        await scoped.call("navigate_document", {"passage": f"passage:{hidden[0]}", "relation": "next"})
    assert "not a current passage" in str(err.value)


async def test_cypher_is_refused_under_a_scope(scoped: Toolkit) -> None:
    with pytest.raises(ToolError) as err:
        await scoped.call("cypher_query", {"query": "MATCH (c:Chunk) RETURN c.text"})
    assert "scope" in str(err.value)
    status = await scoped.call("source_status", {"document_key": "team-b/marrow"})
    assert status.state.value == "unknown"


# The out-of-scope document repeats a sentence of the scope, so entities and relations are shared
# across the boundary: they count once, as they would in a knowledge base of the scope alone.
SHARED = "Ada Quillfeather met Boris Marrowind in Lisbon."
OUTSIDE = BETA + " Ada Quillfeather founded Quillworks in Lisbon. Carla Dunmere audits Marrowind Shipping."


async def _build(db: Path, docs: dict[str, str]) -> None:
    async with KnowledgeBase(db, extractor="rules") as kb:
        for key, text in docs.items():
            await kb.ingest(text=text, key=key)


COUNTED = {*StoreCounts.model_fields, "passages"}  # the status says passages where the store says chunks


async def test_status_counts_only_what_the_scope_shows(tmp_path: Path) -> None:
    inside = {"team-a/quill": ALPHA, "team-a/meeting": SHARED}
    await _build(tmp_path / "all.db", {**inside, "team-b/marrow": OUTSIDE})
    await _build(tmp_path / "scope.db", inside)
    async with KnowledgeBase(tmp_path / "scope.db", read_only=True) as alone:
        expected = (await alone.status()).model_dump(include=COUNTED)
    store = connect(tmp_path / "all.db", read_only=True, scope=["team-a/*"])
    assert isinstance(store, ScopedStore)
    async with KnowledgeBase(tmp_path / "all.db", store=store, read_only=True) as kb:
        tool = (await Toolkit(kb, read_only=True).call("status", {})).model_dump()
        scoped = (await kb.status()).model_dump(include=COUNTED)
        whole = await store.inner.counts()
    assert expected["documents"] == 2 and expected["relations"] > 0 and expected["mentions"] > 0
    assert whole.documents == 3 and whole.entities > expected["entities"] and whole.relations > expected["relations"]
    assert whole.labels != expected["labels"]
    assert scoped == expected
    assert {k: tool[k] for k in expected if k in tool} == {k: v for k, v in expected.items() if k in tool}


async def test_failed_sources_outside_the_scope_are_hidden(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    await _build(db, {"team-a/quill": ALPHA})
    async with connect(db) as store:
        await store.log_sources(
            [
                SourceRecord(key="team-a/broken", state=SourceState.failed, error="unreadable"),
                SourceRecord(key="team-b/secret", state=SourceState.failed, error="team-b/secret: binary"),
            ]
        )
    async with KnowledgeBase(db, store=connect(db, read_only=True, scope=["team-a/*"]), read_only=True) as kb:
        status = await kb.status()
    assert status.failed_documents == 1
    assert [(r.key, r.error) for r in status.failed_sources] == [("team-a/broken", "unreadable")]


async def test_scoped_counts_follow_writes(tmp_path: Path) -> None:
    """The scoped figures are kept between calls: a write through the scope must refresh them."""
    db = tmp_path / "kb.db"
    await _build(db, {"team-a/quill": ALPHA, "team-b/marrow": OUTSIDE})
    store = connect(db, scope=["team-a/*"])
    async with KnowledgeBase(db, store=store, extractor="rules") as kb:
        before = await kb.status()
        assert before.documents == 1
        await kb.ingest(text=SHARED, key="team-a/meeting")
        after = await kb.status()
        assert after.documents == 2 and after.passages == 2 and after.entities > before.entities
        assert await kb.delete("team-a/meeting")
        assert (await kb.status()).model_dump(exclude={"db"}) == before.model_dump(exclude={"db"})


async def test_an_agents_relation_no_passage_states_shows_only_when_the_scope_hides_nothing(tmp_path: Path) -> None:
    """Like an agent's entity without a passage, it belongs to no document: a scope that names
    documents cannot show it, and one that hides nothing (`*`) must."""
    db = tmp_path / "kb.db"
    async with KnowledgeBase(db, extractor="rules") as kb:
        await kb.ingest(text=ALPHA, key="team-a/quill")
    buoy = ExtractedEntity.create("Harbour Sonar Buoy", "Product", "a buoy an agent recorded")
    fact = "Ada Quillfeather designed the harbour sonar buoy."
    async with connect(db) as store:
        ada = (await store.search_entities("Ada Quillfeather"))[0]
        assert ada.name == "Ada Quillfeather"
        await store.upsert_entities([buoy], source="agent:test")
        bare = ExtractedRelation(source=ada.id, target=buoy.id, fact=fact, confidence=0.8, chunk_indexes=())
        await store.upsert_relations([(bare, [])], source="agent:test")
    for scope, shown in ((["team-a/*"], []), (["*"], [fact])):
        async with connect(db, read_only=True, scope=scope) as scoped:
            assert [r.fact for r in await scoped.neighbours([ada.id]) if r.target == buoy.id] == shown
