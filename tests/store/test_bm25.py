"""Passage and entity search's in-process BM25 index: it must rank and score exactly as Kuzu's own
full-text indexes do (the engine is the oracle here, queried directly), on a real embedded store."""

from __future__ import annotations

from pathlib import Path

import pytest

from evigraph import KnowledgeBase
from evigraph.store.bm25 import STOPWORDS, build_text_index, porter_stems
from evigraph.store.embedded.executor import Tx
from evigraph.store.embedded.schema import CHUNK_FTS, ENTITY_FTS, fts_text
from evigraph.store.embedded.store import EmbeddedStore

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample"

QUESTIONS = [
    "Who leads ReefWatch and where does its data go?",
    "coral bleaching survey 2024",
    "What did the harbor lab measure at the tide gauge?",
    "sensors buoys temperature salinity",
    "ReefWatch TideScope Harbor Lab team people",
    "the of and",  # stopwords only
    "asked",  # a word that is no stopword, though its stem's other form is one ("ask")
    "zeppelin quixotic",  # found nowhere
]


def engine_search(store: EmbeddedStore, table: str, query: str, limit: int) -> list[tuple[str, float]]:
    index = CHUNK_FTS if table == "Chunk" else ENTITY_FTS

    def work(tx: Tx) -> list[tuple[str, float]]:
        rows = tx.rows(
            f"CALL QUERY_FTS_INDEX('{table}', '{index}', $q, top := $k) RETURN node.id AS id, score",
            {"q": fts_text(query), "k": limit},
        )
        return [(r["id"], float(r["score"])) for r in rows]

    return store.executor.read_sync(work)


async def test_scores_equal_the_engine_index(tmp_path: Path) -> None:
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules", embedder="none") as kb:
        await kb.ingest(SAMPLE)
        await kb.ingest(text="She asked twice; the answer came once.", key="asked", title="Asked")
        store = kb.store
        assert isinstance(store, EmbeddedStore)
        compared = {"Chunk": 0, "Entity": 0}
        for q in QUESTIONS:
            passages = {h.id: h.score for h in await store.search_chunks(q, limit=1000)}
            entities = {h.id: h.score for h in await store.search_entities(q, limit=1000)}
            for table, mine in (("Chunk", passages), ("Entity", entities)):
                engine = dict(engine_search(store, table, q, 1000))
                assert mine.keys() == engine.keys(), (table, q)
                for cid, score in engine.items():
                    assert mine[cid] == pytest.approx(score, rel=1e-9), (table, q, cid)
                compared[table] += len(engine)
        assert compared["Chunk"] >= 10 and compared["Entity"] >= 10  # many rows compared, not a handful
        assert [h.document for h in await store.search_chunks("asked")] == ["asked"]


def test_ranking_ties_limits_and_lengths() -> None:
    rows = [
        ("b", "reef survey reef"),
        ("a", "reef survey reef"),  # the same words: a tie, broken by id
        ("c", "reef " + "filler " * 40),  # a long passage scores below a short one
        ("d", "the of and with reef"),  # stopwords do not count towards its length
        ("e", "nothing relevant here"),
    ]
    index = build_text_index(rows)
    ranked = index.search("reef survey", 10)
    assert [cid for cid, _ in ranked][:2] == ["a", "b"] and ranked[0][1] == ranked[1][1]
    assert {cid for cid, _ in ranked} == {"a", "b", "c", "d"}
    scores = dict(ranked)
    assert scores["d"] > scores["c"]  # one word among stopwords is a short passage
    assert [cid for cid, _ in index.search("reef survey", 1)] == ["a"]
    assert index.search("reef", 0) == [] and index.search("", 5) == [] and index.search("zeppelin", 5) == []
    assert index.search("Reefs!", 5) == index.search("reef", 5)  # case, punctuation and plural fold away
    assert build_text_index([]).search("reef", 5) == []


def test_stopwords_are_the_engine_list() -> None:
    assert {"the", "and", "s", "a's", "zero"} <= STOPWORDS and "reef" not in STOPWORDS
    assert porter_stems(["surveys", "leads"]) == {"surveys": "survei", "leads": "lead"}  # Porter, not a lemmatiser
