"""Latency of every read tool of the agent toolkit on a real corpus, against a bare full-text floor.

Ingests the corpus once (or reuses --db), runs finalize (themes), then calls each read tool
through `Toolkit.call` for --questions questions, with arguments taken from the questions and
from earlier results (numbers to read, passages to navigate from, entities to explore). The
floor is one raw BM25 store call per question: the cheapest thing any tool does. Prints a table
of p50/p95 per tool with the ratio to the floor's p50, writes DIR/tools.json and DIR/tools.png.

Then (unless --no-traces) the trace tools, the task and decision tools of a toolkit given a project
and an agent: a project is seeded with --tasks tasks and --decisions decisions resting on passages
read in full (bench/_trace_tools.py has the recipe), and each trace tool is timed on it, with each
p50 as a ratio of the read phase's read_passages p50 (the read every decision starts from), and a
re-ingest of documents decisions rest on (it flags them needs_review) against documents none rests
on. These phases write to the knowledge base: tasks, decisions and the re-ingested documents.

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
from _trace_tools import run_traces
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


TRACE_BASELINE = "read_passages"


async def run(data: Path, db: Path, questions: int, extractor: str, traces: dict[str, int]) -> dict[str, Any]:
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
            record("floor: raw BM25 store call", await measure(lambda q=question: store.search_passages(q, 10)))
            await one_question(toolkit.new_session(), question, record)
        trace = None
        if traces["decisions"] > 0:
            rows = [r for r in read_jsonl(data / "questions.jsonl") if r.get("question")]
            trace = await run_traces(kb, rows, **traces)
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
    results = {"info": info, "tools": tools}
    if trace is not None:
        base = tools[TRACE_BASELINE]["p50_ms"]
        for entry in trace["tools"].values():
            entry[f"p50_x_{TRACE_BASELINE}"] = round(entry["p50_ms"] / base, 1) if base else None
            entry["p50_x_floor"] = round(entry["p50_ms"] / floor, 1) if floor else None
        trace["info"]["baseline"] = f"{TRACE_BASELINE} p50 of the read phase, {base} ms"
        results |= {"trace_info": trace["info"], "trace_tools": trace["tools"], "reingest": trace["reingest"]}
    return results | {"peak_rss_mb": round(peak_rss_mb(), 1)}


def _bars(ax: Any, rows: dict[str, dict[str, Any]], title: str) -> None:
    names = list(rows)
    ys = range(len(names))
    ax.barh([y + 0.2 for y in ys], [rows[n]["p50_ms"] for n in names], height=0.4, label="p50", color="C0")
    ax.barh([y - 0.2 for y in ys], [rows[n]["p95_ms"] for n in names], height=0.4, label="p95", color="C1")
    ax.set_yticks(list(ys), names)
    ax.invert_yaxis()
    ax.set_xlabel("ms per call")
    ax.set_xscale("log")
    ax.set_title(title)
    ax.legend()


def plot(results: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    trace = results.get("trace_tools")
    if not trace:
        fig, ax = plt.subplots(figsize=(10, 5))
        _bars(ax, results["tools"], f"toolkit read tools, {results['info']['questions']} questions")
    else:
        fig, (ax, bx) = plt.subplots(2, 1, figsize=(10, 11), height_ratios=[len(results["tools"]), len(trace) + 2])
        _bars(ax, results["tools"], f"toolkit read tools, {results['info']['questions']} questions")
        rows = dict(trace)
        ingest = results["reingest"]
        for kind in ("rested", "unrested"):
            if ingest.get(f"{kind}_p50_ms"):
                label = f"re-ingest, document {'decisions rest on' if kind == 'rested' else 'none rests on'}"
                rows[label] = {"p50_ms": ingest[f"{kind}_p50_ms"], "p95_ms": ingest[f"{kind}_max_ms"]}
        info = results["trace_info"]
        _bars(
            bx, rows, f"trace tools, {info['decisions_seeded']} decisions over {info['tasks']} tasks (re-ingest: max)"
        )
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/bench/musique"), help="dataset folder")
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    parser.add_argument("--db", type=Path, help="reuse (or create) this knowledge base instead of a temporary one")
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--extractor", default="rules", help="extractor for the ingest (default: rules)")
    parser.add_argument("--decisions", type=int, default=1000, help="decisions seeded for the trace tools")
    parser.add_argument("--tasks", type=int, default=20, help="tasks the decisions are spread over")
    parser.add_argument("--trace-calls", type=int, default=50, help="timed calls of each trace read tool")
    parser.add_argument("--trace-writes", type=int, default=30, help="timed calls of each trace write tool")
    parser.add_argument("--reingests", type=int, default=5, help="re-ingests of each kind (rested, not)")
    parser.add_argument("--no-traces", action="store_true", help="time the read tools only")
    args = parser.parse_args()
    require_dataset(args.data, args.db)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="evigraph-tools-") as tmp:
        db = args.db or Path(tmp) / "bench.db"
        traces = {
            "decisions": 0 if args.no_traces else args.decisions,
            "tasks": args.tasks,
            "calls": args.trace_calls,
            "write_calls": args.trace_writes,
            "reingests": args.reingests,
        }
        results = asyncio.run(run(args.data, db, args.questions, args.extractor, traces))
    results["info"]["dataset"] = args.data.name
    (args.out / "tools.json").write_text(json.dumps(results, indent=2))
    plot(results, args.out / "tools.png")
    print(f"dataset {args.data.name}: {json.dumps(results['info'])}; peak RSS {results['peak_rss_mb']:.0f} MB")
    print(f"{'tool':<30} {'calls':>6} {'p50 ms':>9} {'p95 ms':>9} {'p50 x floor':>12}")
    for name, r in results["tools"].items():
        print(f"{name:<30} {r['calls']:>6} {r['p50_ms']:>9.2f} {r['p95_ms']:>9.2f} {r['p50_x_floor']:>12}")
    if "trace_tools" in results:
        print_traces(results)


def print_traces(results: dict[str, Any]) -> None:
    info, ingest = results["trace_info"], results["reingest"]
    print(f"\ntrace tools: {json.dumps(info)}")
    ratio = f"p50 x {TRACE_BASELINE}"
    print(f"{'tool':<30} {'calls':>6} {'p50 ms':>9} {'p95 ms':>9} {ratio:>19} {'p50 x floor':>12}")
    for name, r in results["trace_tools"].items():
        x = r[f"p50_x_{TRACE_BASELINE}"]
        print(f"{name:<30} {r['calls']:>6} {r['p50_ms']:>9.2f} {r['p95_ms']:>9.2f} {x:>19} {r['p50_x_floor']:>12}")
    print(
        f"re-ingest, {ingest['documents_each']} document(s) each: decisions rest on it p50 {ingest['rested_p50_ms']} ms"
        f" (resting decisions {ingest['decisions_resting_per_document']}), none rests on it p50 "
        f"{ingest['unrested_p50_ms']} ms; ratio {ingest.get('rested_x_unrested')}"
    )


if __name__ == "__main__":
    main()
