"""A FalkorDB graph's derived indexes are saved in this user's cache, keyed by server, graph and
the graph's write generation: a new process reads them instead of pulling the whole graph, and
answers exactly as one that pulled it; a write through any process makes them stale. A real server.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import FalkorServer
from tests.store.test_graph_arrays import walks
from tests.store.test_saved_indexes import NEW_DOC, answers
from tests.tools.conftest import write_corpus

from evigraph import KnowledgeBase
from evigraph.store.core.graph_arrays import GraphArrays
from evigraph.store.falkordb import caches
from evigraph.store.falkordb.caches import build_graph_index, read_graph
from evigraph.store.falkordb.store import FalkorStore
from evigraph.store.index_files import user_cache_folder
from evigraph.store.location import StoreLocation
from evigraph.store.saved_indexes import GRAPH


@pytest.fixture
def db(falkordb_server: FalkorServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return f"falkordb://{falkordb_server.host}:{falkordb_server.port}/saved_{time.monotonic_ns()}"


def folder(db: str) -> Path:
    where = StoreLocation.parse(db)
    assert where.graph is not None
    return user_cache_folder("falkordb", f"{where.host}:{where.port}", where.graph)


async def read(db: str) -> dict[str, Any]:
    store = FalkorStore(StoreLocation.parse(db), read_only=True)
    await store.open()
    try:
        return await answers(store, vectors=False)
    finally:
        await store.close()


async def built(db: str) -> dict[str, Any]:
    """Answers from indexes pulled from the graph: the cache folder is a file, so none is read or saved."""
    aside = folder(db).with_name("aside")
    folder(db).rename(aside)
    folder(db).write_text("not a folder")
    try:
        return await read(db)
    finally:
        folder(db).unlink()
        aside.rename(folder(db))


async def test_a_new_process_reads_the_saved_indexes_and_a_write_makes_them_stale(db: str, tmp_path: Path) -> None:
    async with KnowledgeBase(db, extractor="rules", embedder="none") as kb:
        report = await kb.ingest([write_corpus(tmp_path / "corpus")])
        assert [d.error for d in report.failed] == []
    names = {p.name for p in folder(db).glob("*.json")}
    assert {"passages_bm25.json", "entities_bm25.json", "names.json", "graph.json", "terms.json"} <= names
    files = {p.name for p in folder(db).iterdir()}
    expected = await built(db)
    assert expected["chunks Acme Robotics"] and expected["neighbours"]
    assert await read(db) == expected
    assert {p.name for p in folder(db).iterdir()} == files  # read, not pulled and saved again

    old = tmp_path / "old"
    shutil.copytree(folder(db), old)
    async with KnowledgeBase(db, extractor="rules", embedder="none") as kb:
        await kb.ingest(text=NEW_DOC, key="zephyrine")
    shutil.rmtree(folder(db))
    shutil.copytree(old, folder(db))  # as a process that never saw the write left them
    fresh = await built(db)
    assert fresh["terms"][1]["quillborough"] == 1
    assert await read(db) == fresh


async def test_the_graph_read_in_pages_answers_as_read_whole(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with KnowledgeBase(db, extractor="rules", embedder="none") as kb:
        await kb.ingest([write_corpus(tmp_path / "corpus")])
    store = FalkorStore(StoreLocation.parse(db), read_only=True)
    await store.open()
    try:
        whole = walks(build_graph_index(store.conn))
        monkeypatch.setattr(caches, "PAGE_NODES", 2)  # an entity or two a read: many pages
        assert walks(build_graph_index(store.conn)) == whole
        assert walks(GRAPH.load(read_graph(store.conn, GraphArrays()).arrays(), {})) == whole
    finally:
        await store.close()
    assert whole["neighbours"] and whole["mentions"]
