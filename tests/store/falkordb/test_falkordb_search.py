"""FalkorDB passage search: what a store remembers of passages never changes an answer, and a
cache asked for by several threads at once is built once. A real server."""

from __future__ import annotations

import threading
import time

import pytest
from tests.conftest import FalkorServer

from evigraph import KnowledgeBase
from evigraph.store.falkordb import reads
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


async def test_remembered_passages_score_as_read_ones(db: str) -> None:
    async with KnowledgeBase(db, extractor="rules", embedder="none") as kb:
        for key, text in TEXTS.items():
            await kb.ingest(text=text, key=key, title=key)
        store = kb.store
        assert isinstance(store, FalkorStore)
        questions = ["first program engine", "Babbage engines", "programs machines compiler", "Lovelace"]
        fresh = [await store.search_chunks(q, 3) for q in questions]  # nothing remembered before each
        assert all(fresh)
        for q, first in zip(questions, fresh, strict=True):
            again = await store.search_chunks(q, 3)  # now scored from what was remembered
            assert [(h.id, h.score, h.text) for h in again] == [(h.id, h.score, h.text) for h in first]
            cold = reads.search_chunks(store.conn, q, 3, lambda: reads.corpus_lengths(store.conn))
            assert [(h.id, h.score) for h in cold] == [(h.id, h.score) for h in first]


async def test_a_new_version_is_found_by_its_new_words(db: str) -> None:
    async with KnowledgeBase(db, extractor="rules", embedder="none") as kb:
        await kb.ingest(text="Ada Lovelace wrote notes on the engine.", key="a", title="a")
        store = kb.store
        assert isinstance(store, FalkorStore)
        assert [h.document for h in await store.search_chunks("Lovelace notes", 5)] == ["a"]
        await kb.ingest(text="Ada Lovelace wrote poetry and letters.", key="a", title="a")
        hits = await store.search_chunks("Lovelace poetry", 5)
        assert [h.document for h in hits] == ["a"] and "poetry" in hits[0].text
        assert await store.search_chunks("notes", 5) == []


def test_passage_terms_forget_the_least_recently_used() -> None:
    terms = reads.PassageTerms(kept=2)
    terms.put({"a": (1, {"x": 1}), "b": (1, {"y": 1})})
    assert terms.get(["a"]) == {"a": (1, {"x": 1})}  # a is now the most recent
    terms.put({"c": (1, {"z": 1})})
    assert set(terms.get(["a", "b", "c"])) == {"a", "c"} and len(terms) == 2


def test_passage_stems_count_porter_stems() -> None:
    got = reads.passage_stems([("p", "engines engine program programs lovelace"), ("q", "")])
    stems = reads.porter_stems(["engine", "program", "lovelace"])
    assert got["p"] == (5, {stems["engine"]: 2, stems["program"]: 2, stems["lovelace"]: 1})
    assert got["q"] == (0, {})


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
