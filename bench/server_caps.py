"""The per-query memory cap and time limit of the local FalkorDB server `evigraph server start`
runs: what they stop, what they cost, and the margin evigraph's own queries keep under them.

    python bench/server_caps.py --passages 10000 --out bench/out

Two servers run in the same run, both started by `LocalServer` (as `evigraph server start` does,
persistence off): one with evigraph's limits, the baseline with them switched off
(`ServerLimits(0, 0)`, what a server had before).

1. Runaway queries, each on each server: `RETURN size(range(1, 50000000))`, a 10-character string
   doubled 26 times (`WITH s+s AS s` 26 times), and `collect(i)` over 30,000,000 numbers. For
   each: seconds, outcome, the server's peak resident memory during it (VmHWM, reset before each
   query through /proc/PID/clear_refs) and its resident memory a second after.
2. A normal workload on each server: the scale corpus (N records, bench/scale.py's generator)
   ingested with the rules extractor and a deterministic 384-dimension hash embedder (vectors are
   evigraph's largest write parameters), finalized, asked one question (which builds the search
   and ranking indexes) and checked (`check`); seconds, the capped against the baseline.
3. The margin of evigraph's own queries on the capped server:
   - time: the slowest queries the server logged during the workload (GRAPH.SLOWLOG), against the limit;
   - memory of the workload: the same corpus ingested and finalized into new graphs with the cap
     lowered (GRAPH.CONFIG SET) to each of --ladder MB in turn, until one fails: the lowest that
     passed bounds the workload's largest query;
   - memory of the whole-graph reads the store makes (search indexes, graph ranking, graph index,
     resolution, vectors): the lowest cap each passes (bisection), per row, and extrapolated in
     proportion to passages to 100,000 (an upper bound: entities and relations grow slower).

Prints tables and writes DIR/server_caps.json and DIR/server_caps.png.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import os
import re
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import free_port, pyplot, require_bench_files, run_child
from _latency import ratio
from scale import DATASETS, MAX_FILE_BYTES, write_corpus

DOUBLED = "WITH 'xxxxxxxxxx' AS s " + " ".join(["WITH s+s AS s"] * 26) + " RETURN size(s)"
RUNAWAY = {
    "range(1, 50M)": "RETURN size(range(1, 50000000))",
    "string doubled 26x": DOUBLED,
    "collect 30M numbers": "UNWIND range(1, 30000000) AS i WITH collect(i) AS l RETURN size(l)",
}
SCALE_TO = 100_000


# -- the workload (a child process) ------------------------------------------------------------


def hash_embedder(dimension: int) -> Any:
    from evigraph.providers.embedders.base import Embedder

    class HashEmbedder(Embedder):
        """Deterministic bag-of-words vectors: no model download, the sizes of a real one."""

        name = f"bench-hash-{dimension}"

        def __init__(self) -> None:
            self.dimension = dimension

        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            out = []
            for text in texts:
                vec = [0.0] * dimension
                for word in text.lower().split():
                    vec[int(hashlib.md5(word.encode("utf-8", "replace")).hexdigest(), 16) % dimension] += 1.0
                norm = math.sqrt(sum(x * x for x in vec)) or 1.0
                out.append([x / norm for x in vec])
            return out

    return HashEmbedder()


def phase_work(corpus: Path, db: str, dimension: int) -> dict[str, Any]:
    from evigraph import KnowledgeBase

    out: dict[str, Any] = {}

    async def run() -> None:
        async with KnowledgeBase(
            db, extractor="rules", embedder=hash_embedder(dimension), max_file_bytes=MAX_FILE_BYTES
        ) as kb:
            t0 = time.perf_counter()
            report = await kb.ingest([corpus], progress=False)
            out["ingest_s"] = time.perf_counter() - t0
            if not report.ok:
                raise SystemExit(f"ingest failed: {[d.error for d in report.failed][:2]}")
            t0 = time.perf_counter()
            await kb.finalize()
            out["finalize_s"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            await kb.retrieve("Who directed the film?", top_k=5)  # builds the search and ranking indexes
            await kb.check()  # the integrity check's whole-graph reads
            out["retrieve_and_check_s"] = time.perf_counter() - t0
            out["passages"] = (await kb.status()).passages

    asyncio.run(run())
    return out


# -- the servers ---------------------------------------------------------------------------------


def client(server: Any, timeout: float = 600) -> Any:
    import redis

    return redis.Redis(port=server.port, password=server.password(), socket_timeout=timeout)


def memory_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Peak:
    """The server's peak resident memory during one query: the kernel's high-water mark reset
    before it, or, where that cannot be reset, resident memory sampled every 10 ms."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.sampled = 0.0
        self._stop = threading.Event()
        try:
            Path(f"/proc/{pid}/clear_refs").write_text("5")
            self.reset = True
        except OSError:
            self.reset = False
            threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.sampled = max(self.sampled, memory_mb(self.pid, "VmRSS"))
            time.sleep(0.01)

    def mb(self) -> float:
        self._stop.set()
        return memory_mb(self.pid, "VmHWM") if self.reset else self.sampled


def runaway(server: Any, pid: int) -> dict[str, dict[str, Any]]:
    import redis

    db = client(server)
    db.execute_command("GRAPH.QUERY", "runaway", "CREATE (:Seed)")
    out = {}
    for name, query in RUNAWAY.items():
        peak = Peak(pid)
        t0 = time.perf_counter()
        try:
            db.execute_command("GRAPH.RO_QUERY", "runaway", query)
            outcome = "answered"
        except redis.ResponseError as exc:
            outcome = "refused: " + str(exc)
        except redis.TimeoutError:
            outcome = "no answer within 600 s"
        seconds = time.perf_counter() - t0
        top = peak.mb()
        time.sleep(1)
        out[name] = {
            "seconds": seconds,
            "outcome": outcome,
            "peak_rss_mb": top,
            "rss_after_mb": memory_mb(pid, "VmRSS"),
        }
        print(f"  {name}: {outcome[:60]} in {seconds:.1f} s, peak {top:.0f} MB", file=sys.stderr, flush=True)
    db.execute_command("GRAPH.DELETE", "runaway")
    return out


def work(corpus: Path, url: str, dimension: int) -> dict[str, Any]:
    argv = [__file__, "--phase", "work", "--corpus", str(corpus), "--db", url, "--dimension", str(dimension)]
    got = run_child(argv, tail=20_000)
    return {**got.data, "ok": got.ok, "error": failed_at(got.error) if not got.ok else None, "wall_s": got.seconds}


def failed_at(error: str) -> str:
    """Where a workload failed: the last evigraph functions of its traceback, and the error."""
    frames = re.findall(r'File ".*?/evigraph/([^"]+)", line \d+, in (\w+)', error)
    frames = [(f, fn) for f, fn in frames if not f.endswith("falkordb/connection.py")]
    last = [line for line in error.splitlines() if line.strip() and not line.startswith("[child")][-1:]
    return " < ".join(f"{f}:{fn}" for f, fn in reversed(frames[-3:])) + (f": {last[0]}" if last else "")


def slowest(server: Any, graph: str) -> dict[str, Any]:
    entries = client(server).execute_command("GRAPH.SLOWLOG", graph)
    rows = [
        {"ms": float(e[3]), "command": e[1].decode(), "query": e[2].decode(errors="replace")[:120]} for e in entries
    ]
    writes = [r for r in rows if r["command"] == "GRAPH.QUERY"]
    reads = [r for r in rows if r["command"] == "GRAPH.RO_QUERY"]
    return {
        "slowest_write": max(writes, key=lambda r: r["ms"], default=None),
        "slowest_read": max(reads, key=lambda r: r["ms"], default=None),
    }


def set_cap(server: Any, mb: float) -> None:
    client(server).execute_command("GRAPH.CONFIG", "SET", "QUERY_MEM_CAPACITY", int(mb * 2**20))


def ladder(server: Any, corpus: Path, steps: Sequence[float], dimension: int, cap_mb: int) -> dict[str, Any]:
    """The workload into new graphs under lower and lower caps, until one fails."""
    tried = []
    try:
        for mb in steps:
            set_cap(server, mb)
            got = work(corpus, f"falkordb://127.0.0.1:{server.port}/ladder_{mb:g}", dimension)
            tried.append({"cap_mb": mb, "ok": got["ok"], "error": got["error"]})
            print(f"  cap {mb:g} MB: {'passed' if got['ok'] else 'failed'}", file=sys.stderr, flush=True)
            if not got["ok"]:
                break
    finally:
        set_cap(server, cap_mb)
    passed = [t["cap_mb"] for t in tried if t["ok"]]
    return {"tried": tried, "lowest_passing_mb": min(passed) if passed else None}


def read_memory(server: Any, url: str, cap_mb: int) -> dict[str, dict[str, Any]]:
    """Each whole-graph read of the store: the lowest cap it passes (bisection), and its rows."""
    from evigraph.store.core.merge_plan import read_entity_records
    from evigraph.store.core.ranking_reads import read_entity_vectors, read_ranking_rows
    from evigraph.store.falkordb import ranking, reads
    from evigraph.store.falkordb.caches import build_graph_index
    from evigraph.store.falkordb.connection import Connection
    from evigraph.store.location import StoreLocation

    conn = Connection(StoreLocation.parse(url), read_only=True)
    conn.open()
    queries: dict[str, Callable[[], Any]] = {
        "passage texts (search index)": lambda: reads.passage_texts(conn),
        "entity texts (search index)": lambda: reads.entity_texts(conn),
        "term texts (term statistics)": lambda: reads.term_texts(conn),
        "names (name index)": lambda: reads.name_rows(conn),
        "vectors (exact scan)": lambda: reads.vector_rows(conn),
        "graph ranking rows": lambda: read_ranking_rows(
            conn.read_sync, None, live="c.live", spans=ranking._ints, vector=ranking._floats
        ),
        "entity vectors": lambda: read_entity_vectors(conn.read_sync, None, ranking._floats),
        "graph index (walks)": lambda: build_graph_index(conn).edges,
        "entity records (resolution)": lambda: read_entity_records(conn.read_sync),
    }
    out = {}
    try:
        for name, read in queries.items():
            set_cap(server, 0)
            t0 = time.perf_counter()
            rows = len(read())
            seconds = time.perf_counter() - t0

            def passes(mb: float, read: Callable[[], Any] = read) -> bool:
                set_cap(server, mb)
                try:
                    read()
                    return True
                except Exception as exc:
                    if "mem consumption" not in str(exc):
                        raise
                    return False

            low, high = 1 / 16, 4096.0  # MB: low fails (checked), high passes
            if passes(low):
                high = low
            while high / low > 1.1:
                mid = math.sqrt(low * high)
                low, high = (low, mid) if passes(mid) else (mid, high)
            out[name] = {"rows": rows, "seconds": seconds, "needs_mb": high}
    finally:
        set_cap(server, cap_mb)
        conn.close()
    return out


# -- the run -----------------------------------------------------------------------------------


def run(args: argparse.Namespace, work_dir: Path) -> dict[str, Any]:
    from evigraph.store.falkordb.server import LocalServer
    from evigraph.store.falkordb.server_config import QUERY_MEMORY_MB, QUERY_TIMEOUT_S, ServerLimits

    report: dict[str, Any] = {"limits": {"query_memory_mb": QUERY_MEMORY_MB, "query_timeout_s": QUERY_TIMEOUT_S}}
    corpus = work_dir / "corpus.jsonl"
    report["records"] = write_corpus(args.data, args.passages, corpus)
    capped = LocalServer(work_dir / "capped", port=free_port())
    baseline = LocalServer(work_dir / "baseline", port=free_port())
    pids = {
        "capped": capped.start(persist=False).pid,
        "baseline": baseline.start(persist=False, limits=ServerLimits(0, 0)).pid,
    }
    servers = {"capped": capped, "baseline": baseline}
    try:
        report["runaway"] = {}
        for name in ("baseline", "capped"):
            print(f"runaway queries, {name} server:", file=sys.stderr, flush=True)
            report["runaway"][name] = runaway(servers[name], int(pids[name] or 0))
        report["workload"] = {}
        for name in ("baseline", "capped"):
            got = work(corpus, f"falkordb://127.0.0.1:{servers[name].port}/kb", args.dimension)
            if not got["ok"]:
                raise SystemExit(f"the workload failed on the {name} server:\n{got['error']}")
            report["workload"][name] = got
            print(f"workload on the {name} server: {got['wall_s']:.0f} s", file=sys.stderr, flush=True)
        report["workload"]["capped_vs_baseline"] = ratio(
            report["workload"]["capped"]["wall_s"], report["workload"]["baseline"]["wall_s"]
        )
        report["slowest"] = slowest(capped, "kb")
        print("workload under lower caps:", file=sys.stderr, flush=True)
        report["ladder"] = ladder(capped, corpus, args.ladder, args.dimension, QUERY_MEMORY_MB)
        reads = read_memory(capped, f"falkordb://127.0.0.1:{capped.port}/kb", QUERY_MEMORY_MB)
        passages = report["workload"]["capped"]["passages"]
        for r in reads.values():
            r["bytes_per_row"] = r["needs_mb"] * 2**20 / r["rows"] if r["rows"] else None
            r["at_100k_mb"] = r["needs_mb"] * SCALE_TO / passages
        report["reads"] = reads
    finally:
        capped.stop()
        baseline.stop()
    return report


def print_table(report: dict[str, Any]) -> None:
    limits = report["limits"]
    cap, timeout_s = limits["query_memory_mb"], limits["query_timeout_s"]
    print(f"limits: {cap} MB and {timeout_s} s a query; baseline: none (the same binaries, started in this run)")
    print(f"{'runaway query':<22} {'server':<9} {'s':>7} {'peak MB':>8} {'after MB':>9}  outcome")
    for query in RUNAWAY:
        for name in ("baseline", "capped"):
            r = report["runaway"][name][query]
            print(
                f"{query:<22} {name:<9} {r['seconds']:>7.2f} {r['peak_rss_mb']:>8.0f} {r['rss_after_mb']:>9.0f}  "
                f"{r['outcome'][:60]}"
            )
    w = report["workload"]
    print(
        f"workload ({w['capped']['passages']} passages: ingest and finalize, 384-dim vectors): "
        f"baseline {w['baseline']['wall_s']:.0f} s, capped {w['capped']['wall_s']:.0f} s "
        f"({w['capped_vs_baseline']:.2f}x)"
    )
    for kind in ("slowest_write", "slowest_read"):
        s = report["slowest"][kind]
        if s:
            print(
                f"{kind.replace('_', ' ')}: {s['ms']:.0f} ms, {timeout_s * 1000 / s['ms']:.0f}x under the "
                f"{timeout_s} s limit ({s['query'][:70]!r})"
            )
    lowest = report["ladder"]["lowest_passing_mb"]
    tried = ", ".join(f"{t['cap_mb']:g} MB {'ok' if t['ok'] else 'failed'}" for t in report["ladder"]["tried"])
    if lowest:
        print(
            f"workload under lower caps: {tried}: its largest query needs at most {lowest:g} MB, "
            f"{cap / lowest:.0f}x under the cap"
        )
    print(f"{'whole-graph read':<30} {'rows':>8} {'s':>6} {'needs MB':>9} {'B/row':>6} {'at 100k MB':>10} {'x cap':>6}")
    for name, r in report["reads"].items():
        per_row = f"{r['bytes_per_row']:>6.0f}" if r["bytes_per_row"] else f"{'-':>6}"
        print(
            f"{name:<30} {r['rows']:>8} {r['seconds']:>6.2f} {r['needs_mb']:>9.2f} {per_row} "
            f"{r['at_100k_mb']:>10.1f} {cap / r['at_100k_mb']:>6.1f}"
        )


def plot(report: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4))
    names = list(RUNAWAY)
    for offset, server, colour in ((-0.2, "baseline", "#999999"), (0.2, "capped", "#3b7dd8")):
        a.bar(
            [i + offset for i in range(len(names))],
            [report["runaway"][server][n]["peak_rss_mb"] for n in names],
            width=0.4,
            color=colour,
            label=f"{server}: peak",
        )
        a.bar(
            [i + offset for i in range(len(names))],
            [report["runaway"][server][n]["rss_after_mb"] for n in names],
            width=0.4,
            color="black",
            alpha=0.35,
            label="both: 1 s after (dark)" if server == "capped" else None,
        )
    a.set_xticks(range(len(names)), names)
    a.set_ylabel("server resident memory, MB")
    a.legend(fontsize=8)
    reads = report["reads"]
    b.barh(list(reads), [r["at_100k_mb"] for r in reads.values()], color="#3bb273")
    b.axvline(report["limits"]["query_memory_mb"], color="grey", ls="--", label="cap")
    b.set_xlabel("memory at 100,000 passages (extrapolated), MB")
    b.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passages", type=int, default=10_000, help="records of the scale corpus")
    parser.add_argument("--dimension", type=int, default=384, help="the hash embedder's vector size")
    parser.add_argument("--ladder", type=float, nargs="+", default=[64, 32, 16], help="lower caps to try, MB")
    parser.add_argument("--data", type=Path, default=Path("../shared/bench"))
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    parser.add_argument("--phase", choices=["work"], help=argparse.SUPPRESS)
    parser.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase == "work":
        print(json.dumps(phase_work(args.corpus, args.db, args.dimension)))
        return
    require_bench_files(*(args.data / d / "corpus.jsonl" for d in DATASETS))
    with tempfile.TemporaryDirectory(prefix="evigraph-caps-") as tmp:
        os.environ["XDG_STATE_HOME"] = str(Path(tmp) / "state")  # the bench's servers stay out of the user's registry
        report = run(args, Path(tmp))
    print_table(report)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "server_caps.json").write_text(json.dumps(report, indent=2))
    plot(report, args.out / "server_caps.png")


if __name__ == "__main__":
    main()
