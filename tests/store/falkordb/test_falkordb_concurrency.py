"""Several processes writing one FalkorDB graph: each document ends whole, one current version per
key, and a writer killed mid-ingest leaves no half document. Real processes, a real server."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.conftest import FalkorServer

from evigraph import KnowledgeBase
from evigraph.ingest.text_documents import text_document

WRITER = """
import asyncio, sys
from evigraph import KnowledgeBase

async def main(db, prefix, count, words):
    async with KnowledgeBase(db, extractor="rules") as kb:
        for i in range(count):
            key = f"{prefix}{i % int(sys.argv[5])}"
            text = " ".join(f"{words} {prefix} note {i} line {j}. Ada Lovelace met Charles Babbage." for j in range(40))
            await kb.ingest(text=text, key=key, title=key)
asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]))
"""


@pytest.fixture
def server(falkordb_server: FalkorServer) -> str:
    return f"falkordb://{falkordb_server.host}:{falkordb_server.port}"


def writer(db: str, prefix: str, count: int, words: str, keys: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, db, prefix, str(count), words, str(keys)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def documents_and_passages(db: str) -> dict[str, tuple[int, int, int]]:
    """Key -> (version, stored passage count, passages actually readable)."""
    async with KnowledgeBase(db, read_only=True) as kb:
        out = {}
        for d in await kb.documents(limit=1000):
            store = kb.store
            assert store is not None
            readable = await store.document_passages(d.key)
            out[d.key] = (d.version, d.chunks, len(readable))
        return out


def test_two_processes_write_different_documents_and_both_end_whole(server: str) -> None:
    db = f"{server}/both"
    procs = [writer(db, "a", 6, "alpha", 6), writer(db, "b", 6, "beta", 6)]
    for p in procs:
        _out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    found = asyncio.run(documents_and_passages(db))
    assert sorted(found) == [f"{p}{i}" for p in "ab" for i in range(6)]
    assert all(stored == readable > 0 for _, stored, readable in found.values())


def test_two_writers_of_one_key_end_with_one_current_version(server: str) -> None:
    db = f"{server}/same"
    procs = [writer(db, "k", 5, "first", 1), writer(db, "k", 5, "second", 1)]
    for p in procs:
        _out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    found = asyncio.run(documents_and_passages(db))
    assert list(found) == ["k0"]
    _version, stored, readable = found["k0"]
    assert stored == readable > 0

    async def texts() -> set[str]:
        async with KnowledgeBase(db, read_only=True) as kb:
            await kb.open()
            store = kb.store
            assert store is not None
            chunks = await store.document_passages("k0")
            return {w for c in chunks for w in c.text.split() if w in ("first", "second")}

    assert len(asyncio.run(texts())) == 1  # every passage of one writer's version, none of the other's


def test_a_writer_killed_mid_ingest_leaves_no_half_document(server: str) -> None:
    db = f"{server}/killed"
    proc = writer(db, "x", 200, "gamma", 200)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # let it write some documents, then kill it mid-flight
        time.sleep(0.5)
        if len(asyncio.run(documents_and_passages(db)) if _exists(db) else {}) >= 3:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    found = asyncio.run(documents_and_passages(db))
    assert found, "the writer wrote nothing before it was killed"
    assert all(stored == readable > 0 for _, stored, readable in found.values())


def _exists(db: str) -> bool:
    from evigraph.store import knowledge_bases

    return db.rsplit("/", 1)[1] in knowledge_bases(db)


def test_writes_to_one_graph_never_reach_another(server: str, tmp_path: Path) -> None:
    async def run() -> None:
        async with KnowledgeBase(f"{server}/tenant_a", extractor="rules") as a:
            await a.ingest(text="Ada Lovelace wrote the first program.", key="a")
        async with KnowledgeBase(f"{server}/tenant_b", extractor="rules") as b:
            await b.ingest(text="Grace Hopper built a compiler.", key="b")
            assert [d.key for d in await b.documents()] == ["b"]
            assert [h.document_key for h in (await b.search_passages("Ada Lovelace", mode="lexical")).hits] == []

    asyncio.run(run())


async def test_one_ingest_writes_two_groups_at_once_and_every_document_ends_whole(server: str) -> None:
    """FalkorDB takes two writes of one ingest at once (`writes_at_once`); entities both name keep
    every mention, and the graph checks clean."""
    db = f"{server}/overlap"
    async with KnowledgeBase(db, extractor="rules", batch_documents=2) as kb:
        await kb.ingest(text="Ada Lovelace wrote the first program.", key="seed")  # opens the store
        store = kb.store
        assert store is not None and store.writes_at_once == 2
        write_versions = store.write_versions
        running, most = 0, 0

        async def counting(versions):  # type: ignore[no-untyped-def]
            nonlocal running, most
            running += 1
            most = max(most, running)
            try:
                await asyncio.sleep(0.05)  # long enough for the next group to be handed over
                return await write_versions(versions)
            finally:
                running -= 1

        store.write_versions = counting  # type: ignore[method-assign]
        texts = [f"Note {i}: Ada Lovelace met Charles Babbage in London about engine {i}." for i in range(12)]
        report = await kb.ingest_documents([text_document(t, key=f"n{i}") for i, t in enumerate(texts)])
        assert report.counts()["created"] == 12
        assert most == 2  # two at once, never more
        assert (await kb.check()).ok
    found = await documents_and_passages(db)
    assert sorted(found) == sorted(["seed", *(f"n{i}" for i in range(12))])
    assert all(stored == readable == 1 for _, stored, readable in found.values())
    async with KnowledgeBase(db, read_only=True) as kb:
        rows = await kb.cypher_query(
            "MATCH (e:Entity {name: 'Ada Lovelace'})-[:MENTIONED_IN]->(c:Chunk) RETURN count(c) AS n"
        )
    assert rows.rows[0]["n"] == 13  # no writer lost another's mentions
