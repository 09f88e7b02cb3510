"""Ingest throughput and peak memory, against the floor of just reading and chunking the corpus.

Each system runs in its own process so peak RSS is its own. Prints a table, writes
DIR/ingest.json and DIR/ingest.png.

    python bench/ingest.py --corpus ../shared/bench/musique/corpus.jsonl --out bench/out
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

from _common import peak_rss_mb, pyplot, require_bench_files, run_child

sys.path.insert(0, str(Path(__file__).resolve().parent))

SYSTEMS = {
    "floor (read + chunk)": ["--phase", "floor"],
    "evigraph (rules extractor)": ["--phase", "ingest", "--extractor", "rules"],
    "evigraph (spaCy extractor)": ["--phase", "ingest", "--extractor", "spacy"],
    "evigraph re-ingest (unchanged)": ["--phase", "reingest", "--extractor", "rules"],
}


def phase_floor(corpus: Path) -> dict[str, Any]:
    from evigraph.ingest.chunking import StructuralChunking
    from evigraph.ingest.loaders import JsonlLoader

    t0 = time.perf_counter()
    docs = JsonlLoader().load(corpus, "bench")
    chunker = StructuralChunking()
    passages = sum(len(chunker.chunk(d)) for d in docs)
    return {"seconds": time.perf_counter() - t0, "documents": len(docs), "passages": passages}


def phase_ingest(corpus: Path, extractor: str, reingest: bool) -> dict[str, Any]:
    from evigraph import KnowledgeBase

    async def run() -> dict[str, Any]:
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "bench.db"
            if reingest:
                async with KnowledgeBase(db, extractor=extractor) as kb:
                    await kb.ingest([corpus], progress=False)
            async with KnowledgeBase(db, extractor=extractor) as kb:
                t0 = time.perf_counter()
                report = await kb.ingest([corpus], progress=False)
                seconds = time.perf_counter() - t0
                status = await kb.status()
            if not report.ok:
                raise SystemExit(f"ingest failed: {report.failed[:3]}")
            return {
                "seconds": seconds,
                "documents": len(report.documents),
                "passages": status.passages,
                "entities": status.entities,
                "relations": status.relations,
                "statuses": report.counts(),
            }

    return asyncio.run(run())


def child(args: argparse.Namespace) -> None:
    if args.phase == "floor":
        out = phase_floor(args.corpus)
    else:
        out = phase_ingest(args.corpus, args.extractor, reingest=args.phase == "reingest")
    out["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=Path("../shared/bench/musique/corpus.jsonl"))
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    parser.add_argument("--phase", choices=["floor", "ingest", "reingest"], help=argparse.SUPPRESS)
    parser.add_argument("--extractor", default="auto", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        child(args)
        return
    require_bench_files(args.corpus)

    results: dict[str, dict[str, Any]] = {}
    failed: list[str] = []
    for name, extra in SYSTEMS.items():
        child_result = run_child([__file__, "--corpus", str(args.corpus), *extra])
        if not child_result.ok:
            print(f"{name}: failed\n{child_result.error}", file=sys.stderr)
            failed.append(name)
            continue
        r = child_result.data
        r["passages_per_s"] = r["passages"] / r["seconds"]
        results[name] = r

    floor = results.get("floor (read + chunk)")
    print(f"corpus: {args.corpus}")
    print(f"{'system':<32} {'passages':>8} {'seconds':>8} {'passages/s':>11} {'x floor time':>12} {'peak MB':>8}")
    for name, r in results.items():
        ratio = r["seconds"] / floor["seconds"] if floor else float("nan")
        print(
            f"{name:<32} {r['passages']:>8} {r['seconds']:>8.2f} {r['passages_per_s']:>11.0f} "
            f"{ratio:>12.1f} {r['peak_rss_mb']:>8.0f}"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ingest.json").write_text(json.dumps(results, indent=2))
    plot(results, args.out / "ingest.png")
    if failed:  # the table above lacks these: a run with a failed phase is not a finished benchmark
        raise SystemExit(f"{len(failed)} phases failed: {', '.join(failed)} (their errors are above)")


def plot(results: dict[str, dict[str, Any]], path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    names = list(results)
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4))
    a.barh(names, [results[n]["passages_per_s"] for n in names], color="#3b7dd8")
    a.set_xscale("log")
    a.set_xlabel("passages per second, log scale (higher is better)")
    b.barh(names, [results[n]["peak_rss_mb"] for n in names], color="#d8863b")
    b.set_xlabel("peak RSS, MB")
    b.set_yticks([])
    fig.suptitle("evigraph ingest vs the read+chunk floor")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
