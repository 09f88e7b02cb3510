"""Passage and entity search's in-process BM25 index: it must rank and score exactly as Kuzu's own
full-text index does over the same rows (the engine is the oracle, built and queried here)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import engine_connection

from evigraph import KnowledgeBase
from evigraph.store.bm25 import STOPWORDS, build_text_index, porter_stems
from evigraph.store.embedded import reads
from evigraph.store.embedded.store import EmbeddedStore
from evigraph.store.search_text import fts_text

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample"

QUESTIONS = [
    "Who leads ReefWatch and where does its data go?",
    "coral bleaching survey 2024",
    "What did the harbor lab measure at the tide gauge?",
    "sensors buoys temperature salinity",
    "ReefWatch TideScope Harbor Lab team people",
    "Marta Oliveira, Ana Costa and Tomas Reyes of the University of Porto in Lisbon, Peniche and Berlengas",
    "the of and",  # stopwords only
    "asked",  # a word that is no stopword, though its stem's other form is one ("ask")
    "zeppelin quixotic",  # found nowhere
]


def engine_scores(rows: list[tuple[str, str]], queries: list[str]) -> list[dict[str, float]]:
    """Each query's scores by Kuzu's own full-text index over `rows` (id, search_text), built as
    the embedded store built its passage and entity indexes before `bm25` replaced them."""
    conn = engine_connection(":memory:")
    conn.execute("LOAD EXTENSION fts")
    conn.execute("CREATE NODE TABLE T(id STRING PRIMARY KEY, search_text STRING)")
    conn.execute(
        "UNWIND $rows AS r CREATE (:T {id: r.id, search_text: concat(r.st, '')})",
        {"rows": [{"id": i, "st": s} for i, s in rows]},
    )
    conn.execute("CALL CREATE_FTS_INDEX('T', 'oracle', ['search_text'], stemmer := 'porter')")
    out = []
    for q in queries:
        result = conn.execute(
            "CALL QUERY_FTS_INDEX('T', 'oracle', $q, top := 1000) RETURN node.id, score", {"q": fts_text(q)}
        )
        found: dict[str, float] = {}
        while result.has_next():
            cid, score = result.get_next()
            found[cid] = float(score)
        out.append(found)
    return out


@pytest.mark.kuzu  # Kuzu's full-text extension is the oracle
async def test_scores_equal_the_engine_index(tmp_path: Path) -> None:
    async with KnowledgeBase(tmp_path / "kb.db", extractor="rules", embedder="none") as kb:
        await kb.ingest(SAMPLE)
        await kb.ingest(text="She asked twice; the answer came once.", key="asked", title="Asked")
        store = kb.store
        assert isinstance(store, EmbeddedStore)
        compared = {"Chunk": 0, "Entity": 0}
        for table, texts, search in (
            ("Chunk", reads.passage_texts, store.search_passages),
            ("Entity", reads.entity_texts, store.search_entities),
        ):
            engine = engine_scores(store.executor.read_sync(texts), QUESTIONS)
            for q, theirs in zip(QUESTIONS, engine, strict=True):
                mine = {h.id: h.score for h in await search(q, 1000)}
                assert mine.keys() == theirs.keys(), (table, q)
                for cid, score in theirs.items():
                    assert mine[cid] == pytest.approx(score, rel=1e-9), (table, q, cid)
                compared[table] += len(theirs)
        assert compared["Chunk"] >= 10 and compared["Entity"] >= 10  # many rows compared, not a handful
        assert [h.document for h in await store.search_passages("asked")] == ["asked"]


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
    assert {"the", "and", "s", "a's", "zero", "ask"} <= STOPWORDS and "reef" not in STOPWORDS
    index = build_text_index([("p", "she asked twice"), ("q", "ask the reef")])
    assert [cid for cid, _ in index.search("ask", 5)] == ["p"]  # a stopword in a query finds its stem
    assert porter_stems(["surveys", "leads"]) == {"surveys": "survei", "leads": "lead"}  # Porter, not a lemmatiser


@pytest.mark.kuzu  # its postings were saved with Kuzu's stemmer
def test_the_stemmer_gives_kuzus_stem_for_every_word() -> None:
    """Postings saved with Kuzu's `stem(w, 'porter')` must meet queries stemmed by PyStemmer."""
    import re

    from evigraph.store.bm25 import _stem

    texts = [p.read_text(encoding="utf-8") for p in [*SAMPLE.rglob("*.md"), SAMPLE.parents[1] / "README.md"]]
    words = sorted({w for text in texts for w in re.findall(r"[^\W\d_]+", text.lower())})
    words += ["generously", "hopeful", "ponies", "caresses", "relational", "naïveté", "ünïcödé", "x"]
    conn = engine_connection(":memory:")
    conn.execute("LOAD EXTENSION fts")
    result = conn.execute("UNWIND $w AS w RETURN w, stem(w, 'porter')", {"w": words})
    engine: dict[str, str] = {}
    while result.has_next():
        word, stem = result.get_next()
        engine[word] = stem
    assert len(words) > 1_000
    assert _stem(words) == engine
