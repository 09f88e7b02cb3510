"""Peak memory of ingesting one big JSONL file: records streamed in batches against one list.

The baseline, measured in the same run, is the shape ingest had before streaming: the loader
reads the whole file into a list of documents (`JsonlLoader.load`) and the pipeline is handed
that list (`ingest_documents`). The streamed shape is `kb.ingest([file])`, where the pipeline
pulls one batch of records at a time. Each runs in its own process on the same generated file,
so peak RSS is its own. Prints a table, writes DIR/jsonl_memory.json and DIR/jsonl_memory.png
(RSS over time).

    python bench/jsonl_memory.py --records 100000 --out bench/out
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _common import peak_rss_mb, pyplot, run_child

SHAPES = {"list (baseline)": "list", "streamed": "stream"}


def generate(path: Path, records: int) -> Path:
    """Records of about 200 characters that the rule extractor finds people and companies in."""
    with path.open("w", encoding="utf-8") as fh:
        for i in range(records):
            text = (
                f"Record {i}: Dr. Ada Num{i % 997} founded Acme{i % 501} Corp in Oslo in {1900 + i % 120}. "
                "The company builds robots and drones for warehouses in Bergen."
            )
            fh.write(json.dumps({"id": f"r{i}", "title": f"Record {i}", "text": text}) + "\n")
    return path


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def child(shape: str, source: Path, trace: Path) -> dict[str, Any]:
    """Ingest `source` in `shape`; RSS goes to `trace` every second, so a crash still leaves its curve."""
    from evigraph.ingest.loaders import JsonlLoader
    from evigraph.ingest.sources import file_key
    from evigraph.kb import KnowledgeBase

    t0 = time.perf_counter()

    def sample() -> None:
        with trace.open("a", encoding="utf-8") as fh:
            while True:
                fh.write(json.dumps([round(time.perf_counter() - t0, 1), round(_rss_mb(), 1)]) + "\n")
                fh.flush()
                time.sleep(1.0)

    threading.Thread(target=sample, daemon=True).start()

    async def run() -> dict[str, int]:
        with tempfile.TemporaryDirectory() as tmp:
            async with KnowledgeBase(Path(tmp) / "kb.db", extractor="rules") as kb:
                if shape == "list":
                    docs = JsonlLoader().load(source, file_key(source))
                    report = await kb.ingest_documents(docs, progress=False)
                else:
                    report = await kb.ingest([source], progress=False)
                return report.counts()

    counts = asyncio.run(run())
    return {
        "seconds": round(time.perf_counter() - t0, 1),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "counts": counts,
    }


def plot(results: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(9, 5))
    for name, r in results["shapes"].items():
        if r.get("samples"):
            xs, ys = zip(*r["samples"], strict=True)
            ax.plot(xs, ys, label=f"{name} (peak {r['peak_rss_mb']:.0f} MB)")
    ax.set_xlabel("seconds")
    ax.set_ylabel("RSS (MB)")
    ax.set_title(f"ingest of one {results['records']:,}-record JSONL file")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    parser.add_argument("--child", choices=sorted(SHAPES.values()), help=argparse.SUPPRESS)
    parser.add_argument("--source", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--trace", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.source, args.trace)))
        return
    results: dict[str, Any] = {"records": args.records, "shapes": {}}
    with tempfile.TemporaryDirectory() as tmp:
        source = generate(Path(tmp) / "records.jsonl", args.records)
        results["file_mb"] = round(source.stat().st_size / 2**20, 1)
        for name, shape in SHAPES.items():
            trace = Path(tmp) / f"{shape}.rss"
            outcome = run_child([__file__, "--child", shape, "--source", str(source), "--trace", str(trace)])
            samples = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines() if line]
            data = outcome.data or {"seconds": round(outcome.seconds, 1), "counts": {}}
            data["samples"] = samples
            if not outcome.ok:  # a crash still has its RSS curve up to the end
                data["peak_rss_mb"] = max((rss for _, rss in samples), default=0.0)
                data["error"] = outcome.error.strip().splitlines()[-3:]
            results["shapes"][name] = data
    base = results["shapes"]["list (baseline)"]["peak_rss_mb"] or 1.0
    print(f"{args.records:,} records, {results['file_mb']} MB file")
    print(f"{'shape':18} {'peak RSS MB':>12} {'x baseline':>11} {'seconds':>8}  outcome")
    for name, r in results["shapes"].items():
        end = "; ".join(r["error"]) if "error" in r else r["counts"]
        print(f"{name:18} {r['peak_rss_mb']:12.1f} {r['peak_rss_mb'] / base:11.2f} {r['seconds']:8.1f}  {end}")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "jsonl_memory.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    plot(results, args.out / "jsonl_memory.png")


if __name__ == "__main__":
    main()
