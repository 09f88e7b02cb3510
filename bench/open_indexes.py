"""Open: what each in-process index of a knowledge base costs to have in hand after an open.

    python bench/open_indexes.py --db /tmp/kb.db --out bench/out
    python bench/open_indexes.py --db falkordb://127.0.0.1:6379/kb --out bench/out

In a fresh child process per run, opens the knowledge base read-only and asks the store one
cheap question per derived index, in turn, so each is made (read from disk, or rebuilt from the
graph) by its own call: passage BM25 (`search_passages`), entity BM25 (`search_entities`), names
(`entities_named`), the graph (`neighbours`), term counts (`term_counts`), titles
(`passages_by_ids`), and when the knowledge base has vectors, vectors (`vector_search`) and the
graph-ranking snapshot (`RankingIndex.snapshot`). For each: seconds and the growth of the resident set (MB).
Then the same calls again, warm: the baseline each first call is divided by is the sum of the
warm calls of the same process, and the first retrieve of a second process is divided by that
process's warm retrieve p50 (the bar of issue 32: <= 20x).

Each run is made twice: `--runs 2` (default) shows a first open that may build the on-disk
indexes and a second one that reads them.

Writes DIR/open-indexes.json and DIR/open-indexes.png.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import peak_rss_mb, pyplot, run_child
from _latency import percentile_ms, ratio

QUESTIONS = (
    "Who directed the film that won the award in 1994?",
    "What is the capital of the country where the river rises?",
    "When was the author of the novel born?",
)


def rss_mb() -> float:
    """The resident set size of this process now, MB."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    import os

    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def phase_open(db: str) -> dict[str, Any]:
    from evigraph import KnowledgeBase
    from evigraph.retrieval.ranking_index import RankingIndex

    out: dict[str, Any] = {"indexes": {}}

    async def run() -> None:
        t0 = time.perf_counter()
        async with KnowledgeBase(db, embedder="none", read_only=True) as kb:
            await kb.open()
            store = kb.store
            assert store is not None
            out["open_s"] = time.perf_counter() - t0
            ranking = RankingIndex()
            model = await store.embedding_model()
            calls: dict[str, Any] = {
                "passages_bm25": lambda: store.search_passages("film director", 20),
                "entities_bm25": lambda: store.search_entities("film director", 20),
                "names": lambda: store.entities_named(["France"]),
                "graph": lambda: store.neighbours(["x"], 1, 10),
                "terms": lambda: store.term_counts(["film"]),
                "titles": lambda: store.passages_by_ids(["x"]),
            }
            if model is not None:  # without vectors, retrieval ranks nothing by the graph
                calls["vectors"] = lambda: store.vector_search([1.0] * model[1], 10)
                calls["ranking"] = lambda: ranking.snapshot(store)
            for name, call in calls.items():
                before = rss_mb()
                t = time.perf_counter()
                await call()
                out["indexes"][name] = {"seconds": time.perf_counter() - t, "rss_mb": rss_mb() - before}
            warm = 0.0
            for name, call in calls.items():
                t = time.perf_counter()
                await call()
                seconds = time.perf_counter() - t
                out["indexes"][name]["warm_seconds"] = seconds
                warm += seconds
            out["warm_sum_s"] = warm
            out["first_vs_warm"] = ratio(sum(i["seconds"] for i in out["indexes"].values()), warm)

    asyncio.run(run())
    out["rss_mb"] = rss_mb()
    out["peak_rss_mb"] = peak_rss_mb()
    return out


def phase_retrieve(db: str) -> dict[str, Any]:
    from evigraph import KnowledgeBase

    out: dict[str, Any] = {}

    async def run() -> None:
        async with KnowledgeBase(db, embedder="none", read_only=True) as kb:
            t0 = time.perf_counter()
            await kb.retrieve(QUESTIONS[0], top_k=5)
            out["first_retrieve_ms"] = (time.perf_counter() - t0) * 1000
            warm = []
            for _ in range(5):
                for q in QUESTIONS:
                    t = time.perf_counter()
                    await kb.retrieve(q, top_k=5)
                    warm.append(time.perf_counter() - t)
            out["warm_p50_ms"] = percentile_ms(warm, 50)
            out["first_vs_warm_p50"] = ratio(out["first_retrieve_ms"], out["warm_p50_ms"])

    asyncio.run(run())
    out["peak_rss_mb"] = peak_rss_mb()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True, help="a knowledge base already ingested (path or URL)")
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--phase", choices=["open", "retrieve"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase == "open":
        print(json.dumps(phase_open(args.db)))
        return
    if args.phase == "retrieve":
        print(json.dumps(phase_retrieve(args.db)))
        return
    runs: list[dict[str, Any]] = []
    for i in range(args.runs):
        opened = run_child([__file__, "--db", args.db, "--phase", "open"])
        retrieved = run_child([__file__, "--db", args.db, "--phase", "retrieve"])
        if not opened.ok or not retrieved.ok:
            raise SystemExit(f"run {i + 1} failed:\n{opened.error}\n{retrieved.error}")
        runs.append({"open": opened.data, "retrieve": retrieved.data})
        print_run(i + 1, runs[-1])
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "open-indexes.json").write_text(json.dumps({"db": args.db, "runs": runs}, indent=2))
    plot(runs, args.out / "open-indexes.png")


def print_run(n: int, run: dict[str, Any]) -> None:
    opened, retrieved = run["open"], run["retrieve"]
    print(f"run {n}: open {opened['open_s'] * 1000:.0f} ms, RSS {opened['rss_mb']:.0f} MB")
    print(f"  {'index':<15} {'first ms':>10} {'warm ms':>9} {'RSS +MB':>8}")
    for name, i in opened["indexes"].items():
        print(f"  {name:<15} {i['seconds'] * 1000:>10.1f} {i['warm_seconds'] * 1000:>9.2f} {i['rss_mb']:>8.1f}")
    print(
        f"  first retrieve {retrieved['first_retrieve_ms']:.0f} ms, warm p50 {retrieved['warm_p50_ms']:.1f} ms: "
        f"{retrieved['first_vs_warm_p50']:.1f}x (bar <= 20x); serving peak RSS {retrieved['peak_rss_mb']:.0f} MB"
    )


def plot(runs: list[dict[str, Any]], path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    names = list(runs[0]["open"]["indexes"])
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(runs)
    for k, run in enumerate(runs):
        ms = [run["open"]["indexes"][n]["seconds"] * 1000 for n in names]
        ax.bar([i + k * width for i in range(len(names))], ms, width, label=f"open {k + 1}")
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(names))], names, rotation=30)
    ax.set_ylabel("first call after open, ms")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)


if __name__ == "__main__":
    main()
