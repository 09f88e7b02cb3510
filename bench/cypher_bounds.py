"""Time and memory of costly cypher_query calls, and retrieve latency beside slow queries.

Each measurement runs in a fresh process (peak RSS is per process). "baseline" is the shape
cypher_query had before issue 9: the query string executed as given (`Tx.rows`, no rewrite, no
plan check, no size bounds) in a read-only transaction with the 10 s limit, then the tool's
cleaning and JSON. "guarded" is `Toolkit.call("cypher_query")` today. The concurrency row runs
four slow queries at once and times one `retrieve` meanwhile: the baseline lets the four take
every read connection; guarded admits two.

    python bench/cypher_bounds.py --out bench/out
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import peak_rss_mb, pyplot, run_child

QUERIES = {
    "return_range_1e6": "RETURN range(1,1000000)",
    "unwind_range_5e6": "UNWIND range(1,5000000) AS x RETURN x",
    "slow_allowed": "UNWIND range(1,1000) AS a UNWIND range(1,1000) AS b UNWIND range(1,1000) AS c "
    "RETURN a*b*c AS x ORDER BY x DESC",
}
TIMEOUT_MS = 10_000
TEXT = "Acme Robotics Corp is a company in Oslo. Dr. Ingrid Halvorsen founded Acme Robotics Corp in 2011."


async def build(db: Path) -> None:
    from evigraph import KnowledgeBase

    async with KnowledgeBase(db, extractor="rules") as kb:
        for i in range(20):
            await kb.ingest(text=f"{TEXT} Note {i}: Globex Company is a rival based in Bergen.", key=f"d{i}")


async def one_query(db: Path, variant: str, query: str) -> dict[str, Any]:
    from evigraph import KnowledgeBase, ToolError, Toolkit
    from evigraph.tools.graph_tools import clean_value

    async with KnowledgeBase(db, read_only=True) as kb:
        tk = Toolkit(kb, read_only=True)
        await kb.open()
        store = kb.store
        assert store is not None
        t0 = time.perf_counter()
        try:
            if variant == "baseline":
                ex = store.executor  # type: ignore[attr-defined]
                rows = await ex.read(lambda tx: tx.rows(query, None, limit=1001), TIMEOUT_MS)
                outcome = f"{len(json.dumps([clean_value(r) for r in rows], default=str))} chars"
            else:
                result = await tk.call("cypher_query", {"query": query, "limit": 1000})
                outcome = f"{len(result.to_llm_text())} chars"
        except (ToolError, RuntimeError) as exc:
            outcome = "refused/stopped: " + str(exc).splitlines()[0][:80]
        return {"seconds": time.perf_counter() - t0, "peak_mb": peak_rss_mb(), "outcome": outcome}


async def concurrency(db: Path, variant: str) -> dict[str, Any]:
    from evigraph import KnowledgeBase, ToolError, Toolkit

    slow = QUERIES["slow_allowed"]
    async with KnowledgeBase(db, read_only=True) as kb:
        tk = Toolkit(kb, read_only=True)
        await kb.open()
        store = kb.store
        assert store is not None
        await tk.call("retrieve", {"question": "Who founded Acme Robotics Corp?"})
        t0 = time.perf_counter()
        await tk.call("retrieve", {"question": "Who founded Acme Robotics Corp?"})
        alone = time.perf_counter() - t0

        async def slow_query() -> str:
            try:
                if variant == "baseline":
                    ex = store.executor  # type: ignore[attr-defined]
                    await ex.read(lambda tx: tx.rows(slow, None, limit=1001), TIMEOUT_MS)
                else:
                    await tk.call("cypher_query", {"query": slow})
                return "ran"
            except (ToolError, RuntimeError) as exc:
                return "busy" if "already running" in str(exc) else "stopped"

        tasks = [asyncio.create_task(slow_query()) for _ in range(4)]
        await asyncio.sleep(0.5)
        t0 = time.perf_counter()
        await tk.call("retrieve", {"question": "Who founded Acme Robotics Corp?"})
        beside = time.perf_counter() - t0
        outcomes = await asyncio.gather(*tasks)
    return {"seconds": beside, "alone_seconds": alone, "peak_mb": peak_rss_mb(), "outcome": ",".join(outcomes)}


def child(args: argparse.Namespace) -> None:
    db = Path(args.db)
    if args.case == "concurrency":
        out = asyncio.run(concurrency(db, args.variant))
    else:
        out = asyncio.run(one_query(db, args.variant, QUERIES[args.case]))
    print(json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="bench/out")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--variant", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "kb.db"
        asyncio.run(build(db))
        rows: list[dict[str, Any]] = []
        for case in [*QUERIES, "concurrency"]:
            for variant in ("baseline", "guarded"):
                argv = [__file__, "--child", "--db", str(db), "--case", case, "--variant", variant]
                res = run_child(argv)
                data = res.data if res.ok else {"seconds": res.seconds, "peak_mb": 0.0, "outcome": res.error[-120:]}
                rows.append({"case": case, "variant": variant, **data})
    print(f"{'case':18} {'variant':9} {'seconds':>8} {'peak MB':>8}  outcome")
    for r in rows:
        print(f"{r['case']:18} {r['variant']:9} {r['seconds']:8.2f} {r['peak_mb']:8.0f}  {r['outcome']}")
    for case in [*QUERIES, "concurrency"]:
        base, now = (next(r for r in rows if r["case"] == case and r["variant"] == v) for v in ("baseline", "guarded"))
        print(
            f"{case}: time x{now['seconds'] / max(base['seconds'], 1e-6):.3f}, "
            f"memory x{now['peak_mb'] / max(base['peak_mb'], 1e-6):.2f} of baseline"
        )
    (out / "cypher_bounds.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    plt = pyplot()
    if plt is not None:
        fig, ax = plt.subplots(1, 2, figsize=(10, 4))
        labels = [f"{r['case']}\n{r['variant']}" for r in rows]
        ax[0].barh(labels, [r["seconds"] for r in rows])
        ax[0].set_xlabel("seconds")
        ax[1].barh(labels, [r["peak_mb"] for r in rows])
        ax[1].set_xlabel("peak RSS (MB)")
        fig.tight_layout()
        fig.savefig(out / "cypher_bounds.png")


if __name__ == "__main__":
    main()
