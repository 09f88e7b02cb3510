"""FalkorDB passage search ranks as the embedded store does, a new version is found by its new
words, and a cache asked for by several threads at once is built once. A real server."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from tests.conftest import FalkorServer

from evigraph import KnowledgeBase
from evigraph.store.falkordb.schema import RETIRED_FULLTEXT
from evigraph.store.falkordb.store import FalkorStore

TEXTS = {
    "lovelace": "Ada Lovelace wrote the first program for the Analytical Engine of Charles Babbage.",
    "babbage": "Charles Babbage designed the Analytical Engine; engines and engineering were his life.",
    "turing": "Alan Turing described a universal machine; programs for machines followed.",
    "hopper": "Grace Hopper wrote the first compiler, a program that writes programs.",
}


@pytest.fixture
def db(falkordb_server: FalkorServer) -> str:
    return f"falkordb://{falkordb_server.host}:{falkordb_server.port}/search_{time.monotonic_ns()}"


async def test_scores_equal_the_embedded_stores(db: str, tmp_path: Path) -> None:
    questions = ["first program engine", "Babbage engines", "programs machines compiler", "Lovelace", "the"]
    found: list[list[list[tuple[str, float]]]] = []
    for location in (db, str(tmp_path / "kb.db")):
        async with KnowledgeBase(location, extractor="rules", embedder="none") as kb:
            for key, text in TEXTS.items():
                await kb.ingest(text=text, key=key, title=key)
            passages = [[(h.document, h.score) for h in await kb.store.search_passages(q, 3)] for q in questions]
            entities = [[(h.id, h.score) for h in await kb.store.search_entities(q, 3)] for q in questions]
            found.append(passages + entities)
    falkordb, embedded = found
    assert all(falkordb[:4]) and falkordb[4] == [] and any(falkordb[5:])
    for mine, theirs in zip(falkordb, embedded, strict=True):
        assert [d for d, _ in mine] == [d for d, _ in theirs]
        assert [s for _, s in mine] == pytest.approx([s for _, s in theirs], rel=1e-9)


async def test_a_new_version_is_found_by_its_new_words(db: str) -> None:
    async with KnowledgeBase(db, extractor="rules", embedder="none") as kb:
        await kb.ingest(text="Ada Lovelace wrote notes on the engine.", key="a", title="a")
        store = kb.store
        assert isinstance(store, FalkorStore)
        assert [h.document for h in await store.search_passages("Lovelace notes", 5)] == ["a"]
        await kb.ingest(text="Ada Lovelace wrote poetry and letters.", key="a", title="a")
        hits = await store.search_passages("Lovelace poetry", 5)
        assert [h.document for h in hits] == ["a"] and "poetry" in hits[0].text
        assert await store.search_passages("notes", 5) == []


async def test_a_cache_asked_for_at_once_is_built_once(db: str) -> None:
    async with KnowledgeBase(db, extractor="rules", embedder="none") as kb:
        await kb.ingest(text="Ada Lovelace met Charles Babbage.", key="a", title="a")
        store = kb.store
        assert isinstance(store, FalkorStore)
        builds: list[int] = []

        def build() -> int:
            builds.append(1)
            time.sleep(0.2)
            return len(builds)

        got: list[int] = []
        threads = [threading.Thread(target=lambda: got.append(store.cache.get("k", build))) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert got == [1, 1, 1, 1] and len(builds) == 1
        assert store.cache.get("none", lambda: None) is None  # a None value is held too
        assert store.cache.get("none", lambda: 1 / 0) is None
        await kb.ingest(text="Grace Hopper wrote a compiler.", key="b", title="b")  # a write moves it on
        assert store.cache.get("k", build) == 2


def _fulltext_labels(store: FalkorStore) -> set[str]:
    rows = store.conn.read_sync("CALL db.indexes() YIELD label, types RETURN label, types")
    return {r["label"] for r in rows if any("FULLTEXT" in kinds for kinds in r["types"].values())}


async def test_a_writable_open_drops_the_retired_full_text_indexes(db: str) -> None:
    async with KnowledgeBase(db, extractor="rules", embedder="none") as kb:
        await kb.ingest(text="Ada Lovelace met Charles Babbage.", key="a", title="a")
        store = kb.store
        assert isinstance(store, FalkorStore)
        assert not _fulltext_labels(store) & set(RETIRED_FULLTEXT)
        for label in RETIRED_FULLTEXT:  # as an earlier release created them
            store.conn.write_sync(
                f"CALL db.idx.fulltext.createNodeIndex({{label: '{label}', stopwords: []}}, 'search_text')"
            )
        assert set(RETIRED_FULLTEXT) <= _fulltext_labels(store)
    async with KnowledgeBase(db, embedder="none", read_only=True) as kb:
        await kb.status()  # opens the store
        assert isinstance(kb.store, FalkorStore)
        assert set(RETIRED_FULLTEXT) <= _fulltext_labels(kb.store)  # a reader changes nothing
        assert [h.document for h in await kb.store.search_passages("Lovelace")] == ["a"]
    async with KnowledgeBase(db, embedder="none") as kb:
        await kb.status()
        assert isinstance(kb.store, FalkorStore)
        labels = _fulltext_labels(kb.store)
        assert not labels & set(RETIRED_FULLTEXT) and not labels  # the server keeps no full-text index
        assert [h.document for h in await kb.store.search_passages("Lovelace")] == ["a"]
