"""`check` and `check --repair` on real databases with real damage (issue 9, point 3).

Damage is made the way it arises: raw Cypher through the store's executor for orphans, stray
passages, dangling relation sources and wrong counts; and a SIGKILL right after
a committed `DETACH DELETE` for ghost edges, which no Cypher statement can create.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import run_cli

from evigraph import KnowledgeBase
from evigraph.integrity_records import IntegrityReport
from evigraph.models import ExtractedEntity, IngestStatus
from evigraph.store.embedded import integrity
from evigraph.store.embedded.executor import Tx
from evigraph.store.embedded.store import EmbeddedStore

TEXTS = {
    "a": "Alice Walker met Bob Marley in Paris. Carol King wrote to Alice Walker in Rome.",
    "b": "David Bowie worked with Carol King in Berlin.\n\nAcme Corp hired Bob Marley in Paris.",
    "c": "Edith Piaf sang in Paris.",
}


async def build(db: Path) -> KnowledgeBase:
    kb = KnowledgeBase(db, extractor="rules")
    for key, text in TEXTS.items():
        await kb.ingest(text=text, key=key)
    return kb


async def embedded(kb: KnowledgeBase) -> EmbeddedStore:
    await kb.open(for_write=True)
    store = kb.store
    assert isinstance(store, EmbeddedStore)
    return store


def run(tx: Tx, query: str, params: dict[str, Any] | None = None) -> None:
    tx.execute(query, params).close()


def kinds(report: IntegrityReport) -> dict[str, int]:
    return {p.kind: p.count for p in report.found}


async def test_a_healthy_knowledge_base_has_no_findings(tmp_path: Path) -> None:
    kb = await build(tmp_path / "kb.db")
    try:
        report = await kb.check()
        assert report.ok and report.found == [] and report.remaining == []
        await kb.delete("a")
        await kb.ingest(text=TEXTS["b"] + " Frank Zappa visited Rome.", key="b")
        assert (await kb.check()).found == []
    finally:
        await kb.close()


async def test_injected_damage_is_found_and_repaired(tmp_path: Path) -> None:
    kb = await build(tmp_path / "kb.db")
    try:
        await kb.upsert_entities([ExtractedEntity.create("Agent Pick", "Person")], source="agent")
        store = await embedded(kb)
        before = await store.executor.read(integrity.snapshot)
        [c_chunk] = [c.id for c in await store.document_passages("c")]

        def damage(tx: Tx) -> None:
            # An extracted entity nothing mentions, and a passage of no document that mentions one.
            run(tx, "CREATE (:Entity {id: 'unknown:lost', name: 'Lost', label: 'Unknown', _source: 'extraction'})")
            run(tx, "CREATE (:Chunk {id: 'stray:1:0', document: 'gone', version: 1, `index`: 0, text: 'x'})")
            run(
                tx,
                "MATCH (e:Entity {id: 'unknown:alice walker'}), (c:Chunk {id: 'stray:1:0'}) "
                "CREATE (e)-[:MENTIONED_IN]->(c)",
            )
            # A passage of document c that belongs to an older version.
            run(
                tx,
                "MATCH (d:Document {key: 'c'}) CREATE (:Chunk {id: 'old:1:0', document: 'c', version: 0, `index`: 0,"
                " text: 'old'})-[:PART_OF]->(d)",
            )
            # Relations citing passages that do not exist: extracted ones with and without a real
            # source left, and an agent's with none left (agents may record unsupported relations).
            run(
                tx,
                "MATCH ()-[r:RELATES]->() WHERE string_split(r.source_chunks, ' ')[1] = $c "
                "SET r.source_chunks = r.source_chunks + ' gone:1:0'",
                {"c": c_chunk},
            )
            run(
                tx,
                "MATCH (a:Entity {id: 'unknown:bob marley'}), (b:Entity {id: 'unknown:david bowie'}) "
                "CREATE (a)-[:RELATES {id: 'x1', type: 'RELATED_TO', fact: 'f', confidence: 0.5,"
                " source_chunks: 'gone:1:0', _source: 'extraction'}]->(b), "
                "(b)-[:RELATES {id: 'x2', type: 'RELATED_TO', fact: 'g', confidence: 0.5,"
                " source_chunks: 'gone:2:0', _source: 'agent'}]->(a)",
            )
            run(tx, "MATCH (d:Document {key: 'a'}) SET d.chunk_count = 7")

        await store.executor.write(damage)

        found = await kb.check()
        assert not found.ok
        assert kinds(found) == {
            "stray_chunks": 2,
            "miscounted_documents": 1,
            "orphan_entities": 1,
            "dangling_relation_sources": 3,
        }
        assert [p.examples for p in found.found if p.kind == "orphan_entities"] == [["unknown:lost"]]
        assert found.remaining == found.found  # a check alone changes nothing
        assert kinds(await kb.check()) == kinds(found)

        repaired = await kb.check(repair=True)
        assert repaired.repaired["stray_chunks"] == 2
        assert repaired.repaired["orphan_entities"] == 1
        assert repaired.repaired["dangling_relation_sources"] == 3
        # The lost passages of `a` cannot be made up: it is marked changed for the next ingest.
        assert [p.kind for p in repaired.remaining] == ["miscounted_documents"]

        after = await store.executor.read(integrity.snapshot)
        rels = await store.executor.read(
            lambda tx: tx.rows(
                "MATCH ()-[r:RELATES]->() WHERE r.id IN ['x1', 'x2'] RETURN r.id AS id, r.source_chunks AS s"
            )
        )
        assert rels == [{"id": "x2", "s": ""}]  # the agent's relation stays, without the missing source
        assert after["entities"] - before["entities"] == set()
        assert before["mentions"] - after["mentions"] == set()
        assert (await kb.retrieve("Edith Piaf Paris")).passages

        report = await kb.ingest(text=TEXTS["a"], key="a")
        assert report.documents[0].status == IngestStatus.updated
        assert (await kb.check()).ok
    finally:
        await kb.close()


CRASH_AFTER_DELETE = """
import asyncio, os, signal, sys
from evigraph.store.embedded.store import EmbeddedStore

async def main() -> None:
    store = EmbeddedStore(sys.argv[1])
    await store.open()

    def old_delete(tx):  # what writes.py did before issue 9: DETACH DELETE alone
        ids = tx.column("MATCH (c:Chunk)-[:PART_OF]->(d:Document) WHERE d.key IN ['a', 'b'] RETURN c.id")
        tx.run_batched("UNWIND $rows AS r MATCH (c:Chunk {id: r}) DETACH DELETE c", ids)
        tx.execute("MATCH (d:Document) WHERE d.key IN ['a', 'b'] DETACH DELETE d")

    if sys.argv[2] == "old":
        await store.executor.write(old_delete)
    else:
        for key in sys.argv[3:]:
            assert await store.delete_document(key)
    os.kill(os.getpid(), signal.SIGKILL)

asyncio.run(main())
"""


async def crash_after_delete(tmp_path: Path, how: str) -> Path:
    """A knowledge base in which two documents were deleted just before a SIGKILL (no checkpoint)."""
    db = tmp_path / "kb.db"
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(30):  # enough passages for the engine to leave ghosts (measured: 70 edges for 10 deletes)
        (docs / f"d{i:02}.txt").write_text(
            f"Person{i} Walker met Bob Marley in Paris. Carol King{i} wrote to Person{i} Walker in Rome.\n"
        )
    async with KnowledgeBase(db, extractor="rules") as kb:
        await kb.ingest(text=TEXTS["a"], key="a")
        await kb.ingest(text=TEXTS["b"], key="b")
        await kb.ingest([docs], progress=False)
    # Documents in the middle too: a bad replay once removed the PART_OF edge of the first passage.
    keys = ["b", *(f"file:{docs.resolve().name}/{n}" for n in ("d12.txt", "d20.txt"))]
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CRASH_AFTER_DELETE), str(db), how, *keys],
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]
    return db


async def mention_counts(kb: KnowledgeBase) -> tuple[int, int]:
    """MENTIONED_IN edges as the table counts them (ghosts included: a count reads no endpoint),
    and as rows that read both endpoints (ghosts, whose passage is gone, drop out)."""
    store = await embedded(kb)

    def work(tx: Tx) -> tuple[int, int]:
        counted = tx.column("MATCH ()-[m:MENTIONED_IN]->() RETURN count(m)")[0]
        listed = tx.rows("MATCH (e:Entity)-[:MENTIONED_IN]->(c:Chunk) RETURN e.id AS e, c.id AS c")
        return int(counted), len(listed)

    counts: tuple[int, int] = await store.executor.read(work)
    return counts


@pytest.mark.slow
@pytest.mark.kuzu  # Kuzu's replay left them; LadybugDB leaves none (the test after this one)
async def test_ghost_edges_left_by_a_crash_are_found_and_repaired(tmp_path: Path) -> None:
    db = await crash_after_delete(tmp_path, "old")
    async with KnowledgeBase(db, extractor="rules") as kb:
        found = await kb.check()
        ghosts = {p.kind: p.count for p in found.found if p.kind.startswith("ghost_edges.")}
        assert ghosts.get("ghost_edges.MENTIONED_IN", 0) > 0, found
        counted, listed = await mention_counts(kb)
        assert counted == listed + ghosts["ghost_edges.MENTIONED_IN"]
        repaired = await kb.check(repair=True)
        assert repaired.ok, repaired.remaining
        assert await mention_counts(kb) == (listed, listed)
        assert (await kb.status()).mentions == listed


@pytest.mark.slow
async def test_deletes_leave_no_ghost_edges_across_a_crash(tmp_path: Path) -> None:
    db = await crash_after_delete(tmp_path, "new")
    async with KnowledgeBase(db, extractor="rules") as kb:
        assert (await kb.check()).found == []
        status = await kb.status()
        assert (status.documents, status.passages) == (29, 29)
        assert await mention_counts(kb) == (status.mentions, status.mentions)
        # the version number each delete kept came back with the replay: none is given again
        assert [d.version for d in (await kb.ingest(text=TEXTS["b"], key="b")).documents] == [2]


async def test_cli_check_exits_1_until_repaired(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    kb = await build(db)
    try:
        store = await embedded(kb)
        await store.executor.write(
            lambda tx: tx.execute(
                "CREATE (:Entity {id: 'unknown:lost', name: 'Lost', label: 'Unknown', _source: 'extraction'})"
            ).close()
        )
    finally:
        await kb.close()
    found = run_cli("check", "--db", str(db))
    assert found.code == 1 and "orphan_entities: 1" in found.out and "--repair" in found.err
    repaired = run_cli("check", "--repair", "--json", "--db", str(db))
    assert repaired.code == 0, repaired.err
    payload = repaired.json()
    assert payload["ok"] is True and payload["repaired"] == {"orphan_entities": 1}
    assert run_cli("check", "--db", str(db)).code == 0
