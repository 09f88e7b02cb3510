"""Derived indexes saved beside an embedded knowledge base: read on open, never trusted when stale.

Every test compares a store's answers (BM25 over passages and entities, names, the graph's walks,
term counts, titles, vectors) with the answers of a store that had to build every index from the
graph itself, because the folder beside the file could not be written: a saved index must answer
exactly as a built one, and a stale, missing or damaged one must be rebuilt, not read.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.tools.conftest import HashEmbedder, write_corpus

from evigraph import KnowledgeBase
from evigraph.models import WalkBounds
from evigraph.retrieval.ranking_index import RankingIndex
from evigraph.retrieval.ranking_snapshot import Snapshot
from evigraph.store.base import GraphStore
from evigraph.store.core.graph_arrays import GraphArrays
from evigraph.store.core.graph_index import GraphIndex
from evigraph.store.embedded.store import EmbeddedStore
from evigraph.store.index_files import SUFFIX, IndexFiles, PackedStrings, SortedKeys, pack_strings, sorted_keys
from evigraph.store.saved_indexes import GRAPH, SavedIndexes

QUERIES = ("Acme Robotics", "warehouse robots pallets", "Globex drones", "Ingrid Halvorsen founded", "depot Bergen")
NEW_DOC = "Zephyrine Quillborough Corp opened a depot in Vardø. Dr. Osvald Quillborough runs the Zephyrine depot."


def folder(db: Path) -> Path:
    return db.with_name(db.name + SUFFIX)


def saved_files(db: Path) -> set[str]:
    return {p.name for p in folder(db).iterdir()}


async def answers(store: GraphStore, vectors: bool = True) -> dict[str, Any]:
    """What retrieval asks the derived indexes, over the whole of the small corpus."""
    entities = await store.entity_records()
    ids = sorted(e.id for e in entities)
    names = sorted({e.name for e in entities} | {"no such name"})
    out: dict[str, Any] = {"entities": ids}
    chunk_ids: list[str] = []
    for q in QUERIES:
        hits = await store.search_passages(q, 10)
        out[f"chunks {q}"] = [(h.id, round(h.score, 9), h.title, h.path) for h in hits]
        out[f"entities {q}"] = [(h.id, round(h.score, 9)) for h in await store.search_entities(q, 10)]
        chunk_ids += [h.id for h in hits]
        if vectors:
            vector = HashEmbedder().embed([q])[0]
            out[f"vectors {q}"] = [(cid, round(s, 6)) for cid, s in await store.vector_search(vector, 5)]
    chunk_ids = sorted(set(chunk_ids))
    out["named"] = await store.entities_named(names)
    out["neighbours"] = [n.model_dump() for n in await store.neighbours(ids, hops=2, limit=200)]
    out["passages_for_entities"] = await store.passages_for_entities(ids, per_entity=5)
    out["entities_for_passages"] = await store.entities_for_passages(chunk_ids)
    out["relations_for_passages"] = [n.model_dump() for n in await store.relations_for_passages(chunk_ids, 400)]
    out["explore"] = [(await store.explore(i, WalkBounds(depth=2))).model_dump() for i in ids[:5]]
    out["weights"] = sorted((await store.relation_weights()).items())
    counts = await store.term_counts(["acme", "robot", "depot", "quillborough", "nothing"])
    out["terms"] = (counts.passages, counts.counts)
    out["by_ids"] = [h.model_dump() for h in await store.passages_by_ids(chunk_ids)]
    return out


async def read(db: Path, vectors: bool = True) -> dict[str, Any]:
    store = EmbeddedStore(db, read_only=True)
    await store.open()
    try:
        return await answers(store, vectors)
    finally:
        await store.close()


async def built(db: Path, vectors: bool = True) -> dict[str, Any]:
    """The answers of indexes built from the graph: the folder is a file, so nothing is saved or read."""
    aside = db.with_name(db.name + ".aside")
    moved = folder(db).exists()
    if moved:
        folder(db).rename(aside)
    folder(db).write_text("not a folder")
    try:
        return await read(db, vectors)
    finally:
        folder(db).unlink()
        if moved:
            aside.rename(folder(db))


async def ingest(db: Path, corpus: Path) -> None:
    async with KnowledgeBase(db, extractor="rules", embedder=HashEmbedder()) as kb:
        report = await kb.ingest([corpus])
        assert [d.error for d in report.failed] == []
        await kb.finalize()


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    db = tmp_path / "kb.db"
    asyncio.run(ingest(db, write_corpus(tmp_path / "corpus")))
    return db


async def test_a_closed_ingest_leaves_indexes_an_open_reads_as_built(kb: Path) -> None:
    names = {p.name for p in folder(kb).glob("*.json")}
    assert {"passages_bm25.json", "entities_bm25.json", "names.json", "graph.json", "terms.json"} <= names
    assert {"titles.json", "vectors.json"} <= names
    files = saved_files(kb)
    expected = await built(kb)
    assert expected["chunks Acme Robotics"] and expected["neighbours"] and expected["vectors Globex drones"]
    assert await read(kb) == expected
    assert saved_files(kb) == files  # read, not rebuilt and saved again


async def test_a_write_after_open_is_seen_and_saved(kb: Path, tmp_path: Path) -> None:
    before = await read(kb)
    assert not before["chunks Globex drones"] or all("Zephyrine" not in str(c) for c in before["chunks Globex drones"])
    async with KnowledgeBase(kb, extractor="rules", embedder=HashEmbedder()) as opened:
        await opened.retrieve("Acme Robotics", top_k=3)  # the saved indexes are in use
        await opened.ingest(text=NEW_DOC, key="zephyrine")
        found = await opened.retrieve("Zephyrine Quillborough depot", top_k=3)
        assert "Zephyrine" in found.passages[0].text
    after = await read(kb)
    assert after != before
    assert after["terms"][1]["quillborough"] == 1
    assert after == await built(kb)


async def test_indexes_of_an_older_generation_are_rebuilt(kb: Path, tmp_path: Path) -> None:
    old = tmp_path / "old-indexes"
    shutil.copytree(folder(kb), old)
    async with KnowledgeBase(kb, extractor="rules", embedder=HashEmbedder()) as opened:
        await opened.ingest(text=NEW_DOC, key="zephyrine")
    shutil.rmtree(folder(kb))
    shutil.copytree(old, folder(kb))  # indexes saved before the write, as a crash before the save leaves them
    expected = await built(kb)
    assert expected["terms"][1]["quillborough"] == 1
    assert await read(kb) == expected
    assert saved_files(kb) != {p.name for p in old.iterdir()}  # rebuilt, and saved at the new generation


@pytest.mark.parametrize("damage", ["truncated", "missing_array", "missing_manifest", "garbled_manifest"])
async def test_a_damaged_index_is_rebuilt_not_read(kb: Path, damage: str) -> None:
    expected = await built(kb)
    manifest = folder(kb) / "graph.json"
    arrays = sorted(folder(kb).glob("graph.*.npy"))
    if damage == "truncated":  # a crash while the file was written, the manifest somehow after it
        data = arrays[0].read_bytes()
        arrays[0].write_bytes(data[: len(data) // 2])
    elif damage == "missing_array":
        arrays[-1].unlink()
    elif damage == "missing_manifest":  # a crash before the manifest, which is written last
        manifest.unlink()
    else:
        manifest.write_text(manifest.read_text()[:40])
    assert await read(kb) == expected
    assert json.loads(manifest.read_text())["format"] == 1  # saved again, whole


async def test_another_dimension_or_generation_is_not_loaded(tmp_path: Path) -> None:
    import numpy as np

    files = IndexFiles(tmp_path / "x.db.indexes")
    assert files.save("vectors", "a:1", {"matrix": np.ones((3, 4), dtype=np.float32)}, {"n": 3})
    loaded = files.load("vectors", "a:1")
    assert loaded is not None and loaded[0]["matrix"].shape == (3, 4) and loaded[1] == {"n": 3}
    assert files.load("vectors", "a:2") is None
    assert files.load("vectors", "b:1") is None
    assert files.save("vectors", "a:2", {"matrix": np.ones((3, 8), dtype=np.float32)}, {"n": 3})
    assert files.load("vectors", "a:1") is None
    assert sorted(p.suffix for p in (tmp_path / "x.db.indexes").iterdir()) == [".json", ".npy"]  # the old swept


def test_arrays_made_as_they_are_written_are_saved_whole_or_not_at_all(tmp_path: Path) -> None:
    """The graph's arrays come one at a time (`GraphArrays.parts`): a pair that fails as it is
    made leaves no file of the index behind, and the error is the caller's to see."""
    import numpy as np

    def parts(fail: bool) -> Iterator[tuple[str, Any]]:
        yield "first", np.arange(3)
        if fail:
            raise ValueError("made wrong")
        yield "second", np.arange(2, dtype=np.float64)

    folder = tmp_path / "x.db.indexes"
    files = IndexFiles(folder)
    assert files.save("graph", "a:1", parts(fail=False), {"n": 2})
    loaded = files.load("graph", "a:1")
    assert loaded is not None
    assert loaded[0]["first"].tolist() == [0, 1, 2] and loaded[0]["second"].tolist() == [0.0, 1.0]
    before = sorted(p.name for p in folder.iterdir())
    with pytest.raises(ValueError, match="made wrong"):
        files.save("graph", "a:2", parts(fail=True), {"n": 2})
    assert sorted(p.name for p in folder.iterdir()) == before
    assert files.load("graph", "a:1") is not None  # the index saved before is untouched


def test_a_graph_save_that_fails_answers_from_the_rows_read_again(tmp_path: Path) -> None:
    """The arrays went to a save that failed (the folder is a file here), so they are spent:
    the index comes from `build`, never from what is left of them."""
    blocked = tmp_path / "kb.db.indexes"
    blocked.write_text("not a folder")
    from_rows = GraphIndex()
    made: list[str] = []

    def arrays() -> tuple[str, Iterator[tuple[str, Any]], dict[str, Any]]:
        made.append("arrays")
        return "a:1", GraphArrays().parts(), {}

    saved = SavedIndexes(IndexFiles(blocked))
    index = saved.get_arrays("graph", GRAPH, lambda: None, lambda: ("a:1", from_rows), arrays)
    assert made == ["arrays"] and index is from_rows
    assert blocked.read_text() == "not a folder"


def test_sorted_keys_find_every_key_in_byte_order() -> None:
    words = ["zeta", "Ålesund", "alpha", "", "Bodø", "alpha beta", "ß", "日本", "Zeta"]
    ordered, order = sorted_keys(words)
    keys = SortedKeys(PackedStrings(*pack_strings(ordered)), order)
    for i, word in enumerate(words):
        assert keys[word] == i
        assert word in keys
    assert "alph" not in keys and "zz" not in keys and keys.get("nope") is None
    assert list(PackedStrings(*pack_strings(words))) == words


async def test_a_compacted_file_answers_as_built(kb: Path) -> None:
    store = EmbeddedStore(kb)
    await store.open()
    try:
        await store.compact()
    finally:
        await store.close()
    assert await read(kb) == await built(kb)


def same_snapshot(a: Snapshot, b: Snapshot) -> None:
    import numpy as np

    assert list(a.passages) == list(b.passages) and list(a.entity_keys) == list(b.entity_keys)
    assert list(a.entity_names) == list(b.entity_names)
    for name in ("alive", "entity_vectors", "entity_usable", "passage_count", "sentence_vectors", "edge_count"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert list(a.sentence_entities) == list(b.sentence_entities)
    assert list(a.entity_sentences) == list(b.entity_sentences)
    for part in ("data", "indices", "indptr"):
        assert np.array_equal(getattr(a.walk, part), getattr(b.walk, part)), part
    assert a.walk.shape == b.walk.shape
    assert dict(a.row_of) == dict(b.row_of) and dict(a.node_of) == dict(b.node_of)


async def test_the_ranking_snapshot_is_saved_and_read_until_a_write(kb: Path) -> None:
    async with KnowledgeBase(kb, extractor="rules", embedder=HashEmbedder(), read_only=True) as opened:
        await opened.open()
        store = opened.store
        assert store is not None
        first = RankingIndex()
        built_snapshot = await first.snapshot(store)
        assert first.loads == 1 and not built_snapshot.empty
        second = RankingIndex()
        read_snapshot = await second.snapshot(store)
        assert second.loads == 0  # read from disk
        same_snapshot(read_snapshot, built_snapshot)
        plan = await opened.retrieve("Who founded Acme Robotics?", top_k=3, ranking="graph")
        assert plan.passages
    async with KnowledgeBase(kb, extractor="rules", embedder=HashEmbedder()) as opened:
        await opened.ingest(text=NEW_DOC, key="zephyrine")
        store = opened.store
        assert store is not None
        after = RankingIndex()
        grown = await after.snapshot(store)
        assert after.loads == 1  # the saved one is of an older generation
        assert len(grown.passages) > len(built_snapshot.passages)
        again = RankingIndex()
        same_snapshot(await again.snapshot(store), grown)
        assert again.loads == 0
        # A snapshot read from disk follows a write by loading in full: it holds no rows to update.
        await opened.ingest(text="Halvard Quillborough Corp sells nets in Vardø.", key="halvard")
        followed = await again.snapshot(store)
        assert again.loads == 1 and len(followed.passages) == len(grown.passages) + 1


async def test_a_snapshot_followed_across_writes_is_saved_by_the_close(kb: Path) -> None:
    """A snapshot loaded in full follows a later write by reading only the new document, and is
    saved only after a full load; the close saves the followed one, so the next open reads it."""
    async with KnowledgeBase(kb, extractor="rules", embedder=HashEmbedder()) as opened:
        index = opened.graph_stage().index
        await opened.retrieve("Who founded Acme Robotics?", top_k=3, ranking="graph")  # read from disk
        await opened.ingest(text=NEW_DOC, key="zephyrine")
        await opened.retrieve("Where is the Zephyrine depot?", top_k=3, ranking="graph")
        assert index.loads == 1  # in full, and saved: the one read from disk held no rows to follow with
        await opened.ingest(text="Halvard Quillborough Corp sells nets in Vardø.", key="halvard")
        await opened.retrieve("What does Halvard Quillborough Corp sell?", top_k=3, ranking="graph")
        assert index.loads == 1  # followed: the saved one is a generation behind now
    async with EmbeddedStore(kb, read_only=True) as store:
        read_back = RankingIndex()
        saved = await read_back.snapshot(store)
        assert read_back.loads == 0  # saved at the generation the session closed at
        files = store.saved_index_files()
        assert files is not None
        files.remove("ranking")
        rebuilt = RankingIndex()
        built_snapshot = await rebuilt.snapshot(store)
        assert rebuilt.loads == 1
        # The same graph, numbered in the order it was met: a followed index adds a document's
        # new entities after the others, where a full load meets them in the rows' order.
        assert set(saved.passages) == set(built_snapshot.passages)
        assert set(saved.entity_keys) == set(built_snapshot.entity_keys)
        assert {"halvard quillborough corp", "zephyrine quillborough corp"} <= set(saved.entity_keys)
        assert saved.walk.shape == built_snapshot.walk.shape


@pytest.mark.parametrize("kind", ["fact", "entity"])
async def test_ranking_vectors_leave_the_other_saved_indexes_current(tmp_path: Path, kind: str) -> None:
    """A ranking-vector write moves the write generation but changes only what reads those
    vectors: every other saved index is still the data's, and the next open must not rebuild it."""
    from tests.store.contract.conftest import ALPHA

    db = tmp_path / "kb.db"
    async with EmbeddedStore(db) as store:
        await store.set_embedding_model("m", 3)
        await store.write_versions([ALPHA])
        await store.search_passages("Babbage")
        await store.search_entities("Babbage")
        await store.neighbours(["x"])
        await store.passages_by_ids(["x"])
        await store.term_counts(["engine"])
        await store.search_facts([1.0, 0.0, 0.0], 3)
        pending = [t for t in await store.pending_ranking_texts(limit=100) if t.kind == kind]
        assert pending
        await store.write_ranking_vectors([(t, [[1.0, 0.0, 0.0]] * max(1, len(t.spans))) for t in pending])
        await store.save_indexes(facts=True)  # as a knowledge base whose strategy searches facts
        generation = await store.write_generation()
    manifests = {p.stem: json.loads(p.read_text())["generation"] for p in folder(db).glob("*.json")}
    assert {"passages_bm25", "entities_bm25", "graph", "titles", "terms", "fact_vectors"} <= set(manifests)
    assert {name: at for name, at in manifests.items() if at != generation} == {}
    files = saved_files(db)
    async with EmbeddedStore(db) as store:
        await store.search_passages("Babbage")
        await store.neighbours(["x"])
    assert saved_files(db) == files  # read, not rebuilt
