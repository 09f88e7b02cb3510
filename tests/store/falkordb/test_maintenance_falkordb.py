"""FalkorDB maintenance: integrity checks of what a stopped writer leaves, agent Cypher, compaction,
and a change feed that notices other processes' writes."""

from __future__ import annotations

import itertools
import socket
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import pytest_asyncio
from tests.store.contract.conftest import ADA, ALPHA, BETA, build_library

from evigraph import KnowledgeBase
from evigraph.errors import CypherRefused, ReadOnlyQueryError
from evigraph.store import connect
from evigraph.store.falkordb import maintenance
from evigraph.store.falkordb.leases import WriterLease
from evigraph.store.falkordb.schema import VERSION_SEQ
from evigraph.store.falkordb.store import FalkorStore

pytest.importorskip("falkordb")

_GRAPHS = itertools.count()


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from evigraph.store.falkordb.server import LocalServer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = LocalServer(tmp_path_factory.mktemp("falkordb"), port=port, host="127.0.0.1")
    server.start(persist=False)
    try:
        yield f"falkordb://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture
def location(server_url: str, tmp_path: Path) -> str:
    return f"{server_url}/kb_maint_{next(_GRAPHS)}"


@pytest_asyncio.fixture
async def store(location: str) -> AsyncIterator[FalkorStore]:
    async with connect(location) as opened:
        assert isinstance(opened, FalkorStore)
        yield opened


def kinds(report_items: list) -> set[str]:  # type: ignore[type-arg]
    return {p.kind for p in report_items}


async def test_repair_removes_what_a_stopped_writer_leaves(store: FalkorStore) -> None:
    library = await build_library(store)
    conn = store.conn
    # a superseded version written aside and never switched in
    conn.write_sync(
        "CREATE (:Chunk {id: 'old:0', document: $k, version: 0, index: 0, text: 'x', live: false})",
        {"k": ALPHA.key},
    )
    # a live passage whose document is gone, mentioned by an entity only it names
    conn.write_sync(
        """CREATE (c:Chunk {id: 'stray:0', document: 'team/gone', version: 1, index: 0, text: 'y', live: true})
           CREATE (:Entity {id: 'e:stray', name: 'Stray', label: 'Thing', _source: 'extraction',
                            _created_at: '2000-01-01T00:00:00+00:00'})-[:MENTIONED_IN]->(c)"""
    )
    # an old extracted entity nobody mentions, and a relation citing a passage that never existed
    conn.write_sync(
        """CREATE (:Entity {id: 'e:orphan', name: 'Orphan', label: 'Thing', _source: 'extraction',
                            _created_at: '2000-01-01T00:00:00+00:00'})"""
    )
    conn.write_sync(
        """MATCH (a:Entity)-[x:RELATES]->(b:Entity) WHERE a.id = $a
           SET x.source_chunks = x.source_chunks + ['missing:9:9']""",
        {"a": ADA},
    )
    store.cache.bump()

    report = await store.check()
    assert kinds(report.found) == {"abandoned_chunks", "stray_chunks", "orphan_entities", "dangling_relation_sources"}
    assert report.remaining == report.found

    repaired = await store.check(repair=True)
    assert repaired.remaining == []
    assert repaired.repaired["abandoned_chunks"] == 1 and repaired.repaired["stray_chunks"] == 1
    assert await store.entities_by_ids(["e:stray", "e:orphan"]) == []
    counts = await store.counts()
    assert (counts.documents, counts.chunks, counts.entities, counts.relations, counts.mentions) == (2, 3, 6, 4, 7)
    [rel] = [n for n in await store.neighbours([ADA]) if n.source == ADA]
    assert rel.source_passages == [library.alpha[0]]
    assert (await store.check()).found == []


async def test_a_pending_passage_is_abandoned_only_after_the_grace_period(store: FalkorStore) -> None:
    await store.write_versions([BETA])
    store.conn.write_sync(
        "CREATE (:Chunk {id: 'next:0', document: $k, version: 9, index: 0, text: 'z', live: false})", {"k": BETA.key}
    )
    assert (await store.check()).found == []  # a writer may still be at work on it; noted as seen now
    assert maintenance.inspect(store.conn, note_pending=True).abandoned_chunks == []
    assert maintenance.inspect(store.conn, note_pending=True, grace_s=0.0).abandoned_chunks == ["next:0"]
    store.conn.write_sync("MATCH (c:Chunk {id: 'next:0'}) SET c.live = true")  # switched in after all
    assert maintenance.inspect(store.conn, note_pending=True, grace_s=0.0).abandoned_chunks == []


async def test_a_delete_keeps_the_version_number_a_graph_without_its_counter_reached(store: FalkorStore) -> None:
    await store.write_versions([ALPHA])
    await store.write_versions([ALPHA])
    store.conn.write_sync(f"MATCH (s:{VERSION_SEQ}) DELETE s")  # as a graph written before the counter was kept
    assert await store.delete_document(ALPHA.key)
    assert [d.version for d in await store.write_versions([ALPHA])] == [3]
    assert (await store.check()).found == []


async def test_agent_cypher_is_guarded_and_clean(store: FalkorStore) -> None:
    library = await build_library(store)
    for refused in (
        "MATCH (n) RETURN n",
        "MATCH (t:TraceTask) RETURN t.id",
        "MATCH (c:Chunk) WHERE c.live RETURN c.id",
        "MATCH (c:PendingChunk) RETURN c.text",
        "MATCH (c:pendingchunk) RETURN count(c)",
        "MATCH (c:Chunk) RETURN c.embedding",
        "MATCH (e:Entity) RETURN toJSON(e)",
        "MATCH (e:Entity) RETURN properties(e)",
        "CALL db.idx.fulltext.drop('Chunk') RETURN 1",
        "MATCH (e:Entity) FOREACH (x IN [1] | SET e.name = 'x') RETURN e",
    ):
        with pytest.raises(CypherRefused):
            await store.cypher_query(refused)
    with pytest.raises(ReadOnlyQueryError, match="Nope"):
        await store.cypher_query("MATCH (e:Entity)-[:Nope]->(b:Entity) RETURN b")
    labels = {r["label"] for r in await store.cypher_query("CALL db.labels() YIELD label RETURN label")}
    assert {"Entity", "Chunk", "Document"} <= labels
    [row] = await store.cypher_query("MATCH (c:Chunk {id: $id}) RETURN c", {"id": library.alpha[0]})
    assert row["c"]["table"] == "Chunk" and row["c"]["text"] == ALPHA.chunks[0].text
    assert not {"live", "embedding", "search_text", "sentence_vectors", "passage_context"} & set(row["c"])
    rows = await store.cypher_query("MATCH (e:Entity) RETURN e.name AS n ORDER BY n LIMIT 50", limit=3)
    assert len(rows) == 3
    [names] = await store.cypher_query(
        "MATCH (e:Entity)-[:RELATES|MENTIONED_IN]->(x:Entity) WHERE e.id = $id RETURN [n IN [e, x] | n.name] AS ns",
        {"id": ADA},
    )
    assert names == {"ns": ["Ada Lovelace", "Charles Babbage"]}
    [path] = await store.cypher_query("MATCH p = (a:Entity {id: $id})-[:RELATES]->(b:Entity) RETURN p", {"id": ADA})
    assert [n["table"] for n in path["p"]["nodes"]] == ["Entity", "Entity"]


def test_the_guard_finds_the_labels_a_query_names() -> None:
    guarded, named = maintenance.guard(
        "MATCH (a:Entity {id: $id})-[r:RELATES|NEXT]->(b) WHERE a.name IN [x IN $xs | x] RETURN {k: b.name} AS m",
        {"id": "x", "xs": ["a"]},
        row_cap=10,
    )
    assert named == {"Entity", "RELATES", "NEXT"}
    assert guarded.text.endswith("LIMIT 10") and guarded.params == {"id": "x", "xs": ["a"]}


async def test_schema_tables_leave_internal_labels_and_properties_out(store: FalkorStore) -> None:
    await build_library(store)
    await store.merge_entities([])  # nothing: no redirect label yet
    tables = {t.name: t for t in await store.schema_tables()}
    assert not {"EvigraphMeta", "EntityRedirect", "EvigraphVersionSeq"} & set(tables)
    assert "live" not in tables["Chunk"].properties and "text" in tables["Chunk"].properties
    assert tables["Chunk"].rows == 3 and tables["MENTIONED_IN"].connects == [("Entity", "Chunk")]


async def test_compact_replaces_nothing_and_measures_the_graph(store: FalkorStore) -> None:
    await build_library(store)
    report = await store.compact()
    assert report.replaced is False and report.bytes_before == report.bytes_after > 0 and report.rows == 0


async def test_another_process_writing_makes_the_change_feed_start_over(store: FalkorStore, location: str) -> None:
    first = await store.ranking_changes(None)
    await store.write_versions([ALPHA])
    mine = await store.ranking_changes(first.token)
    assert not mine.full and mine.documents == (ALPHA.key,)
    async with connect(location) as other:  # another process, as far as the feed can tell
        await other.write_versions([BETA])
    theirs = await store.ranking_changes(mine.token)
    assert theirs.full
    quiet = await store.ranking_changes(theirs.token)
    assert not quiet.full and quiet.documents == ()
    assert (await store.ranking_changes("nonsense")).full


async def test_replacing_or_deleting_a_document_leaves_no_entity_only_it_mentioned(location: str) -> None:
    """Entities in no relation used to stay behind, unmentioned, until the grace period let `check`
    see them; the write that unmentions them now deletes them."""
    async with KnowledgeBase(location, extractor="rules") as kb:
        await kb.ingest(text="Grace Hopper built compilers.\n\nAda Lovelace met Charles Babbage.", key="a")
        await kb.ingest(text="Ada Lovelace met Charles Babbage.", key="a")  # Grace Hopper gone from it
        await kb.ingest(text="Alan Turing broke codes.", key="b")
        await kb.delete("b")
        store = kb.store
        assert isinstance(store, FalkorStore)
        names = {e.name for e in await store.search_entities("Grace Hopper Alan Turing Ada Lovelace")}
        assert names == {"Ada Lovelace"}
        assert (await kb.check()).ok


async def test_an_unmentioned_entity_is_reported_at_once_unless_a_writer_is_live(store: FalkorStore) -> None:
    await build_library(store)
    store.conn.write_sync(
        "CREATE (:Entity {id: 'e:left', name: 'Left', label: 'Thing', _source: 'extraction', _created_at: $at})",
        {"at": datetime.now(UTC).isoformat()},
    )
    store.cache.bump()
    with WriterLease(store.conn):  # a writer may be about to delete what it unmentioned
        assert (await store.check()).found == []
    report = await store.check()
    assert [(p.kind, p.examples) for p in report.found] == [("orphan_entities", ["e:left"])]
    assert (await store.check(repair=True)).remaining == []
    assert await store.entities_by_ids(["e:left"]) == []
