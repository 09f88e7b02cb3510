"""The pure helpers of bench/retrieval.py: interleaved timing order and the merged report.

The bench's latency ratios are only honest if every system is asked every question, in an order
that gives no system a fixed place; these tests pin that down without running a model.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from tests.bench.loading import load_bench

latency = load_bench("_latency")
retrieval = load_bench("retrieval")


def test_rotation_puts_every_system_in_every_position_once() -> None:
    names = ["floor", "bm25", "dense", "evigraph"]
    orders = [latency.rotated(names, i) for i in range(len(names))]
    for position in range(len(names)):
        assert sorted(order[position] for order in orders) == sorted(names)
    assert all(sorted(order) == sorted(names) for order in orders)
    assert latency.rotated([], 3) == []


async def test_interleave_asks_every_system_each_question_in_rotated_order() -> None:
    calls: list[tuple[str, str]] = []

    def ask_of(name: str) -> Callable[[str], Awaitable[Sequence[str]]]:
        async def ask(question: str) -> Sequence[str]:
            calls.append((name, question))
            return [f"{name}:{question}"]

        return ask

    asks = {n: ask_of(n) for n in ("a", "b", "c")}
    seconds, ranked = await latency.interleave(asks, ["q1", "q2", "q3"], warmups=["w"])
    assert calls[:3] == [("a", "w"), ("b", "w"), ("c", "w")]  # warm-up first, untimed
    timed = calls[3:]
    assert [n for n, _ in timed] == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]
    assert {n: len(s) for n, s in seconds.items()} == {"a": 3, "b": 3, "c": 3}
    assert ranked["b"] == [["b:q1"], ["b:q2"], ["b:q3"]]  # kept per question, in question order


def test_merge_reports_ratios_against_floor_and_dense_from_the_same_run() -> None:
    curve = {f"recall@{k}": float(k) for k in range(1, 11)}
    cost = {"ingest_seconds": 2.0, "ingest_per_s": 50.0, "embeddings_per_passage": 1.0, "peak_rss_mb": 900.0}
    ingest = {
        "dense": {**curve, **cost, "embed_seconds": 2.0},
        "evigraph+minilm": {**curve, **cost, "embed_seconds": 3.0},
        "bm25": {**curve, **cost, "embed_seconds": 0.0},
    }
    timing = {
        "torch_threads": 2,
        "floor": {"p50_ms": 10.0, "p95_ms": 12.0},
        "dense": {"p50_ms": 11.0, "p95_ms": 13.0},
        "evigraph+minilm": {"p50_ms": 25.0, "p95_ms": 40.0},
    }
    merged = retrieval.merge(ingest, timing)
    assert merged["floor"]["p50_ms"] == 10.0
    assert merged["evigraph+minilm"]["p50_vs_floor"] == 2.5
    assert merged["evigraph+minilm"]["p50_vs_dense"] == round(25 / 11, 2)
    assert merged["dense"]["recall@10"] == 10.0
    assert merged["evigraph+minilm"]["embed_vs_dense"] == 1.5  # embedding time against dense's indexing
    assert merged["bm25"]["embed_vs_dense"] is None  # embeds nothing
    assert merged["bm25"]["p50_ms"] is None and merged["bm25"]["p50_vs_floor"] is None  # its timing failed
