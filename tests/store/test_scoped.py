"""A scoped store shows a tool only the documents in scope, whatever the tool asks for."""

from __future__ import annotations

from pathlib import Path

import pytest

from evigraph import KnowledgeBase, ToolError, Toolkit
from evigraph.store.embedded.store import EmbeddedStore
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
    store = ScopedStore(EmbeddedStore(db, read_only=True), ["team-a/*"])
    kb = KnowledgeBase(db, store=store, read_only=True)
    yield Toolkit(kb, read_only=True)
    await kb.close()


async def test_out_of_scope_passages_never_come_back(scoped: Toolkit) -> None:
    found = await scoped.call("retrieve", {"question": "Who runs Marrowind Shipping in Porto?"})
    docs = {p.source.document for p in found.passages}
    assert "team-b/marrow" not in docs
    inside_retrieve = await scoped.call("retrieve", {"question": "Who founded Quillworks in Lisbon?"})
    assert {p.source.document for p in inside_retrieve.passages} == {"team-a/quill"}
    assert all("Marrowind" not in r.fact for r in [*found.relations, *found.facts])
    lexical = await scoped.call("search_passages", {"query": "Marrowind grain Tangier", "mode": "lexical"})
    assert all(h.source.document == "team-a/quill" for h in lexical.hits)
    inside = await scoped.call("search_passages", {"query": "Quillworks sonar buoys", "mode": "lexical"})
    assert [h.source.document for h in inside.hits] == ["team-a/quill"]


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
    hidden = [c.id for c in await inner.document_chunks("team-b/marrow")]
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
