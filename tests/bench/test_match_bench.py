"""The weak-match bench's halves and its no-answer copy (bench/_match.py), on a real knowledge base."""

from __future__ import annotations

from pathlib import Path

from tests.bench.loading import load_bench

from evigraph import KnowledgeBase

match = load_bench("_match")
retrieval = load_bench("retrieval")

QUESTIONS = [{"id": f"q{i}", "question": f"question {i}", "supporting_ids": [f"gold-{i}"]} for i in range(5)]


def test_halves_split_every_question_once_across_the_file() -> None:
    answerable, held = match.halves(QUESTIONS)
    assert [q["id"] for q in answerable] == ["q0", "q2", "q4"] and [q["id"] for q in held] == ["q1", "q3"]
    assert match.flag_rate([True, False, False, False]) == 25.0 and match.flag_rate([]) is None


async def test_the_no_answer_copy_lacks_only_the_held_gold_passages(tmp_path: Path) -> None:
    source = tmp_path / "kb.db"
    async with KnowledgeBase(source, extractor="rules") as kb:
        for i in range(5):
            await kb.ingest(text=f"Passage {i} about the harbour of Portavel.", key=f"gold-{i}")
    _, held = match.halves(QUESTIONS)
    target = tmp_path / "no-answer" / "kb.db"
    await match.without_gold(source, target, held)
    async with KnowledgeBase(target, read_only=True) as kb:
        kept = {d.key for d in await kb.documents()}
    assert kept == {"gold-0", "gold-2", "gold-4"}
    async with KnowledgeBase(source, read_only=True) as kb:
        assert len(await kb.documents()) == 5  # the source is untouched
    assert not target.with_suffix(".partial").exists()


def test_merge_carries_the_weak_match_rates() -> None:
    curve = {f"recall@{k}": float(k) for k in range(1, 11)}
    cost = {"ingest_seconds": 2.0, "ingest_per_s": 50.0, "embeddings_per_passage": 1.0, "peak_rss_mb": 900.0}
    rates = {"weak_match_answerable": 2.0, "weak_match_no_answer": 55.0}
    ingest = {"evigraph": {**curve, **cost, "embed_seconds": 0.0, **rates}, "bm25": {**curve, **cost}}
    ingest["bm25"]["embed_seconds"] = 0.0
    merged = retrieval.merge(ingest, {"floor": {"p50_ms": 10.0, "p95_ms": 12.0}})
    assert {k: merged["evigraph"][k] for k in rates} == rates
    assert "weak_match_no_answer" not in merged["bm25"]
