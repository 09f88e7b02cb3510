"""The read half of the store contract, on one small graph per store kind (built once, never written)."""

from __future__ import annotations

import json
import re

import pytest
from tests.store.contract.conftest import (
    ADA,
    ALPHA,
    BABBAGE,
    BETA,
    EMBEDDING_MODEL,
    ENGINE,
    HOPPER,
    LONDON,
    PHILLY,
    Library,
    covers,
)

from evigraph.errors import CypherRefused, QueryTimeout, ReadOnlyQueryError
from evigraph.models import WalkBounds

pytestmark = pytest.mark.asyncio(loop_scope="module")


@covers("get_documents", "list_documents")
async def test_documents_by_key_and_listed(library: Library) -> None:
    store = library.store
    found = await store.get_documents([ALPHA.key, "team/none"])
    assert list(found) == [ALPHA.key]
    doc = found[ALPHA.key]
    assert (doc.title, doc.version, doc.chunks, doc.content_hash, doc.loader) == (
        "Alpha",
        1,
        2,
        ALPHA.content_hash,
        "text",
    )
    assert await store.get_documents([]) == {}
    listed = await store.list_documents()
    assert sorted(d.key for d in listed) == [ALPHA.key, BETA.key]
    first, second = await store.list_documents(limit=1), await store.list_documents(limit=1, offset=1)
    assert len(first) == len(second) == 1 and {first[0].key, second[0].key} == {ALPHA.key, BETA.key}
    assert await store.list_documents(offset=2) == []


@covers("get_documents")
async def test_documents_by_many_keys_and_repeated_keys(library: Library) -> None:
    """A long key list (an ingest's batch can be thousands) and a repeated key give the same answer
    as a short list: stores may look keys up one by one or all at once."""
    store = library.store
    many = [f"team/none-{i}" for i in range(600)] + [BETA.key, ALPHA.key, ALPHA.key]
    found = await store.get_documents(many)
    assert sorted(found) == [ALPHA.key, BETA.key]
    assert found[BETA.key] == (await store.get_documents([BETA.key]))[BETA.key]
    assert list(await store.get_documents([ALPHA.key, ALPHA.key])) == [ALPHA.key]


@covers("holds_documents")
async def test_holds_documents(library: Library) -> None:
    assert await library.store.holds_documents() is True


@covers("counts")
async def test_counts(library: Library) -> None:
    counts = await library.store.counts()
    assert (counts.documents, counts.chunks, counts.entities, counts.relations, counts.mentions) == (2, 3, 6, 4, 7)
    assert counts.labels == {"Person": 3, "Location": 2, "Product": 1}  # largest first, then by name
    assert list(counts.labels) == ["Person", "Location", "Product"]
    assert sum(counts.relation_types.values()) == 4


@covers("search_passages")
async def test_full_text_search_over_passages(library: Library) -> None:
    hits = await library.store.search_passages("Analytical Engine", limit=5)
    assert hits[0].id == library.alpha[1]
    top = hits[0]
    assert (top.document, top.title, top.index, top.text) == (ALPHA.key, "Alpha", 1, ALPHA.chunks[1].text)
    assert top.score > 0
    assert (top.start, top.end) == (ALPHA.chunks[1].start, ALPHA.chunks[1].end)
    assert [h.id for h in await library.store.search_passages("Babbage", limit=1)] in (
        [library.alpha[0]],
        [library.alpha[1]],
    )
    assert len(await library.store.search_passages("Babbage", limit=5)) == 2
    assert await library.store.search_passages("zeppelin") == []
    assert await library.store.search_passages('"(:)"') == []  # query syntax characters are not operators


@covers("neighbours")
async def test_neighbours_walk_hops_nearest_first(library: Library) -> None:
    one = await library.store.neighbours([ADA], hops=1)
    assert [(n.source, n.target, n.hop) for n in one] == [(ADA, BABBAGE, 1)]
    assert one[0].source_name == "Ada Lovelace" and one[0].fact == ALPHA.chunks[0].text
    assert one[0].source_passages == [library.alpha[0]] and one[0].id
    two = await library.store.neighbours([ADA], hops=2)
    assert [n.hop for n in two] == sorted(n.hop for n in two)
    assert {(n.source, n.target) for n in two if n.hop == 2} == {(BABBAGE, LONDON), (BABBAGE, ENGINE)}
    assert len(await library.store.neighbours([ADA], hops=2, limit=2)) == 2
    assert [(n.source, n.target) for n in await library.store.neighbours([PHILLY])] == [(HOPPER, PHILLY)]
    assert await library.store.neighbours([]) == []


@covers("cypher_query")
async def test_read_only_cypher_returns_clean_rows(library: Library) -> None:
    store = library.store
    rows = await store.cypher_query("MATCH (e:Entity) RETURN e.name AS name ORDER BY name", limit=2)
    assert rows == [{"name": "Ada Lovelace"}, {"name": "Analytical Engine"}]
    rows = await store.cypher_query("MATCH (e:Entity {id: $id}) RETURN e.label AS label", {"id": HOPPER})
    assert rows == [{"label": "Person"}]
    [row] = await store.cypher_query(
        "MATCH (c:Chunk)-[r:PART_OF]->(d:Document) WHERE c.id = $id RETURN c, r, d", {"id": library.beta[0]}
    )
    chunk = row["c"]
    assert chunk["text"] == BETA.chunks[0].text and chunk["table"] == "Chunk"
    for internal in ("_id", "_label", "embedding", "search_text"):
        assert internal not in chunk
    assert not {"_id", "_src", "_dst"} & set(row["r"])
    assert row["d"]["key"] == BETA.key
    # Provenance stays off whole nodes and relationships, yet a query that names it reads it.
    [row] = await store.cypher_query("MATCH (a:Entity {id: $id})-[r:RELATES]->() RETURN a, r LIMIT 1", {"id": ADA})
    assert row["a"]["name"] == "Ada Lovelace" and row["r"]["type"]
    assert not [k for k in (*row["a"], *row["r"]) if k.startswith("_")]
    [row] = await store.cypher_query("MATCH (a:Entity {id: $id}) RETURN a._source AS source", {"id": ADA})
    assert row["source"]
    json.dumps(rows, allow_nan=False)  # no engine types, no dates as objects
    assert json.loads(json.dumps(row)) == row
    assert not getattr(rows, "truncated", False)


@covers("cypher_query")
async def test_read_only_cypher_refuses_writes_and_several_statements(library: Library) -> None:
    store = library.store
    for cypher in (
        "CREATE (:Entity {id: 'x'})",
        "MATCH (e:Entity) SET e.name = 'x'",
        "MATCH (e:Entity) DETACH DELETE e",
        "MERGE (:Entity {id: 'y'})",
        "MATCH (e:Entity) RETURN e.name; MATCH (c:Chunk) RETURN c.text",
        "MATCH (e:Entity) RETURN e.name; CREATE (:Entity {id: 'z'})",
    ):
        with pytest.raises(ReadOnlyQueryError) as refused:
            await store.cypher_query(cypher)
        assert refused.value.hint, cypher
    with pytest.raises(CypherRefused):
        await store.cypher_query("CREATE (:Entity {id: 'x'})")
    with pytest.raises(ReadOnlyQueryError) as unknown:
        await store.cypher_query("MATCH (p:Nope) RETURN p")
    assert unknown.value.hint
    assert (await store.counts()).entities == 6
    assert await store.entities_by_ids(["x", "y", "z"]) == []


@covers("cypher_query")
async def test_read_only_cypher_stops_at_its_time_limit(library: Library) -> None:
    slow = "UNWIND range(1, 1000) AS a UNWIND range(1, 1000) AS b UNWIND range(1, 1000) AS c RETURN sum(a*b*c) AS x"
    with pytest.raises(QueryTimeout) as stopped:
        await library.store.cypher_query(slow, timeout_ms=100)
    assert stopped.value.hint


@covers("cypher_guide", "schema_tables")
async def test_cypher_guide_names_tables_that_exist(library: Library) -> None:
    guide = library.store.cypher_guide()
    assert isinstance(guide, str) and "MATCH" in guide
    tables = {t.name: t for t in await library.store.schema_tables()}
    named = set(re.findall(r"\(:(\w+)\)|\[:(\w+)\]", guide))
    assert named and all(n in tables for pair in named for n in pair if n)
    entity = tables["Entity"]
    assert entity.kind == "node" and entity.rows == 6 and "name" in entity.properties
    assert "embedding" not in tables["Chunk"].properties and "search_text" not in entity.properties
    assert tables["Document"].sample_keys and set(tables["Document"].sample_keys) <= {ALPHA.key, BETA.key}
    assert ("Chunk", "Document") in tables["PART_OF"].connects


@covers("passages_by_ids")
async def test_passages_by_id_in_the_order_asked(library: Library) -> None:
    a0, a1 = library.alpha
    asked = [library.beta[0], a1, "missing:1:0", a0]
    hits = await library.store.passages_by_ids(asked)
    assert [h.id for h in hits] == [library.beta[0], a1, a0]
    assert [h.text for h in hits] == [BETA.chunks[0].text, ALPHA.chunks[1].text, ALPHA.chunks[0].text]
    assert [h.document for h in hits] == [BETA.key, ALPHA.key, ALPHA.key]
    assert await library.store.passages_by_ids([]) == []


@covers("passages_for_entities", "entities_for_passages")
async def test_mentions_both_ways(library: Library) -> None:
    a0, a1 = library.alpha
    pairs = await library.store.passages_for_entities([BABBAGE, HOPPER], per_entity=5)
    assert sorted(pairs) == sorted([(BABBAGE, a0), (BABBAGE, a1), (HOPPER, library.beta[0])])
    capped = await library.store.passages_for_entities([BABBAGE], per_entity=1)
    assert len(capped) == 1 and capped[0] in {(BABBAGE, a0), (BABBAGE, a1)}
    assert await library.store.passages_for_entities([]) == []
    mentioned = await library.store.entities_for_passages([a1, library.beta[0]])
    assert sorted(mentioned) == sorted(
        [(a1, BABBAGE), (a1, ENGINE), (library.beta[0], HOPPER), (library.beta[0], PHILLY)]
    )
    assert await library.store.entities_for_passages([]) == []


@covers("search_entities", "entities_by_ids", "entities_named")
async def test_entities_by_text_id_and_name(library: Library) -> None:
    store = library.store
    hits = await store.search_entities("Babbage", limit=5)
    assert hits[0].id == BABBAGE and hits[0].name == "Charles Babbage" and hits[0].score > 0
    assert await store.search_entities("zeppelin") == []
    found = await store.entities_by_ids([HOPPER, "person:nobody", LONDON])
    assert sorted((e.id, e.name, e.label) for e in found) == [
        (LONDON, "London", "Location"),
        (HOPPER, "Grace Hopper", "Person"),
    ]
    assert await store.entities_by_ids([]) == []
    named = await store.entities_named(["ada lovelace", "Grace  Hopper", "nobody at all"])
    assert named == {"ada lovelace": [ADA], "Grace  Hopper": [HOPPER]}


@covers("relations_for_passages")
async def test_relations_stated_in_passages(library: Library) -> None:
    a0, a1 = library.alpha
    rels = await library.store.relations_for_passages([a1])
    assert [(r.source, r.target, r.fact) for r in rels] == [(BABBAGE, ENGINE, ALPHA.chunks[1].text)]
    assert rels[0].source_passages == [a1]
    both = await library.store.relations_for_passages([a0, a1])
    assert {(r.source, r.target) for r in both} == {(ADA, BABBAGE), (BABBAGE, LONDON), (BABBAGE, ENGINE)}
    assert len(await library.store.relations_for_passages([a0, a1], limit=1)) == 1
    assert await library.store.relations_for_passages([]) == []


@covers("embedding_model", "pending_embeddings", "count_pending_embeddings", "vector_search")
async def test_embeddings_read(library: Library) -> None:
    store = library.store
    assert await store.embedding_model() == EMBEDDING_MODEL
    [(pending, text)] = await store.pending_embeddings()
    assert pending == library.beta[0] and BETA.chunks[0].text in text  # the text to embed, maybe with context
    assert await store.count_pending_embeddings() == 1
    nearest = await store.vector_search([0.6, 0.8, 0.0], limit=2)  # a unit vector, as embedders return
    assert [cid for cid, _ in nearest] == [library.alpha[1], library.alpha[0]]
    assert [score for _, score in nearest] == pytest.approx([0.8, 0.6])
    assert len(await store.vector_search([0.0, 1.0, 0.0], limit=1)) == 1


@covers("document_passages")
async def test_passages_of_a_document_in_reading_order(library: Library) -> None:
    hits = await library.store.document_passages(ALPHA.key)
    assert [h.id for h in hits] == library.alpha and [h.index for h in hits] == [0, 1]
    assert [h.text for h in hits] == [c.text for c in ALPHA.chunks]
    assert [h.id for h in await library.store.document_passages(ALPHA.key, limit=1)] == library.alpha[:1]
    assert await library.store.document_passages("team/none") == []


@covers("explore")
async def test_explore_is_bounded_and_says_why(library: Library) -> None:
    walk = await library.store.explore(BABBAGE, WalkBounds(depth=1))
    assert set(walk.nodes) == {BABBAGE, ADA, LONDON, ENGINE}
    assert {(e.source, e.target) for e in walk.edges} == {(ADA, BABBAGE), (BABBAGE, LONDON), (BABBAGE, ENGINE)}
    assert walk.truncated_by == []
    cut = await library.store.explore(BABBAGE, WalkBounds(depth=1, max_edges=1))
    assert len(cut.edges) == 1 and "max_edges" in cut.truncated_by
    typed = await library.store.explore(BABBAGE, WalkBounds(depth=1, relation_types=("NO_SUCH_TYPE",)))
    assert typed.edges == []
    assert (await library.store.explore("person:nobody")).edges == []


@covers("relation_weights")
async def test_relation_weights(library: Library) -> None:
    weights = await library.store.relation_weights()
    pairs = {frozenset(p): w for p, w in weights.items()}
    expected = [(ADA, BABBAGE), (BABBAGE, LONDON), (BABBAGE, ENGINE), (HOPPER, PHILLY)]
    assert pairs == {frozenset(p): 1.0 for p in expected}


@covers("check")
async def test_a_healthy_graph_checks_clean(library: Library) -> None:
    report = await library.store.check()
    assert report.found == [] and report.remaining == []


@covers("get_setting", "source_log", "themes")
async def test_bookkeeping_starts_empty(library: Library) -> None:
    assert await library.store.get_setting("contract.none") is None
    assert await library.store.source_log([ALPHA.key]) == {}
    assert await library.store.source_log([]) == {}
    assert await library.store.themes() == []
