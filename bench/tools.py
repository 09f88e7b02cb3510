"""Latency of every read tool of the agent toolkit on a real corpus, against a bare full-text floor.

Ingests the corpus once (or reuses --db), runs finalize (themes), then calls each read tool
through `Toolkit.call` for --questions questions, with arguments taken from the questions and
from earlier results (numbers to read, passages to navigate from, entities to explore). The
floor is one raw BM25 store call per question: the cheapest thing any tool does. Prints a table
of p50/p95 per tool with the ratio to the floor's p50, writes DIR/tools.json and DIR/tools.png.

    python bench/tools.py --data ../shared/bench/musique --out bench/out
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import peak_rss_mb, pyplot, require_dataset
from retrieval import percentile_ms, read_jsonl


async def measure(fn: Callable[[], Awaitable[Any]]) -> float:
    t0 = time.perf_counter()
    await fn()
    return time.perf_counter() - t0


async def one_question(session: Any, question: str, record: Callable[[str, float], None]) -> None:
    """Every read tool once for `question`, fed with what the earlier calls returned."""
    found: dict[str, Any] = {}

    async def call(name: str, args: dict[str, Any], keep: str | None = None) -> None:
        t0 = time.perf_counter()
        result = await session.call(name, args)
        record(name, time.perf_counter() - t0)
        if keep:
            found[keep] = result

    await call("status", {})
    await call("get_ontology", {})
    await call("retrieve", {"question": question}, "retrieve")
    await call("search_passages", {"query": question, "mode": "lexical"}, "passages")
    await call("search_entities", {"query": question, "mode": "lexical"}, "entities")
    await call("search_themes", {"query": question})
    hits = found["passages"].hits
    if hits:
        await call("read_passages", {"passages": [h.n for h in hits[:3]]})
        await call("navigate_document", {"passage": hits[0].n, "relation": "next"})
    entities = found["entities"].hits
    if entities:
        await call("explore_relationships", {"entity": entities[0].n, "depth": 2})
    await call(
        "cypher_query",
        {
            "query": "MATCH (e:Entity)-[r:RELATES]->(b:Entity) WHERE e.label = $l RETURN e.name, b.name LIMIT 20",
            "params": {"l": "Person"},
        },
    )
    numbers = [p.n for p in found["retrieve"].passages[:3]]
    if numbers:
        await call("get_context", {"evidence": numbers, "max_tokens": 1500})
        await call("check_citations", {"answer": " ".join(f"Claim {i} [{n}]." for i, n in enumerate(numbers))})
        await call("source_status", {"document_key": found["retrieve"].passages[0].source.document_key})


async def run(data: Path, db: Path, questions: int, extractor: str) -> dict[str, Any]:
    from evigraph import KnowledgeBase, Toolkit

    qs = [q["question"] for q in read_jsonl(data / "questions.jsonl", questions)]
    info: dict[str, Any] = {"questions": len(qs)}
    async with KnowledgeBase(db, extractor=extractor) as kb:
        if not db.exists():
            t0 = time.perf_counter()
            report = await kb.ingest([data / "corpus.jsonl"], progress=False)
            info["ingest_seconds"] = round(time.perf_counter() - t0, 1)
            if not report.ok:
                raise SystemExit(f"ingest failed: {report.failed[:3]}")
            t0 = time.perf_counter()
            info["themes"] = (await kb.finalize()).themes
            info["finalize_seconds"] = round(time.perf_counter() - t0, 1)
        await kb.open()
        store = kb.store
        assert store is not None
        toolkit = Toolkit(kb, read_only=True)
        await toolkit.call("retrieve", {"question": qs[0]})  # warm caches, untimed
        times: dict[str, list[float]] = {}

        def record(name: str, seconds: float) -> None:
            times.setdefault(name, []).append(seconds)

        for question in qs:
            record("floor: raw BM25 store call", await measure(lambda q=question: store.search_chunks(q, 10)))
            await one_question(toolkit.new_session(), question, record)
    tools = {
        name: {
            "calls": len(values),
            "p50_ms": round(percentile_ms(values, 50), 2),
            "p95_ms": round(percentile_ms(values, 95), 2),
        }
        for name, values in times.items()
    }
    floor = tools["floor: raw BM25 store call"]["p50_ms"]
    for entry in tools.values():
        entry["p50_x_floor"] = round(entry["p50_ms"] / floor, 1) if floor else None
    return {"info": info, "tools": tools, "peak_rss_mb": round(peak_rss_mb(), 1)}


def plot(results: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    names = list(results["tools"])
    p50 = [results["tools"][n]["p50_ms"] for n in names]
    p95 = [results["tools"][n]["p95_ms"] for n in names]
    fig, ax = plt.subplots(figsize=(10, 5))
    ys = range(len(names))
    ax.barh([y + 0.2 for y in ys], p50, height=0.4, label="p50")
    ax.barh([y - 0.2 for y in ys], p95, height=0.4, label="p95")
    ax.set_yticks(list(ys), names)
    ax.invert_yaxis()
    ax.set_xlabel("ms per call")
    ax.set_xscale("log")
    ax.set_title(f"toolkit read tools, {results['info']['questions']} questions")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/bench/musique"), help="dataset folder")
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    parser.add_argument("--db", type=Path, help="reuse (or create) this knowledge base instead of a temporary one")
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--extractor", default="rules", help="extractor for the ingest (default: rules)")
    args = parser.parse_args()
    require_dataset(args.data, args.db)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="evigraph-tools-") as tmp:
        db = args.db or Path(tmp) / "bench.db"
        results = asyncio.run(run(args.data, db, args.questions, args.extractor))
    results["info"]["dataset"] = args.data.name
    (args.out / "tools.json").write_text(json.dumps(results, indent=2))
    plot(results, args.out / "tools.png")
    print(f"dataset {args.data.name}: {json.dumps(results['info'])}; peak RSS {results['peak_rss_mb']:.0f} MB")
    print(f"{'tool':<30} {'calls':>6} {'p50 ms':>9} {'p95 ms':>9} {'p50 x floor':>12}")
    for name, r in results["tools"].items():
        print(f"{name:<30} {r['calls']:>6} {r['p50_ms']:>9.2f} {r['p95_ms']:>9.2f} {r['p50_x_floor']:>12}")


if __name__ == "__main__":
    main()
