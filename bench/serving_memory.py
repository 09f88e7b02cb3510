"""Memory of `evigraph serve --db-dir` as clients name one knowledge base after another, and of
the evidence sessions a server keeps per client.

Builds a knowledge base from DATA/corpus.jsonl with the rule extractor (compacted, as a served file
would be), copies it --copies times into a folder, and serves the folder twice: once with every
copy allowed open at once (the baseline: what the server did before `--max-open`), once with
`--max-open N`. Each server gets --questions `retrieve` calls per copy, copy after copy, --rounds
times; its RSS (/proc) is read after each copy, with the first call's latency (the open) and the
later calls'. Then, in this process, the evidence ledger of one session is filled to its 2,000
records with real `retrieve` results and measured with tracemalloc beside the ledger's own
estimate (`EvidenceLedger.bytes`, what `EVIGRAPH_SESSION_MEMORY_MB` bounds), and 2,000 empty
sessions beside `SESSION_BYTES`. Writes DIR/serving_memory.json and DIR/serving_memory.png.

    python bench/serving_memory.py --out bench/out
    python bench/serving_memory.py --copies 6 --max-open 2 --rounds 1 --out bench/out   # quick look
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import free_port, pyplot, require_dataset
from retrieval import read_jsonl

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "bench" / "2wikimultihopqa"
START_TIMEOUT_S = 120.0


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return 0.0


async def build(data: Path, db: Path) -> None:
    from evigraph.kb import KnowledgeBase

    async with KnowledgeBase(db, extractor="rules") as kb:
        report = await kb.ingest([data / "corpus.jsonl"], progress=False)
        if not report.ok:
            raise SystemExit(f"ingesting {data / 'corpus.jsonl'} failed: {report.counts()}")
        await kb.compact()


@contextlib.contextmanager
def serving(folder: Path, max_open: int, log: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`evigraph serve --db-dir FOLDER --max-open N` on a free loopback port, no EVIGRAPH_ variable leaking in."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVIGRAPH_")}
    argv = ["serve", "--db-dir", str(folder), "--max-open", str(max_open), "--port", str(port)]
    with log.open("wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "evigraph", *argv], stdout=err, stderr=err, env=env)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"evigraph serve exited with {proc.returncode}:\n{log.read_text(errors='replace')}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit(f"evigraph serve did not listen within {START_TIMEOUT_S:.0f} s") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}", proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def drive(
    folder: Path, names: list[str], questions: list[str], max_open: int, rounds: int, log: Path
) -> dict[str, Any]:
    """RSS after each knowledge base's calls, and the first and later calls' latency."""
    import httpx

    rows: list[dict[str, Any]] = []
    with serving(folder, max_open, log) as (base, proc), httpx.Client(base_url=base, timeout=600) as client:
        started = rss_mb(proc.pid)
        for name in names * rounds:
            took = []
            for question in questions:
                t0 = time.perf_counter()
                response = client.post("/api/tools/retrieve", params={"db": name}, json={"question": question})
                took.append(time.perf_counter() - t0)
                if response.status_code != 200:
                    raise SystemExit(f"retrieve on {name} answered {response.status_code}: {response.text[:300]}")
            rows.append(
                {
                    "db": name,
                    "rss_mb": round(rss_mb(proc.pid), 1),
                    "first_ms": round(took[0] * 1000, 1),
                    "later_ms": round(1000 * sum(took[1:]) / max(1, len(took) - 1), 1),
                }
            )
            print(
                f"  max_open={max_open} {name}: {rows[-1]['rss_mb']:.0f} MB, first call {rows[-1]['first_ms']:.0f} ms",
                flush=True,
            )
        opened = sum(d["open"] for d in client.get("/api/dbs").json()["dbs"])
    return {"max_open": max_open, "started_mb": round(started, 1), "opens": rows, "open_at_end": opened}


async def sessions(db: Path, questions: list[str]) -> dict[str, Any]:
    """tracemalloc's count of a full ledger and of empty sessions, beside what the server estimates."""
    from evigraph import KnowledgeBase, Toolkit
    from evigraph.serving.sessions import SESSION_BYTES, Sessions

    async with KnowledgeBase(db, read_only=True) as kb:
        toolkit = Toolkit(kb, read_only=True)
        await toolkit.new_session().call("retrieve", {"question": questions[0]})  # caches warm, not counted
        found = toolkit.new_session()
        asked = 0
        while len(found.ledger) < found.ledger.capacity and asked < len(questions):
            await found.call("retrieve", {"question": questions[asked], "top_k": 20})
            asked += 1
        rows = [(r.evidence_id, r.tool, r.kind, r.content, r.line) for r in found.ledger.records()]
        blob = json.dumps(rows)
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        copy = toolkit.new_session()
        for row in json.loads(blob):  # fresh strings, as the records a server holds
            copy.ledger.record(*row)
        gc.collect()
        measured = tracemalloc.get_traced_memory()[0] - before
        empty = Sessions(toolkit)
        before = tracemalloc.get_traced_memory()[0]
        for i in range(2000):
            empty.get(f"hdr::client-{i:06d}")
        gc.collect()
        per_empty = (tracemalloc.get_traced_memory()[0] - before) / 2000
        tracemalloc.stop()
    return {
        "records": len(rows),
        "retrieves": asked,
        "ledger_measured_mb": round(measured / 1e6, 2),
        "ledger_estimate_mb": round(copy.ledger.bytes / 1e6, 2),
        "bytes_per_record": round(measured / max(1, len(rows))),
        "empty_session_bytes": round(per_empty),
        "empty_session_estimate": SESSION_BYTES,
    }


def plot(runs: list[dict[str, Any]], out: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for run in runs:
        label = f"--max-open {run['max_open']}" + (" (every copy: the baseline)" if run is runs[0] else "")
        ax.plot(range(1, len(run["opens"]) + 1), [r["rss_mb"] for r in run["opens"]], marker="o", label=label)
    ax.set_xlabel("knowledge bases named, one after another")
    ax.set_ylabel("server RSS (MB)")
    ax.set_title("evigraph serve --db-dir: memory as clients name knowledge bases")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="dataset folder (corpus.jsonl, questions.jsonl)"
    )
    parser.add_argument("--copies", type=int, default=12, help="knowledge bases in the served folder")
    parser.add_argument("--max-open", type=int, default=3, help="the bounded server's --max-open")
    parser.add_argument("--questions", type=int, default=5, help="retrieve calls per knowledge base named")
    parser.add_argument("--rounds", type=int, default=2, help="times every copy is named")
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    args = parser.parse_args()
    require_dataset(args.data)
    args.out.mkdir(parents=True, exist_ok=True)
    questions = [q["question"] for q in read_jsonl(args.data / "questions.jsonl")]
    with tempfile.TemporaryDirectory(prefix="serving-memory-") as tmp:
        folder = Path(tmp) / "kbs"
        folder.mkdir()
        template = Path(tmp) / "template.db"
        asyncio.run(build(args.data, template))
        names = [f"kb{i:02d}" for i in range(1, args.copies + 1)]
        for name in names:
            shutil.copyfile(template, folder / f"{name}.db")
        size_mb = template.stat().st_size / 1e6
        runs = []
        for max_open in (args.copies, args.max_open):
            print(f"serving {args.copies} copies of a {size_mb:.1f} MB knowledge base, --max-open {max_open}")
            runs.append(
                drive(folder, names, questions[: args.questions], max_open, args.rounds, Path(tmp) / "serve.log")
            )
        print("filling one session's ledger")
        session = asyncio.run(sessions(template, questions))
    baseline, bounded = runs
    firsts = [r["first_ms"] for r in bounded["opens"][args.max_open :]] or [0.0]
    later = [r["later_ms"] for r in bounded["opens"]]
    report = {"db_mb": round(size_mb, 1), "copies": args.copies, "runs": runs, "sessions": session}
    print(f"\n{'':34}{'baseline':>12}{'bounded':>12}")
    print(f"{'--max-open':34}{baseline['max_open']:>12}{bounded['max_open']:>12}")
    for label, at in (("RSS after the first copy (MB)", 0), ("RSS at the end (MB)", -1)):
        print(f"{label:34}{baseline['opens'][at]['rss_mb']:>12.0f}{bounded['opens'][at]['rss_mb']:>12.0f}")
    print(f"{'open at the end':34}{baseline['open_at_end']:>12}{bounded['open_at_end']:>12}")
    first_ms, later_ms = sum(firsts) / len(firsts), sum(later) / len(later)
    print(f"bounded: a reopen's first call {first_ms:.0f} ms, later calls {later_ms:.0f} ms")
    print(
        f"session: {session['records']} records take {session['ledger_measured_mb']} MB (estimate "
        f"{session['ledger_estimate_mb']} MB), {session['bytes_per_record']} B each; an empty session "
        f"{session['empty_session_bytes']} B (estimate {session['empty_session_estimate']} B)"
    )
    (args.out / "serving_memory.json").write_text(json.dumps(report, indent=2))
    plot(runs, args.out / "serving_memory.png")
    print(f"wrote {args.out / 'serving_memory.json'}")


if __name__ == "__main__":
    main()
