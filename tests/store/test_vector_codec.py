"""Passage vectors held as int8 (`vector_codec="int8"`): a quarter of the float32 matrix's bytes,
the same nearest passages, saved beside the knowledge base under a name of their own so a switch
of codec never reads the other's matrix, and an unknown codec refused with the choices."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tests.retrieval.test_retrieve import HashEmbedder

from evigraph import KnowledgeBase
from evigraph.errors import ConfigurationError
from evigraph.store.caches import build_matrix, vector_codec
from evigraph.store.embedded.store import EmbeddedStore

TEXTS = {
    "harbor": "Harbor Lab builds tide gauges in Lisbon for the port authority.",
    "quarry": "Quarry Lab cuts granite in Braga and ships it north.",
    "dune": "Dune Station measures wind on the Peniche coast every hour.",
    "orchard": "The orchard in Fundao grows cherries that ripen in June.",
}


def test_int8_keeps_the_nearest_rows_in_a_quarter_of_the_bytes() -> None:
    rng = np.random.default_rng(7)
    rows = [(f"p{i}", list(rng.normal(size=384))) for i in range(3000)]
    exact, small = build_matrix(rows), build_matrix(rows, "int8")
    assert small.matrix.dtype == np.int8 and small.matrix.nbytes * 4 == exact.matrix.nbytes
    assert small.matrix.nbytes + small.scales.nbytes < exact.matrix.nbytes / 3.9
    same_top = 0
    for _ in range(50):
        query = rng.normal(size=384)
        query /= np.linalg.norm(query)
        want, got = exact.search(query, 10), small.search(query, 10)
        assert abs(want[0][1] - got[0][1]) < 0.01  # cosines within a hundredth
        same_top += want[0][0] == got[0][0]
        assert len({w for w, _ in want} & {g for g, _ in got}) >= 8
    assert same_top >= 45
    assert small.search(rows[5][1], 1)[0][0] == "p5"  # a stored vector finds itself


def test_int8_search_widens_no_copy_of_the_matrix() -> None:
    """A query's scores are summed from the int8 rows: no float32 copy of the matrix or a block of it."""
    import tracemalloc

    rng = np.random.default_rng(3)
    small = build_matrix([(f"p{i}", list(rng.normal(size=128))) for i in range(40_000)], "int8")
    exact = small.matrix.astype(np.float32) * small.scales[:, None]
    query = rng.normal(size=128).astype(np.float32)
    small.search(query, 10)  # numpy's own first-call allocations
    tracemalloc.start()
    try:
        found = small.search(query, 10)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < small.matrix.nbytes / 4, peak
    want = exact @ query
    assert [i for i, _ in found] == [f"p{i}" for i in np.argsort(-want)[:10]]
    assert max(abs(s - want[int(i[1:])]) for i, s in found) < 1e-4


async def test_a_knowledge_base_searches_and_saves_its_int8_vectors(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    async with KnowledgeBase(db, extractor="rules", embedder=HashEmbedder()) as kb:
        for key, text in TEXTS.items():
            assert (await kb.ingest(text=text, key=key, progress=False)).ok
        await kb.finalize()
    query = HashEmbedder().embed(["granite from Braga"])[0]
    found, scores = {}, {}
    for codec, name in (("float32", "vectors"), ("int8", "vectors_int8")):
        for copy in ("built and saved", "read from the saved copy"):
            files = {f.name for f in (tmp_path / "kb.db.indexes").iterdir()}
            async with KnowledgeBase(db, embedder=HashEmbedder(), vector_codec=codec, read_only=True) as kb:
                result = await kb.search_passages("granite from Braga", mode="semantic", limit=2)
                assert not result.semantic_skipped
                found[codec] = [h.source.document_key for h in result.hits]
                store = kb.store
                assert isinstance(store, EmbeddedStore)
                held = await store._vectors()
                if codec == "int8":
                    assert held.matrix.dtype == np.int8 and held.scales is not None, copy
                    assert held.scales.dtype == np.float32 and held.scales.shape == (len(TEXTS),), copy
                else:
                    assert held.matrix.dtype == np.float32 and held.scales is None, copy
                scores[codec] = dict(await store.vector_search(query, len(TEXTS)))
            if copy == "read from the saved copy":
                assert {f.name for f in (tmp_path / "kb.db.indexes").iterdir()} == files  # read, not rebuilt
            assert f"{name}.json" in {f.name for f in (tmp_path / "kb.db.indexes").iterdir()}, copy
    assert found["int8"][0] == found["float32"][0] == "quarry"
    assert scores["int8"].keys() == scores["float32"].keys() and len(scores["int8"]) == len(TEXTS)
    for key, exact in scores["float32"].items():
        assert abs(scores["int8"][key] - exact) < 0.01, key  # the saved int8 copy, scaled back
    saved = {f.name.split(".")[0] for f in (tmp_path / "kb.db.indexes").iterdir()}
    # Each codec's own matrix, neither read as the other; the float32 one, which nothing reads
    # while int8 is in use, removed as the int8 one was saved (it stayed forever).
    assert "vectors_int8" in saved and "vectors" not in saved
    async with KnowledgeBase(db, embedder=HashEmbedder(), vector_codec="float32", read_only=True) as kb:
        await kb.search_passages("granite from Braga", mode="semantic", limit=2)
    saved = {f.name.split(".")[0] for f in (tmp_path / "kb.db.indexes").iterdir()}
    assert "vectors" in saved and "vectors_int8" not in saved


def test_an_unknown_codec_is_refused_with_the_choices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigurationError, match="unknown vector codec 'int4'") as caught:
        KnowledgeBase(tmp_path / "kb.db", vector_codec="int4")
    assert "float32, int8" in caught.value.hint and "EVIGRAPH_VECTOR_CODEC" in caught.value.hint
    monkeypatch.setenv("EVIGRAPH_VECTOR_CODEC", "int8")
    assert vector_codec(None) == "int8" and KnowledgeBase(tmp_path / "kb.db").vector_codec == "int8"
    monkeypatch.setenv("EVIGRAPH_VECTOR_CODEC", "bf16")
    with pytest.raises(ConfigurationError, match="'bf16'"):
        KnowledgeBase(tmp_path / "kb.db")
    assert not (tmp_path / "kb.db").exists()


def test_a_server_knowledge_base_refuses_a_codec_it_would_ignore(monkeypatch: pytest.MonkeyPatch) -> None:
    from evigraph.store import connect

    monkeypatch.delenv("EVIGRAPH_VECTOR_CODEC", raising=False)
    with pytest.raises(ConfigurationError, match="vector_codec='int8'") as caught:
        KnowledgeBase("falkordb://localhost:6379/kb", vector_codec="int8")
    assert "drop vector_codec" in caught.value.hint
    with pytest.raises(ConfigurationError, match="FalkorDB graph"):
        connect("falkordb://localhost:6379/kb", vector_codec="int8")
    assert KnowledgeBase("falkordb://localhost:6379/kb", vector_codec="float32").vector_codec == "float32"
    monkeypatch.setenv("EVIGRAPH_VECTOR_CODEC", "int8")  # set for every knowledge base: not refused
    assert KnowledgeBase("falkordb://localhost:6379/kb").vector_codec == "float32"
